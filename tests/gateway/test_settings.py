"""The gateway's settings: its own variables, and each layer's read from one environment."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.settings import Settings, SettingsError
from gateway.variables import KNOWN

EMBEDDED = {"GATEWAY_BACKENDS": "embedded"}


def test_defaults_with_the_embedded_demo() -> None:
    """With only GATEWAY_BACKENDS=embedded every other setting takes its default."""
    settings = Settings.from_env(EMBEDDED)
    assert settings.backends.embedded and settings.port == 8000
    shapes = {"sim": settings.backends.answer_shape("sim")}
    default_cache = replace(Settings().cache, answer_shapes=shapes)
    assert settings.budgets == Settings().budgets and settings.cache == default_cache


def test_missing_backends_stops_the_gateway() -> None:
    """An environment without GATEWAY_BACKENDS is refused, naming the variable."""
    with pytest.raises(SettingsError, match="GATEWAY_BACKENDS"):
        Settings.from_env({"GATEWAY_PORT": "9000"})


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"GATEWAY_PORT": "http"}, "GATEWAY_PORT"),
        ({"GATEWAY_PORT": "70000"}, "GATEWAY_PORT"),
        ({"GATEWAY_LOG_LEVEL": "loud"}, "GATEWAY_LOG_LEVEL"),
        ({"GATEWAY_BUDGET_TOTAL_MS": "-5"}, "GATEWAY_BUDGET_TOTAL_MS"),
        ({"GATEWAY_BACKENDS": "llama=ftp://x"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_HOST": "bad..host"}, "GATEWAY_HOST"),
        ({"GATEWAY_HOST": "two words"}, "GATEWAY_HOST"),
        ({"GATEWAY_HOST": "999.1.1.1"}, "GATEWAY_HOST"),
        ({"GATEWAY_HOST": "10.0.0"}, "GATEWAY_HOST"),
        ({"GATEWAY_HEADER_TIMEOUT_S": "0"}, "GATEWAY_HEADER_TIMEOUT_S"),
        ({"GATEWAY_HEADER_TIMEOUT_S": "inf"}, "GATEWAY_HEADER_TIMEOUT_S"),
        ({"GATEWAY_MAX_CONNECTIONS": "0"}, "GATEWAY_MAX_CONNECTIONS"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], name: str) -> None:
    """Each invalid value fails with a message naming its variable."""
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({**EMBEDDED, **env})


def test_ttft_budget_over_total_names_both() -> None:
    """A first-token budget above the total budget names both variables."""
    with pytest.raises(SettingsError) as info:
        Settings.from_env(
            {**EMBEDDED, "GATEWAY_BUDGET_TOTAL_MS": "1000", "GATEWAY_BUDGET_TTFT_MS": "2000"}
        )
    assert "GATEWAY_BUDGET_TTFT_MS" in str(info.value)
    assert "GATEWAY_BUDGET_TOTAL_MS" in str(info.value)


@pytest.mark.parametrize("host", ["", "  "])
def test_blank_host_listens_on_loopback(host: str) -> None:
    """An empty GATEWAY_HOST means the default 127.0.0.1, never every interface."""
    assert Settings.from_env({**EMBEDDED, "GATEWAY_HOST": host}).host == "127.0.0.1"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "localhost", "gateway.svc.cluster.local"])
def test_addresses_and_host_names_are_listen_hosts(host: str) -> None:
    """IPv4, IPv6 and host names are accepted as they are."""
    assert Settings.from_env({**EMBEDDED, "GATEWAY_HOST": host}).host == host


def test_a_revision_for_a_model_nothing_serves_stops_the_gateway() -> None:
    """GATEWAY_MODEL_REVISIONS keys the cache by a served model or a route's public name; a
    misspelt one would leave that model's entries keyed by no revision, silently."""
    routed = {
        "GATEWAY_BACKENDS": "llama-v2=grpc://h:1",
        "GATEWAY_MODEL_ROUTES": "llama=llama-v2:100",
    }
    settings = Settings.from_env({**routed, "GATEWAY_MODEL_REVISIONS": "llama=r1;llama-v2=r2"})
    assert settings.cache.model_revisions == {"llama": "r1", "llama-v2": "r2"}
    with pytest.raises(SettingsError, match="GATEWAY_MODEL_REVISIONS names 'lama'"):
        Settings.from_env({**EMBEDDED, "GATEWAY_MODEL_REVISIONS": "lama=r1"})


def test_the_cache_keys_each_models_answer_shape() -> None:
    """Every served model, a route's public name included, has its settings' answer shape in
    the cache settings, so answers made under other parsers or special-token settings (an
    earlier run, another replica on the same Redis) never serve."""
    routed = {
        "GATEWAY_BACKENDS": "llama-v2=grpc://h:1",
        "GATEWAY_MODEL_ROUTES": "llama=llama-v2:100",
    }
    settings = Settings.from_env(routed)
    shapes = settings.cache.answer_shapes
    assert set(shapes) == {"llama", "llama-v2"}
    assert shapes["llama-v2"] == settings.backends.answer_shape("llama-v2")
    split_off = Settings.from_env({**routed, "GATEWAY_SPLIT_SPECIAL_TOKENS": "off"})
    assert split_off.cache.answer_shapes["llama-v2"] != shapes["llama-v2"]


def test_a_service_link_in_gateway_port_is_refused_with_the_way_out() -> None:
    """GATEWAY_PORT=tcp://... comes from a Service named `gateway`: the error says so."""
    with pytest.raises(SettingsError, match="enableServiceLinks: false"):
        Settings.from_env({**EMBEDDED, "GATEWAY_PORT": "tcp://10.0.0.1:80"})


NOT_NUMBERS = {  # free text, names and paths, where a huge number is a legal value
    "GATEWAY_HOST",
    "GATEWAY_SYSTEM_FINGERPRINT",
    "GATEWAY_PROMPT_VERSION",
    "GATEWAY_SEMANTIC_INDEX",
    "GATEWAY_TOKENIZER_CACHE_DIR",
    "GATEWAY_EMBEDDING_CACHE_DIR",
    "GATEWAY_LOG_FORMAT",  # read by obs.logs
    "GATEWAY_TRACE_CONTENT",  # read by obs.tracing_config
}
DRAIN = {"GATEWAY_DRAIN_DELAY_S", "GATEWAY_SHUTDOWN_GRACE_S"}  # DrainSettings: test_drain


@pytest.mark.parametrize("name", sorted(KNOWN - NOT_NUMBERS - DRAIN))
def test_no_variable_takes_an_absurdly_large_number(name: str) -> None:
    """10**17 (seconds, bytes, entries, ...) is refused naming the variable: every number has
    an upper bound, so none overflows a timer or makes the gateway useless."""
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({**EMBEDDED, name: str(10**17)})


def test_a_huge_health_interval_states_the_range() -> None:
    """GATEWAY_HEALTH_INTERVAL_S=1e300 is refused with its range, not accepted."""
    expected = r"GATEWAY_HEALTH_INTERVAL_S must be between 0\.05 and 3600,"
    with pytest.raises(SettingsError, match=expected):
        Settings.from_env({**EMBEDDED, "GATEWAY_HEALTH_INTERVAL_S": "1e300"})


@pytest.mark.parametrize("semantic", ["on", "shadow"])
def test_the_semantic_cache_with_the_cache_off_names_both(semantic: str) -> None:
    """GATEWAY_CACHE=off turns every lookup off: a semantic cache beside it would be loaded and
    never used, so the pair stops the gateway naming both variables."""
    env = {**EMBEDDED, "GATEWAY_CACHE": "off", "GATEWAY_SEMANTIC_CACHE": semantic}
    with pytest.raises(SettingsError) as info:
        Settings.from_env(env)
    assert f"GATEWAY_SEMANTIC_CACHE={semantic}" in str(info.value)
    assert "GATEWAY_CACHE=off" in str(info.value)
    for mode in ("read-only", "write-only"):
        assert Settings.from_env({**env, "GATEWAY_CACHE": mode}).cache.semantic == semantic
