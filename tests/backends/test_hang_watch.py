"""The hang watch: a replica silent for longer than the whole answers it holds explain is
probed once; no answer ejects it and retries those answers on another replica."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.outliers import OutlierPolicy
from backends.replica import Replica
from backends.silence import HangPolicy
from budgets.request_budget import ClassBudgets, RequestBudget
from core.answers import Completion, Endpoint
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend

FIRST_TOKEN_S = 5.0
MAX_TOKENS = 10
# The first-token budget plus the allowance per token: what an unlearned replica's whole
# answer of MAX_TOKENS explains.
UNLEARNED_PATIENCE_S = FIRST_TOKEN_S + 0.2 * MAX_TOKENS


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Probed(FakeBackend):
    """A FakeBackend with a generation probe: it answers while `answering`, once `gate` (if
    any) is set; `probes` counts the probes it got."""

    answering: bool = True
    gate: asyncio.Event | None = None
    probes: int = 0

    async def probe_generation(self, endpoint: Endpoint, timeout: float) -> bool:
        self.probes += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.answering


def _request(text: str, **fields: Any) -> GenerationRequest:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **fields}
    raw = orjson.dumps(body)
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, text)


def _budget() -> RequestBudget:
    budgets = ClassBudgets(total_s=600.0, ttft_s=FIRST_TOKEN_S, admission_s=5.0, stall_s=5.0)
    return RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())


def _replica(url: str, *, healthy: bool = True, holds: bool = True, **probe: Any) -> Replica:
    """A replica whose "hold" requests wait for its `hold` event (if `holds`)."""
    backend = Probed(url=url, hold=asyncio.Event() if holds else None, **probe)
    return Replica("m", backend, healthy=healthy)


def _fleet(clock: Clock, *replicas: Replica, policy: HangPolicy | None = None) -> Fleet:
    outliers = OutlierPolicy(consecutive_failures=5, ejection_s=30.0, max_ejection_s=300.0)
    return Fleet(
        replicas,
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        clock=clock,
        outliers=outliers,
        hangs=policy,
    )


def _backend(replica: Replica) -> Probed:
    backend = replica.backend
    assert isinstance(backend, Probed)
    return backend


async def _held_on(
    fleet: Fleet, replica: Replica, count: int, **fields: Any
) -> list[asyncio.Task[Completion]]:
    """`count` whole answers, each held by `replica` (the only one routable meanwhile)."""
    calls = [
        asyncio.create_task(fleet.complete(_request(f"hold {i}", **fields), _budget()))
        for i in range(count)
    ]
    await _backend(replica).wait_held(count)
    return calls


async def _probes_settled(fleet: Fleet) -> None:
    """Until the probes under way have ended (their verdicts given)."""
    for replica in fleet.replicas("m"):
        probe = replica.silence.probe
        if probe is not None:
            await probe


async def test_a_hung_replica_is_ejected_and_its_whole_answers_retried_elsewhere() -> None:
    """Silent past its patience and no answer to the probe: the replica is ejected, and each
    whole answer it held is answered by the other replica instead."""
    clock = Clock()
    hung = _replica("fake://hung", answering=False)
    other = _replica("fake://other", healthy=False, holds=False)
    fleet = _fleet(clock, hung, other)
    calls = await _held_on(fleet, hung, 3, max_tokens=MAX_TOKENS)
    other.healthy = True
    clock.now += UNLEARNED_PATIENCE_S
    fleet.hangs.sweep(fleet.replicas("m"))
    answers = await asyncio.wait_for(asyncio.gather(*calls), timeout=10)
    assert [a.choices[0].text for a in answers] == ["Hello world!"] * 3
    assert (_backend(hung).probes, _backend(other).calls) == (1, 3)
    assert not hung.routable(clock.now) and hung.ejections == 1
    assert hung.silence.waiting == set()


async def test_a_replica_that_answers_the_probe_keeps_its_whole_answers() -> None:
    """A probe answered clears the silence: the answer keeps waiting where it is, and the
    replica is not probed again until it has been silent as long once more."""
    clock = Clock()
    slow = _replica("fake://slow")
    fleet = _fleet(clock, slow)
    (call,) = await _held_on(fleet, slow, 1, max_tokens=MAX_TOKENS)
    clock.now += UNLEARNED_PATIENCE_S
    fleet.hangs.sweep(fleet.replicas("m"))
    await _probes_settled(fleet)
    clock.now += UNLEARNED_PATIENCE_S - 0.5
    fleet.hangs.sweep(fleet.replicas("m"))
    assert _backend(slow).probes == 1 and slow.routable(clock.now) and not call.done()
    hold = _backend(slow).hold
    assert hold is not None
    hold.set()
    assert (await call).choices[0].text == "Hello world!"


async def test_one_probe_at_a_time_whatever_the_answers_waiting() -> None:
    """However many whole answers are overdue and however many sweeps pass, a replica has
    one probe under way at most."""
    clock = Clock()
    gate = asyncio.Event()
    replica = _replica("fake://r", gate=gate)
    fleet = _fleet(clock, replica)
    calls = await _held_on(fleet, replica, 4, max_tokens=MAX_TOKENS)
    for _ in range(3):
        clock.now += UNLEARNED_PATIENCE_S
        fleet.hangs.sweep(fleet.replicas("m"))
        await asyncio.sleep(0)
    assert _backend(replica).probes == 1
    gate.set()
    await _probes_settled(fleet)
    hold = _backend(replica).hold
    assert hold is not None
    hold.set()
    await asyncio.gather(*calls)


async def test_an_answer_heard_during_the_probe_clears_the_replica() -> None:
    """A probe that times out while the replica answered something else meanwhile finds it
    busy, not hung: nothing is ejected or retried."""
    clock = Clock()
    gate = asyncio.Event()
    busy, other = _replica("fake://busy", answering=False, gate=gate), _replica("fake://other")
    other.resting_until = clock.now + 1e6  # routable, so `busy` could be ejected, but idle
    fleet = _fleet(clock, busy, other)
    (call,) = await _held_on(fleet, busy, 1, max_tokens=MAX_TOKENS)
    clock.now += UNLEARNED_PATIENCE_S
    fleet.hangs.sweep(fleet.replicas("m"))
    clock.now += 0.1
    await fleet.complete(_request("quick", max_tokens=MAX_TOKENS), _budget())
    assert _backend(other).calls == 0
    gate.set()
    await _probes_settled(fleet)
    assert busy.routable(clock.now) and busy.ejections == 0 and not call.done()
    hold = _backend(busy).hold
    assert hold is not None
    hold.set()
    await call


async def test_a_streams_first_token_is_a_sign_of_life() -> None:
    """A replica that holds a whole answer but just sent a stream's first token is not
    silent: the silence counts from that token."""
    clock = Clock()
    replica = _replica("fake://r")
    fleet = _fleet(clock, replica)
    (call,) = await _held_on(fleet, replica, 1, max_tokens=MAX_TOKENS)
    clock.now += UNLEARNED_PATIENCE_S - 1.0
    opened = await fleet.open_stream(_request("stream", stream=True), _budget())
    await opened.close()
    clock.now += 1.0
    fleet.hangs.sweep(fleet.replicas("m"))
    assert replica.silence.probe is None
    hold = _backend(replica).hold
    assert hold is not None
    hold.set()
    await call


@pytest.mark.parametrize(
    ("fields", "learned_s", "silent_s", "probed"),
    [
        ({"max_tokens": MAX_TOKENS}, None, FIRST_TOKEN_S - 0.1, False),
        ({"max_tokens": MAX_TOKENS}, None, UNLEARNED_PATIENCE_S - 0.1, False),
        ({"max_tokens": MAX_TOKENS}, None, UNLEARNED_PATIENCE_S, True),
        ({"max_tokens": MAX_TOKENS}, 10.0, 39.0, False),  # 4 times the learned time
        ({"max_tokens": MAX_TOKENS}, 10.0, 40.0, True),
        ({"max_tokens": MAX_TOKENS}, 0.1, FIRST_TOKEN_S, True),  # never under first token
        ({}, None, 1e6, False),  # no cap, no recent lengths: how long it takes is unknown
    ],
)
async def test_how_much_silence_a_whole_answer_explains(
    fields: dict[str, Any], learned_s: float | None, silent_s: float, probed: bool
) -> None:
    """Learned: four times the replica's time for the request, at least the first-token
    budget; unlearned: the first-token budget plus 200 ms a token; unknown length: never."""
    clock = Clock()
    replica = _replica("fake://r")
    if learned_s is not None:
        replica.uncached_estimate.observe(12, MAX_TOKENS, learned_s)  # one point: a flat line
    fleet = _fleet(clock, replica)
    (call,) = await _held_on(fleet, replica, 1, **fields)
    clock.now += silent_s
    fleet.hangs.sweep(fleet.replicas("m"))
    await _probes_settled(fleet)
    assert _backend(replica).probes == (1 if probed else 0)
    hold = _backend(replica).hold
    assert hold is not None
    hold.set()
    await call


async def test_turned_off_it_watches_nothing() -> None:
    """GATEWAY_HANG_PROBE=false: whole answers are not noted, and no sweep probes."""
    clock = Clock()
    replica = _replica("fake://r", answering=False)
    fleet = _fleet(clock, replica, policy=HangPolicy(enabled=False))
    (call,) = await _held_on(fleet, replica, 1, max_tokens=MAX_TOKENS)
    clock.now += 1e6
    fleet.hangs.sweep(fleet.replicas("m"))
    assert replica.silence.waiting == set() and replica.silence.probe is None
    hold = _backend(replica).hold
    assert hold is not None
    hold.set()
    await call
