"""A request's attempts on its model's replicas: each attempt's replica, chosen by routing (of
a context wide enough, when one refused the prompt as too long), and its slot there, admitted
by that replica's queue; and whether a failed attempt is tried again on another."""

from __future__ import annotations

import logging
from collections.abc import Callable

from backends.context_fit import fitting
from backends.fleet_members import Members
from backends.outlook import Demand, Outlook
from backends.overloaded import overloaded
from backends.prefix.prompt import PromptBlocks
from backends.replica import Replica
from backends.replica_choice import ReplicaChoice
from backends.shared_outlook import SharedOutlook, admission_deadline
from budgets.deadline import Deadline
from budgets.request_budget import RequestBudget
from budgets.shed import Shed
from budgets.slots import Slot
from core.backend_errors import BackendError
from core.stages import StageName

log = logging.getLogger("gateway.fleet")


class Attempts:
    """The attempts of a fleet's requests, on the replicas its members hold."""

    def __init__(
        self,
        members: Members,
        choice: ReplicaChoice,
        *,
        retry_attempts: int,
        predict: bool,
        clock: Callable[[], float],
    ) -> None:
        self._members = members
        self._choice = choice
        self._retry_attempts = retry_attempts
        self._predict = predict
        self._clock = clock

    async def next(
        self,
        model: str,
        tried: list[Replica],
        budget: RequestBudget,
        demand: Demand | None,
        prefix: PromptBlocks | None,
        needed: int = 0,
    ) -> tuple[Replica, Slot]:
        """The next replica to try (one of `needed` tokens of context at least, when one
        refused the request as too long), and a slot on it; the prompt's blocks count as sent
        there from now on (`backends.prefix.expected`)."""
        replicas = fitting(self._members.replicas(model), needed)
        choice = self._choice.choose(
            replicas, model, tried, budget.priority, demand, budget, prefix
        )
        replica = choice.replica
        tried.append(replica)
        slot = await self._admit(replica, budget, demand, choice.cached_share)
        if prefix is not None:
            prefix.sent_to(replica.prefix, self._clock())
        return replica, slot

    def may_retry(
        self,
        exc: BackendError,
        tried: list[Replica],
        model: str,
        deadline: Deadline,
        refusals: int = 0,
    ) -> bool:
        """Whether a request that failed with `exc` is tried on another replica: the retries
        (attempts but the `refusals` of a prompt as too long) are not spent, time is left,
        and another replica is routable."""
        retries = len(tried) - refusals
        if not exc.retryable or retries > self._retry_attempts or deadline.expired:
            return False
        now = self._clock()
        others = [r for r in self._members.replicas(model) if r.routable(now) and r not in tried]
        if others:
            log.info("retrying request on another replica of %s after: %s", model, exc)
        return bool(others)

    async def _admit(
        self,
        replica: Replica,
        budget: RequestBudget,
        demand: Demand | None = None,
        cached_share: float | None = None,
    ) -> Slot:
        """A slot on `replica`, or 429 at once when the request cannot make its budget (400
        when no wait could help); `cached_share` is the prompt's share routing found there."""
        timeline = budget.timeline
        timeline.replica = replica.url
        started = timeline.clock()
        goal = None
        if demand is not None and self._predict:
            goal = self._goal(replica, demand, budget, cached_share)
        try:
            deadline = admission_deadline(budget)
            return await replica.admission.acquire(budget.priority, deadline, goal)
        except Shed as exc:
            raise overloaded(exc, budget, goal) from None
        finally:
            timeline.record(StageName.ADMISSION, started)

    def _goal(
        self, replica: Replica, demand: Demand, budget: RequestBudget, cached_share: float | None
    ) -> Outlook | SharedOutlook:
        """What admission judges a request by on `replica`: its outlook there, or for a call
        shared by several callers theirs, by the one with the most time to spare."""
        if budget.served is None:
            return self._choice.outlook(replica, demand, budget, cached_share)
        served, outlook = budget.served, self._choice.outlook
        return SharedOutlook(
            lambda: [(b, outlook(replica, demand, b, cached_share)) for b in served()]
        )
