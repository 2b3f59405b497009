"""Judging semantic matches against the fresh answer: whether a shadow match (or one withheld
from serving) would have been right, for the counters and for the error bound to learn."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from cache.answer_agreement import same_text
from core.answers import Completion

if TYPE_CHECKING:
    from cache.semantic import SemanticCache, SemanticMatch


class MatchJudge:
    """Compares matched answers with fresh ones for one semantic cache."""

    def __init__(self, semantic: SemanticCache) -> None:
        self._semantic = semantic

    def shadow(
        self,
        lookup: asyncio.Task[SemanticMatch | None],
        truth: Completion,
        since: float,
        tenant: str,
    ) -> None:
        """Judge the shadow lookup's match once it is done (now, if it is).

        A match written after the lookup began is this request's own write-back: ignored.
        """
        if lookup.done():
            self._shadow_done(lookup, truth, since, tenant)
        else:
            lookup.add_done_callback(lambda task: self._shadow_done(task, truth, since, tenant))

    def _shadow_done(
        self, task: asyncio.Task[SemanticMatch | None], truth: Completion, since: float, tenant: str
    ) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        match = task.result()
        if match is None or match.answer.created_at >= since:
            return
        stats = self._semantic.stats
        stats.shadow_would_hit += 1
        if self.judge(match, truth, tenant):
            stats.shadow_agreed += 1
        else:
            stats.shadow_disagreed += 1

    def judge(self, match: SemanticMatch, truth: Completion, tenant: str) -> bool:
        """Whether `match`'s answer is the fresh one (`cache.answer_agreement`); the error
        bound (if any) learns it."""
        served = [c.text for c in match.answer.completion.choices]
        agreed = same_text(served, [c.text for c in truth.choices])
        bound = self._semantic.error_bound
        if bound is not None:
            bound.observe(tenant, match.scope, match.candidate_text, match.score, agreed)
        return agreed
