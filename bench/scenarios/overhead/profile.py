"""Optional sampling profile of the gateway under load, with py-spy (the `bench` extra).
py-spy runs on the load generator's core in non-blocking mode; its collapsed stacks are
summarized into the functions and packages where the time goes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.config import MODES, BenchConfig
from bench.harness.processes import REPO_ROOT
from bench.scenarios.overhead.phases import run_phase
from bench.scenarios.overhead.records import PhaseKey
from bench.scenarios.overhead.stack import Stack

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
_PROJECT = ("gateway/", "backends/", "budgets/", "cache/", "obs/", "core/", "access/", "bench/")
# Frames every sample has under them (process entry and the event loop's Python frames).
_ENTRY_FILES = frozenset(
    {
        "<frozen runpy>",
        "gateway/cli.py",
        "uvicorn/main.py",
        "uvicorn/server.py",
        "uvicorn/_compat.py",
        "asyncio/runners.py",
        "asyncio/base_events.py",
        "asyncio/events.py",
    }
)
EVENT_LOOP = "(event loop and C code under it: uvloop I/O, callbacks, grpc core)"


def pyspy() -> str | None:
    """The py-spy executable, from PATH or next to this interpreter."""
    found = shutil.which("py-spy")
    if found:
        return found
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else None


def start(
    executable: str, pid: int, out: Path, duration_s: float, cpu: int | None, native: bool
) -> subprocess.Popen[bytes]:
    """Start recording `pid` for `duration_s` into `out` (collapsed stacks)."""
    argv = [
        executable, "record", "--pid", str(pid), "--duration", str(max(1, round(duration_s))),
        "--rate", "250", "--format", "raw", "--output", str(out),
    ]  # fmt: skip
    # Native frames need the target paused per sample: the profiled phase runs much slower.
    argv.append("--native" if native else "--nonblocking")
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu), *argv]
    log = out.with_suffix(".log").open("wb")
    try:
        return subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    finally:
        log.close()


@dataclass(frozen=True, slots=True)
class ProfileSummary:
    """Where the samples fell: per function (self and inclusive) and per package."""

    label: str
    samples: int
    self_top: list[tuple[str, int]]
    inclusive_top: list[tuple[str, int]]
    project_top: list[tuple[str, int]]
    areas: list[tuple[str, int]]
    raw_path: Path


def _area(file: str) -> str:
    path = file.replace("\\", "/")
    if path.startswith(str(REPO_ROOT) + "/"):
        path = path[len(str(REPO_ROOT)) + 1 :]
    if path.startswith(_PROJECT):
        return "project: " + path.split("/", 1)[0]
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0]
    head = path.split("/", 1)[0]
    if "/" in path and head in ("asyncio", "json", "logging", "http", "email", "concurrent"):
        return "stdlib: " + head
    if "/" in path:
        return head  # packages py-spy shortens to their relative path (uvicorn/, starlette/)
    return "stdlib/native"


def _parse_frame(frame: str) -> tuple[str, str]:
    match = _FRAME.match(frame.strip())
    if not match:
        return frame.strip(), ""
    file = match["file"]
    return f"{match['func']} ({file})", file


def summarize(label: str, raw_path: Path, top: int = 20) -> ProfileSummary:
    """Aggregate py-spy's collapsed stacks (`frame;frame;... count` per line)."""
    self_counts: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    project: Counter[str] = Counter()
    total = 0
    text = raw_path.read_text(errors="replace") if raw_path.exists() else ""
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [_parse_frame(f) for f in stack.split(";") if f]
        if not frames:
            continue
        leaf, leaf_file = frames[-1]
        if leaf_file in _ENTRY_FILES:
            leaf, leaf_file = EVENT_LOOP, ""
        self_counts[leaf] += count
        areas[_area(leaf_file) if leaf_file else EVENT_LOOP] += count
        for name, file in set(frames):
            if file not in _ENTRY_FILES:
                inclusive[name] += count
                if file.startswith(_PROJECT):
                    project[name] += count
    return ProfileSummary(
        label=label,
        samples=total,
        self_top=self_counts.most_common(top),
        inclusive_top=inclusive.most_common(top),
        project_top=project.most_common(top),
        areas=areas.most_common(),
        raw_path=raw_path,
    )


def render(profiles: Sequence[ProfileSummary]) -> list[str]:
    """Markdown for the report."""
    if not profiles:
        return []
    lines = [
        "## Profile of the gateway under load (py-spy)",
        "",
        "Sampled at 250 Hz from the load generator's core while the gateway ran the named"
        " phase again (not one of the measured phases). `self` = samples whose innermost"
        " Python frame is the function (package of that frame for the area table);"
        " `incl` = samples with the function anywhere on the stack. Collapsed stacks are"
        " next to the report (feed them to speedscope or flamegraph.pl).",
    ]
    for p in profiles:
        if p.samples == 0:
            lines += ["", f"### {p.label}: no samples (see {p.raw_path.with_suffix('.log')})"]
            continue

        def pct(n: int, total: int = p.samples) -> str:
            return f"{100 * n / total:.1f}"

        lines += ["", f"### {p.label}: {p.samples} samples, raw `{p.raw_path.name}`", ""]
        lines += ["| area (self) | % |", "|---|---|"]
        lines += [f"| {area} | {pct(n)} |" for area, n in p.areas[:12]]
        lines += ["", "| self % | function (innermost Python frame) |", "|---|---|"]
        lines += [f"| {pct(n)} | `{name}` |" for name, n in p.self_top]
        lines += ["", "| incl % | function (anywhere on the stack) |", "|---|---|"]
        lines += [f"| {pct(n)} | `{name}` |" for name, n in p.inclusive_top]
        lines += ["", "| incl % | project function (anywhere on the stack) |", "|---|---|"]
        lines += [f"| {pct(n)} | `{name}` |" for name, n in p.project_top]
    return lines


def profile_gateway(
    config: BenchConfig, stack: Stack, say: Callable[[str], None]
) -> list[ProfileSummary]:
    """Re-run the gateway's phases at the highest concurrency under py-spy (after the measured
    phases, so sampling never disturbs them)."""
    executable = pyspy()
    if executable is None:
        say("--profile: py-spy not found (pip install py-spy); skipping the profile")
        return []
    profiles = []
    concurrency = max(config.concurrency)
    for scenario in config.scenarios:
        for mode in MODES:
            key = PhaseKey(scenario, mode, concurrency, "gateway")
            raw = config.out_dir / f"profile-{scenario}-{mode}.txt"
            seconds = config.warmup_s + config.duration_s
            spy = start(
                executable,
                stack.servers["gateway"].process.pid,
                raw,
                seconds,
                config.client_cpu,
                config.profile_native,
            )
            try:
                record = run_phase(config, stack, key)
                spy.wait(timeout=seconds + 30)
            finally:
                if spy.poll() is None:
                    spy.kill()
                    spy.wait()
            label = f"{key.label} ({record.result.throughput:.0f} req/s while sampled)"
            profiles.append(summarize(label, raw))
            say(f"profiled {key.label}: {profiles[-1].samples} samples -> {raw.name}")
    return profiles
