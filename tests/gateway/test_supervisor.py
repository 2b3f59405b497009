from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.exit_app import LINES

ROOT = Path(__file__).resolve().parents[2]

_SERVE = """
import sys
from gateway import supervisor
from obs.logs import logging_config
supervisor.run(
    "tests.support.exit_app:app",
    stop_within_s=60.0,
    reread_keys_on_hup=False,
    host="127.0.0.1",
    port=0,
    workers=int(sys.argv[1]),
    log_config=logging_config("info", "json"),
    lifespan="on",
    timeout_graceful_shutdown=30,
)
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_loses_no_log_line(tmp_path: Path, workers: int) -> None:
    """After a SIGTERM every line logged during the shutdown reaches stderr, uvicorn's last
    ones too, in each worker: uvicorn re-raises the signal, and dying of it skips atexit."""
    started = tmp_path / "started"
    started.mkdir()
    err = tmp_path / "stderr"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EXIT_APP_DIR": str(started)}
    env["EXIT_APP_WORKERS"] = str(workers)
    with err.open("w") as stderr:
        result = subprocess.run(
            [sys.executable, "-c", _SERVE, str(workers)],
            stderr=stderr,
            timeout=120,
            cwd=ROOT,
            env=env,
            check=False,
        )
    text = err.read_text()
    assert result.returncode == (-signal.SIGTERM if workers == 1 else 0), text[-2000:]
    assert text.count('"line":') == LINES * workers
    assert text.count("Finished server process") == workers


_SERVE_GATEWAY = """
import sys
from gateway import supervisor
from obs.logs import logging_config
supervisor.run(
    "gateway.app:create_app_from_env",
    factory=True,
    stop_within_s=5.0,
    reread_keys_on_hup=False,
    host="127.0.0.1",
    port=0,
    workers=int(sys.argv[1]),
    log_config=logging_config("info", "json"),
    lifespan="on",
)
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_with_invalid_settings_stops_the_gateway(tmp_path: Path, workers: int) -> None:
    """A worker that finds its settings invalid (here: no GATEWAY_BACKENDS, which `gateway
    serve` would have refused) exits as a failed startup naming the variable: the supervisor
    stops with status 3 rather than restarting it forever, and no traceback is printed."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    try:
        result = subprocess.run(
            [sys.executable, "-c", _SERVE_GATEWAY, str(workers)],
            capture_output=True,
            text=True,
            timeout=90,
            cwd=ROOT,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:  # the subprocess is killed by `run`
        pytest.fail(f"the supervisor kept restarting the worker: {str(exc.stderr)[-2000:]}")
    assert result.returncode == 3, result.stderr[-2000:]
    assert "invalid configuration: GATEWAY_BACKENDS is not set" in result.stderr
    assert "Traceback" not in result.stderr


_HOLD_THEN_LOG = """
import logging.config, os, signal, time
import numpy  # its OpenBLAS thread starts here, blocking no signal
from access import sighup
from gateway import supervisor
from obs.logs import logging_config
supervisor.hold_sighup(True)
logging.config.dictConfig(logging_config("info", "json"))  # starts the log writer thread
assert len(os.listdir("/proc/self/task")) > 2
for _ in range(20):
    os.kill(os.getpid(), signal.SIGHUP)
deadline = time.monotonic() + 30
while not (sighup.take() or signal.SIGHUP in signal.sigpending()):
    assert time.monotonic() < deadline
    time.sleep(0.01)
print("alive")
"""


def test_a_sighup_held_kills_no_thread() -> None:
    """With a key file, a SIGHUP before the key registry handles it is held (`gateway serve`
    holds it before logging starts its thread): whichever thread it reaches, numpy's native
    one included, it is remembered or left pending, never the process's end."""
    result = subprocess.run(
        [sys.executable, "-c", _HOLD_THEN_LOG],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip() == "alive", result.stderr[-2000:]
