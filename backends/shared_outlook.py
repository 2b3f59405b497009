"""A call several callers share (coalesced identical requests) as admission judges it: by the
caller with the most time to spare, the one it can serve longest, and for as long as the
latest caller's admission deadline, as the callers stand at each judgement (some join, some
leave). A call no caller can still use has nothing to spare."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from backends.outlook import Outlook
from budgets.deadline import Deadline
from budgets.request_budget import RequestBudget

Outlooks = Callable[[], Sequence[tuple[RequestBudget, Outlook]]]


class SharedOutlook:
    """The `Goal` of a shared call: each caller's outlook on the same replica and work, as
    `outlooks()` gives them now; the one with the most slack stands for the call."""

    __slots__ = ("_outlooks",)

    def __init__(self, outlooks: Outlooks) -> None:
        self._outlooks = outlooks

    def widest(self) -> tuple[RequestBudget, Outlook] | None:
        """The caller with the most time to spare, and its outlook (None: no caller left)."""
        judged = self._judge()
        return None if judged is None else judged[:2]

    def callers(self) -> list[RequestBudget]:
        """The budgets of the callers as they stand."""
        return [budget for budget, _ in self._outlooks()]

    def slack_s(self) -> float | None:
        judged = self._judge()
        return -math.inf if judged is None else judged[2]

    def hold_s(self) -> float | None:
        judged = self._judge()
        return None if judged is None else judged[1].hold_s()

    def _judge(self) -> tuple[RequestBudget, Outlook, float | None] | None:
        best: tuple[RequestBudget, Outlook, float | None] | None = None
        most = -math.inf
        for budget, outlook in self._outlooks():
            slack = outlook.slack_s()
            if slack is None:  # the same work on the same replica: unknown for every caller
                return budget, outlook, None
            if best is None or slack > most:
                best, most = (budget, outlook, slack), slack
        return best


def admission_deadline(budget: RequestBudget) -> Deadline | LatestAdmission:
    """How long a request may wait for a slot: its own admission budget, or for a shared call
    the latest of its callers' as they stand (each still leaves at its own deadline)."""
    return budget.admission() if budget.served is None else LatestAdmission(budget)


class LatestAdmission:
    """A shared call's admission deadline: the latest of its callers', read when admission
    asks, so a caller who joins with more time pushes it out (the call's own once none is
    left)."""

    __slots__ = ("_budget",)

    def __init__(self, budget: RequestBudget) -> None:
        self._budget = budget

    def remaining(self) -> float:
        budget = self._budget
        callers = budget.served() if budget.served is not None else ()
        return max(
            (caller.admission().remaining() for caller in callers),
            default=budget.admission().remaining(),
        )
