"""Environment parsing and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.settings import Settings, SettingsError


def test_defaults_mean_embedded_sim() -> None:
    """No GATEWAY_BACKENDS means the embedded stand-in."""
    settings = Settings.from_env({})
    assert settings.embedded_sim and settings.port == 8000


def test_backends_parse_models_and_replicas() -> None:
    """MODEL=URL[,URL];MODEL=URL parses into models with replicas."""
    settings = Settings.from_env(
        {"GATEWAY_BACKENDS": "llama=grpc://a:1, grpc://b:2 ; emb=http://c:3/v1/"}
    )
    assert [m.name for m in settings.models] == ["llama", "emb"]
    assert [r.url for r in settings.models[0].replicas] == ["grpc://a:1", "grpc://b:2"]
    assert settings.models[1].replicas[0].url == "http://c:3/v1"


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"GATEWAY_PORT": "http"}, "GATEWAY_PORT"),
        ({"GATEWAY_PORT": "70000"}, "GATEWAY_PORT"),
        ({"GATEWAY_BACKENDS": "llama"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_BACKENDS": "llama=ftp://x"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_BACKENDS": "a=grpc://x:1;a=grpc://y:1"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_LOG_LEVEL": "loud"}, "GATEWAY_LOG_LEVEL"),
        ({"GATEWAY_BUDGET_TOTAL_MS": "-5"}, "GATEWAY_BUDGET_TOTAL_MS"),
        ({"GATEWAY_TOKENIZER_DIRS": "nodir"}, "GATEWAY_TOKENIZER_DIRS"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], names: str) -> None:
    """Each invalid value fails with a message naming its variable."""
    with pytest.raises(SettingsError, match=names):
        Settings.from_env(env)


def test_ttft_budget_over_total_names_both() -> None:
    """A first-token budget above the total budget names both variables."""
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"GATEWAY_BUDGET_TOTAL_MS": "1000", "GATEWAY_BUDGET_TTFT_MS": "2000"})
    assert "GATEWAY_BUDGET_TTFT_MS" in str(info.value)
    assert "GATEWAY_BUDGET_TOTAL_MS" in str(info.value)


def test_tokenizer_dirs_parse() -> None:
    """GATEWAY_TOKENIZER_DIRS maps models to directories."""
    settings = Settings.from_env({"GATEWAY_TOKENIZER_DIRS": "a=/x/y;b=/z"})
    assert settings.tokenizer_dirs == {"a": Path("/x/y"), "b": Path("/z")}
