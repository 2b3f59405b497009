"""The backends layer's settings: GATEWAY_BACKENDS and the connection variables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from backends.outliers import OutlierPolicy
from backends.settings import BackendSettings
from backends.silence import HangPolicy
from core.env import SettingsError

LLAMA = {"GATEWAY_BACKENDS": "llama=grpc://a:1"}


def test_unset_backends_is_an_error_naming_the_variable() -> None:
    """No GATEWAY_BACKENDS is a configuration error, never a silent demo."""
    for env in ({}, {"GATEWAY_BACKENDS": "  "}):
        with pytest.raises(SettingsError, match="GATEWAY_BACKENDS") as info:
            BackendSettings.from_env(env)
        assert "embedded" in str(info.value)


def test_embedded_is_asked_for_explicitly() -> None:
    """GATEWAY_BACKENDS=embedded asks for the built-in stand-in and names no servers."""
    settings = BackendSettings.from_env({"GATEWAY_BACKENDS": "Embedded"})
    assert settings.embedded and settings.models == ()


def test_backends_parse_models_and_replicas() -> None:
    """MODEL=URL[,URL];MODEL=URL parses into models with replicas."""
    settings = BackendSettings.from_env(
        {"GATEWAY_BACKENDS": "llama=grpc://a:1, grpc://b:2 ; emb=http://c:3/v1/"}
    )
    assert not settings.embedded
    assert [m.name for m in settings.models] == ["llama", "emb"]
    assert [r.url for r in settings.models[0].replicas] == ["grpc://a:1", "grpc://b:2"]
    assert settings.models[1].replicas[0].url == "http://c:3/v1"


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"GATEWAY_BACKENDS": "llama"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_BACKENDS": "llama=ftp://x"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_BACKENDS": "a=grpc://x:1;a=grpc://y:1"}, "GATEWAY_BACKENDS"),
        ({"GATEWAY_BACKENDS": "a="}, "GATEWAY_BACKENDS"),
        ({**LLAMA, "GATEWAY_GRPC_CHANNELS": "0"}, "GATEWAY_GRPC_CHANNELS"),
        ({**LLAMA, "GATEWAY_HEALTH_INTERVAL_S": "x"}, "GATEWAY_HEALTH_INTERVAL_S"),
        ({**LLAMA, "GATEWAY_TOKENIZER_DIRS": "nodir"}, "GATEWAY_TOKENIZER_DIRS"),
        ({**LLAMA, "GATEWAY_TOOL_PARSERS": "llama=mystery"}, "GATEWAY_TOOL_PARSERS"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], name: str) -> None:
    """Each invalid value fails with a message naming its variable."""
    with pytest.raises(SettingsError, match=name):
        BackendSettings.from_env(env)


def _tokenizer_dir(path: Path) -> Path:
    path.mkdir()
    (path / "tokenizer.json").write_text("{}")
    return path


def test_tokenizer_dirs_parse(tmp_path: Path) -> None:
    """GATEWAY_TOKENIZER_DIRS maps models to directories."""
    two = {"GATEWAY_BACKENDS": "a=grpc://h:1;b=grpc://h:2"}
    x, z = _tokenizer_dir(tmp_path / "x"), _tokenizer_dir(tmp_path / "z")
    settings = BackendSettings.from_env({**two, "GATEWAY_TOKENIZER_DIRS": f"a={x};b={z}"})
    assert settings.tokenizer_dirs == {"a": x, "b": z}


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: p, "has no tokenizer.json"),
        (lambda p: p.joinpath("file").touch() or p / "file", "is a file"),
    ],
)
def test_a_tokenizer_dir_without_a_tokenizer_stops_the_gateway(
    tmp_path: Path, make: Callable[[Path], Path], reason: str
) -> None:
    """A missing directory, one without tokenizer.json, or a file stops startup naming the
    variable and the model, rather than leaving the model unready until a request."""
    env = {**LLAMA, "GATEWAY_TOKENIZER_DIRS": f"llama={make(tmp_path)}"}
    with pytest.raises(SettingsError, match=rf"GATEWAY_TOKENIZER_DIRS.*'llama'.*{reason}"):
        BackendSettings.from_env(env)


@pytest.mark.parametrize("under", ["", "sub"])
def test_a_tokenizer_cache_dir_at_a_file_stops_the_gateway(tmp_path: Path, under: str) -> None:
    """GATEWAY_TOKENIZER_CACHE_DIR at (or under) a file is refused naming it; blank is the
    default, never the working directory."""
    (tmp_path / "file").touch()
    env = {**LLAMA, "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "file" / under)}
    with pytest.raises(SettingsError, match="GATEWAY_TOKENIZER_CACHE_DIR must be a directory"):
        BackendSettings.from_env(env)
    blank = BackendSettings.from_env({**LLAMA, "GATEWAY_TOKENIZER_CACHE_DIR": ""})
    assert blank.tokenizer_cache_dir == BackendSettings().tokenizer_cache_dir


@pytest.mark.parametrize(
    "variable",
    ["GATEWAY_TOKENIZER_DIRS", "GATEWAY_TOOL_PARSERS", "GATEWAY_REASONING_PARSERS"],
)
def test_a_setting_for_a_model_nothing_serves_stops_the_gateway(variable: str) -> None:
    """A misspelt model in a per-model map would be ignored for good: it names the variable,
    the model and what is served."""
    value = {"GATEWAY_TOKENIZER_DIRS": "lama=/x", "GATEWAY_TOOL_PARSERS": "lama=hermes"}.get(
        variable, "lama=none"
    )
    with pytest.raises(SettingsError, match=rf"{variable} names 'lama'.*'llama'"):
        BackendSettings.from_env({**LLAMA, variable: value})


def test_tool_parsers_name_a_known_format_per_model() -> None:
    """GATEWAY_TOOL_PARSERS maps models to tool-call formats."""
    settings = BackendSettings.from_env({**LLAMA, "GATEWAY_TOOL_PARSERS": "llama=hermes"})
    assert settings.tool_parsers == {"llama": "hermes"}


@pytest.mark.parametrize(
    "setting",
    [
        {"GATEWAY_TOOL_PARSERS": "llama=hermes"},
        {"GATEWAY_REASONING_PARSERS": "llama=none"},
        {"GATEWAY_SPLIT_SPECIAL_TOKENS": "off"},
        {"GATEWAY_GENERATION_CONFIG": "vllm"},
    ],
)
def test_each_setting_that_shapes_answers_changes_the_answer_shape(setting: dict[str, str]) -> None:
    """The parsers, special tokens and sampling defaults each change a model's answer shape
    (what the cache keys by), and a per-model one only that model's."""
    two = {"GATEWAY_BACKENDS": "llama=grpc://h:1;other=grpc://h:2"}
    plain, changed = BackendSettings.from_env(two), BackendSettings.from_env({**two, **setting})
    assert changed.answer_shape("llama") != plain.answer_shape("llama")
    per_model = "GATEWAY_TOOL_PARSERS" in setting or "GATEWAY_REASONING_PARSERS" in setting
    assert (changed.answer_shape("other") == plain.answer_shape("other")) == per_model


def test_a_tokenizer_directory_changes_the_answer_shape() -> None:
    """Another tokenizer directory may hold another chat template: another shape."""
    one = BackendSettings(tokenizer_dirs={"llama": Path("/a")})
    assert one.answer_shape("llama") != BackendSettings().answer_shape("llama")
    assert one.answer_shape("llama") != BackendSettings(
        tokenizer_dirs={"llama": Path("/b")}
    ).answer_shape("llama")


def test_prefix_routing_weight_defaults_off_and_rejects_negatives() -> None:
    """GATEWAY_PREFIX_ROUTING_WEIGHT is 0 (off) unless set, and must not be negative."""
    assert BackendSettings.from_env(LLAMA).prefix_routing_weight == 0.0
    env = {**LLAMA, "GATEWAY_PREFIX_ROUTING_WEIGHT": "2.5"}
    assert BackendSettings.from_env(env).prefix_routing_weight == 2.5
    with pytest.raises(SettingsError, match="GATEWAY_PREFIX_ROUTING_WEIGHT"):
        BackendSettings.from_env({**LLAMA, "GATEWAY_PREFIX_ROUTING_WEIGHT": "-1"})


def test_outlier_detection_settings() -> None:
    """GATEWAY_OUTLIER_* set the failures in a row that eject a replica and for how long."""
    assert BackendSettings.from_env(LLAMA).outliers == OutlierPolicy(5, 30.0, 300.0)
    env = {
        **LLAMA,
        "GATEWAY_OUTLIER_FAILURES": "0",
        "GATEWAY_OUTLIER_EJECTION_S": "2",
        "GATEWAY_OUTLIER_MAX_EJECTION_S": "9",
    }
    assert BackendSettings.from_env(env).outliers == OutlierPolicy(0, 2.0, 9.0)
    with pytest.raises(SettingsError, match="GATEWAY_OUTLIER_EJECTION_S"):
        BackendSettings.from_env({**LLAMA, "GATEWAY_OUTLIER_EJECTION_S": "0"})


def test_hang_probe_settings() -> None:
    """GATEWAY_HANG_PROBE* turn the hang watch on or off and set how much silence a whole
    answer explains, within their bounds."""
    assert BackendSettings.from_env(LLAMA).hangs == HangPolicy(True, 4.0, 0.2)
    env = {
        **LLAMA,
        "GATEWAY_HANG_PROBE": "false",
        "GATEWAY_HANG_PROBE_FACTOR": "10",
        "GATEWAY_HANG_PROBE_MS_PER_TOKEN": "50",
    }
    assert BackendSettings.from_env(env).hangs == HangPolicy(False, 10.0, 0.05)
    with pytest.raises(SettingsError, match="GATEWAY_HANG_PROBE_FACTOR"):
        BackendSettings.from_env({**LLAMA, "GATEWAY_HANG_PROBE_FACTOR": "0.5"})
    with pytest.raises(SettingsError, match="GATEWAY_HANG_PROBE_MS_PER_TOKEN"):
        BackendSettings.from_env({**LLAMA, "GATEWAY_HANG_PROBE_MS_PER_TOKEN": "0"})


def test_whole_answers_are_watched_only_when_asked() -> None:
    """GATEWAY_GRPC_WATCH_WHOLE_ANSWERS is off unless set to true (it costs CPU per token)."""
    assert not BackendSettings.from_env(LLAMA).watch_whole_answers
    env = {**LLAMA, "GATEWAY_GRPC_WATCH_WHOLE_ANSWERS": "true"}
    assert BackendSettings.from_env(env).watch_whole_answers


def test_which_settings_fetch_tokenizers(tmp_path: Path) -> None:
    """A gRPC model without GATEWAY_TOKENIZER_DIRS (or the embedded demo) fetches its
    tokenizer into the cache directory; HTTP models and local tokenizers do not."""
    (tmp_path / "tokenizer.json").write_text("{}")
    local = {"GATEWAY_TOKENIZER_DIRS": f"m={tmp_path}"}
    fetches = {
        "embedded": True,
        "m=grpc://h:1": True,
        "m=grpc+dns://h:1": True,
        "m=http://h:1/v1": False,
    }
    for backends, expected in fetches.items():
        env = {"GATEWAY_BACKENDS": backends}
        assert BackendSettings.from_env(env).fetches_tokenizers is expected, backends
    assert not BackendSettings.from_env(
        {"GATEWAY_BACKENDS": "m=grpc://h:1", **local}
    ).fetches_tokenizers
    sim = {"GATEWAY_BACKENDS": "embedded", "GATEWAY_TOKENIZER_DIRS": f"sim={tmp_path}"}
    assert not BackendSettings.from_env(sim).fetches_tokenizers


def test_prompt_encoding_settings() -> None:
    """Special-token splitting and the model's sampling defaults are on unless turned off;
    a bad value names its variable."""
    settings = BackendSettings.from_env(LLAMA)
    assert settings.split_special_tokens and settings.generation_config == "auto"
    off = BackendSettings.from_env(
        {**LLAMA, "GATEWAY_SPLIT_SPECIAL_TOKENS": "off", "GATEWAY_GENERATION_CONFIG": "vllm"}
    )
    assert not off.split_special_tokens and off.generation_config == "vllm"
    for name in ("GATEWAY_SPLIT_SPECIAL_TOKENS", "GATEWAY_GENERATION_CONFIG"):
        with pytest.raises(SettingsError, match=name):
            BackendSettings.from_env({**LLAMA, name: "maybe"})
