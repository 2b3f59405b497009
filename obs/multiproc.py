"""Prometheus multiprocess mode for several uvicorn workers; imports nothing of prometheus_client.

prometheus_client picks its value storage when it is first imported, from
PROMETHEUS_MULTIPROC_DIR: the variable must be set before a worker imports it. uvicorn starts
workers with `spawn`, so setting it in the supervisor (the CLI) before `uvicorn.run` is
enough; this module stays importable there without fixing the mode too early.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

from core.env import SettingsError, check_dir

ENV_VAR = "PROMETHEUS_MULTIPROC_DIR"
# Files of gauges in a live* mode: a dead worker's values must stop counting.
_LIVE_GAUGE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")


def prepare_multiprocess(
    workers: int, environ: MutableMapping[str, str] | None = None
) -> str | None:
    """Call in the CLI before starting workers; returns the directory in use, if any.

    With PROMETHEUS_MULTIPROC_DIR set, its stale `*.db` files from an earlier run are removed
    (the directory is created if missing). With it unset and several workers, a fresh
    temporary directory is created, exported, and removed when this process exits.
    One worker and no variable: nothing to do (single-process metrics). A directory that
    cannot be used (a file, say) is a SettingsError naming the variable.
    """
    env = os.environ if environ is None else environ
    configured = env.get(ENV_VAR, "")
    if configured:
        path = check_dir(ENV_VAR, Path(configured))
        try:
            path.mkdir(parents=True, exist_ok=True)
            for stale in path.glob("*.db"):
                stale.unlink(missing_ok=True)
        except OSError as exc:
            raise SettingsError(
                f"{ENV_VAR}: cannot prepare {path} ({exc}); point it at a writable directory"
            ) from None
        return configured
    if workers <= 1:
        return None
    created = tempfile.mkdtemp(prefix="llm-gateway-metrics-")
    atexit.register(shutil.rmtree, created, True)
    env[ENV_VAR] = created
    return created


def sweep_dead_processes(path: str) -> list[int]:
    """Remove live-gauge files of processes that no longer exist; returns their pids.

    This is what `prometheus_client.multiprocess.mark_process_dead` does, without needing a
    hook in uvicorn's supervisor: each worker sweeps when it starts, so a worker that died
    and was replaced stops contributing in-flight, queued and state gauges. Counters and
    histograms of dead workers are kept (they are cumulative).
    """
    dead: set[int] = set()
    for entry in os.scandir(path):
        match = _LIVE_GAUGE_FILE.fullmatch(entry.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if not _alive(pid):
            Path(entry.path).unlink(missing_ok=True)
            dead.add(pid)
    return sorted(dead)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
