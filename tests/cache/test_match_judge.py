"""Judging semantic matches against fresh answers: counters and the error bound learn."""

from __future__ import annotations

import asyncio

import numpy as np

from cache.entry import CachedAnswer
from cache.error_bound import ErrorBound
from cache.match_judge import MatchJudge
from cache.semantic import SemanticCache, SemanticMatch
from cache.types import Vector
from cache.vector_index_memory import InMemoryVectorIndex
from core.answers import Choice, Completion, Usage


class _FlatEmbedder:
    dimensions = 2

    async def embed(self, text: str) -> Vector:
        return np.array([1.0, 0.0], dtype=np.float32)

    async def aclose(self) -> None:
        pass


def _semantic() -> SemanticCache:
    index = InMemoryVectorIndex(dimensions=2)
    return SemanticCache(
        _FlatEmbedder(), index, threshold=0.5, breaker=None, timeout_s=1, ttl_s=60,
        error_bound=ErrorBound(0.05),
    )  # fmt: skip


def _completion(text: str) -> Completion:
    return Completion([Choice(0, text, "stop")], Usage(1, 1))


def _match(text: str, created_at: float = 10.0) -> SemanticMatch:
    return SemanticMatch(CachedAnswer(_completion(text), created_at), 0.9, "stored?", "s", 0.9)


def test_judge_compares_the_answers_and_teaches_the_error_bound() -> None:
    """The same answer agrees, another disagrees; the bound counts both."""
    semantic = _semantic()
    judge = MatchJudge(semantic)
    assert judge.judge(_match("Paris."), _completion("Paris."), "t")
    assert not judge.judge(_match("Paris."), _completion("Rome is the capital."), "t")
    assert semantic.error_bound is not None
    estimate = semantic.error_bound.estimate()
    assert (estimate.correct, estimate.wrong) == (1, 1)


async def test_shadow_match_is_judged_when_its_lookup_finishes() -> None:
    """A pending shadow lookup is judged on completion; a match written after the lookup
    began (the request's own write-back) is ignored."""
    semantic = _semantic()
    judge = MatchJudge(semantic)
    found: asyncio.Future[SemanticMatch | None] = asyncio.get_running_loop().create_future()

    async def lookup() -> SemanticMatch | None:
        return await found

    task = asyncio.create_task(lookup())
    judge.shadow(task, _completion("Paris."), since=20.0, tenant="t")
    found.set_result(_match("Paris."))
    await task  # the judge's done callback was registered first, so it has run

    async def own_write_back() -> SemanticMatch | None:
        return _match("Rome.", created_at=25.0)

    own = asyncio.create_task(own_write_back())
    await own
    judge.shadow(own, _completion("Paris."), since=20.0, tenant="t")
    stats = semantic.stats
    assert (stats.shadow_would_hit, stats.shadow_agreed, stats.shadow_disagreed) == (1, 1, 0)
