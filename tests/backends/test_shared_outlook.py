"""A shared call judged by the caller with the most time to spare, and its admission budget."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from backends.outlook import Demand, Outlook
from backends.shared_outlook import SharedOutlook, admission_deadline
from budgets.recent import RecentQuantile
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate


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
    return [(b, Outlook(estimate, RecentQuantile(0.9), DEMAND, b)) for b in budgets]


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
    assert admission_deadline(short).at == pytest.approx(100.3)
    shared = replace(_budget(), served=lambda: [short, patient])
    assert admission_deadline(shared).at == pytest.approx(101.0)
    assert admission_deadline(replace(shared, served=list)).at == pytest.approx(101.0)
