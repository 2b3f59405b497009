"""Which replica a request goes to: the one predicted to reach the request's goal soonest,
or with prefix-aware routing the least loaded net of the prompt it already holds; new
replicas ramp up (slow start), and ties rotate."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Sequence

from backends.base import GenerationRequest
from backends.outlook import Demand, Outlook
from backends.prefix.blocks import block_keys
from backends.prefix.prompt import PromptBlocks
from backends.prefix.source import PrefixSource
from backends.replica import Replica
from backends.slow_start import ramped
from budgets.priority import Priority
from budgets.recent import RecentQuantile
from budgets.request_budget import RequestBudget
from core.errors import BackendError, NoHealthyBackend


class ReplicaChoice:
    """Chooses among a model's replicas, and keeps the recent output lengths per model that
    its predictions use."""

    def __init__(
        self,
        *,
        output_quantile: float,
        slow_start_s: float = 0.0,
        prefix_weight: float = 0.0,
        health_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        chance: Callable[[], float] = random.random,
    ) -> None:
        self._quantile = output_quantile
        # With no healthy replica the next health probe is the soonest one can come back.
        self._no_replica_retry_s = health_interval_s
        self._slow_start_s = slow_start_s
        self._prefix_weight = prefix_weight
        self._clock = clock
        self._chance = chance
        # Output lengths of requests without a cap, per model (the replicas share a workload).
        self._lengths: dict[str, RecentQuantile] = {}
        self._tiebreak = itertools.count()

    def lengths(self, model: str) -> RecentQuantile:
        """The recent output lengths of `model`'s requests that set no cap."""
        lengths = self._lengths.get(model)
        if lengths is None:
            lengths = self._lengths[model] = RecentQuantile(self._quantile)
        return lengths

    def pick(
        self,
        replicas: Sequence[Replica],
        model: str,
        exclude: Sequence[Replica] = (),
        priority: Priority = "interactive",
        demand: Demand | None = None,
        budget: RequestBudget | None = None,
        prefix: PromptBlocks | None = None,
    ) -> Replica:
        """The healthy replica of `replicas` (`model`'s), not ejected as an outlier, predicted
        to reach the request's goal soonest (queue wait plus service time), then the least
        load; ties rotate so equal replicas share work.

        With the prompt's blocks (`prefix`, prefix-aware routing on) the least load net of the
        cached share of the prompt comes first: load minus `prefix_weight` times the fraction
        of the prompt's blocks the replica holds, then the prediction."""
        now = self._clock()
        candidates = [r for r in replicas if r.routable(now) and r not in exclude]
        if not candidates:
            # Outlier ejection never takes a model's last replica, but probes may eject the
            # rest meanwhile: then a replica that keeps failing beats none.
            candidates = [r for r in replicas if r.healthy and r not in exclude]
            if not candidates:
                raise NoHealthyBackend(
                    f"No healthy backend for model {model!r}.",
                    retry_after_s=self._no_replica_retry_s,
                )
        if len(candidates) > 1:
            # A replica that refused work for lack of room gets none until its Retry-After
            # has passed, while another can take it.
            rested = [r for r in candidates if r.resting_until <= now]
            candidates = rested or candidates
        if self._slow_start_s > 0 and len(candidates) > 1:
            candidates = ramped(candidates, now, self._slow_start_s, self._chance)
        if len(candidates) == 1:
            return candidates[0]
        turn = next(self._tiebreak)
        n = len(candidates)
        service = self._service_times(candidates, demand, budget)
        if prefix is not None:
            weight = self._prefix_weight
            return min(
                candidates,
                key=lambda r: (
                    r.load_score() - weight * prefix.cached_share(r.prefix, now),
                    r.admission.predicted_wait(priority) + service[r],
                    (candidates.index(r) - turn) % n,
                ),
            )
        return min(
            candidates,
            key=lambda r: (
                r.admission.predicted_wait(priority) + service[r],
                r.load_score(),
                (candidates.index(r) - turn) % n,
            ),
        )

    def outlook(self, replica: Replica, demand: Demand, budget: RequestBudget) -> Outlook:
        """What `replica` is predicted to deliver for `demand` within `budget`."""
        return Outlook(replica.estimate, self.lengths(replica.model), demand, budget)

    def _service_times(
        self, candidates: Sequence[Replica], demand: Demand | None, budget: RequestBudget | None
    ) -> dict[Replica, float]:
        """The predicted time to the request's binding deadline on each candidate. A replica
        with no history yet (just started, or back from a restart) is taken to be as fast as
        the fastest known one, not infinitely fast: else every request would go to it, at
        any load, until its first one ended."""
        if demand is None or budget is None:
            return dict.fromkeys(candidates, 0.0)
        predicted: dict[Replica, float | None] = {}
        for replica in candidates:
            target = self.outlook(replica, demand, budget).binding()
            predicted[replica] = None if target is None else target.predicted_s
        known = [s for s in predicted.values() if s is not None]
        fill = min(known, default=0.0)
        return {r: fill if s is None else s for r, s in predicted.items()}

    async def prompt_blocks(
        self, replicas: Sequence[Replica], request: GenerationRequest
    ) -> PromptBlocks | None:
        """The prompt's block keys at each block size the model's `replicas` report, or None
        when prefix-aware routing is off or none of them publishes KV events."""
        if self._prefix_weight <= 0:
            return None
        sizes = {r.prefix.block_size for r in replicas if r.prefix.ready}
        if not sizes:
            return None
        source = next(
            (r.backend for r in replicas if r.healthy and isinstance(r.backend, PrefixSource)),
            None,
        )
        if source is None:
            return None
        try:
            ids = await source.prompt_ids(request)
        except BackendError:
            return None
        return PromptBlocks({size: block_keys(ids, size) for size in sizes})
