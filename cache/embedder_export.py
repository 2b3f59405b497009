"""Exports a mean-pooled sentence-transformers model to ONNX, then checks it against
sentence-transformers before anything may use it.

    python -m cache.embedder_export MODEL_DIR OUT_DIR

Run by `cache.embedder_store` in a child process, so that only this process imports torch,
transformers and sentence-transformers. The graph takes `input_ids` and `attention_mask` and
returns the mean of the token embeddings over the mask, L2-normalized: sentence-transformers'
Transformer -> Pooling(mean) -> Normalize. The weights are written beside the graph
(`model.onnx.data`), which ONNX Runtime maps instead of copying.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from cache.embedder_store import META_FILE, ONNX_FILE, check_pipeline, model_digest

# The export is refused if any row's cosine similarity to sentence-transformers' is lower.
MIN_COSINE = 1.0 - 1e-5
OPSET = 17
VERIFY_TEXTS: tuple[str, ...] = (
    "How do I reset my password?",
    "I forgot my password, how can I reset it?",
    "What is the capital of Peru?",
    "Show me orders over 30 days old",
    "Wie setze ich mein Passwort zurück?",
    "東京の天気はどうですか？ 🚀",
    "",
    "   ",
    "a",
    'Refund order #48213 placed on 2024-03-07 for $129.99, shipped to "Main St".',
    " ".join(["the long question that goes on and on about invoices and refunds"] * 40),
)


def _export_graph(model_dir: Path, path: Path) -> None:
    import torch
    from transformers import AutoModel

    # Eager attention traces to plain MatMul/Softmax; the masked-attention branch is traced
    # with a padded example so that padding keeps working for any batch.
    model = AutoModel.from_pretrained(
        str(model_dir), local_files_only=True, attn_implementation="eager"
    ).eval()

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            tokens = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    ids = torch.tensor([[101, 7592, 2088, 2003, 102], [101, 7592, 102, 0, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    dynamic = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    with torch.inference_mode():
        torch.onnx.export(
            MeanPooled(),
            (ids, mask),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={**dynamic, "embedding": {0: "batch"}},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,  # the TorchScript exporter: the dynamo one needs onnxscript
        )


def _externalize(traced: Path, out: Path) -> None:
    import onnx

    graph = onnx.load(str(traced))
    onnx.save_model(
        graph,
        str(out),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=out.name + ".data",
        size_threshold=1024,
    )


def _verify(model_dir: Path, onnx_path: Path) -> dict[str, Any]:
    """Cosine similarity of each row to sentence-transformers', one text at a time and all in
    one padded batch."""
    from sentence_transformers import SentenceTransformer

    from cache.embedder_onnx import OnnxEncoder

    st = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    texts = list(VERIFY_TEXTS)
    reference = np.asarray(
        st.encode(texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True)
    )
    encoder = OnnxEncoder(model_dir, onnx_path)
    batched = encoder(texts)
    alone = np.concatenate([encoder([t]) for t in texts])
    got = np.concatenate([batched, alone])
    expected = np.concatenate([reference, reference])
    return {
        "texts": len(texts),
        "min_cosine": float((got * expected).sum(axis=1).min()),
        "max_abs_diff": float(np.abs(got - expected).max()),
    }


def export(model_dir: Path, out_dir: Path) -> dict[str, Any]:
    """Writes `model.onnx` (+ `.data`) and `export.json` into `out_dir`; ValueError when the
    export disagrees with sentence-transformers. `export.json` names the model by the digest
    of the directory exported (`source_digest`: its embedding space, wherever it is filed)."""
    check_pipeline(model_dir)
    traced = out_dir / "traced.onnx"
    _export_graph(model_dir, traced)
    _externalize(traced, out_dir / ONNX_FILE)
    traced.unlink()
    checked = _verify(model_dir, out_dir / ONNX_FILE)
    if checked["min_cosine"] < MIN_COSINE:
        raise ValueError(f"the ONNX export disagrees with sentence-transformers: {checked}")
    meta = {
        "model_dir": str(model_dir),
        "opset": OPSET,
        "source_digest": model_digest(model_dir),
        **checked,
        "versions": {p: version(p) for p in ("torch", "transformers", "onnx", "onnxruntime")},
    }
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    for written in out_dir.iterdir():
        written.chmod(0o644)  # onnx writes the weights 0600: let other users' workers read them
    return meta


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    meta = export(args.model_dir.resolve(), args.out_dir)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
