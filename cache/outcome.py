"""Frozen values of one request's trip through the cache: the plan decided before any I/O,
what each lookup stage found, and the outcome that the response and the write-back read."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from budgets.timeline import Stage
from cache.entry import CachedAnswer
from cache.keys import SemanticQuery
from cache.types import Vector

if TYPE_CHECKING:
    from cache.semantic import SemanticMatch

# `X-Cache`: what the cache did for the request as a whole.
CacheStatus = Literal["hit-exact", "hit-semantic", "miss", "bypass", "skipped", "error"]
# What one lookup stage did; `skipped`: not run (no time left for it), in-process copies aside.
LookupResult = Literal["hit", "miss", "skipped", "error"]


@dataclass(frozen=True, slots=True)
class CachePlan:
    """What the cache decided for one request before any I/O: its tenant, key and whether to
    read and write."""

    tenant: str
    key: str | None = None
    read: bool = False
    write: bool = False
    max_age: int | None = None
    semantic: SemanticQuery | None = None


@dataclass(frozen=True, slots=True)
class Lookup:
    """What one lookup stage found. `vector` is the query's embedding (semantic stage), which
    the write-back reuses; `substages` are the semantic stage's embed and search; `withheld`
    a verified match the error bound kept back, judged once the fresh answer is complete."""

    result: LookupResult
    answer: CachedAnswer | None = None
    similarity: float | None = None
    vector: Vector | None = None
    substages: tuple[Stage, ...] = ()
    withheld: SemanticMatch | None = None


@dataclass(frozen=True, slots=True)
class CacheOutcome:
    """Both stages of one request. `shadow` is the semantic lookup running off the request
    path in shadow mode; `looked_up_at` the wall-clock instant the lookups began."""

    plan: CachePlan
    exact: Lookup | None = None
    semantic: Lookup | None = None
    shadow: asyncio.Task[SemanticMatch | None] | None = None
    looked_up_at: float = 0.0

    @property
    def answer(self) -> CachedAnswer | None:
        for lookup in (self.exact, self.semantic):
            if lookup is not None and lookup.answer is not None:
                return lookup.answer
        return None

    @property
    def status(self) -> CacheStatus:
        if not self.plan.read:
            return "bypass"
        exact, semantic = self.exact, self.semantic
        if exact is not None and exact.result == "hit":
            return "hit-exact"
        if semantic is not None and semantic.result == "hit":
            return "hit-semantic"
        results = {lookup.result for lookup in (exact, semantic) if lookup is not None}
        if "error" in results:
            return "error"
        if "skipped" in results:
            return "skipped"
        return "miss"

    @property
    def similarity(self) -> float | None:
        return None if self.semantic is None else self.semantic.similarity

    @property
    def vector(self) -> Vector | None:
        return None if self.semantic is None else self.semantic.vector

    @property
    def withheld(self) -> SemanticMatch | None:
        return None if self.semantic is None else self.semantic.withheld

    @property
    def shadow_result(self) -> LookupResult | None:
        """What the shadow lookup found, once it is done: `hit` for a verified match written
        before this request's lookups began (what the verifier would have served), `error`
        for a failed lookup; None without one, or while it runs."""
        task = self.shadow
        if task is None or not task.done():
            return None
        if task.cancelled() or task.exception() is not None:
            return "error"
        match = task.result()
        stored_before = match is not None and match.answer.created_at < self.looked_up_at
        return "hit" if stored_before else "miss"
