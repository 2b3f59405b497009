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

from cache.embedder_store import locked, model_digest

ADAPTER_FILE = Path(__file__).with_name("clause_adapter.npz")
WEIGHTS_FILE = "model.safetensors"
MARKER_FILE = "clause_adapter.txt"
_TMP_PREFIX = ".tmp-"


class AdapterMismatch(ValueError):
    """The adapter was not trained on this model's weights."""


def adapter_deltas(adapter: Path) -> dict[str, np.ndarray]:
    """Weight name -> the low-rank update (B @ A, scale included) the adapter adds to it."""
    with np.load(adapter) as parts:
        names = sorted({key.rsplit(".", 1)[0] for key in parts.files})
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


def adapted_model(model_dir: Path, cache_dir: Path, adapter: Path = ADAPTER_FILE) -> Path:
    """The directory of `model_dir` with `adapter` merged, built into `cache_dir` the first time.
    Blocks for about a second (hashing and writing 90 MB): call it at startup, in a thread.

    An image may ship it prebuilt without weights, beside its ONNX export
    (deploy/image/bake_embedder.py); then `model_dir` needs no weights either."""
    model_dir = model_dir.resolve()
    final = clause_dir(model_dir, cache_dir, adapter)
    if is_built(final):
        return final  # without importing safetensors, which a serving image does not have
    from safetensors.numpy import load_file, save_file

    if not (model_dir / WEIGHTS_FILE).is_file():
        raise AdapterMismatch(f"{model_dir} has no {WEIGHTS_FILE} to merge the clause adapter into")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with locked(cache_dir / f"{final.name}.lock"):
        if is_built(final):  # another worker built it while we waited
            return final
        tmp = cache_dir / f"{_TMP_PREFIX}{final.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            shutil.copytree(model_dir, tmp, ignore=shutil.ignore_patterns(WEIGHTS_FILE))
            weights = load_file(str(model_dir / WEIGHTS_FILE))
            save_file(merge(weights, adapter_deltas(adapter)), str(tmp / WEIGHTS_FILE))
            (tmp / MARKER_FILE).write_text(f"{model_dir}\n{adapter}\n", encoding="utf-8")
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final
