"""One request's deadlines: the total, the first token, and the stages cut from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from budgets.deadline import Clock, Deadline
from budgets.priority import Priority
from budgets.timeline import Timeline
from core.stages import StageName


@dataclass(frozen=True, slots=True)
class ClassBudgets:
    """The budgets of one priority class, in seconds."""

    total_s: float
    ttft_s: float
    admission_s: float
    stall_s: float


@dataclass(frozen=True, slots=True)
class RequestBudget:
    """Deadlines fixed when the request arrived; every stage cuts its own from these."""

    priority: Priority
    budgets: ClassBudgets
    total: Deadline
    first_token: Deadline
    timeline: Timeline
    client_set: bool = False
    """The client's timeout header set the total (it was tighter than the class's)."""
    served: Callable[[], Sequence[RequestBudget]] | None = None
    """For a call several callers share (coalesced identical requests): their budgets as they
    stand, which admission judges the call by; this budget then only bounds the call."""

    @classmethod
    def start(
        cls,
        priority: Priority,
        budgets: ClassBudgets,
        clock: Clock,
        started: float,
        client_timeout_s: float | None = None,
    ) -> RequestBudget:
        """Deadlines counted from `started`; a client timeout may only tighten the total."""
        total_s = budgets.total_s
        client_set = False
        if client_timeout_s is not None and client_timeout_s < total_s:
            total_s, client_set = client_timeout_s, True
        total = Deadline(started + total_s, StageName.TOTAL, clock)
        first_token = total
        if budgets.ttft_s < total_s:
            first_token = Deadline(started + budgets.ttft_s, StageName.TTFT, clock)
        return cls(priority, budgets, total, first_token, Timeline(clock, started), client_set)

    def before_first_token(self, cap_s: float, stage: str) -> Deadline:
        """A deadline for a stage that runs before the first token: `cap_s` from now at most."""
        return self.first_token.child(cap_s, stage)

    def admission(self) -> Deadline:
        return self.first_token.child(self.budgets.admission_s, StageName.ADMISSION)
