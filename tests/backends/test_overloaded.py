"""Admission's refusals: each reason's status, code, message and Retry-After."""

from __future__ import annotations

import pytest

from backends.outlook import Demand, Outlook
from backends.overloaded import overloaded
from backends.shared_outlook import SharedOutlook
from budgets.output_lengths import OutputLengths
from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.service_estimate import ServiceEstimate
from budgets.shed import Shed


def _now() -> float:
    return 100.0  # a clock that stands still: these requests never run out of time


CLASS = ClassBudgets(5.0, 2.0, 1.0, 1.0)
BUDGET = RequestBudget.start("interactive", CLASS, _now, _now())
HEADER_BUDGET = RequestBudget.start("interactive", CLASS, _now, _now(), client_timeout_s=4.0)
# A header shorter than the first-token budget: the first token's deadline is the header's.
SHORT_HEADER_BUDGET = RequestBudget.start("interactive", CLASS, _now, _now(), client_timeout_s=1.0)


def _outlook(
    stream: bool,
    seconds: float,
    budget: RequestBudget = BUDGET,
    cap: str = "max_tokens",
    max_tokens: int | None = 20,
    output_bound: bool = False,
) -> Outlook:
    """A request on a replica that takes `seconds` to anything (without `max_tokens`, nor
    any recent lengths, only its first token can be judged); `output_bound`: 0.1 s to the
    first token and `seconds` to the 20th."""
    estimate = ServiceEstimate(_now)
    if output_bound:
        for _ in range(3):
            estimate.observe(10, 1, 0.1)
            estimate.observe(10, 20, seconds)
    else:
        estimate.observe(10, 1, seconds)
    demand = Demand(10, max_tokens, choices=1, stream=stream, cap_param=cap)
    return Outlook(estimate, OutputLengths(0.9), demand, budget)


@pytest.mark.parametrize(
    ("shed", "outlook", "code", "words"),
    [
        (Shed("queue_full", "interactive", 0.0, 1.0), None, "overloaded", "queue is full"),
        (Shed("predicted_wait", "batch", 2.5, 2.5), None, "overloaded", "2500 ms exceeds"),
        (Shed("queue_timeout", "batch", 0.0, 1.0), None, "queue_timeout", "admission budget"),
        (
            Shed("expired_in_queue", "interactive", 0.0, 0.3, 0.2),
            _outlook(True, 1.9),
            "expired_in_queue",
            "get its first token",
        ),
        (
            Shed("predicted_outcome", "interactive", 0.8, 0.8, 0.6),
            _outlook(False, 4.4),
            "overloaded",
            "queue wait of 800 ms exceeds the 600 ms this request's answer has to spare",
        ),
    ],
)
def test_each_reason_has_its_code_and_says_why(
    shed: Shed, outlook: Outlook | None, code: str, words: str
) -> None:
    """Every refusal is a 429 in OpenAI's envelope whose code and message name the cause."""
    error = overloaded(shed, BUDGET, outlook)
    assert error.status == 429 and error.code == code and words in error.message
    body = error.to_dict()["error"]
    assert body["type"] == "rate_limit_error" and body["code"] == code
    assert int(error.headers()["retry-after-ms"]) == max(1, round(shed.retry_after_s * 1000))


@pytest.mark.parametrize(
    ("outlook", "budget", "param", "words"),
    [
        (
            _outlook(False, 6.0, HEADER_BUDGET),
            HEADER_BUDGET,
            "X-Request-Timeout-Ms",
            "answer is predicted 6000 ms after it starts, later than the",
        ),
        (
            _outlook(False, 6.0, output_bound=True),
            BUDGET,
            "max_tokens",
            "needs fewer output tokens or a class with a longer total budget",
        ),
        (
            _outlook(False, 6.0, cap="max_completion_tokens", output_bound=True),
            BUDGET,
            "max_completion_tokens",
            "needs fewer output tokens or a class with a longer total budget",
        ),
        (
            _outlook(False, 6.0, HEADER_BUDGET, output_bound=True),
            HEADER_BUDGET,
            "X-Request-Timeout-Ms",
            "needs a longer deadline (X-Request-Timeout-Ms) or fewer output tokens",
        ),
        # Its first token alone is out of reach: fewer output tokens would not help.
        (
            _outlook(False, 6.0, HEADER_BUDGET),
            HEADER_BUDGET,
            "X-Request-Timeout-Ms",
            "needs a longer deadline (X-Request-Timeout-Ms) or a shorter prompt",
        ),
        (
            _outlook(False, 6.0),
            BUDGET,
            None,
            "needs a shorter prompt or a class with a longer total budget",
        ),
        (_outlook(True, 3.0), BUDGET, None, "first token is predicted 3000 ms after it starts"),
        (
            _outlook(True, 3.0, HEADER_BUDGET, max_tokens=None),
            HEADER_BUDGET,
            None,
            "a class with a longer first-token budget",
        ),
        (
            _outlook(True, 3.0, SHORT_HEADER_BUDGET, max_tokens=None),
            SHORT_HEADER_BUDGET,
            "X-Request-Timeout-Ms",
            "needs a longer deadline (X-Request-Timeout-Ms) or a shorter prompt",
        ),
    ],
)
def test_a_deadline_no_wait_can_meet_is_a_400_without_retry_after(
    outlook: Outlook, budget: RequestBudget, param: str | None, words: str
) -> None:
    """Even an idle replica would miss the deadline: a 400 `deadline_too_short` that the SDKs
    do not retry, with no Retry-After, naming the header when the client's header set the
    deadline (the total, or a first token it cut down to the total), else the output cap's
    field as the client sent it (the class's budgets are the operator's; the first-token
    budget is the class's, which the header cannot move); where the first token alone is out
    of reach, the fix is a shorter prompt."""
    shed = Shed("predicted_outcome", "interactive", 0.8, 0.8, -1.0)
    error = overloaded(shed, budget, outlook)
    assert (error.status, error.code, error.param) == (400, "deadline_too_short", param)
    assert error.to_dict()["error"]["type"] == "invalid_request_error"
    assert words in error.message and error.headers() == {}


def test_a_shared_calls_400_names_the_header_only_when_every_caller_sent_it() -> None:
    """A shared call judged by a caller whose header set its deadline, joined by one who sent
    none: the 400 names the output cap, which every caller sent, not the header."""
    earlier = RequestBudget.start("interactive", CLASS, _now, _now() - 2.0)  # 3 s left
    callers = [(HEADER_BUDGET, _outlook(False, 10.0, HEADER_BUDGET, output_bound=True))]
    shared = SharedOutlook(lambda: callers)
    shed = Shed("predicted_outcome", "interactive", 0.0, 0.8, -6.0)
    assert overloaded(shed, BUDGET, shared).param == "X-Request-Timeout-Ms"
    callers.append((earlier, _outlook(False, 10.0, earlier, output_bound=True)))
    widest = shared.widest()
    assert widest is not None and widest[0] is HEADER_BUDGET
    error = overloaded(shed, BUDGET, shared)
    assert (error.code, error.param) == ("deadline_too_short", "max_tokens"), error.message


def test_out_of_reach_behind_the_engines_own_queue_is_a_429() -> None:
    """A request that an idle engine would serve in time, but not after the engine's own
    queue (two engine-fulls of 2 s each ahead), is overload: 429 with the queue's wait, not
    the 400 that says no wait could help; the wait is spread as the refusal's own was."""
    estimate = ServiceEstimate(_now)
    estimate.observe(10, 20, 2.0)
    demand = Demand(prompt_tokens=10, max_tokens=20, choices=1, stream=False)
    outlook = Outlook(estimate, OutputLengths(0.9), demand, BUDGET, backlog=lambda: 2.0)
    slack = outlook.slack_s()
    assert slack == pytest.approx(5.0 - 4.0 - 2.0)
    error = overloaded(Shed("predicted_outcome", "interactive", 0.0, 2.0, slack), BUDGET, outlook)
    assert error.status == 429 and error.code == "overloaded"
    assert "4000 ms in the backend's own queue" in error.message
    assert error.headers()["retry-after"] == "4"
    spread = Shed("predicted_outcome", "interactive", 0.0, 2.5, slack, spread=1.25)
    assert overloaded(spread, BUDGET, outlook).headers()["retry-after-ms"] == "5000"
