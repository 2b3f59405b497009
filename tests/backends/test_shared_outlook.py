"""A shared call judged by the caller with the most time to spare, and its admission budget."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import replace

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import AdmissionConfig, Fleet
from backends.outlook import Demand, Outlook
from backends.replica import Replica
from backends.shared_outlook import SharedOutlook, admission_deadline
from budgets.deadline import Deadline
from budgets.output_lengths import OutputLengths
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend


def _now() -> float:
    return 100.0  # a clock that stands still


CLASS = ClassBudgets(total_s=5.0, ttft_s=2.0, admission_s=1.0, stall_s=1.0)
DEMAND = Demand(prompt_tokens=10, max_tokens=20, choices=1, stream=False)


def _budget(timeout_s: float | None = None) -> RequestBudget:
    return RequestBudget.start("interactive", CLASS, _now, _now(), timeout_s)


def _outlooks(
    *budgets: RequestBudget, seconds: float | None = 1.0
) -> list[tuple[RequestBudget, Outlook]]:
    """Each budget's outlook on a replica that takes `seconds` to anything (None: unknown)."""
    estimate = ServiceEstimate(_now)
    if seconds is not None:
        estimate.observe(10, 1, seconds)
    return [(b, Outlook(estimate, OutputLengths(0.9), DEMAND, b)) for b in budgets]


def test_the_caller_with_the_most_time_stands_for_the_call() -> None:
    """Callers with 0.6 s and 3 s left of a call that takes 1 s: judged by the 3 s one, as
    the callers stand when asked (the 3 s one left: by the other)."""
    short, patient = _budget(0.6), _budget(3.0)
    callers = _outlooks(short, patient)
    shared = SharedOutlook(lambda: callers)
    widest = shared.widest()
    assert widest is not None and widest[0] is patient
    assert shared.slack_s() == pytest.approx(2.0) and shared.hold_s() == pytest.approx(1.0)
    callers.pop()
    assert shared.slack_s() == pytest.approx(-0.4)


def test_a_call_nobody_waits_for_has_nothing_to_spare() -> None:
    """No caller left: out of reach (never handed to the engine), nothing held, no one named."""
    shared = SharedOutlook(list)
    assert shared.slack_s() == -math.inf and shared.hold_s() is None and shared.widest() is None


def test_an_unknown_prediction_is_unknown_for_the_call() -> None:
    """Before the replica can predict anything, the call is not judged, as no request is."""
    shared = SharedOutlook(lambda: _outlooks(_budget(0.6), _budget(), seconds=None))
    assert shared.slack_s() is None


def test_a_shared_call_waits_for_a_slot_as_long_as_its_most_patient_caller() -> None:
    """A request's own admission budget, or the latest of the callers a shared call serves."""
    short, patient = _budget(0.3), _budget()
    assert admission_deadline(short).remaining() == pytest.approx(0.3)
    callers = [short]
    shared = replace(_budget(), served=lambda: callers)
    deadline = admission_deadline(shared)
    assert deadline.remaining() == pytest.approx(0.3)
    callers.append(patient)  # read as the callers stand: a joiner with more time pushes it out
    assert deadline.remaining() == pytest.approx(1.0)
    assert admission_deadline(replace(shared, served=list)).remaining() == pytest.approx(1.0)


async def test_a_caller_who_joins_with_more_time_keeps_the_shared_call_queued() -> None:
    """A queued shared call whose only caller may wait 0.2 s is joined by one who may wait
    5 s: it is still queued once the first's admission deadline passed, and is served when the
    slot frees (not refused with the first's queue_timeout)."""
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    config = AdmissionConfig(max_inflight=1)
    fleet = Fleet([replica], retry_attempts=1, health_interval_s=60, health_timeout_s=1,
                  admission=config)  # fmt: skip
    held = await replica.admission.acquire("interactive", Deadline.after(60.0))
    patient = ClassBudgets(total_s=10.0, ttft_s=10.0, admission_s=5.0, stall_s=1.0)
    clock = time.monotonic

    def budget(timeout_s: float | None = None) -> RequestBudget:
        return RequestBudget.start("interactive", patient, clock, clock(), timeout_s)

    first = budget(0.2)
    callers = [first]
    raw = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    request = GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, "r")
    call = asyncio.create_task(fleet.complete(request, replace(budget(), served=lambda: callers)))
    for _ in range(5):  # the call's steps to the queue
        await asyncio.sleep(0)
    assert replica.admission.queued() == 1
    callers.append(budget())
    await asyncio.sleep(first.admission().remaining() + 0.05)  # not synchronisation: it passes
    assert not call.done()
    held.release()
    assert (await call).choices
