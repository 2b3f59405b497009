"""The serving side of the ONNX backend: the model's fast tokenizer and an ONNX Runtime session.

Imports onnxruntime, tokenizers and numpy only (no torch, transformers or
sentence-transformers). The exported graph already mean-pools and L2-normalizes (see
`cache.embedder_export`), so a call is: tokenize, one `session.run`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cache.embedder_base import Matrix
from cache.embedder_store import ensure_export, ensure_int8, space_of

INPUTS = ("input_ids", "attention_mask")
_DEFAULT_MAX_TOKENS = 512


def _config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def max_tokens(model_dir: Path) -> int:
    """Where sentence-transformers truncates: `max_seq_length`, else what the model allows."""
    configured = _config(model_dir / "sentence_bert_config.json").get("max_seq_length")
    if isinstance(configured, int) and configured > 0:
        return configured
    limits = [
        _config(model_dir / "config.json").get("max_position_embeddings"),
        _config(model_dir / "tokenizer_config.json").get("model_max_length"),
    ]
    return min([v for v in limits if isinstance(v, int) and v > 0] or [_DEFAULT_MAX_TOKENS])


def load_tokenizer(model_dir: Path) -> Any:
    """The model's `tokenizers` tokenizer, truncating and padding as sentence-transformers does
    (tokenizer.json files often carry a fixed padding length meant for training)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_tokens(model_dir))
    pad = _config(model_dir / "tokenizer_config.json").get("pad_token")
    pad = pad if isinstance(pad, str) else "[PAD]"
    pad_id = tokenizer.token_to_id(pad)
    if pad_id is None:
        raise ValueError(f"{model_dir}: the pad token {pad!r} is not in the vocabulary")
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad)  # to the longest text of a batch
    return tokenizer


class OnnxEncoder:
    """Texts -> L2-normalized float32 rows. Safe to call from several threads at once (ONNX
    Runtime sessions and `tokenizers` encodes are); the gateway calls it from one."""

    def __init__(
        self, model_dir: Path, onnx_path: Path, *, threads: int = 1, space: str = ""
    ) -> None:
        """`space` names the embedding space of `onnx_path` (see `embedder_store.space_of`)."""
        import onnxruntime as ort

        self.space = space

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 1: runs on the calling thread, no pool
        options.inter_op_num_threads = 1
        # The arena would keep the buffers of the largest batch ever seen (~500 MB for 64 texts
        # of 256 tokens); short queries measured no faster with it.
        options.enable_cpu_mem_arena = False
        # Spinning pool threads would take CPU from the event loop sharing their cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )
        names = tuple(i.name for i in self._session.get_inputs())
        if names != INPUTS:
            raise ValueError(f"{onnx_path} takes inputs {names}, expected {INPUTS}")
        self.dimensions = int(self._session.get_outputs()[0].shape[-1])
        self._tokenizer = load_tokenizer(model_dir)

    def __call__(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (rows,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
        return np.asarray(rows, dtype=np.float32)

    def on_worker_start(self) -> None:
        """Nothing per thread: the session's threads were set when it was created."""


def load_onnx_encoder(
    model_dir: Path, cache_dir: Path, *, threads: int = 1, precision: str = "fp32"
) -> OnnxEncoder:
    """The encoder of `model_dir` at `precision`, exporting it into `cache_dir` first if
    needed."""
    path = (
        ensure_int8(model_dir, cache_dir)
        if precision == "int8"
        else ensure_export(model_dir, cache_dir)
    )
    return OnnxEncoder(model_dir, path, threads=threads, space=space_of(path, precision))
