"""SentenceEmbedder: micro-batching on one worker thread, failure modes, and the real model
(on the default ONNX backend; tests/cache/test_embedder_onnx.py compares it with torch)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from cache.embedder import Matrix, SentenceEmbedder
from cache.types import CacheUnavailable

DIMS = 4
_WAIT_S = 10.0


class GatedEncoder:
    """A fake batch encoder that records its batches and can hold the first one."""

    def __init__(self, *, hold_first: bool = False, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: set[str] = set()
        self._hold = hold_first
        self._fail = fail
        if not hold_first:
            self.release.set()

    def __call__(self, texts: Sequence[str]) -> Matrix:
        self.batches.append(list(texts))
        self.threads.add(threading.current_thread().name)
        self.entered.set()
        assert self.release.wait(_WAIT_S)
        if self._fail:
            raise RuntimeError("encoder broke")
        rows = np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)
        return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


async def _let_tasks_start() -> None:
    """One loop iteration (not a timed wait): tasks created before it run up to their first
    real await, which for `embed` is after its job is queued."""
    await asyncio.sleep(0)


async def _blocked(encoder: GatedEncoder, embedder: SentenceEmbedder) -> asyncio.Task[object]:
    """Starts one embed and returns once the worker is inside the (held) encoder."""
    first = asyncio.ensure_future(embedder.embed("first"))
    assert await asyncio.to_thread(encoder.entered.wait, _WAIT_S)
    return first


async def test_concurrent_requests_share_one_batch() -> None:
    """Requests queued while a batch encodes are encoded together in the next batch."""
    encoder = GatedEncoder(hold_first=True)
    embedder = SentenceEmbedder(encoder, DIMS)
    first = await _blocked(encoder, embedder)
    rest = [asyncio.ensure_future(embedder.embed(f"text {i}")) for i in range(10)]
    await _let_tasks_start()
    encoder.release.set()
    await asyncio.gather(first, *rest)
    assert [len(b) for b in encoder.batches] == [1, 10]
    assert embedder.stats.batches == 2
    assert embedder.stats.largest_batch == 10
    assert encoder.threads == {"embedder"}
    await embedder.aclose()


async def test_results_match_their_texts() -> None:
    """Each caller gets the row of its own text, as a float32 copy."""
    embedder = SentenceEmbedder(GatedEncoder(), DIMS)
    a, b = await asyncio.gather(embedder.embed("a"), embedder.embed("bbbb"))
    assert a.dtype == np.float32
    assert a.shape == (DIMS,)
    assert not np.allclose(a, b)
    assert np.allclose(a, await embedder.embed("a"))
    await embedder.aclose()


async def test_duplicate_texts_in_a_batch_encode_once() -> None:
    """The same text requested twice in one batch is encoded once and delivered twice."""
    encoder = GatedEncoder(hold_first=True)
    embedder = SentenceEmbedder(encoder, DIMS)
    first = await _blocked(encoder, embedder)
    twins = [asyncio.ensure_future(embedder.embed("same")) for _ in range(2)]
    await _let_tasks_start()
    encoder.release.set()
    await first
    x, y = await asyncio.gather(*twins)
    assert encoder.batches[1] == ["same"]
    assert np.array_equal(x, y)
    await embedder.aclose()


async def test_alone_encodes_each_distinct_text_by_itself_and_twins_once() -> None:
    """With `alone` (int8), texts queued together encode in calls of their own, so none
    depends on another; equal ones still share one call."""
    encoder = GatedEncoder(hold_first=True)
    embedder = SentenceEmbedder(encoder, DIMS, alone=True)
    first = await _blocked(encoder, embedder)
    texts = ["same", "other", "same", "third", "same"]
    queued = [asyncio.ensure_future(embedder.embed(text)) for text in texts]
    await _let_tasks_start()
    encoder.release.set()
    await first
    rows = await asyncio.gather(*queued)
    assert encoder.batches[1:] == [["same"], ["other"], ["third"]]
    assert np.array_equal(rows[0], rows[4]) and not np.array_equal(rows[0], rows[1])
    assert (embedder.stats.batches, embedder.stats.largest_batch) == (4, 1)
    await embedder.aclose()


async def test_cancelled_requests_are_not_encoded() -> None:
    """A request cancelled while queued (its deadline passed) costs no encoding."""
    encoder = GatedEncoder(hold_first=True)
    embedder = SentenceEmbedder(encoder, DIMS)
    first = await _blocked(encoder, embedder)
    doomed = asyncio.ensure_future(embedder.embed("doomed"))
    await _let_tasks_start()
    doomed.cancel()
    await _let_tasks_start()
    encoder.release.set()
    await first
    await embedder.aclose()
    assert encoder.batches == [["first"]]
    assert embedder.stats.dropped_cancelled == 1


async def test_encoder_failure_raises_cache_unavailable() -> None:
    """An exception in the encoder reaches every caller of the batch as CacheUnavailable."""
    embedder = SentenceEmbedder(GatedEncoder(fail=True), DIMS)
    with pytest.raises(CacheUnavailable, match="encoder broke"):
        await embedder.embed("x")
    assert embedder.stats.failures == 1
    await embedder.aclose()


async def test_wrong_shape_raises_cache_unavailable() -> None:
    """An encoder returning the wrong dimensions is a failure, not a silent bad vector."""
    embedder = SentenceEmbedder(GatedEncoder(), DIMS + 1)
    with pytest.raises(CacheUnavailable, match="shape"):
        await embedder.embed("x")
    await embedder.aclose()


async def test_full_queue_fails_fast() -> None:
    """Beyond `max_pending` queued texts, embed raises at once instead of queueing."""
    encoder = GatedEncoder(hold_first=True)
    embedder = SentenceEmbedder(encoder, DIMS, max_pending=1)
    first = await _blocked(encoder, embedder)
    queued = asyncio.ensure_future(embedder.embed("queued"))
    await _let_tasks_start()
    with pytest.raises(CacheUnavailable, match="full"):
        await embedder.embed("one too many")
    assert (embedder.sample().refused, embedder.sample().queued) == (1, 1)
    encoder.release.set()
    await asyncio.gather(first, queued)
    await embedder.aclose()


async def test_a_sample_carries_the_counts_and_the_worker_name() -> None:
    """`sample()` reports what the worker counted, under its thread's name, for metrics."""
    embedder = SentenceEmbedder(GatedEncoder(), DIMS, name="clause-judge-onnx")
    await asyncio.gather(embedder.embed("a"), embedder.embed("bb"))
    await embedder.embed("ccc")
    await embedder.aclose()
    sample = embedder.sample()
    assert sample.name == "clause-judge-onnx"
    assert sample.texts == 3 and 1 <= sample.batches <= 3
    assert (sample.failures, sample.cancelled, sample.refused, sample.queued) == (0, 0, 0, 0)


async def test_aclose_finishes_queued_work_then_refuses() -> None:
    """Closing encodes what is already queued, stops the thread, and later calls fail."""
    encoder = GatedEncoder(hold_first=True)
    embedder = SentenceEmbedder(encoder, DIMS)
    first = await _blocked(encoder, embedder)
    queued = asyncio.ensure_future(embedder.embed("queued"))
    await _let_tasks_start()
    closing = asyncio.ensure_future(embedder.aclose())
    encoder.release.set()
    await asyncio.gather(first, queued, closing)
    with pytest.raises(CacheUnavailable, match="closed"):
        await embedder.embed("late")
    await embedder.aclose()  # idempotent


async def test_long_texts_are_trimmed() -> None:
    """Texts longer than `max_chars` are cut before they reach the encoder."""
    encoder = GatedEncoder()
    embedder = SentenceEmbedder(encoder, DIMS, max_chars=8)
    await embedder.embed("x" * 100)
    assert encoder.batches == [["x" * 8]]
    await embedder.aclose()


async def test_minilm_vectors_are_normalized(minilm: SentenceEmbedder) -> None:
    """The real model yields 384 float32 dimensions with unit norm."""
    vector = await minilm.embed("How do I reset my password?")
    assert minilm.dimensions == 384
    assert vector.dtype == np.float32
    assert vector.shape == (384,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4


async def test_minilm_ranks_paraphrases_above_unrelated(minilm: SentenceEmbedder) -> None:
    """A paraphrase is closer than an unrelated question."""
    q, p, u = await asyncio.gather(
        minilm.embed("How do I reset my password?"),
        minilm.embed("I forgot my password, how can I reset it?"),
        minilm.embed("What is the capital of Peru?"),
    )
    assert float(q @ p) > float(q @ u) + 0.3


async def test_minilm_batched_equals_single(minilm: SentenceEmbedder) -> None:
    """Encoding within a batch of 32 gives the same vector as encoding alone."""
    texts = [f"How do I cancel order number {i}?" for i in range(32)]
    together = await asyncio.gather(*map(minilm.embed, texts))
    alone = await minilm.embed(texts[7])
    assert np.allclose(together[7], alone, atol=1e-5)


def test_unknown_backend_is_refused() -> None:
    """A backend other than onnx or torch fails before anything is loaded."""
    with pytest.raises(ValueError, match="tensorflow"):
        SentenceEmbedder.load(backend="tensorflow")  # type: ignore[arg-type]
