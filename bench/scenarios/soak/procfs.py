"""A process tree read from /proc: the gateway's supervisor and every descendant (uvicorn
workers, multiprocessing's helpers), each one's role, RSS (and its anonymous part), open
descriptors (by kind) and threads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.scenarios.soak.fdkinds import fd_kinds, tcp_sockets

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessSample:
    """One process at one instant. `rss_kib` from VmRSS; `fds` entries of /proc/PID/fd."""

    pid: int
    role: str  # "parent", "worker" or "helper"
    rss_kib: int
    fds: int
    threads: int
    rss_anon_kib: int = 0  # RssAnon: the heap and other private memory
    fd_kinds: dict[str, int] = field(default_factory=dict)  # see fdkinds


def _ppid(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def descendants(root: int) -> list[int]:
    """`root` and every process below it, parents before children."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            parent = _ppid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [root]
    while queue:
        pid = queue.pop(0)
        found.append(pid)
        queue.extend(sorted(children.get(pid, ())))
    return found


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "parent"
    try:
        cmdline = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return "helper"
    if b"resource_tracker" in cmdline or b"forkserver" in cmdline:
        return "helper"
    return "worker" if b"spawn_main" in cmdline else "helper"


def _status(pid: int) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (PROC / str(pid) / "status").read_text().splitlines():
        name, _, value = line.partition(":")
        values[name] = value.strip()
    return values


def _kib(status: Mapping[str, str], name: str) -> int:
    return int(status.get(name, "0 kB").split()[0])


def sample_process(
    pid: int, root: int, sockets: Mapping[str, tuple[int, int, str]], peers: Mapping[int, str],
    own_port: int,
) -> ProcessSample | None:  # fmt: skip
    """The process's figures now; None when it is gone."""
    try:
        status = _status(pid)
    except (OSError, ValueError):
        return None
    kinds = fd_kinds(pid, sockets, peers, own_port)
    if not kinds:
        return None
    return ProcessSample(
        pid,
        _role(pid, root),
        _kib(status, "VmRSS"),
        sum(kinds.values()),
        int(status.get("Threads", "0")),
        _kib(status, "RssAnon"),
        kinds,
    )


def sample_tree(root: int, peers: Mapping[int, str], own_port: int) -> list[ProcessSample]:
    """Every live process of the tree under `root`; `peers` names the ports at the other end
    of its sockets (Redis, the replicas), `own_port` is where its clients connect."""
    sockets = tcp_sockets()
    found = (sample_process(pid, root, sockets, peers, own_port) for pid in descendants(root))
    return [s for s in found if s is not None]
