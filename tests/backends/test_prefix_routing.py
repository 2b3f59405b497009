"""The fleet's prefix-aware choice: cached share of the prompt against load."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import AdmissionConfig, Fleet
from backends.outlook import Demand
from backends.prefix.blocks import block_keys
from backends.prefix.index import StoredBlock
from backends.prefix.prompt import PromptBlocks
from backends.replica import ROUTING_EVIDENCE_HALF_LIFE_S, Replica
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate
from core.answers import Usage
from core.errors import ContextLengthExceeded, DeadlineTooShort
from core.protocol import CompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend

PROMPT = list(range(64))  # 4 blocks of 16


@dataclass
class TokenizingBackend(FakeBackend):
    """A fake backend that tokenizes prompts (the ids are given) and has a KV event stream."""

    ids: tuple[int, ...] = ()
    tokenized: int = 0

    async def prompt_ids(self, request: GenerationRequest) -> list[int]:
        self.tokenized += 1
        return list(self.ids)

    def kv_events(self) -> AsyncIterator[Any]:
        raise NotImplementedError

    async def block_size(self) -> int:
        return 16


def _replica(url: str, *, cached: int = 0, live: bool = True) -> Replica:
    replica = Replica("m", TokenizingBackend(url=url, ids=tuple(PROMPT)), healthy=True)
    replica.prefix.live = live
    blocks = [StoredBlock(i, tuple(PROMPT[i * 16 : (i + 1) * 16])) for i in range(cached)]
    replica.prefix.stored(None, blocks)
    replica.prefix.block_size = 16
    return replica


def _fleet(
    *replicas: Replica, weight: float = 2.0, clock: Callable[[], float] = time.monotonic
) -> Fleet:
    return Fleet(
        list(replicas),
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        prefix_weight=weight,
        clock=clock,
    )


def _request() -> GenerationRequest:
    raw = orjson.dumps({"model": "m", "prompt": "hi"})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r1")


async def _occupy(replica: Replica, slots: int) -> None:
    for _ in range(slots):
        await replica.admission.acquire("interactive", Deadline.after(60))


async def test_cached_prefix_outweighs_a_little_load() -> None:
    """The replica holding the prompt wins over a less loaded one within the weight."""
    warm, cold = _replica("warm", cached=4), _replica("cold")
    await _occupy(warm, 1)
    fleet = _fleet(warm, cold)
    blocks = await fleet.prompt_blocks(_request())
    assert blocks is not None
    assert fleet.pick("m", prefix=blocks) is warm


async def test_a_prompt_sent_draws_its_next_turn_before_any_event() -> None:
    """The replica a prompt was just sent to gets the prompts sharing its prefix, though its
    KV events have not reported the blocks yet; once the expectation lapses, load decides."""
    now = [100.0]
    replicas = [_replica(url) for url in ("a", "b", "c")]
    fleet = _fleet(*replicas, clock=lambda: now[0])
    budgets = ClassBudgets(total_s=10, ttft_s=10, admission_s=10, stall_s=10)
    budget = RequestBudget.start("interactive", budgets, lambda: now[0], now[0])
    await fleet.complete(_request(), budget)
    served = next(r for r in replicas if isinstance(r.backend, FakeBackend) and r.backend.calls)
    blocks = await fleet.prompt_blocks(_request())
    assert {fleet.pick("m", prefix=blocks).url for _ in range(6)} == {served.url}
    now[0] += 2 * served.prefix.expected.window_s
    assert len({fleet.pick("m", prefix=blocks).url for _ in range(6)}) == 3


async def test_load_beyond_the_weight_wins() -> None:
    """A warm replica loaded past what its cached share is worth loses to an idle one."""
    warm, cold = _replica("warm", cached=4), _replica("cold")
    await _occupy(warm, 3)
    fleet = _fleet(warm, cold)
    assert fleet.pick("m", prefix=await fleet.prompt_blocks(_request())) is cold


async def test_longer_cached_prefix_wins() -> None:
    """Of two equally loaded replicas, the one holding more leading blocks wins."""
    some, more = _replica("some", cached=1), _replica("more", cached=3)
    fleet = _fleet(some, more)
    blocks = await fleet.prompt_blocks(_request())
    assert all(fleet.pick("m", prefix=blocks) is more for _ in range(4))


async def test_off_or_silent_replicas_fall_back_to_load() -> None:
    """Weight 0, or no replica publishing events, skips tokenizing and routes by load."""
    warm, cold = _replica("warm", cached=4, live=False), _replica("cold", live=False)
    assert await _fleet(warm, cold).prompt_blocks(_request()) is None
    on = _replica("on", cached=4)
    assert await _fleet(on, weight=0).prompt_blocks(_request()) is None
    backend = on.backend
    assert isinstance(backend, TokenizingBackend) and backend.tokenized == 0


@dataclass
class SmallContextBackend(TokenizingBackend):
    """Refuses to tokenize the prompt as too long for its context."""

    async def prompt_ids(self, request: GenerationRequest) -> list[int]:
        raise ContextLengthExceeded("too long here", param="prompt")


async def test_a_prompt_too_long_for_the_tokenizing_replica_is_routed_by_load() -> None:
    """The replica that tokenizes the prompt refusing it as too long for its own context is
    no answer to the client (another may hold it): the request is routed without its blocks."""
    small = Replica("m", SmallContextBackend(url="small"), healthy=True)
    small.prefix.live, small.prefix.block_size = True, 16
    small.prefix.stored(None, [])
    assert await _fleet(small, _replica("large")).prompt_blocks(_request()) is None


async def test_scoring_cost_is_microseconds() -> None:
    """Scoring 4 replicas for a 2k-token prompt costs well under a millisecond."""
    prompt = list(range(2048))
    replicas = [_replica(str(i)) for i in range(4)]
    fleet = _fleet(*replicas)
    started = time.perf_counter()
    for _ in range(100):
        blocks = PromptBlocks({16: block_keys(prompt, 16)})
        fleet.pick("m", prefix=blocks)
    per_request_us = (time.perf_counter() - started) / 100 * 1e6
    print(f"prefix keys + pick, 2048 tokens, 4 replicas: {per_request_us:.1f} us")
    assert per_request_us < 1000


def _long_request() -> GenerationRequest:
    """A prompt of about a thousand tokens (by the gateway's count), four output tokens."""
    raw = orjson.dumps({"model": "m", "prompt": "word " * 800, "max_tokens": 4})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r2")


def _served_cold_and_cached(replica: Replica, fleet: Fleet, clock: Callable[[], float]) -> None:
    """`replica` answered long and short prompts, cold (0.1 s + 1 ms a token) and cached
    (0.1 s): its estimate learns from each prompt's uncached part."""
    replica.uncached_estimate = ServiceEstimate(
        clock, evidence_half_life_s=ROUTING_EVIDENCE_HALF_LIFE_S
    )
    long = Demand.of(_long_request().body)
    short = Demand(long.prompt_tokens // 4, 4, 1, False)
    for _ in range(2):
        for demand in (long, short):
            prompt = demand.prompt_tokens
            cold, cached = Usage(prompt, 4), Usage(prompt, 4, cached_tokens=prompt)
            fleet.learning.answered(replica, demand, cold, 0.1 + 0.001 * prompt)
            fleet.learning.answered(replica, demand, cached, 0.1)


async def _send_long(replica: Replica) -> TokenizingBackend:
    """Send the long prompt, with 0.6 s left, to a fleet of `replica` alone that served
    prompts cold and cached (prefix-aware routing on)."""
    now = 100.0

    def clock() -> float:
        return now

    fleet = Fleet(
        [replica],
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        admission=AdmissionConfig(max_inflight=2),
        prefix_weight=2.0,
        clock=clock,
    )
    _served_cold_and_cached(replica, fleet, clock)
    budgets = ClassBudgets(total_s=0.6, ttft_s=0.6, admission_s=0.6, stall_s=0.6)
    backend = replica.backend
    assert isinstance(backend, TokenizingBackend)
    await fleet.complete(_long_request(), RequestBudget.start("interactive", budgets, clock, now))
    return backend


async def test_a_long_prompt_cached_where_it_goes_is_admitted() -> None:
    """Admission judges the prompt left uncached on the replica it goes to: a long prompt held
    there is admitted with 0.6 s left, though its prefill (1 s) would not fit. A whole-prompt
    estimate (0.4 s on average, 1.2 s pessimistically, from the same answers) refused it."""
    backend = await _send_long(_replica("warm", cached=4))
    assert backend.calls == 1


async def test_a_long_prompt_cold_where_it_goes_is_refused() -> None:
    """The same prompt on a replica holding none of it is predicted its prefill: a 400."""
    replica = _replica("cold")
    with pytest.raises(DeadlineTooShort, match="answer is predicted 1100 ms"):
        await _send_long(replica)
    assert isinstance(replica.backend, TokenizingBackend) and replica.backend.calls == 0
