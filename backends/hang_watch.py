"""Finds replicas that take whole (non-streamed) answers and never answer them, at no cost
per token: a stream's stall timer cannot see a whole answer, and streaming it on the wire to
watch it (`GATEWAY_GRPC_WATCH_WHOLE_ANSWERS`) doubles its CPU.

Each whole answer is noted on its replica while it waits (`backends.silence`). Every health
interval one sweep looks for a replica that has held one through more silence than it
explains; that replica is asked for one token (one probe per replica at a time). An answer
clears it: it is slow on that request, not hung. No answer within the request's first-token
budget, and nothing else heard from it meanwhile, finds it hung: it is ejected as an outlier
(`Outliers.hung`), and each whole answer still waiting on it fails with a retryable
`BackendError`, which the fleet retries on another replica within the request's deadline
(nothing has reached its client yet).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterable

from backends.base import (
    Backend,
    GenerationProbe,
    GenerationRequest,
    can_report_progress,
    reports_progress,
)
from backends.outliers import Outliers
from backends.outlook import Demand, output_tokens
from backends.replica import Replica
from backends.silence import HangPolicy, Waiting
from backends.whole_answer import complete_within_budget
from budgets.output_lengths import OutputLengths
from budgets.request_budget import RequestBudget
from core.answers import Completion, Endpoint
from core.backend_errors import BackendError

log = logging.getLogger("gateway.fleet")


class HangWatch:
    """The fleet's watch over its replicas' whole answers."""

    __slots__ = ("_clock", "_lengths", "_outliers", "_policy", "_probes")

    def __init__(
        self,
        policy: HangPolicy,
        outliers: Outliers,
        lengths: Callable[[str], OutputLengths],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._policy = policy
        self._outliers = outliers
        self._lengths = lengths
        self._clock = clock
        self._probes: set[asyncio.Task[None]] = set()

    @property
    def enabled(self) -> bool:
        return self._policy.enabled

    async def complete(
        self, replica: Replica, request: GenerationRequest, demand: Demand, budget: RequestBudget
    ) -> Completion:
        """`complete_within_budget` on `replica`, noted on it while it waits; a clean end is
        a sign of life. Given up because the replica was found hung: `BackendError`. An
        uncapped answer is counted token by token where the backend can, while the model's
        output lengths are in doubt (`OutputLengths.in_doubt`): its count is what they lack."""
        backend = replica.backend
        task = asyncio.current_task()
        counted = (
            demand.max_tokens is None
            and can_report_progress(backend)
            and self._lengths(replica.model).in_doubt()
        )
        if not self._policy.enabled or task is None or reports_progress(backend):
            return await complete_within_budget(backend, request, budget, counted)
        silence = replica.silence
        waiting = Waiting(task, self._clock(), demand, budget, request.endpoint)
        silence.waiting.add(waiting)
        try:
            completion = await complete_within_budget(backend, request, budget, counted)
        except asyncio.CancelledError:
            if waiting.hung is None:
                raise
            task.uncancel()
            raise BackendError(waiting.hung, replica=replica.url) from None
        finally:
            silence.waiting.discard(waiting)
        silence.heard_at = self._clock()
        return completion

    def heard(self, replica: Replica) -> None:
        """The replica answered something (a stream's first token)."""
        replica.silence.heard_at = self._clock()

    def sweep(self, replicas: Iterable[Replica]) -> None:
        """Probe each replica holding a whole answer through more silence than it explains,
        unless a probe of it is under way."""
        if not self._policy.enabled:
            return
        now = self._clock()
        for replica in replicas:
            silence = replica.silence
            if not silence.waiting or silence.probe is not None:
                continue
            suspect = silence.overdue(now, functools.partial(self._patience, replica))
            if suspect is None:
                continue
            probe = asyncio.create_task(self._probe(replica, suspect, now))
            silence.probe = probe
            self._probes.add(probe)
            probe.add_done_callback(self._probes.discard)

    async def run(self, replicas: Callable[[], Iterable[Replica]], interval_s: float) -> None:
        """Sweep every `interval_s` until cancelled."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.sweep(replicas())
            except Exception:  # the watch must never die
                log.exception("hang watch sweep failed")

    async def aclose(self) -> None:
        """Stop the probes under way."""
        probes = list(self._probes)
        for probe in probes:
            probe.cancel()
        for probe in probes:
            with contextlib.suppress(asyncio.CancelledError):
                await probe

    def _patience(self, replica: Replica, waiting: Waiting) -> float | None:
        demand = waiting.demand
        tokens = output_tokens(demand, self._lengths(replica.model))
        if tokens is None:
            return None  # no cap, no recent lengths: how long it may take is unknown
        # The whole prompt as if uncached: more patience, never less, than the replica needs.
        learned = replica.uncached_estimate.remembered(demand.prompt_tokens, tokens)
        return self._policy.patience(waiting.budget.budgets.ttft_s, learned, tokens)

    async def _probe(self, replica: Replica, suspect: Waiting, since: float) -> None:
        silence = replica.silence
        quiet = silence.quiet_s(suspect, since)
        timeout = suspect.budget.budgets.ttft_s
        log.info(
            "probing replica %s of %s: silent for %.1f s holding %d whole answers",
            replica.url,
            replica.model,
            quiet,
            len(silence.waiting),
        )
        try:
            answered = await _answers(replica.backend, suspect.endpoint, timeout)
        finally:
            silence.probe = None
        if answered:
            silence.heard_at = max(silence.heard_at, self._clock())
            return
        if silence.heard_at > since:
            return  # something else it held was answered meanwhile: busy, not hung
        reason = (
            f"silent for {quiet:.1f} s holding {len(silence.waiting)} whole answers, "
            f"and no answer to a one-token probe within {timeout:g} s"
        )
        self._outliers.hung(replica, reason)
        for waiting in list(silence.waiting):
            waiting.hung = f"hung: {reason}"
            waiting.task.cancel()


async def _answers(backend: Backend, endpoint: Endpoint, timeout: float) -> bool:
    """Whether the replica answers a one-token request within `timeout` (a backend that
    cannot send one: whether its health probe passes)."""
    if isinstance(backend, GenerationProbe):
        return await backend.probe_generation(endpoint, timeout)
    return (await backend.health(timeout)).healthy
