"""Which replica a request goes to: the one where it is expected to finish soonest (its wait
for a slot, then its service time stretched by the batch it joins), or with prefix-aware
routing the least loaded net of the prompt it already holds; replicas many times slower than
the fastest are left out, new ones ramp up (slow start), ties rotate."""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from backends.base import GenerationRequest
from backends.outlook import Demand, Outlook, output_tokens
from backends.prefix.blocks import block_keys
from backends.prefix.prompt import PromptBlocks
from backends.prefix.source import PrefixSource
from backends.replica import Replica
from backends.slow_start import ramped
from budgets.output_lengths import OutputLengths
from budgets.priority import Priority
from budgets.request_budget import RequestBudget
from core.backend_errors import BackendError, NoHealthyBackend
from core.errors import ContextLengthExceeded

# Predictions within this fraction of the fastest count as the fastest: identical replicas'
# estimates differ by noise, and their load must decide between them.
EQUAL_WITHIN = 0.25
# A replica predicted to take more than this many times as long as the fastest is left out
# while the others can take the request (a slower kind of GPU, or one degraded): however
# many requests the others hold, each is served sooner there.
SLOWER_BEYOND = 2.0
# Seconds added to every prediction: with none (or all near zero), load alone decides.
FLOOR_S = 0.001


@dataclass(frozen=True, slots=True)
class Choice:
    """The replica a request goes to, and the share of its prompt that replica holds or is
    sent (None: not known, its KV events not followed), as routing found it."""

    replica: Replica
    cached_share: float | None = None


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
        self._lengths: dict[str, OutputLengths] = {}
        self._tiebreak = itertools.count()

    def lengths(self, model: str) -> OutputLengths:
        """The recent output lengths of `model`'s requests that set no cap."""
        lengths = self._lengths.get(model)
        if lengths is None:
            lengths = self._lengths[model] = OutputLengths(self._quantile, self._clock)
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
        """The replica `choose` chooses."""
        return self.choose(replicas, model, exclude, priority, demand, budget, prefix).replica

    def choose(
        self,
        replicas: Sequence[Replica],
        model: str,
        exclude: Sequence[Replica] = (),
        priority: Priority = "interactive",
        demand: Demand | None = None,
        budget: RequestBudget | None = None,
        prefix: PromptBlocks | None = None,
    ) -> Choice:
        """The healthy replica of `replicas` (`model`'s), not ejected as an outlier, to send a
        request to, with the cached share of its prompt there (admission's to reuse).

        Each is predicted a completion time (`_completion`): its wait for a slot, then its
        service time (`_service_times`; within `EQUAL_WITHIN` of the fastest it counts as the
        fastest, since identical replicas' estimates differ by noise) stretched by its load
        over its slots. One predicted to take more than `SLOWER_BEYOND` times as long as the
        fastest is left out; of the rest the soonest wins, and ties rotate.

        With the prompt's blocks (`prefix`, prefix-aware routing on) the least load net of the
        cached share of the prompt wins instead (load minus `prefix_weight` times the fraction
        of the prompt's blocks the replica holds), then the prediction: affinity never draws
        a prompt to a replica many times slower."""
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
            only = candidates[0]
            if prefix is None or not only.prefix.live:
                return Choice(only)
            return Choice(only, prefix.cached_share(only.prefix, now))
        shares = (
            None if prefix is None else [prefix.cached_share(r.prefix, now) for r in candidates]
        )
        predicted = self._service_times(candidates, model, demand, budget, shares)
        known = predicted is not None
        if predicted is None:
            # Nothing measured: every replica serves a request in one (nominal) unit.
            predicted = [1.0] * len(candidates)
        service_floor = min(predicted)
        equal = service_floor * (1.0 + EQUAL_WITHIN)
        for i, replica in enumerate(candidates):
            service = predicted[i]
            if service <= equal:
                service = service_floor
            predicted[i] = _completion(replica, service + FLOOR_S, priority, known)
        within = min(predicted) * SLOWER_BEYOND
        weight = self._prefix_weight
        turn = next(self._tiebreak)
        n = len(candidates)
        chosen, best, second, chosen_turn = 0, math.inf, math.inf, n
        for i, replica in enumerate(candidates):
            seconds = predicted[i]
            if seconds > within:
                continue  # many times slower: load and a cached prefix cannot make up for it
            if shares is None:
                score, then = seconds, 0.0  # where it is expected to finish soonest
            else:
                score, then = replica.load_score() - weight * shares[i], seconds
            order = (i - turn) % n
            if (score, then, order) < (best, second, chosen_turn):
                chosen, best, second, chosen_turn = i, score, then, order
        replica = candidates[chosen]
        if shares is None or not replica.prefix.live:
            return Choice(replica)
        return Choice(replica, shares[chosen])

    def outlook(
        self,
        replica: Replica,
        demand: Demand,
        budget: RequestBudget,
        cached_share: float | None = None,
    ) -> Outlook:
        """What `replica` is predicted to deliver for `demand` within `budget`: by the
        estimate routing compares it by, for the part of the prompt not cached there (the
        `cached_share` routing found, else the share its cache has lately served)."""
        share = replica.recent_cached_share if cached_share is None else cached_share
        prompt = None if share is None else demand.uncached_part(share)
        return Outlook(
            replica.uncached_estimate,
            self.lengths(replica.model),
            demand,
            budget,
            prompt,
            replica.engine_backlog,
        )

    def _service_times(
        self,
        candidates: Sequence[Replica],
        model: str,
        demand: Demand | None,
        budget: RequestBudget | None,
        shares: Sequence[float] | None,
    ) -> list[float] | None:
        """Each candidate's expected time to the request's binding deadline (the one with
        the least to spare), from the line its estimate over uncached prompt tokens fitted,
        all for the same work: the prompt less the most of it any candidate holds (`shares`,
        with prefix-aware routing). How fast each is, then, whatever share of its recent
        prompts it happened to hold; what a cached prompt is worth is the prefix weight's.

        Each line is shrunk toward the fastest one by how little recent evidence stands
        behind it (`w / (w + 1)` of the gap is kept, w its observations, fading by count and
        time). A replica with no history yet counts as fast as the fastest, not infinitely
        fast (else every request would go to it until its first one ended); one avoided for
        being slow, or measured under a burst that has passed, drifts back within reach and
        is tried again, and the requests it then serves decide. None when no candidate
        has a line yet (or the demand is not known)."""
        if demand is None or budget is None:
            return None
        prompt, stream = demand.prompt_tokens, demand.stream
        if shares:
            prompt = round(prompt * (1.0 - max(shares)))
        tokens = output_tokens(demand, self.lengths(model))
        total_left = budget.total.remaining()
        first_left = budget.first_token.remaining()
        known: list[float | None] = []
        fastest = math.inf
        for replica in candidates:
            estimate = replica.uncached_estimate
            done = None if tokens is None else estimate.remembered(prompt, tokens)
            first = estimate.remembered(prompt, 1) if stream else None
            if first is not None and (done is None or first_left - first < total_left - done):
                done = first
            known.append(done)
            if done is not None and done < fastest:
                fastest = done
        if fastest == math.inf:
            return None
        times = [fastest] * len(candidates)
        for i, replica in enumerate(candidates):
            seconds = known[i]
            if seconds is not None and seconds > fastest:
                weight = replica.uncached_estimate.evidence()
                times[i] = fastest + (seconds - fastest) * weight / (weight + 1.0)
        return times

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
        except (BackendError, ContextLengthExceeded):  # another replica's context may hold it
            return None
        return PromptBlocks({size: block_keys(ids, size) for size in sizes})


def _completion(replica: Replica, service_s: float, priority: Priority, known: bool) -> float:
    """When a request of `service_s` (that long on an idle replica) is expected to finish on
    `replica`: after its wait for a slot, stretched by the batch it joins (a full one decodes
    each sequence about half as fast). The wait is admission's simulation when it has a
    service history and `service_s` is in seconds (`known`); else the requests ahead beyond
    its slots, each holding one for a full batch's service time, its slots working at once."""
    admission = replica.admission
    slots = admission.limit
    load = replica.load_score()
    wait = admission.known_wait(priority) if known else None
    if wait is None:
        wait = max(0.0, load + 1.0 - slots) * 2.0 * service_s / slots
    return wait + service_s * (1.0 + min(load, slots) / slots)
