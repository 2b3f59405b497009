"""GATEWAY_EMBEDDING_BACKEND, GATEWAY_EMBEDDING_PRECISION, GATEWAY_EMBEDDING_THREADS,
GATEWAY_EMBEDDING_CACHE_DIR and GATEWAY_SEMANTIC_CLAUSE_ADAPTER."""

from __future__ import annotations

from pathlib import Path

import pytest

from cache.settings import DEFAULT_EMBEDDING_CACHE_DIR, CacheSettings
from core.env import SettingsError


def test_defaults_are_onnx_on_one_thread() -> None:
    """Without variables: ONNX Runtime, one intra-op thread, the per-user cache directory."""
    settings = CacheSettings.from_env({})
    assert settings.embedding_backend == "onnx"
    assert settings.embedding_precision == "fp32"
    assert settings.embedding_threads == 1
    assert settings.embedding_cache_dir == DEFAULT_EMBEDDING_CACHE_DIR
    assert settings.semantic_clause_adapter


def test_variables_are_read() -> None:
    """Each variable sets its field; the backend name is case-insensitive."""
    settings = CacheSettings.from_env(
        {
            "GATEWAY_EMBEDDING_BACKEND": "Torch",
            "GATEWAY_EMBEDDING_THREADS": "2",
            "GATEWAY_EMBEDDING_CACHE_DIR": "/srv/embeddings",
            "GATEWAY_SEMANTIC_CLAUSE_ADAPTER": "off",
        }
    )
    assert not settings.semantic_clause_adapter
    assert settings.embedding_backend == "torch"
    assert settings.embedding_threads == 2
    assert settings.embedding_cache_dir == Path("/srv/embeddings")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GATEWAY_EMBEDDING_BACKEND", "tensorflow"),
        ("GATEWAY_EMBEDDING_PRECISION", "int4"),
        ("GATEWAY_EMBEDDING_THREADS", "0"),
        ("GATEWAY_EMBEDDING_THREADS", "many"),
        ("GATEWAY_SEMANTIC_CLAUSE_ADAPTER", "sometimes"),
    ],
)
def test_bad_values_name_their_variable(name: str, value: str) -> None:
    """A bad value fails at startup with the variable's name in the message."""
    with pytest.raises(SettingsError, match=name):
        CacheSettings.from_env({name: value})


def test_int8_is_read_and_needs_the_onnx_backend() -> None:
    """int8 runs the ONNX export's quantized copy: asked of torch, it stops the gateway naming
    both variables."""
    settings = CacheSettings.from_env({"GATEWAY_EMBEDDING_PRECISION": "INT8"})
    assert settings.embedding_precision == "int8"
    with pytest.raises(SettingsError, match="PRECISION=int8 needs GATEWAY_EMBEDDING_BACKEND=onnx"):
        CacheSettings.from_env(
            {"GATEWAY_EMBEDDING_PRECISION": "int8", "GATEWAY_EMBEDDING_BACKEND": "torch"}
        )


@pytest.mark.parametrize("name", ["GATEWAY_EMBEDDING_CACHE_DIR", "GATEWAY_EMBEDDING_MODEL"])
def test_a_directory_variable_at_a_file_stops_the_gateway(tmp_path: Path, name: str) -> None:
    """The model or ONNX export directory pointing at a regular file is refused naming the
    variable, rather than failing in each worker with a traceback."""
    (tmp_path / "file").touch()
    with pytest.raises(SettingsError, match=f"{name} must be a directory"):
        CacheSettings.from_env({name: str(tmp_path / "file")})


def test_a_missing_embedding_model_stops_the_gateway(tmp_path: Path) -> None:
    """GATEWAY_EMBEDDING_MODEL names a directory to load: a missing one is refused naming it."""
    with pytest.raises(SettingsError, match=r"GATEWAY_EMBEDDING_MODEL.*does not exist"):
        CacheSettings.from_env({"GATEWAY_EMBEDDING_MODEL": str(tmp_path / "missing")})
    assert CacheSettings.from_env({"GATEWAY_EMBEDDING_MODEL": str(tmp_path)}).embedding_model
