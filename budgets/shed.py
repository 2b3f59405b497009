"""Admission's refusals: why a request was shed, and the counts of each reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from budgets.priority import PRIORITIES, Priority

ShedReason = Literal[
    "queue_full", "predicted_wait", "queue_timeout", "predicted_outcome", "expired_in_queue"
]


class Shed(Exception):
    """Admission refused: the caller answers 429 with Retry-After.

    `predicted_wait_s` is the queue wait behind the decision (0 when none or unknown);
    `slack_s` what the request's goal had to spare had it started at once (negative: out of
    reach even without waiting; None when the decision did not involve it). `retry_after_s`
    is the predicted wait, or one service time when that is 0, or 1 s with no service history,
    never < 1 ms, times `spread` (from 1 to 1.5): requests refused in one burst were all told
    the same wait, and retried together into the next burst (the OpenAI SDKs wait exactly
    `retry-after-ms`), so successive refusals spread their retries over half as long again.
    """

    def __init__(
        self,
        reason: ShedReason,
        priority: Priority,
        predicted_wait_s: float,
        retry_after_s: float,
        slack_s: float | None = None,
        spread: float = 1.0,
    ) -> None:
        super().__init__(f"{priority} request shed: {reason} (retry after {retry_after_s:.3f}s)")
        self.reason: ShedReason = reason
        self.priority: Priority = priority
        self.predicted_wait_s = predicted_wait_s
        self.retry_after_s = retry_after_s
        self.slack_s = slack_s
        self.spread = spread


def _per_priority() -> dict[Priority, int]:
    return dict.fromkeys(PRIORITIES, 0)


@dataclass(slots=True)
class AdmissionStats:
    """Cumulative counters of one queue."""

    admitted: int = 0
    shed: dict[ShedReason, int] = field(default_factory=dict)
    shed_by_priority: dict[Priority, int] = field(default_factory=_per_priority)

    def count_shed(self, reason: ShedReason, priority: Priority) -> None:
        self.shed[reason] = self.shed.get(reason, 0) + 1
        self.shed_by_priority[priority] += 1
