"""Replicas of one model with different contexts: a request goes to one whose context holds it,
and is refused only when none does."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.replica import Replica
from backends.served import Served
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.answers import Completion, StreamChunk
from core.backend_errors import BackendOverloaded, BackendQuotaExhausted, BackendUnavailable
from core.errors import ContextLengthExceeded
from core.protocol import CompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend


@dataclass
class SizedBackend(FakeBackend):
    """A fake replica of a `context` that refuses, as the gRPC backend does before sending, a
    prompt and completion it cannot hold; `context` 0 reports none (an HTTP backend)."""

    context: int = 4096

    def served(self) -> Served | None:
        return Served("m", "tok", self.context) if self.context else None

    def _check(self, request: GenerationRequest) -> None:
        body = request.body
        assert isinstance(body, CompletionRequest) and isinstance(body.prompt, list)
        if len(body.prompt) + (body.max_tokens or 0) > (self.context or 1024):
            self.calls += 1
            raise ContextLengthExceeded(f"context {self.context}", param="max_tokens")

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self._check(request)
        return await super().complete(request, deadline)

    async def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        self._check(request)
        async for chunk in super().stream(request, deadline):
            yield chunk


def _fleet(*contexts: int, retry_attempts: int = 0) -> tuple[Fleet, list[SizedBackend]]:
    backends = [SizedBackend(url=f"r{i}", context=c) for i, c in enumerate(contexts)]
    replicas = [Replica("m", b, healthy=True) for b in backends]
    fleet = Fleet(replicas, retry_attempts=retry_attempts, health_interval_s=60, health_timeout_s=1)
    return fleet, backends


def _in_order(fleet: Fleet) -> None:
    """Equal replicas are chosen in the order listed (ties no longer rotate)."""
    fleet.choice._tiebreak = itertools.count(0, 0)  # always the first


def _request(tokens: int, *, stream: bool = False) -> GenerationRequest:
    raw = orjson.dumps({"model": "m", "prompt": [1] * 40, "max_tokens": tokens, "stream": stream})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r1")


async def _ask(fleet: Fleet, tokens: int, stream: bool) -> None:
    """A request of `tokens` prompt tokens, whole or streamed to its end."""
    if stream:
        opened = await fleet.open_stream(_request(tokens, stream=True), _budget())
        async for _chunk in opened.iterate():
            pass
    else:
        await fleet.complete(_request(tokens), _budget())


def _budget() -> RequestBudget:
    budgets = ClassBudgets(total_s=30, ttft_s=30, admission_s=30, stall_s=30)
    return RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())


@pytest.mark.parametrize("stream", [False, True])
async def test_a_request_too_long_for_one_replica_is_served_by_a_larger_one(stream: bool) -> None:
    """Whichever replica is picked first, a request only the larger context holds is answered
    (retries left none: this is not a failure), and the smaller one refuses it once at most."""
    fleet, (small, large) = _fleet(1024, 4096)
    for _ in range(4):
        await _ask(fleet, 2000, stream)
    assert large.calls == 4 and small.calls <= 4
    assert fleet.replicas("m")[0].failures == 0  # a refusal is no failure of the replica


@pytest.mark.parametrize("stream", [False, True])
async def test_a_request_no_replica_holds_is_refused_with_the_largest_ones_400(
    stream: bool,
) -> None:
    """Too long for every replica: the 400 is the one of the largest context, and each
    replica was asked once at most."""
    fleet, backends = _fleet(1024, 4096, 2048)
    request = _request(8000, stream=stream)
    call = fleet.open_stream if stream else fleet.complete
    with pytest.raises(ContextLengthExceeded, match="context 4096"):
        await call(request, _budget())
    assert all(b.calls <= 1 for b in backends)


async def test_equal_contexts_refuse_at_once() -> None:
    """Where no other replica has a larger context, the first refusal is the answer."""
    fleet, backends = _fleet(1024, 1024)
    with pytest.raises(ContextLengthExceeded):
        await fleet.complete(_request(2000), _budget())
    assert sum(b.calls for b in backends) == 1


async def test_replicas_that_report_no_context_refuse_at_once() -> None:
    """A backend that reports no context (HTTP) is not retried on a context refusal."""
    fleet, backends = _fleet(0, 0)
    with pytest.raises(ContextLengthExceeded):
        await fleet.complete(_request(2000), _budget())
    assert sum(b.calls for b in backends) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_refusal_after_a_larger_replica_failed_answers_with_that_failure(
    stream: bool,
) -> None:
    """The larger replica failed first (overloaded) and the smaller refuses the prompt as too
    long: the larger is not asked again, and the client hears its 429, not a 503."""
    fleet, (large, small) = _fleet(8192, 4096, retry_attempts=1)
    large.fail_with = BackendOverloaded("engine full", retry_after_s=1.0, replica="r0")
    _in_order(fleet)
    call = fleet.open_stream if stream else fleet.complete
    with pytest.raises(BackendOverloaded):
        await call(_request(5000, stream=stream), _budget())
    assert (large.calls, small.calls) == (1, 1)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_refusal_as_too_long_spends_no_retry(stream: bool) -> None:
    """A replica's refusal of the prompt as too long is no failed attempt: the one retry is
    still there for a larger replica that fails."""
    fleet, (small, failing, fine) = _fleet(1024, 4096, 4096, retry_attempts=1)
    failing.fail_with = BackendUnavailable("down", replica="r1")
    _in_order(fleet)
    await _ask(fleet, 2000, stream)
    assert (small.calls, failing.calls, fine.calls) == (1, 1, 1)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_refusal_after_a_full_then_a_spent_larger_replica_tells_the_overload(
    stream: bool,
) -> None:
    """Full, then spent, then refused as too long by the smaller one: the spent quota is told
    as any last failure is, so the full replica's Retry-After wins over "do not retry"."""
    fleet, (full, spent, small) = _fleet(8192, 8192, 4096, retry_attempts=2)
    full.fail_with = BackendOverloaded("engine full", retry_after_s=3.0, replica="r0")
    spent.fail_with = BackendQuotaExhausted("insufficient_quota: spent", replica="r1")
    _in_order(fleet)
    call = fleet.open_stream if stream else fleet.complete
    with pytest.raises(BackendOverloaded) as info:
        await call(_request(5000, stream=stream), _budget())
    assert info.value.headers()["retry-after"] == "3"
    assert (full.calls, spent.calls, small.calls) == (1, 1, 1)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_spent_wider_replica_before_a_refusal_says_retrying_is_in_vain(
    stream: bool,
) -> None:
    """The wide replica's quota is spent and a narrow one refuses the prompt as too long: the
    other narrow replica, never tried, could not hold it either, so the 429 says do not
    retry."""
    fleet, (spent, small, _other) = _fleet(8192, 4096, 4096, retry_attempts=1)
    spent.fail_with = BackendQuotaExhausted("insufficient_quota: spent", replica="r0")
    _in_order(fleet)
    call = fleet.open_stream if stream else fleet.complete
    with pytest.raises(BackendQuotaExhausted) as info:
        await call(_request(5000, stream=stream), _budget())
    assert info.value.headers() == {"x-should-retry": "false"}
    assert (spent.calls, small.calls) == (1, 1)
