"""Access settings: off by default; a broken key set stops the gateway, naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from access.caller import key_digest
from access.key_set import key_set_entry
from access.settings import AccessSettings
from core.env import SettingsError


def test_off_without_keys() -> None:
    """No key file and no inline keys: access control is off."""
    assert not AccessSettings.from_env({}).enabled


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"GATEWAY_API_KEYS": "not json"}, "GATEWAY_API_KEYS"),
        ({"GATEWAY_API_KEYS_FILE": "/nonexistent/keys.json"}, "GATEWAY_API_KEYS_FILE"),
        ({"GATEWAY_API_KEYS_RELOAD_S": "0"}, "GATEWAY_API_KEYS_RELOAD_S"),
        ({"GATEWAY_REDIS_URL": "http://redis:6379"}, "GATEWAY_REDIS_URL"),
        ({"GATEWAY_REDIS_URL": "redis+cluster://redis:6379/3"}, "GATEWAY_REDIS_URL"),
    ],
)
def test_bad_configuration_names_the_variable(env: dict[str, str], name: str) -> None:
    """Each bad value is a SettingsError naming its variable."""
    with pytest.raises(SettingsError, match=name):
        AccessSettings.from_env(env)


def test_broken_file_at_startup_is_an_error(tmp_path: Path) -> None:
    """A key file that does not parse stops the gateway at startup (no fallback to open)."""
    path = tmp_path / "keys.json"
    path.write_text("{")
    with pytest.raises(SettingsError, match="GATEWAY_API_KEYS_FILE"):
        AccessSettings.from_env({"GATEWAY_API_KEYS_FILE": str(path)})


def test_a_key_both_inline_and_in_the_file_stops_the_gateway(tmp_path: Path) -> None:
    """One key in both sets names both variables and the key's id and name, never its secret."""
    key = "sk-gw-twice-defined-key"
    path = tmp_path / "keys.json"
    path.write_text(f"[{key_set_entry(key_digest(key), 'acme', name='acme-prod')}]")
    inline = f"[{key_set_entry(key_digest(key), 'acme', requests_per_minute=5)}]"
    with pytest.raises(SettingsError) as info:
        AccessSettings.from_env({"GATEWAY_API_KEYS": inline, "GATEWAY_API_KEYS_FILE": str(path)})
    message = str(info.value)
    assert "GATEWAY_API_KEYS_FILE" in message and "of GATEWAY_API_KEYS (" in message
    assert key_digest(key)[:12] in message and "acme-prod" in message
    assert key not in message and key_digest(key) not in message


@pytest.mark.parametrize(
    "url", ["redis://redis:6379/0", "rediss://u:p@redis:6380", "redis+cluster://node-0:6379"]
)
def test_shared_limits_take_a_single_redis_or_a_cluster(url: str) -> None:
    """Limits are shared through a single Redis or a Redis Cluster alike."""
    assert AccessSettings.from_env({"GATEWAY_REDIS_URL": f" {url} "}).redis_url == url


@pytest.mark.parametrize("inline", ["[]", '{"keys": []}'])
def test_an_empty_inline_key_set_turns_access_control_on(inline: str) -> None:
    """An inline key set with no keys is on and admits nobody, as the same set in a file."""
    settings = AccessSettings.from_env({"GATEWAY_API_KEYS": inline})
    assert settings.enabled
    assert settings.inline_keys == {}


@pytest.mark.parametrize("name", ["GATEWAY_API_KEYS", "GATEWAY_API_KEYS_FILE"])
@pytest.mark.parametrize("value", ["", "  "])
def test_a_set_but_blank_key_variable_stops_the_gateway(name: str, value: str) -> None:
    """A key variable set to blanks is an error naming it, never access control off."""
    with pytest.raises(SettingsError, match=f"{name} is set but empty"):
        AccessSettings.from_env({name: value})
