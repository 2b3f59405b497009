"""A replica's silence: the whole (non-streamed) answers it holds, when it last answered
anything, and how much silence each of those answers explains.

A whole answer shows nothing until it ends, so a replica that takes requests and never
answers them looks, from the gateway, like one serving long ones. What tells them apart
without a cost per token is silence: one answer still waiting is no sign, but a replica that
has answered nothing at all (no whole answer, no stream's first token, no probe) for far
longer than a request it holds should take is a suspect, and `backends.hang_watch` asks it
for one token then.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass

from backends.outlook import Demand
from budgets.request_budget import RequestBudget
from core.answers import Endpoint


@dataclass(frozen=True, slots=True)
class HangPolicy:
    """How much silence a whole answer explains; `enabled` False turns the watch off."""

    enabled: bool = True
    factor: float = 4.0  # times the replica's learned time for the request
    token_allowance_s: float = 0.2  # per output token, while the replica has learned nothing

    def patience(self, first_token_s: float, learned_s: float | None, tokens: int) -> float:
        """Seconds of silence a whole answer of `tokens` output tokens explains: `factor`
        times the time the replica was learned to take for it, or without one its
        first-token budget plus the allowance per token; never less than the first-token
        budget (a stream is allowed as much before its first token)."""
        if learned_s is not None:
            return max(first_token_s, self.factor * learned_s)
        return first_token_s + self.token_allowance_s * tokens


class Waiting:
    """One whole answer a replica holds: the task awaiting it, since when, what it asks for,
    and why it was given up (`hung`, set when its replica is found hung)."""

    __slots__ = ("budget", "demand", "endpoint", "hung", "started", "task")

    def __init__(
        self,
        task: asyncio.Task[object],
        started: float,
        demand: Demand,
        budget: RequestBudget,
        endpoint: Endpoint,
    ) -> None:
        self.task = task
        self.started = started
        self.demand = demand
        self.budget = budget
        self.endpoint = endpoint
        self.hung: str | None = None


Patience = Callable[[Waiting], float | None]  # None: the answer's length cannot be told


class Silence:
    """One replica's whole answers in flight, when it last answered, and its probe (at most
    one at a time)."""

    __slots__ = ("heard_at", "probe", "waiting")

    def __init__(self) -> None:
        self.waiting: set[Waiting] = set()
        self.heard_at = -math.inf
        self.probe: asyncio.Task[None] | None = None

    def quiet_s(self, waiting: Waiting, now: float) -> float:
        """How long the replica has said nothing while holding `waiting`."""
        return now - max(waiting.started, self.heard_at)

    def overdue(self, now: float, patience: Patience) -> Waiting | None:
        """A whole answer held through more silence than it explains, if any."""
        for waiting in self.waiting:
            quiet = self.quiet_s(waiting, now)
            if quiet < waiting.budget.budgets.ttft_s:
                continue  # no answer explains less: the common case, without a prediction
            allowed = patience(waiting)
            if allowed is not None and quiet >= allowed:
                return waiting
        return None
