"""The clause judge's model: the embedding model with a low-rank adapter merged into its weights.

The verifier compares the rewritten clauses of two templated prompts by their embeddings
(`cache.verify_confirm`). all-MiniLM-L6-v2 alone scores a reworded question about as close as a
different question over the same words, so the gateway ships a LoRA adapter
(`clause_adapter.npz`, trained by `python -m bench.clause_training` on
`tests/data/clause_triplets.jsonl`: requests, the same request reworded, and a different one
that shares its words) that pulls the first together and pushes the second apart. Whole
prompts are still embedded by the plain model: the adapter judges clauses only.

The merged model is an ordinary sentence-transformers directory, written once into the
embedding cache (named by the digests of model and adapter), so the ONNX export and the torch
backend load it like any other model. Merging needs numpy and safetensors only, not torch.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np

from cache.embedder_base import default_model_path
from cache.embedder_store import file_sha256, locked, model_digest
from cache.settings import CacheSettings
from core.env import SettingsError

ADAPTER_FILE = Path(__file__).with_name("clause_adapter.npz")
WEIGHTS_FILE = "model.safetensors"
MARKER_FILE = "clause_adapter.txt"
BASE_KEY = "base.sha256"
"""The adapter's entry naming the SHA-256 of the weights file it was trained on."""
_TMP_PREFIX = ".tmp-"


class AdapterMismatch(ValueError):
    """The adapter was not trained on this model's weights."""


def trained_on(adapter: Path) -> str:
    """The SHA-256 of the weights file the adapter was trained on ("" if it does not say)."""
    with np.load(adapter) as parts:
        return str(parts[BASE_KEY]) if BASE_KEY in parts.files else ""


def adapter_deltas(adapter: Path) -> dict[str, np.ndarray]:
    """Weight name -> the low-rank update (B @ A, scale included) the adapter adds to it."""
    with np.load(adapter) as parts:
        names = sorted({key.rsplit(".", 1)[0] for key in parts.files if key != BASE_KEY})
        deltas = {}
        for name in names:
            down, up = parts[f"{name}.a"], parts[f"{name}.b"]
            deltas[f"{name}.weight"] = up.astype(np.float32) @ down.astype(np.float32)
    return deltas


def merge(weights: dict[str, np.ndarray], deltas: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`weights` with every delta added; AdapterMismatch if a delta has no weight of its shape."""
    merged = dict(weights)
    for name, delta in deltas.items():
        weight = weights.get(name)
        if weight is None or weight.shape != delta.shape:
            found = "none" if weight is None else "x".join(map(str, weight.shape))
            raise AdapterMismatch(
                f"the clause adapter updates {name} ({'x'.join(map(str, delta.shape))}), "
                f"the model has {found}"
            )
        merged[name] = (weight.astype(np.float32) + delta).astype(weight.dtype)
    return merged


def clause_dir(model_dir: Path, cache_dir: Path, adapter: Path = ADAPTER_FILE) -> Path:
    """Where the merged model of `model_dir` and `adapter` lives (whether or not it exists)."""
    adapter_digest = hashlib.sha256(adapter.read_bytes()).hexdigest()
    key = hashlib.sha256(f"{model_digest(model_dir.resolve())}:{adapter_digest}".encode())
    return cache_dir / f"clause-{key.hexdigest()[:32]}"


def is_built(directory: Path) -> bool:
    """A merged model directory is published whole: its marker file is written last."""
    return (directory / MARKER_FILE).is_file()


def _check_weights(model_dir: Path, adapter: Path) -> None:
    """AdapterMismatch unless `model_dir` has the weights the adapter was trained on."""
    weights_file = model_dir / WEIGHTS_FILE
    if not weights_file.is_file():
        raise AdapterMismatch(f"{model_dir} has no {WEIGHTS_FILE} to merge the clause adapter into")
    expected, found = trained_on(adapter), file_sha256(weights_file)
    if expected and expected != found:
        raise AdapterMismatch(
            f"the clause adapter was trained on weights with SHA-256 {expected[:12]}..., "
            f"{weights_file} has {found[:12]}..."
        )


def check_fits(model_dir: Path, cache_dir: Path, adapter: Path = ADAPTER_FILE) -> None:
    """AdapterMismatch unless the merged model is built already or can be built."""
    if not is_built(clause_dir(model_dir, cache_dir, adapter)):
        _check_weights(model_dir, adapter)


def adapted_model(model_dir: Path, cache_dir: Path, adapter: Path = ADAPTER_FILE) -> Path:
    """The directory of `model_dir` with `adapter` merged, built into `cache_dir` the first time.
    Blocks for about a second (hashing and writing 90 MB): call it at startup, in a thread.

    An image may ship it prebuilt without weights, beside its ONNX export
    (deploy/image/bake_embedder.py); then `model_dir` needs no weights either."""
    model_dir = model_dir.resolve()
    final = clause_dir(model_dir, cache_dir, adapter)
    if is_built(final):
        return final  # without importing safetensors, which a serving image does not have
    _check_weights(model_dir, adapter)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with locked(cache_dir / f"{final.name}.lock"):
            if not is_built(final):  # another worker may have built it while we waited
                _build(model_dir, adapter, cache_dir, final)
    except OSError as exc:
        raise OSError(
            f"cannot build the clause judge's model in {cache_dir} ({exc}); "
            "set GATEWAY_EMBEDDING_CACHE_DIR to a writable directory"
        ) from exc
    return final


def _build(model_dir: Path, adapter: Path, cache_dir: Path, final: Path) -> None:
    """Writes the merged model into a private directory, then publishes it by renaming (the
    caller holds the lock, so leftovers of a crashed build are nobody's: they go first)."""
    from safetensors.numpy import load_file, save_file

    for stale in cache_dir.glob(f"{_TMP_PREFIX}{final.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = cache_dir / f"{_TMP_PREFIX}{final.name}-{os.getpid()}"
    try:
        shutil.copytree(model_dir, tmp, ignore=shutil.ignore_patterns(WEIGHTS_FILE))
        weights = load_file(str(model_dir / WEIGHTS_FILE))
        save_file(merge(weights, adapter_deltas(adapter)), str(tmp / WEIGHTS_FILE))
        (tmp / MARKER_FILE).write_text(f"{model_dir}\n{adapter}\n", encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def misfit(model: Path, exc: AdapterMismatch) -> SettingsError:
    """The misconfiguration, in the variables' names."""
    return SettingsError(
        f"GATEWAY_SEMANTIC_CLAUSE_ADAPTER=on needs the all-MiniLM-L6-v2 weights it was "
        f"trained on, and the model of GATEWAY_EMBEDDING_MODEL ({model}) does not fit ({exc}); "
        "set GATEWAY_SEMANTIC_CLAUSE_ADAPTER=off to compare clauses with that model itself"
    )


def check_clause_judge(settings: CacheSettings) -> None:
    """Stops a gateway whose clause judge could not be built before any worker starts
    (SettingsError naming the variables); nothing to check with the semantic cache or the
    adapter off. Hashes the model's weights once (~0.2 s)."""
    if settings.semantic == "off" or not settings.semantic_clause_adapter:
        return
    model = settings.embedding_model_path or default_model_path()
    try:
        check_fits(model.resolve(), settings.embedding_cache_dir)
    except AdapterMismatch as exc:
        raise misfit(model, exc) from exc
