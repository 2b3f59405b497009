from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.env import SettingsError
from obs.multiproc import ENV_VAR, prepare_multiprocess, sweep_dead_processes


def test_prepare_multiprocess() -> None:
    """Several workers without the variable get a fresh directory; one worker gets nothing."""
    env: dict[str, str] = {}
    assert prepare_multiprocess(1, env) is None
    assert env == {}
    path = prepare_multiprocess(2, env)
    assert path is not None and env[ENV_VAR] == path
    assert Path(path).is_dir()
    assert list(Path(path).iterdir()) == []


def test_prepare_multiprocess_clears_stale_files(tmp_path: Path) -> None:
    """A configured directory is created if needed and emptied of an earlier run's files."""
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "counter_123.db").write_bytes(b"stale")
    (directory / "keep.txt").write_text("not ours")
    env = {ENV_VAR: str(directory)}
    assert prepare_multiprocess(4, env) == str(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["keep.txt"]
    missing = tmp_path / "new"
    assert prepare_multiprocess(1, {ENV_VAR: str(missing)}) == str(missing)
    assert missing.is_dir()


def test_a_metrics_directory_at_a_file_names_the_variable(tmp_path: Path) -> None:
    """PROMETHEUS_MULTIPROC_DIR at a regular file is a SettingsError naming it, no traceback."""
    (tmp_path / "file").touch()
    with pytest.raises(SettingsError, match=f"{ENV_VAR} must be a directory"):
        prepare_multiprocess(2, {ENV_VAR: str(tmp_path / "file")})


def test_sweep_removes_only_dead_processes_live_gauges(tmp_path: Path) -> None:
    """Live gauges of exited processes are removed; counters and living processes' stay."""
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait(timeout=60)
    dead, alive = exited.pid, os.getpid()
    names = [
        f"gauge_livesum_{dead}.db",
        f"gauge_livemin_{dead}.db",
        f"counter_{dead}.db",
        f"gauge_livesum_{alive}.db",
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert sweep_dead_processes(str(tmp_path)) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([names[2], names[3]])
