"""Choosing among a model's replicas, on its own: health, exclusion, rotation, lengths, and
expected completion against load, stale estimates and cached prefixes."""

from __future__ import annotations

from collections import Counter

import pytest

from backends.outlook import Demand
from backends.prefix.blocks import block_keys
from backends.prefix.index import StoredBlock
from backends.prefix.prompt import PromptBlocks
from backends.replica import ROUTING_EVIDENCE_HALF_LIFE_S, Replica
from backends.replica_choice import ReplicaChoice
from budgets.admission import AdmissionQueue
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate
from core.backend_errors import NoHealthyBackend
from tests.budgets.queue_helpers import cancel_all, settle, spawn
from tests.support.fake_backend import FakeBackend

PROMPT = list(range(64))  # 4 blocks of 16
DEMAND = Demand(prompt_tokens=0, max_tokens=8, choices=1, stream=False)
LONG = Demand(prompt_tokens=400, max_tokens=8, choices=1, stream=False)


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _replica(url: str, *, healthy: bool = True) -> Replica:
    return Replica("m", FakeBackend(url=url), healthy=healthy)


def _timed(
    url: str,
    clock: Clock,
    seconds: float,
    *,
    slots: int = 64,
    per_prompt_token_s: float = 0.0,
    observations: int = 1,
) -> Replica:
    """A replica whose routing estimate (on `clock`) says it answers DEMAND's 8 tokens in
    `seconds` plus `per_prompt_token_s` per prompt token it does not hold."""
    admission = AdmissionQueue(limit=slots, max_queue=16, batch_share=1.0, clock=clock)
    estimate = ServiceEstimate(clock, evidence_half_life_s=ROUTING_EVIDENCE_HALF_LIFE_S)
    replica = Replica(
        "m", FakeBackend(url=url), healthy=True, admission=admission, uncached_estimate=estimate
    )
    for _ in range(observations):
        for prompt in (0, LONG.prompt_tokens):
            estimate.observe(prompt, 8, seconds + per_prompt_token_s * prompt)
    return replica


def _budget(clock: Clock) -> RequestBudget:
    budgets = ClassBudgets(total_s=60, ttft_s=60, admission_s=60, stall_s=60)
    return RequestBudget.start("interactive", budgets, clock, clock.now)


def _choice(clock: Clock, prefix_weight: float = 0.0) -> ReplicaChoice:
    return ReplicaChoice(output_quantile=0.9, clock=clock, prefix_weight=prefix_weight)


def _picks(choice: ReplicaChoice, replicas: list[Replica], clock: Clock) -> set[str]:
    """Where 4 requests in a row go, none of them holding a slot."""
    return {choice.pick(replicas, "m", demand=DEMAND, budget=_budget(clock)).url for _ in range(4)}


async def _send(
    choice: ReplicaChoice, replicas: list[Replica], clock: Clock, n: int
) -> Counter[str]:
    """Where `n` concurrent requests go: each holds a slot on its replica until the end."""
    served: Counter[str] = Counter()
    for _ in range(n):
        replica = choice.pick(replicas, "m", demand=DEMAND, budget=_budget(clock))
        await replica.admission.acquire("interactive", _budget(clock).admission())
        served[replica.url] += 1
    return served


def test_only_healthy_replicas_not_excluded_are_chosen() -> None:
    """An unhealthy or excluded replica is never picked; with none left, no healthy backend."""
    choice = ReplicaChoice(output_quantile=0.9)
    down, tried, up = _replica("a", healthy=False), _replica("b"), _replica("c")
    assert choice.pick([down, tried, up], "m", exclude=[tried]) is up
    with pytest.raises(NoHealthyBackend):
        choice.pick([down, tried], "m", exclude=[tried])


def test_no_healthy_backend_says_to_retry_after_the_next_probe() -> None:
    """The 503 tells the client to come back after one health probe interval, the soonest a
    replica can be found healthy again."""
    choice = ReplicaChoice(output_quantile=0.9, health_interval_s=3.0)
    with pytest.raises(NoHealthyBackend) as info:
        choice.pick([_replica("a", healthy=False)], "m")
    assert info.value.status == 503
    assert info.value.headers() == {"retry-after": "3", "retry-after-ms": "3000"}


def test_equal_replicas_take_turns() -> None:
    """Idle replicas alike in every way share the requests."""
    choice = ReplicaChoice(output_quantile=0.9)
    replicas = [_replica("a"), _replica("b"), _replica("c")]
    assert {choice.pick(replicas, "m").url for _ in range(6)} == {"a", "b", "c"}


def test_output_lengths_are_kept_per_model() -> None:
    """Each model has one record of recent output lengths."""
    choice = ReplicaChoice(output_quantile=0.9)
    assert choice.lengths("m") is choice.lengths("m")
    assert choice.lengths("m") is not choice.lengths("other")


def test_sequential_requests_alternate_between_identical_replicas() -> None:
    """Replicas whose estimates differ only by noise take turns, one request at a time."""
    clock = Clock()
    choice = _choice(clock)
    replicas = [_timed("a", clock, 0.100), _timed("b", clock, 0.104)]
    served = Counter(
        choice.pick(replicas, "m", demand=DEMAND, budget=_budget(clock)).url for _ in range(10)
    )
    assert served == {"a": 5, "b": 5}


async def test_concurrent_requests_spread_over_identical_replicas() -> None:
    """Identical replicas fill up evenly; one 8 times slower gets nothing while they have room."""
    clock = Clock()
    replicas = [_timed("a", clock, 0.095), _timed("b", clock, 0.101), _timed("slow", clock, 0.8)]
    served = await _send(_choice(clock), replicas, clock, 24)
    assert served == {"a": 12, "b": 12}


async def test_a_somewhat_slower_replica_joins_in_once_its_peers_are_busy() -> None:
    """One 1.6 times slower than its peers gets nothing while they would finish sooner, then
    a smaller share once their fuller batches would finish later than it."""
    clock = Clock()
    replicas = [
        _timed("a", clock, 0.1, slots=8),
        _timed("b", clock, 0.1, slots=8),
        _timed("slower", clock, 0.16, slots=8),
    ]
    choice = _choice(clock)
    assert await _send(choice, replicas, clock, 8) == {"a": 4, "b": 4}
    served = await _send(choice, replicas, clock, 12)
    assert served["a"] == served["b"] and 0 < served["slower"] < served["a"] + 4, served


async def _burst(
    choice: ReplicaChoice, replicas: list[Replica], clock: Clock, n: int
) -> Counter[str]:
    """Where a burst of `n` requests goes, those finding no free slot queued in the gateway
    for one (their tasks left waiting, then cancelled)."""
    served: Counter[str] = Counter()
    waiting = []
    for _ in range(n):
        replica = choice.pick(replicas, "m", demand=DEMAND, budget=_budget(clock))
        waiting.append(spawn(replica.admission.acquire("interactive", _budget(clock).admission())))
        await settle()
        served[replica.url] += 1
    await cancel_all(*waiting)
    return served


def _slotted(url: str, slots: int) -> Replica:
    admission = AdmissionQueue(limit=slots, max_queue=64, batch_share=1.0)
    return Replica("m", FakeBackend(url=url), healthy=True, admission=admission)


async def test_a_full_replica_loses_to_one_with_free_slots_before_any_history() -> None:
    """With nothing measured yet, the gateway's own queue for a replica counts as its load,
    and load counts against its slots: a burst goes where the slots are."""
    clock = Clock()
    small, big = _slotted("small", 2), _slotted("big", 32)
    served = await _burst(_choice(clock), [small, big], clock, 24)
    assert served["small"] <= 2, served


async def test_a_full_replica_loses_to_an_equally_fast_one_with_free_slots() -> None:
    """Measured alike, a replica whose 2 slots are taken (requests queue for them) loses to one
    with 30 of its 32 free: each of its slots is not 16 times as fast."""
    clock = Clock()
    small, big = _timed("small", clock, 0.1, slots=2), _timed("big", clock, 0.1, slots=32)
    for replica in (small, big):
        slot = await replica.admission.acquire("interactive", _budget(clock).admission())
        clock.now += 0.1
        slot.release()
    served = await _burst(_choice(clock), [small, big], clock, 24)
    assert served["small"] <= 2, served


async def test_a_busy_replica_loses_to_a_slower_idle_one() -> None:
    """Load over slots stretches the service time: nearly full loses to idle and 2x slower."""
    clock = Clock()
    busy, idle = _timed("busy", clock, 0.10, slots=8), _timed("idle", clock, 0.2, slots=8)
    choice = _choice(clock)
    assert choice.pick([busy, idle], "m", demand=DEMAND, budget=_budget(clock)) is busy
    for _ in range(7):
        await busy.admission.acquire("interactive", _budget(clock).admission())
    assert choice.pick([busy, idle], "m", demand=DEMAND, budget=_budget(clock)) is idle


async def test_a_queue_counts_against_a_replica() -> None:
    """A replica whose slots are all taken is predicted to finish after its wait for one."""
    clock = Clock()
    full, free = _timed("full", clock, 0.10, slots=2), _timed("free", clock, 0.5, slots=2)
    slot = await full.admission.acquire("interactive", _budget(clock).admission())
    clock.now += 3.0
    slot.release()  # its requests hold a slot for 3 s
    for _ in range(2):
        await full.admission.acquire("interactive", _budget(clock).admission())
    assert full.admission.predicted_wait("interactive") > 1.0
    assert _choice(clock).pick([full, free], "m", demand=DEMAND, budget=_budget(clock)) is free


def test_a_slow_replica_is_remembered_as_slow_and_tried_again_much_later() -> None:
    """Past the age admission trusts, a replica measured slow is still avoided; as what it
    showed fades, it drifts back toward the fastest and is tried again."""
    clock = Clock()
    choice = _choice(clock)
    fast, slow = _timed("fast", clock, 0.1), _timed("slow", clock, 0.8, observations=25)
    clock.now += 45  # the slow one's estimate is stale for admission; the fast one serves on
    fast.uncached_estimate.observe(DEMAND.prompt_tokens, 8, 0.1)
    assert slow.uncached_estimate.fit() is None
    assert _picks(choice, [fast, slow], clock) == {"fast"}
    clock.now += 45
    fast.uncached_estimate.observe(DEMAND.prompt_tokens, 8, 0.1)
    assert _picks(choice, [fast, slow], clock) == {"fast", "slow"}


def test_replicas_without_history_count_as_the_fastest_measured() -> None:
    """A replica never measured counts as fast as the fastest measured: rotation decides."""
    clock = Clock()
    choice = _choice(clock)
    known, fresh = _timed("known", clock, 0.3), _replica("fresh")
    assert _picks(choice, [known, fresh], clock) == {"known", "fresh"}


def _holding(replica: Replica, blocks: int) -> Replica:
    """`replica`, publishing KV events, holding the first `blocks` blocks of PROMPT."""
    replica.prefix.live = True
    replica.prefix.block_size = 16
    stored = [StoredBlock(i, tuple(PROMPT[i * 16 : (i + 1) * 16])) for i in range(blocks)]
    replica.prefix.stored(None, stored)
    return replica


def test_a_cached_prefix_does_not_pin_a_prompt_to_a_much_slower_replica() -> None:
    """A cached prompt outweighs load among equals, never a replica many times faster."""
    clock = Clock()
    choice = _choice(clock, prefix_weight=8.0)
    blocks = PromptBlocks({16: block_keys(PROMPT, 16)})
    near = [_holding(_timed("warm", clock, 0.11), 4), _timed("cold", clock, 0.1)]
    assert choice.pick(near, "m", demand=LONG, budget=_budget(clock), prefix=blocks).url == "warm"
    far = [_holding(_timed("warm", clock, 0.75), 4), _timed("cold", clock, 0.1)]
    assert choice.pick(far, "m", demand=LONG, budget=_budget(clock), prefix=blocks).url == "cold"


def test_the_choice_carries_the_share_of_the_prompt_held_where_it_goes() -> None:
    """Admission reuses the cached share routing found on the replica chosen; a replica whose
    KV events are not followed holds an unknown share (None), alone or among others."""
    clock = Clock()
    choice = _choice(clock, prefix_weight=8.0)
    blocks = PromptBlocks({16: block_keys(PROMPT, 16)})
    warm, cold = _holding(_timed("warm", clock, 0.1), 3), _holding(_timed("cold", clock, 0.1), 0)
    chosen = choice.choose([warm, cold], "m", demand=LONG, budget=_budget(clock), prefix=blocks)
    assert chosen.replica is warm and chosen.cached_share == pytest.approx(0.75)
    alone = choice.choose([cold], "m", demand=LONG, budget=_budget(clock), prefix=blocks)
    assert alone.replica is cold and alone.cached_share == 0.0
    silent = [_timed("a", clock, 0.1), _timed("b", clock, 0.1)]
    assert choice.choose(silent, "m", prefix=blocks).cached_share is None
    assert choice.choose(silent[:1], "m", prefix=blocks).cached_share is None
