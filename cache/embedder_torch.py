"""The torch backend: sentence-transformers itself (GATEWAY_EMBEDDING_BACKEND=torch).

Any sentence-transformers model works here; importing it costs 6-8 s and ~400 MB per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cache.embedder_base import Matrix
from cache.embedder_store import model_digest


class TorchEncoder:
    """Texts -> L2-normalized float32 rows through `SentenceTransformer.encode`."""

    def __init__(self, model_dir: Path, *, threads: int = 1) -> None:
        # Imported here: seconds of import time, paid only when this backend is chosen.
        import torch
        from sentence_transformers import SentenceTransformer

        self._torch: Any = torch
        self._threads = threads
        self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        dimensions = self._model.get_embedding_dimension()
        if dimensions is None:
            raise ValueError(f"model {str(model_dir)!r} does not report its embedding dimension")
        self.dimensions = int(dimensions)
        self.space = model_digest(model_dir)[:32]  # the ONNX export's space (the same vectors)

    def __call__(self, texts: Sequence[str]) -> Matrix:
        with self._torch.inference_mode():
            out: Any = self._model.encode(
                list(texts),
                batch_size=max(len(texts), 1),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)

    def on_worker_start(self) -> None:
        """torch's thread count is per thread under OpenMP: set it where we encode."""
        self._torch.set_num_threads(self._threads)
