"""Admission's refusals as the client sees them: 429s with Retry-After whose code and message
say why, and a 400 for a request no wait could help."""

from __future__ import annotations

from collections.abc import Sequence

from backends.outlook import Outlook, Target
from backends.shared_outlook import SharedOutlook
from budgets.request_budget import RequestBudget
from budgets.shed import Shed
from core.errors import DeadlineTooShort, Overloaded

TIMEOUT_HEADER = "X-Request-Timeout-Ms"


def overloaded(
    exc: Shed, budget: RequestBudget, outlook: Outlook | SharedOutlook | None = None
) -> Overloaded | DeadlineTooShort:
    """The 429 for one refusal: `overloaded` (the queue cannot serve the request in time),
    `queue_timeout` (it waited its admission budget out) or `expired_in_queue` (it left the
    queue once it could no longer meet its deadline); or the 400 `deadline_too_short` (even
    an idle replica is predicted to miss its deadline: retrying cannot help). A shared call's
    refusal speaks for the caller it was judged by, the one with the most time to spare, and
    names the header only when every caller's deadline is the header's (it reaches them all)."""
    callers = [budget]
    if isinstance(outlook, SharedOutlook):
        callers = outlook.callers() or callers
        widest = outlook.widest()
        budget, outlook = widest if widest is not None else (budget, None)
    target = outlook.binding() if outlook is not None else None
    what = target.what if target is not None else "answer"
    who = f"{exc.priority} priority"
    retry = exc.retry_after_s
    if exc.reason == "queue_timeout":
        return Overloaded(
            f"The {exc.priority} queue did not reach this request within its admission "
            "budget; retry later.",
            retry_after_s=retry,
            code="queue_timeout",
        )
    if exc.reason == "expired_in_queue":
        return Overloaded(
            f"The request left the {exc.priority} queue when it could no longer get its {what}"
            " within its deadline; retry later.",
            retry_after_s=retry,
            code="expired_in_queue",
        )
    slack = exc.slack_s
    if exc.reason == "predicted_outcome" and slack is not None and slack < 0.0:
        if target is None or target.service_slack_s < 0.0:
            cap = outlook.cap_param if outlook is not None else "max_tokens"
            prompt = target is not None and outlook is not None and outlook.prompt_bound(target)
            return _too_short(who, what, target, callers, cap, prompt)
        # Out of reach only behind the engine's own queue: load, which waiting cures.
        return Overloaded(
            f"Overloaded: a predicted wait of {_ms(target.queue_s)} in the backend's own queue"
            f" exceeds the {_ms(target.service_slack_s)} this request's {what} has to spare"
            f" ({who}); retry later.",
            retry_after_s=max(retry, target.queue_s * exc.spread),
        )
    if exc.reason == "predicted_outcome" and slack is not None:
        detail = (
            f"a predicted queue wait of {_ms(exc.predicted_wait_s)} exceeds the {_ms(slack)}"
            f" this request's {what} has to spare"
        )
    elif exc.reason == "queue_full":
        detail = "the queue is full"
    else:
        detail = (
            f"the predicted queue wait of {_ms(exc.predicted_wait_s)} exceeds the "
            f"{_ms(budget.admission().remaining())} left for admission"
        )
    return Overloaded(f"Overloaded: {detail} ({who}); retry later.", retry_after_s=retry)


def _too_short(
    who: str,
    what: str,
    target: Target | None,
    callers: Sequence[RequestBudget],
    cap: str,
    prompt_bound: bool = False,
) -> DeadlineTooShort:
    """The 400 for a request out of reach of an idle replica, with the fix that can help: a
    longer deadline where the client set it, and a shorter prompt where its first token alone
    is out of reach (`prompt_bound`; fewer output tokens would not help), else fewer of them."""
    why = "is predicted to come after its deadline"
    if target is not None:
        why = (
            f"is predicted {_ms(target.predicted_s)} after it starts, later than the"
            f" {_ms(target.left_s)} it has left"
        )
    first = what == "first token"
    # The header set the binding deadline: the total, or a first token it cut down to the total.
    if all(b.client_set and (not first or b.first_token == b.total) for b in callers):
        fix = "a shorter prompt" if first or prompt_bound else "fewer output tokens"
        return DeadlineTooShort(
            f"This request's {what} {why} ({who}), even with no queue; it needs a longer"
            f" deadline ({TIMEOUT_HEADER}) or {fix}.",
            param=TIMEOUT_HEADER,
        )
    if first:  # the class's first-token budget, which the header cannot move
        return DeadlineTooShort(
            f"This request's {what} {why} ({who}), even with no queue; it needs a shorter"
            " prompt or a class with a longer first-token budget.",
        )
    if prompt_bound:
        return DeadlineTooShort(
            f"This request's {what} {why} ({who}), even with no queue; it needs a shorter"
            " prompt or a class with a longer total budget.",
        )
    return DeadlineTooShort(  # the class's deadline, which the header can only shorten
        f"This request's {what} {why} ({who}), even with no queue; it needs fewer output"
        " tokens or a class with a longer total budget.",
        param=cap,
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"
