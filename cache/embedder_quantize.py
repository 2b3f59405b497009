"""Makes the int8 copy of an ONNX export (GATEWAY_EMBEDDING_PRECISION=int8), then checks it
against the export before anything may use it.

    python -m cache.embedder_quantize MODEL_DIR EXPORT_DIR

Run by `cache.embedder_store.ensure_int8` in a child process, so that only this process
imports `onnx` (ONNX Runtime's quantizer needs it; serving needs only ONNX Runtime). Every
MatMul's weights become int8 with one scale per output channel (one scale per tensor moved
embeddings to cosine 0.87 and is not offered); activations are quantized on the fly, the token
table stays fp32. The copy is written under a temporary name and renamed into place once it
passed, so a crash leaves no half-written copy behind.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cache.embedder_store import INT8_FILE, INT8_META_FILE, ONNX_FILE

# The copy is refused if any text's vector has a lower cosine similarity to the export's: the
# shipped model's copy measured 0.97 at worst on the check texts and the 2,887 texts of the
# labelled pairs. Checked one text at a time, as int8 is served.
INT8_MIN_COSINE = 0.95


def quantize(model_dir: Path, export_dir: Path) -> dict[str, Any]:
    """Writes `model.int8.onnx` and its check beside the export; ValueError if it disagrees."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from cache.embedder_export import VERIFY_TEXTS
    from cache.embedder_onnx import OnnxEncoder

    tmp = export_dir / f".tmp-{INT8_FILE}"
    quantize_dynamic(
        export_dir / ONNX_FILE,
        tmp,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        weight_type=QuantType.QInt8,
    )
    try:
        full = OnnxEncoder(model_dir, export_dir / ONNX_FILE)
        quantized = OnnxEncoder(model_dir, tmp)
        cosines = [float(full([t])[0] @ quantized([t])[0]) for t in VERIFY_TEXTS]
        checked = {"texts": len(cosines), "min_cosine": min(cosines)}
        if checked["min_cosine"] < INT8_MIN_COSINE:
            raise ValueError(f"the int8 copy disagrees with the ONNX export: {checked}")
        meta = export_dir / INT8_META_FILE
        meta.write_text(json.dumps(checked, indent=2) + "\n", encoding="utf-8")
        meta.chmod(0o644)
        tmp.chmod(0o644)
        tmp.rename(export_dir / INT8_FILE)
    finally:
        tmp.unlink(missing_ok=True)
    return checked


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("export_dir", type=Path)
    args = parser.parse_args(argv)
    print(json.dumps(quantize(args.model_dir.resolve(), args.export_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
