"""Unknown `GATEWAY_*` names stop the gateway, naming each, so a typo is never ignored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.env import SettingsError
from gateway.variables import KNOWN, check_variable_names

ROOT = Path(__file__).resolve().parents[2]


def test_every_known_name_and_other_prefixes_pass() -> None:
    """Known names, the stand-in's GATEWAY_SIM_* and non-gateway variables are accepted."""
    check_variable_names(
        {**dict.fromkeys(KNOWN, "x"), "GATEWAY_SIM_ITL_MS": "5", "OTEL_SDK_DISABLED": "true"}
    )


@pytest.mark.parametrize(
    ("name", "suggested"),
    [
        ("GATEWAY_API_KEY_FILE", "GATEWAY_API_KEYS_FILE"),
        ("GATEWAY_BUDGET_TOTAL", "GATEWAY_BUDGET_TOTAL_MS"),
        ("GATEWAY_NONSENSE", None),
    ],
)
def test_an_unknown_name_is_an_error_naming_it(name: str, suggested: str | None) -> None:
    """An unknown GATEWAY_* name stops the gateway; a near miss names the known one."""
    with pytest.raises(SettingsError, match=name) as info:
        check_variable_names({"GATEWAY_BACKENDS": "embedded", name: "x"})
    assert (suggested in str(info.value)) if suggested else "did you mean" not in str(info.value)


def test_a_removed_variable_is_named_as_removed() -> None:
    """A variable an earlier release had stops the gateway saying it was removed, and why."""
    with pytest.raises(SettingsError, match="GATEWAY_CACHE_NORMALIZE_WHITESPACE") as info:
        check_variable_names({"GATEWAY_CACHE_NORMALIZE_WHITESPACE": "true"})
    assert "removed" in str(info.value)


def test_kubernetes_service_links_are_not_typos() -> None:
    """The variables Kubernetes injects for a Service named `gateway` pass the name check."""
    check_variable_names(
        {
            "GATEWAY_SERVICE_HOST": "10.0.0.1",
            "GATEWAY_SERVICE_PORT": "80",
            "GATEWAY_SERVICE_PORT_HTTP": "80",
            "GATEWAY_PORT_80_TCP": "tcp://10.0.0.1:80",
            "GATEWAY_PORT_80_TCP_PROTO": "tcp",
            "GATEWAY_PORT_80_TCP_PORT": "80",
            "GATEWAY_PORT_80_TCP_ADDR": "10.0.0.1",
        }
    )


def test_serve_exits_2_on_a_misspelt_key_file_variable(tmp_path: Path) -> None:
    """`GATEWAY_API_KEY_FILE` (singular): exit status 2 before serving, never access off."""
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--embedded"],
        env={"PATH": "", "GATEWAY_PORT": "0", "GATEWAY_API_KEY_FILE": str(tmp_path / "k.json")},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "GATEWAY_API_KEY_FILE (did you mean GATEWAY_API_KEYS_FILE?)" in result.stderr
