"""Replica choice, admission, retries, and what the fleet learns from answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import AdmissionConfig, Fleet
from backends.outlook import Demand
from backends.replica import Replica
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate
from budgets.settings import BudgetSettings
from core.answers import BackendHealth, Completion, Usage
from core.backend_errors import BackendError, NoHealthyBackend
from core.errors import DeadlineExceeded, DeadlineTooShort, ModelNotFound, Overloaded
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend


def _fleet(*replicas: Replica) -> Fleet:
    return Fleet(list(replicas), retry_attempts=1, health_interval_s=60, health_timeout_s=1)


def _replica(url: str, *, healthy: bool = True) -> Replica:
    return Replica("m", FakeBackend(url=url), healthy=healthy)


async def _occupy(replica: Replica, slots: int) -> None:
    for _ in range(slots):
        await replica.admission.acquire("interactive", Deadline.after(60))


async def test_pick_prefers_least_loaded() -> None:
    """The replica with fewer in-flight requests wins."""
    busy, idle = _replica("a"), _replica("b")
    await _occupy(busy, 3)
    await _occupy(idle, 1)
    assert _fleet(busy, idle).pick("m") is idle


def test_pick_counts_reported_queue() -> None:
    """The server's own waiting queue counts against a replica."""
    a, b = _replica("a"), _replica("b")
    a.observe(BackendHealth(True, "ok", waiting=5))
    assert _fleet(a, b).pick("m") is b


def test_ties_rotate() -> None:
    """Equally loaded replicas take turns."""
    a, b = _replica("a"), _replica("b")
    fleet = _fleet(a, b)
    assert {fleet.pick("m").url for _ in range(4)} == {"a", "b"}


def test_unhealthy_and_excluded_are_skipped() -> None:
    """Ejected or already-tried replicas are not chosen; none left is a 503."""
    a, b = _replica("a", healthy=False), _replica("b")
    fleet = _fleet(a, b)
    assert fleet.pick("m") is b
    with pytest.raises(NoHealthyBackend):
        fleet.pick("m", exclude=[b])


def test_unknown_model() -> None:
    """An unknown model is a ModelNotFound."""
    with pytest.raises(ModelNotFound):
        _fleet(_replica("a")).pick("other")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class TimedBackend(FakeBackend):
    """A fake backend whose answers take `seconds` on a fake clock."""

    clock: Clock = field(default_factory=Clock)
    seconds: float = 0.0

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self.clock.now += self.seconds
        return await super().complete(request, deadline)


def _request(stream: bool = False, **fields: Any) -> GenerationRequest:
    raw = orjson.dumps({"model": "m", "prompt": [1] * 40, "stream": stream, **fields})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r1")


def _budget(clock: Clock, total_s: float = 10.0) -> RequestBudget:
    budgets = ClassBudgets(total_s=total_s, ttft_s=total_s, admission_s=total_s, stall_s=total_s)
    return RequestBudget.start("interactive", budgets, clock, clock.now)


def _admitting(*replicas: Replica, clock: Callable[[], float] = time.monotonic) -> Fleet:
    config = AdmissionConfig(max_inflight=2)
    return Fleet(
        list(replicas),
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        admission=config,
        clock=clock,
    )


async def test_completions_teach_the_estimate_and_uncapped_lengths() -> None:
    """A finished answer is an observation of its replica; only answers without max_tokens
    join the model's output lengths (a chat's: a text completion's default of 16 is a cap)."""
    backend = TimedBackend(url="a", seconds=0.25)
    replica = Replica("m", backend, healthy=True)
    fleet = _admitting(replica)
    await fleet.complete(_request(max_tokens=50), _budget(backend.clock))
    assert replica.uncached_estimate.expected(40, 3) == pytest.approx(0.25)  # 3 words, 3 tokens
    assert fleet.lengths("m").value() is None
    await fleet.complete(_request(), _budget(backend.clock))
    assert fleet.lengths("m").value() is None
    raw = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    chat = GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, "r2")
    await fleet.complete(chat, _budget(backend.clock))
    assert fleet.lengths("m").value() == 3


async def test_answers_teach_the_time_of_their_uncached_prompt() -> None:
    """The estimate is fitted over the part of the prompt the replica did not hold, and the
    replica's cached share follows what its answers report."""
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    fleet = _admitting(replica)
    demand = Demand(prompt_tokens=40, max_tokens=None, choices=1, stream=False)
    fleet.learning.answered(replica, demand, Usage(20, 3, cached_tokens=15), 0.5)
    assert replica.recent_cached_share == pytest.approx(0.75)
    fleet.learning.answered(replica, demand, Usage(20, 3), 0.9)
    fleet.learning.answered(replica, demand, Usage(16, 3, cached_tokens=6), 0.7)  # 25 of 40
    assert replica.uncached_estimate.expected(10, 3) == pytest.approx(0.5)
    assert replica.uncached_estimate.expected(40, 3) == pytest.approx(0.9)
    assert replica.recent_cached_share is not None and 0.7 < replica.recent_cached_share < 0.75


async def test_streams_teach_first_token_and_end() -> None:
    """A stream that ends cleanly is an observation at its first token and one at its end,
    both learned at its end."""
    clock = Clock()
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    fleet = _admitting(replica)
    for _ in range(2):  # a slope needs more observations than the line has terms
        opened = await fleet.open_stream(_request(stream=True), _budget(clock))
        if replica.uncached_estimate.evidence() == 0.0:
            assert replica.uncached_estimate.fit() is None
        clock.now += 1.0
        async for _chunk in opened.iterate():
            pass
    assert replica.inflight == 0
    assert replica.uncached_estimate.expected(40, 1) == pytest.approx(0.0)
    assert replica.uncached_estimate.expected(40, 3) == pytest.approx(1.0)  # its usage: 3 tokens


async def test_a_stream_that_breaks_teaches_nothing() -> None:
    """A stream that dies after a fast first token is no evidence of fast service: else a
    replica that breaks every stream would look the fastest and draw the traffic."""
    backend = FakeBackend(url="a", fail_with=BackendError("died"), fail_after=1)
    replica = Replica("m", backend, healthy=True)
    opened = await _admitting(replica).open_stream(_request(stream=True), _budget(Clock()))
    with pytest.raises(BackendError):
        async for _chunk in opened.iterate():
            pass
    assert replica.uncached_estimate.fit() is None and replica.failures == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_each_attempt_notes_its_replica_and_how_it_failed(stream: bool) -> None:
    """A call retried on another replica: the timeline keeps one backend stage per attempt,
    each on its own replica, the failed one with the code it failed with (for its span)."""
    bad = Replica("m", FakeBackend(url="grpc://bad:1", fail_with=BackendError("x")), healthy=True)
    good = Replica("m", FakeBackend(url="grpc://good:1"), healthy=True)
    fleet = _admitting(bad, good)
    await _occupy(good, 1)  # the idle, failing replica is tried first
    budget = _budget(Clock())
    if stream:
        opened = await fleet.open_stream(_request(stream=True), budget)
        await opened.close()
    else:
        await fleet.complete(_request(), budget)
    attempts = [(s.replica, s.error) for s in budget.timeline.stages if s.name != "admission"]
    assert attempts == [("grpc://bad:1", "backend_error"), ("grpc://good:1", None)]


async def test_a_request_that_cannot_finish_is_a_400_before_the_backend_sees_it() -> None:
    """Once the replica is known to take 2 s, a request with 1 s left is refused at once."""
    backend = TimedBackend(url="a", seconds=2.0)
    replica = Replica("m", backend, healthy=True)
    fleet = _admitting(replica)
    await fleet.complete(_request(max_tokens=5), _budget(backend.clock))
    with pytest.raises(DeadlineTooShort) as info:
        await fleet.complete(_request(max_tokens=5), _budget(backend.clock, total_s=1.0))
    assert info.value.code == "deadline_too_short" and backend.calls == 1
    assert "answer is predicted 2000 ms" in info.value.message


def _chat(**fields: Any) -> GenerationRequest:
    message = {"role": "user", "content": "x"}
    raw = orjson.dumps({"model": "m", "messages": [message], **fields})
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, "r2")


async def test_uncapped_requests_refused_by_long_recent_answers_still_probe_them() -> None:
    """After long uncapped answers, an uncapped request with too little time is refused; while
    capped answers keep coming and no uncapped one does, one such request a second still
    reaches the backend, so that shorter answers can change the prediction."""
    backend = TimedBackend(url="a")
    replica = Replica("m", backend, healthy=True)
    replica.uncached_estimate = ServiceEstimate(backend.clock)
    fleet = _admitting(replica, clock=backend.clock)

    async def answer(request: GenerationRequest, words: int, total_s: float = 10.0) -> None:
        backend.words, backend.seconds = ["w"] * words, 0.1 + 0.01 * (words - 1)
        await fleet.complete(request, _budget(backend.clock, total_s))

    for words in (1, 100, 50, 1, 100, 50):
        await answer(_request(max_tokens=words), words)
    for _ in range(10):
        await answer(_chat(), 100)  # 1.09 s each
    calls = backend.calls
    with pytest.raises(DeadlineTooShort):
        await answer(_chat(), 5, total_s=0.6)
    await answer(_request(max_tokens=100), 100)  # a second on: the estimate heard just now
    await answer(_chat(), 5, total_s=0.6)  # the probe
    assert backend.calls == calls + 2
    with pytest.raises(DeadlineTooShort):
        await answer(_chat(), 5, total_s=0.6)
    assert backend.calls == calls + 2


async def test_a_call_that_runs_out_of_time_teaches_that_its_replica_is_slower() -> None:
    """A deadline that fires 2 s into a call the replica was expected to answer in 0.5 s moves
    its estimate up: the answer would have come no sooner (a failure used to teach nothing)."""
    backend = TimedBackend(url="a", seconds=0.5)
    replica = Replica("m", backend, healthy=True)
    fleet = _admitting(replica)
    for _ in range(2):
        await fleet.complete(_request(max_tokens=3), _budget(backend.clock))
    assert replica.uncached_estimate.expected(40, 3) == pytest.approx(0.5)
    backend.seconds, backend.fail_with = 2.0, DeadlineExceeded("total")
    with pytest.raises(DeadlineExceeded):
        await fleet.complete(_request(max_tokens=3), _budget(backend.clock))
    expected = replica.uncached_estimate.expected(40, 3)
    assert expected is not None and expected > 0.9


async def test_uncapped_calls_that_run_out_as_answers_grow_teach_lengths_not_slowness() -> None:
    """Answers grow from 16 tokens to hundreds: uncapped calls run out a second in, 190
    tokens along. That teaches the output lengths that answers are longer, and the replica's
    estimate the speed those tokens came at; 16-token capped requests, which it still serves
    in 0.175 s, stay admitted (judged at the length assumed, the run-outs taught that the
    replica took over a second for 16 tokens, and refused them as too short)."""
    backend = TimedBackend(url="a")
    replica = Replica("m", backend, healthy=True)
    replica.uncached_estimate = ServiceEstimate(backend.clock)
    fleet = _admitting(replica, clock=backend.clock)
    backend.words, backend.seconds = ["w"] * 16, 0.175
    for _ in range(10):
        await fleet.complete(_chat(), _budget(backend.clock))
        await fleet.complete(_chat(max_tokens=16), _budget(backend.clock))
    backend.fail_with = DeadlineExceeded("total", produced=190)
    refused = 0
    for _ in range(30):
        backend.seconds = 1.0
        try:
            await fleet.complete(_chat(), _budget(backend.clock, total_s=1.0))
        except DeadlineTooShort:
            refused += 1
        except DeadlineExceeded:
            pass
        backend.seconds = 0.175
        backend.fail_with, failing = None, backend.fail_with
        await fleet.complete(_chat(max_tokens=16), _budget(backend.clock, total_s=1.0))
        backend.fail_with = failing
    assert fleet.lengths("m").value() == 191
    assert refused > 0  # uncapped requests learned to be out of reach
    expected = replica.uncached_estimate.expected(40, 16)
    assert expected is not None and expected < 0.5


async def test_an_uncapped_call_that_runs_out_with_no_count_teaches_nothing() -> None:
    """A whole answer from a backend that does not report its tokens runs out: how far it got
    is unknown, and so is whether the length it was judged by or its replica's speed was
    wrong; neither the estimate nor the lengths learn from it."""
    backend = TimedBackend(url="a", seconds=0.175, words=["w"] * 16)
    replica = Replica("m", backend, healthy=True)
    fleet = _admitting(replica)
    for _ in range(4):
        await fleet.complete(_chat(), _budget(backend.clock))
    backend.seconds, backend.fail_with = 1.0, DeadlineExceeded("total")
    with pytest.raises(DeadlineExceeded):
        await fleet.complete(_chat(), _budget(backend.clock, total_s=1.0))
    assert replica.uncached_estimate.expected(40, 16) == pytest.approx(0.175)
    assert fleet.lengths("m").value() == 16


@dataclass
class CountingBackend(TimedBackend):
    """A timed backend that counts a whole answer's tokens when the request brings a listener
    (as the gRPC backend streams it on the wire then); `watched` says which calls did."""

    can_report_progress: bool = True
    watched: list[bool] = field(default_factory=list)

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self.watched.append(request.progress is not None)
        if request.progress is not None:
            request.progress.tick(len(self.words))
        return await super().complete(request, deadline)


async def test_an_uncounted_run_out_has_the_next_uncapped_answers_counted() -> None:
    """An unwatched uncapped whole answer runs out: its count is unknown, so the next uncapped
    answers are watched token by token (and their run-outs then teach the lengths); capped
    ones, and uncapped ones once the doubt is old, are not."""
    backend = CountingBackend(url="a", seconds=0.1, words=["w"] * 16)
    replica = Replica("m", backend, healthy=True)
    fleet = _admitting(replica, clock=backend.clock)
    fleet.lengths("m").add(16)
    await fleet.complete(_chat(), _budget(backend.clock))
    backend.fail_with = DeadlineExceeded("total")
    with pytest.raises(DeadlineExceeded):
        await fleet.complete(_chat(), _budget(backend.clock))
    with pytest.raises(DeadlineExceeded) as info:
        await fleet.complete(_chat(), _budget(backend.clock))
    assert info.value.produced == 16
    backend.fail_with = None
    await fleet.complete(_chat(max_tokens=16), _budget(backend.clock))
    backend.clock.now += 60.0
    await fleet.complete(_chat(), _budget(backend.clock))
    assert backend.watched == [False, False, True, False, False]


async def test_calls_that_end_untaught_keep_the_estimate_trusted() -> None:
    """Under a sustained overload no call starts at once in the engine; their ends still say
    the replica is busy, so its line does not go stale and admission keeps judging."""
    clock = Clock()
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    replica.uncached_estimate = ServiceEstimate(clock, max_age_s=30)
    fleet = _admitting(replica, clock=clock)
    for p, k in ((10, 1), (500, 1), (10, 40), (500, 40), (100, 20), (300, 5)):
        replica.uncached_estimate.observe(p, k, 0.1 + 0.0002 * p + 0.01 * (k - 1))
    replica.observe(BackendHealth(True, "ok", running=4, waiting=3, capacity=4))
    for _ in range(40):
        clock.now += 1
        await fleet.complete(_request(max_tokens=3), _budget(clock))
    assert replica.uncached_estimate.fit() is not None


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_that_queued_in_the_engine_teaches_no_service_time(stream: bool) -> None:
    """Admitted while the engine reported requests waiting, an answer's time includes that
    queue: it is not learned as what serving such a request takes."""
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    fleet = _admitting(replica)
    replica.observe(BackendHealth(True, "ok", running=4, waiting=3, capacity=4))
    if stream:
        opened = await fleet.open_stream(_request(stream=True), _budget(Clock()))
        async for _chunk in opened.iterate():
            pass
    else:
        await fleet.complete(_request(), _budget(Clock()))
    assert replica.uncached_estimate.fit() is None
    assert replica.inflight == 0


async def test_more_in_flight_than_the_engine_runs_teaches_no_service_time() -> None:
    """With more of ours in flight than the engine runs at once (the admission limit set
    above it), the last admitted waits in the engine: its time is not learned."""
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    fleet = _admitting(replica)  # two slots, as GATEWAY_ADMISSION_MAX_INFLIGHT sets
    replica.observe(BackendHealth(True, "ok", running=0, waiting=0, capacity=1))
    assert replica.admission.limit == 2
    await _occupy(replica, 1)
    await fleet.complete(_request(), _budget(Clock()))
    assert replica.uncached_estimate.fit() is None


async def test_a_full_engine_makes_a_late_request_a_429_and_an_idle_one_admits_it() -> None:
    """Slots set above what the engine runs: a request that fits the service time but not the
    engine's own queue is refused as overload (429, Retry-After), not as too short (400)."""
    backend = TimedBackend(url="a", seconds=0.5)
    replica = Replica("m", backend, healthy=True)
    fleet = Fleet(
        [replica],
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        admission=AdmissionConfig(max_inflight=8),
    )
    replica.observe(BackendHealth(True, "ok", running=0, waiting=0, capacity=2))
    for _ in range(2):
        await fleet.complete(_request(max_tokens=5), _budget(backend.clock))
    held = [  # two running, two waiting in the engine
        await replica.admission.acquire("interactive", Deadline.after(60)) for _ in range(4)
    ]
    with pytest.raises(Overloaded) as info:
        await fleet.complete(_request(max_tokens=5), _budget(backend.clock, total_s=1.0))
    assert info.value.status == 429 and backend.calls == 2
    # Three ahead of it beyond the engine's two: 1.5 engine-fulls of 0.5 s.
    assert info.value.headers()["retry-after-ms"] == "750"
    for slot in held:
        slot.release()
    await fleet.complete(_request(max_tokens=5), _budget(backend.clock, total_s=1.0))
    assert backend.calls == 3


@pytest.mark.parametrize(("share", "admitted"), [(0.9, True), (0.0, False)])
async def test_without_kv_events_admission_expects_the_replicas_recent_cached_share(
    share: float, admitted: bool
) -> None:
    """Where routing does not follow KV events, a prompt is expected to find cached the share
    its replica's cache has lately served: a long prompt there is judged by its uncached part
    (0.2 s with 90% cached), and with nothing cached lately by all of it (1.1 s)."""
    clock = Clock()
    replica = _replica("a")
    replica.uncached_estimate = ServiceEstimate(clock)
    fleet = _admitting(replica)
    for uncached in (0, 1000, 250, 0, 1000, 250):
        replica.uncached_estimate.observe(uncached, 4, 0.1 + 0.001 * uncached)
    replica.recent_cached_share = share
    request = _request(prompt=[1] * 1000, max_tokens=4)
    assert Demand.of(request.body).prompt_tokens == 1000
    backend = replica.backend
    assert isinstance(backend, FakeBackend)
    if admitted:
        await fleet.complete(request, _budget(clock, total_s=0.6))
        assert backend.calls == 1
    else:
        with pytest.raises(DeadlineTooShort, match="answer is predicted 1100 ms"):
            await fleet.complete(request, _budget(clock, total_s=0.6))
        assert backend.calls == 0


async def test_prediction_off_admits_as_before() -> None:
    """With GATEWAY_ADMISSION_PREDICT=false the same request reaches the backend."""
    backend = TimedBackend(url="a", seconds=2.0)
    replica = Replica("m", backend, healthy=True)
    config = AdmissionConfig(max_inflight=2, predict=False)
    fleet = Fleet([replica], retry_attempts=1, health_interval_s=60, health_timeout_s=1,
                  admission=config)  # fmt: skip
    for total_s in (10.0, 1.0):
        await fleet.complete(_request(max_tokens=5), _budget(backend.clock, total_s))
    assert backend.calls == 2


def test_pick_prefers_the_replica_predicted_to_finish_first() -> None:
    """With equal queues, the replica that serves this request faster wins."""
    slow, fast = _replica("a"), _replica("b")
    slow.uncached_estimate.observe(40, 1, 0.9)
    fast.uncached_estimate.observe(40, 1, 0.1)
    fleet = _admitting(slow, fast)
    clock = Clock()
    demand = Demand.of(_request(stream=True).body)
    assert {fleet.pick("m", demand=demand, budget=_budget(clock)).url for _ in range(4)} == {"b"}


async def test_a_replica_without_history_is_not_taken_for_the_fastest() -> None:
    """A replica with no estimate yet (just restarted) counts as fast as the fastest known one,
    so load decides: concurrent requests split between it and a warm one instead of all going
    to it until its first one ends."""
    warm, fresh = _replica("a"), _replica("b")
    warm.uncached_estimate.observe(40, 1, 0.2)
    fleet = Fleet([warm, fresh], retry_attempts=1, health_interval_s=60, health_timeout_s=1,
                  admission=AdmissionConfig(max_inflight=8))  # fmt: skip
    clock = Clock()
    demand = Demand.of(_request(stream=True).body)
    chosen = []
    for _ in range(6):
        replica = fleet.pick("m", demand=demand, budget=_budget(clock))
        await _occupy(replica, 1)
        chosen.append(replica.url)
    assert sorted(chosen) == ["a", "a", "a", "b", "b", "b"]


def test_admission_config_carries_every_setting() -> None:
    """The fleet's admission config is built from the budget settings, field for field."""
    settings = BudgetSettings(
        admission=False,
        max_inflight=7,
        max_queue=9,
        batch_share=0.4,
        batch_min_share=0.2,
        predict_outcome=False,
        output_quantile=0.95,
    )
    assert AdmissionConfig.from_settings(settings) == AdmissionConfig(
        enabled=False,
        max_inflight=7,
        max_queue=9,
        batch_share=0.4,
        batch_min_share=0.2,
        predict=False,
        output_quantile=0.95,
    )
