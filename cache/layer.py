"""Decides, per request, whether to read and write the caches, and does so fail-open."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from budgets.timeline import Stage
from cache.answer_tap import AnswerTap
from cache.control import CacheControl
from cache.entry import CachedAnswer
from cache.exact import ExactCache
from cache.keys import (
    KeyContext,
    canonical,
    exact_key,
    semantic_query,
)
from cache.match_judge import MatchJudge
from cache.outcome import CacheOutcome, CachePlan, Lookup, LookupResult
from cache.semantic_defaults import looked_up
from cache.settings import CacheSettings
from cache.types import CacheUnavailable
from cache.writeback import WriteBackQueue
from core.answers import Completion
from core.breaker import CircuitBreaker
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.stages import StageName

if TYPE_CHECKING:
    from cache.semantic import SemanticCache, SemanticMatch

log = logging.getLogger("gateway.cache")

# Hears about each write-back: (monotonic start, duration in seconds, succeeded).
WriteTrace = Callable[[float, float, bool], None]


class CacheLayer:
    """Exact then semantic lookup; background write-back of complete answers."""

    def __init__(
        self,
        settings: CacheSettings,
        exact: ExactCache,
        semantic: SemanticCache | None,
        writeback: WriteBackQueue,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._exact = exact
        self._semantic = semantic
        self._writeback = writeback
        self._clock = clock
        self._background: set[asyncio.Task[SemanticMatch | None]] = set()
        self._judge = MatchJudge(semantic) if semantic is not None else None

    @property
    def writeback(self) -> WriteBackQueue:
        return self._writeback

    @property
    def semantic(self) -> SemanticCache | None:
        return self._semantic

    def breakers(self) -> list[CircuitBreaker]:
        """The circuit breakers in front of Redis (none for in-process caches)."""
        found = [self._exact.breaker]
        if self._semantic is not None:
            found.append(self._semantic.breaker)
        return [breaker for breaker in found if breaker is not None]

    def plan(
        self,
        body: ChatCompletionRequest | CompletionRequest,
        headers: Mapping[str, str],
        tenant: str,
        max_tokens_from_key: bool = False,
    ) -> CachePlan:
        """Eligibility and key, in `tenant`'s namespace; no I/O. `max_tokens_from_key`: the
        body's `max_tokens` is its API key's cap, keyed apart from a client's own."""
        settings = self._settings
        if settings.mode == "off" or not self._eligible(body):
            return CachePlan(tenant)
        control = CacheControl.parse(headers.get("cache-control"))
        read = settings.mode in ("on", "read-only") and not control.no_cache
        write = settings.mode in ("on", "write-only") and not control.no_store
        if not read and not write:
            return CachePlan(tenant)
        context = KeyContext(
            tenant=tenant,
            model_revision=settings.model_revisions.get(body.model, ""),
            answer_shape=settings.answer_shapes.get(body.model, ""),
            # An empty header is none: it must not reach entries the default version retired.
            prompt_version=headers.get("x-prompt-version") or settings.prompt_version,
            max_tokens_from_key=max_tokens_from_key,
        )
        form = canonical(body, max_tokens_from_key)
        semantic = None
        if self._semantic is not None:
            semantic = semantic_query(body, context, form)
        if semantic is not None and not looked_up(semantic.text, settings.semantic_max_chars):
            semantic = None
        return CachePlan(
            tenant,
            key=exact_key(body, context, form),
            read=read,
            write=write,
            max_age=control.max_age,
            semantic=semantic,
        )

    def _eligible(self, body: ChatCompletionRequest | CompletionRequest) -> bool:
        if body.choice_count != 1:  # n > 1, or a batch of prompts: entries hold one choice
            return False
        if not self._settings.require_reproducible:
            return True
        return body.temperature == 0 or body.seed is not None

    def now(self) -> float:
        """The cache's wall clock, which entry ages and `max-age` are measured on."""
        return self._clock()

    async def lookup_exact(
        self, plan: CachePlan, now: float, timeout_s: float | None = None
    ) -> Lookup:
        """The exact stage, its remote part within `timeout_s` if given; a failing or slow
        cache is the result `error`, never an exception."""
        assert plan.read and plan.key is not None
        try:
            answer = await self._exact.get(plan.tenant, plan.key, timeout_s)
        except CacheUnavailable as exc:
            log.debug("exact cache unavailable: %s", exc)
            return Lookup("error")
        return self._exact_found(plan, answer, now, "miss")

    async def lookup_near(self, plan: CachePlan, now: float) -> Lookup:
        """The exact stage when there is no time for it: in-process copies only, so a miss
        here is `skipped`."""
        assert plan.read and plan.key is not None
        return self._exact_found(
            plan, await self._exact.near(plan.tenant, plan.key), now, "skipped"
        )

    @staticmethod
    def _exact_found(
        plan: CachePlan, answer: CachedAnswer | None, now: float, otherwise: LookupResult
    ) -> Lookup:
        if answer is not None and (plan.max_age is None or answer.age(now) <= plan.max_age):
            return Lookup("hit", answer)
        return Lookup(otherwise)

    def wants_semantic(self, plan: CachePlan, exact: Lookup) -> bool:
        """Whether a semantic lookup is worth starting after `exact` (inline in `on` mode, off
        the request path in `shadow` mode): only after a miss.

        Not after an exact-cache failure, nor after the exact stage was skipped (its recent
        p95 did not fit the time left: the store is slow, or the request has next to no time):
        the semantic index lives in the same Redis (or, without one, in process, where only a
        spent budget skips a lookup), and an embedding costs far more than the lookup that
        failed or did not fit, so falling through would make things worse.
        """
        return (
            self._semantic is not None
            and plan.semantic is not None
            and plan.read
            and exact.result == "miss"
        )

    @property
    def shadow_only(self) -> bool:
        """Shadow mode: semantic lookups are measured, never served."""
        return self._settings.semantic == "shadow"

    def start_shadow(self, plan: CachePlan, now: float) -> asyncio.Task[SemanticMatch | None]:
        """The semantic lookup of shadow mode, off the request path: its verified match (not
        held to any error bound), None, or CacheUnavailable when the lookup failed (read it
        with `CacheOutcome.shadow_result`)."""
        task = asyncio.create_task(self._shadow_lookup(plan, now))
        self._background.add(task)
        task.add_done_callback(self._shadow_done)
        return task

    def _shadow_done(self, task: asyncio.Task[SemanticMatch | None]) -> None:
        self._background.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved: a failed lookup is a result, not a lost error
        if exc is not None and not isinstance(exc, CacheUnavailable):
            log.error("shadow semantic lookup failed", exc_info=exc)

    async def lookup_semantic(
        self, plan: CachePlan, now: float, timeout_s: float | None = None
    ) -> Lookup:
        """The semantic stage: embed, then search, within `timeout_s` if given; failures and
        overruns are the result `error`."""
        if timeout_s is None:
            return await self._lookup_semantic(plan, now)
        try:
            async with asyncio.timeout(timeout_s):
                return await self._lookup_semantic(plan, now)
        except TimeoutError:
            return Lookup("error")

    async def _lookup_semantic(self, plan: CachePlan, now: float) -> Lookup:
        assert self._semantic is not None and plan.semantic is not None
        try:
            started = time.monotonic()
            vector = await self._semantic.embed(plan.semantic.text)
            searched = time.monotonic()
            match = await self._semantic.lookup(
                plan.semantic, vector, plan.tenant, plan.max_age, now
            )
            substages = (
                Stage(StageName.EMBED.value, started, searched - started),
                Stage(StageName.SEARCH.value, searched, time.monotonic() - searched),
            )
        except CacheUnavailable as exc:
            log.debug("semantic cache unavailable: %s", exc)
            return Lookup("error")
        if match is None:
            return Lookup("miss", vector=vector, substages=substages)
        if match.withheld is not None:
            return Lookup("miss", vector=vector, substages=substages, withheld=match)
        if plan.write and plan.key is not None and match.answer.key == plan.key:
            self._restore_exact(plan.tenant, plan.key, match.answer)
        return Lookup("hit", match.answer, match.similarity, vector, substages)

    def _restore_exact(self, tenant: str, key: str, answer: CachedAnswer) -> None:
        """Queue the exact entry of a semantic hit stored for this very request (same tenant
        and exact key: serving it exactly is as correct), which the exact cache lost (a Redis
        restarted empty, or the exact write failed while the semantic one succeeded), so the
        next repeat is an exact hit. It keeps the answer's age, and so its expiry."""
        exact = CachedAnswer(answer.completion, answer.created_at)
        age_s = exact.age(self._clock())
        self._writeback.submit(lambda: self._exact.put(tenant, key, exact, age_s))

    async def _shadow_lookup(self, plan: CachePlan, now: float) -> SemanticMatch | None:
        assert self._semantic is not None and plan.semantic is not None
        vector = await self._semantic.embed(plan.semantic.text)
        return await self._semantic.lookup(
            plan.semantic, vector, plan.tenant, plan.max_age, now, bounded=False
        )

    def tap(self, outcome: CacheOutcome, trace: WriteTrace | None = None) -> AnswerTap | None:
        """What a streamed answer is fed to so that, once complete, it is written back (and
        judged in shadow mode, or against a withheld match); None when this request's answer
        is not to be kept."""
        if not outcome.plan.write and outcome.shadow is None and outcome.withheld is None:
            return None
        return AnswerTap(outcome, lambda done, completion: self.remember(done, completion, trace))

    def remember(
        self, outcome: CacheOutcome, completion: Completion, trace: WriteTrace | None = None
    ) -> None:
        """Queue the write-back of a complete answer; never blocks, never raises.

        `trace`, when given, hears when each write ran and whether it succeeded.
        """
        plan, shadow = outcome.plan, outcome.shadow
        if outcome.withheld is not None and self._judge is not None:
            self._count_withheld(self._judge.judge(outcome.withheld, completion, plan.tenant))
        if shadow is not None and self._judge is not None:
            self._judge.shadow(shadow, completion, outcome.looked_up_at, plan.tenant)
        if not plan.write or plan.key is None:
            return
        if any(choice.finish_reason not in _KEPT for choice in completion.choices):
            return
        answer = CachedAnswer(completion, self._clock())
        tenant, key = plan.tenant, plan.key
        self._writeback.submit(_traced(lambda: self._exact.put(tenant, key, answer), trace))
        semantic, query = self._semantic, plan.semantic
        if semantic is None or query is None or _agentic(completion):
            return
        if semantic.index_mismatch is None:  # a refused index is not written (warned once)
            vector = outcome.vector
            # Which request it answered exactly (built directly: `replace` costs ~8x more).
            keyed = CachedAnswer(completion, answer.created_at, key)
            write = _traced(lambda: semantic.add(query, vector, tenant, keyed), trace)
            self._writeback.submit(write)

    def _count_withheld(self, agreed: bool) -> None:
        assert self._semantic is not None
        stats = self._semantic.stats
        if agreed:
            stats.withheld_agreed += 1
        else:
            stats.withheld_disagreed += 1

    async def aclose(self, drain_timeout_s: float) -> None:
        await self._writeback.drain(drain_timeout_s)
        for task in list(self._background):
            task.cancel()
        await self._exact.aclose()
        if self._semantic is not None:
            await self._semantic.aclose()


_KEPT = frozenset(("stop", "length", "tool_calls"))


def _agentic(completion: Completion) -> bool:
    """Calls and reasoning are kept exactly only: a paraphrase never gets another's call or
    another's thinking."""
    return any(choice.tool_calls or choice.reasoning is not None for choice in completion.choices)


def _traced(
    write: Callable[[], Awaitable[None]], trace: WriteTrace | None
) -> Callable[[], Awaitable[None]]:
    if trace is None:
        return write

    async def traced() -> None:
        started = time.monotonic()
        ok = False
        try:
            await write()
            ok = True
        finally:
            trace(started, time.monotonic() - started, ok)

    return traced
