"""The request's two optional cache stages, exact then semantic, each within its budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from budgets.deadline import Clock
from budgets.optional_stage import OptionalStage
from budgets.request_budget import RequestBudget
from budgets.settings import BudgetSettings
from cache.layer import CacheLayer
from cache.outcome import CacheOutcome, CachePlan, Lookup
from core.stages import StageName
from obs.metrics import CacheKind
from obs.request_record import RequestRecord


class CacheStages:
    """Runs a request's cache lookups. A stage whose recent p95 does not fit the time left is
    skipped up front (the exact stage still consults in-process copies); one that overruns is
    abandoned. Either way the request goes on; the outcome says what happened."""

    def __init__(self, cache: CacheLayer, budgets: BudgetSettings, clock: Clock) -> None:
        self._cache = cache
        self._exact = OptionalStage(StageName.EXACT_CACHE, budgets.exact_cache_s, clock)
        self._semantic = OptionalStage(StageName.SEMANTIC_CACHE, budgets.semantic_cache_s, clock)

    async def run(
        self, plan: CachePlan, budget: RequestBudget, record: RequestRecord
    ) -> CacheOutcome:
        cache = self._cache
        if not plan.read:
            outcome = CacheOutcome(plan)
        else:
            now = cache.now()
            exact = await self._stage(
                self._exact,
                "exact",
                budget,
                record,
                lambda time_s: cache.lookup_exact(plan, now, time_s),
                lambda: cache.lookup_near(plan, now),
            )
            if exact.result == "hit" or not cache.wants_semantic(plan, exact):
                outcome = CacheOutcome(plan, exact, looked_up_at=now)
            elif cache.shadow_only:
                shadow = cache.start_shadow(plan, now)
                outcome = CacheOutcome(plan, exact, shadow=shadow, looked_up_at=now)
                record.note_shadow(shadow, lambda: outcome.shadow_result)
            else:
                semantic = await self._stage(
                    self._semantic,
                    "semantic",
                    budget,
                    record,
                    lambda time_s: cache.lookup_semantic(plan, now, time_s),
                    None,
                )
                outcome = CacheOutcome(plan, exact, semantic, looked_up_at=now)
        record.note_cache(outcome.status, outcome.similarity, outcome.semantic)
        return outcome

    @staticmethod
    async def _stage(
        stage: OptionalStage,
        kind: CacheKind,
        budget: RequestBudget,
        record: RequestRecord,
        lookup: Callable[[float], Awaitable[Lookup]],
        when_skipped: Callable[[], Awaitable[Lookup]] | None,
    ) -> Lookup:
        """One stage within what its budget leaves. The lookup enforces that time itself
        (the Redis call's own timeout), so the stage costs no extra timer."""
        available = budget.before_first_token(stage.budget_s, stage.name).remaining()
        timeline = budget.timeline
        started = timeline.clock()
        if not stage.should_run(available):
            found = Lookup("skipped") if when_skipped is None else await when_skipped()
            timeline.record(stage.name, started)
            record.note_lookup(kind, found.result)
            return found
        found = await lookup(available)
        elapsed = timeline.record(stage.name, started)
        stage.observe(elapsed, available)
        overran = found.result == "error" and elapsed >= available
        record.note_lookup(kind, found.result, stage.name if overran else None)
        return found
