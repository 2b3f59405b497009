"""The verifier's model step: pending clauses compared by embedding, cached, fail-closed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from cache.types import CacheUnavailable, Vector
from cache.verify import ACCEPT, Verdict
from cache.verify_confirm import (
    INLINE_CHARS,
    PLAIN_SLOT_SIMILARITY,
    SLOT_SIMILARITY,
    ClauseEmbeddings,
    ModelVerifier,
    confirm,
)

TEMPLATE = (
    "You are the support assistant of an online outdoor store. Answer warmly and briefly, "
    "never invent order details, and offer a human agent when the policy does not allow a "
    "request.\n\nCustomer message: {}"
)


class Table:
    """Vectors from a table: texts in one group are identical, others orthogonal."""

    def __init__(self, groups: list[list[str]]) -> None:
        self.calls: list[str] = []
        self.fail = False
        self._group = {text: i for i, group in enumerate(groups) for text in group}

    async def embed(self, text: str) -> Vector:
        self.calls.append(text)
        if self.fail:
            raise CacheUnavailable("down")
        vector = np.zeros(8, dtype=np.float32)
        vector[self._group.get(text, 7)] = 1.0
        return vector


def _pending(*pairs: tuple[str, str]) -> Verdict:
    return Verdict(ok=False, reason="meaning", pending=pairs)


def test_alike_clauses_accept_and_unlike_keep_the_rejection() -> None:
    """Every pending pair must reach the threshold (the acceptance carries their lowest
    similarity); one unlike pair keeps the rejection."""
    table = Table([["a", "b"], ["c"], ["d"]])
    clauses = ClauseEmbeddings(table.embed)
    accepted = asyncio.run(confirm(_pending(("a", "b")), clauses, 0.8))
    assert accepted.ok and accepted.clause_similarity == pytest.approx(1.0)
    mixed = _pending(("a", "b"), ("c", "d"))
    assert asyncio.run(confirm(mixed, clauses, 0.8)) == mixed


def test_decided_verdicts_skip_the_model() -> None:
    """An acceptance, or a rejection with nothing pending, embeds nothing."""
    table = Table([])
    clauses = ClauseEmbeddings(table.embed)
    rejected = Verdict(ok=False, reason="number")
    assert asyncio.run(confirm(rejected, clauses, 0.8)) == rejected
    assert asyncio.run(confirm(ACCEPT, clauses, 0.8)) == ACCEPT
    assert table.calls == []


def test_clause_embeddings_are_cached_and_bounded() -> None:
    """A clause is embedded once while cached; the oldest entries are evicted first."""
    table = Table([["a"], ["b"], ["c"]])
    clauses = ClauseEmbeddings(table.embed, max_entries=2)
    asyncio.run(clauses.vectors(["a", "b", "a"]))
    asyncio.run(clauses.vectors(["a", "b"]))
    assert table.calls == ["a", "b"]
    asyncio.run(clauses.vectors(["c"]))
    asyncio.run(clauses.vectors(["a", "b"]))
    assert table.calls == ["a", "b", "c", "a"]  # "a" was the least recently used


def test_embedder_failure_keeps_the_rejection() -> None:
    """Without the model a pending verdict stays a rejection (fail closed)."""
    table = Table([["a", "b"]])
    table.fail = True
    verdict = _pending(("a", "b"))
    assert asyncio.run(confirm(verdict, ClauseEmbeddings(table.embed), 0.8)) == verdict


def test_model_verifier_decides_templated_prompts_and_counts() -> None:
    """A reworded slot is served when its clauses embed alike, another question is not."""
    price = "Do you price match other retailers"
    reworded = "Will you match a lower price I found at another store"
    table = Table([[price, reworded]])
    verifier = ModelVerifier(table.embed)
    query = TEMPLATE.format(price + "?")
    assert asyncio.run(verifier.verify(query, TEMPLATE.format(reworded + "?"))).ok
    other = asyncio.run(verifier.verify(query, TEMPLATE.format("Do you offer a student discount?")))
    assert other.reason == "meaning"
    snapshot = verifier.stats.snapshot()
    assert snapshot["checked"] == 2 and snapshot["passed"] == 1
    assert snapshot["rejected_meaning"] == 1


class Owned:
    """A model the verifier owns: counts its closes."""

    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_model_verifier_closes_the_model_it_owns() -> None:
    """The clause judge's own model is closed with the verifier; a shared one is not."""
    owned = Owned()
    asyncio.run(ModelVerifier(Table([]).embed, SLOT_SIMILARITY, owns=owned).aclose())
    asyncio.run(ModelVerifier(Table([]).embed).aclose())
    assert owned.closed == 1
    assert ModelVerifier(Table([]).embed).threshold == PLAIN_SLOT_SIMILARITY < SLOT_SIMILARITY


def test_model_verifier_judges_long_pairs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pair longer than `INLINE_CHARS` is judged on the verifier's thread, a short one on the
    event loop's (cheaper than the hop); once closed, a long pair finds the cache unavailable."""
    threads: list[str] = []

    def recording_verify(query: str, candidate: str, siblings: Sequence[str] = ()) -> Verdict:
        threads.append(threading.current_thread().name)
        return ACCEPT

    monkeypatch.setattr("cache.verify_confirm.verify", recording_verify)
    long = "x" * INLINE_CHARS

    async def judge() -> None:
        verifier = ModelVerifier(Table([]).embed)
        try:
            assert await verifier.verify("a", "b", ["c"]) == ACCEPT
            assert await verifier.verify(long, "b", ["c"]) == ACCEPT
        finally:
            await verifier.aclose()
        with pytest.raises(CacheUnavailable):
            await verifier.verify(long, "b")

    asyncio.run(judge())
    assert threads[0] == threading.main_thread().name
    assert threads[1].startswith("semantic-verify") and len(threads) == 2
