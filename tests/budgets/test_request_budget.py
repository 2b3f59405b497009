"""Per-request deadlines cut from a priority class's budgets."""

from __future__ import annotations

from budgets.request_budget import ClassBudgets, RequestBudget


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


BUDGETS = ClassBudgets(total_s=10.0, ttft_s=2.0, admission_s=0.5, stall_s=3.0)


def start(clock: FakeClock, client_timeout_s: float | None = None) -> RequestBudget:
    return RequestBudget.start("interactive", BUDGETS, clock, 100.0, client_timeout_s)


def test_start_counts_total_and_ttft_from_started() -> None:
    """Total and first-token deadlines are `started` plus the class budgets."""
    clock = FakeClock()
    budget = start(clock)
    assert budget.priority == "interactive" and budget.budgets is BUDGETS
    assert (budget.total.at, budget.total.stage) == (110.0, "total")
    assert (budget.first_token.at, budget.first_token.stage) == (102.0, "ttft")
    assert budget.timeline.started == 100.0 and budget.timeline.stages == []


def test_start_counts_from_started_not_from_now() -> None:
    """A request that started before `now` has already used part of its budget."""
    clock = FakeClock()
    clock.now = 101.5
    budget = RequestBudget.start("batch", BUDGETS, clock, 100.0)
    assert budget.priority == "batch"
    assert budget.total.at == 110.0 and budget.total.remaining() == 8.5
    assert budget.first_token.at == 102.0 and budget.first_token.remaining() == 0.5


def test_client_timeout_tightens_the_total() -> None:
    """A client timeout below the class total becomes the total."""
    budget = start(FakeClock(), client_timeout_s=4.0)
    assert (budget.total.at, budget.total.stage) == (104.0, "total")
    assert (budget.first_token.at, budget.first_token.stage) == (102.0, "ttft")
    assert budget.client_set and not start(FakeClock()).client_set


def test_client_timeout_never_loosens_the_total() -> None:
    """A client timeout above the class total is ignored."""
    budget = start(FakeClock(), client_timeout_s=60.0)
    assert budget.total.at == 110.0 and not budget.client_set
    assert start(FakeClock(), client_timeout_s=10.0).total.at == 110.0


def test_first_token_is_the_total_when_client_timeout_is_below_ttft() -> None:
    """When the total is shorter than the TTFT budget, the first token waits on the total."""
    budget = start(FakeClock(), client_timeout_s=1.0)
    assert budget.first_token is budget.total
    assert (budget.first_token.at, budget.first_token.stage) == (101.0, "total")


def test_first_token_is_the_total_when_ttft_equals_total() -> None:
    """A TTFT budget equal to the total adds no separate deadline."""
    budgets = ClassBudgets(total_s=5.0, ttft_s=5.0, admission_s=1.0, stall_s=1.0)
    budget = RequestBudget.start("interactive", budgets, FakeClock(), 100.0)
    assert budget.first_token is budget.total
    assert budget.first_token.stage == "total"


def test_before_first_token_cap_binds_names_the_stage() -> None:
    """A stage cap shorter than the TTFT left gives a deadline named after the stage."""
    clock = FakeClock()
    budget = start(clock)
    clock.now = 100.5
    deadline = budget.before_first_token(0.25, "exact_cache")
    assert (deadline.at, deadline.stage) == (100.75, "exact_cache")


def test_before_first_token_parent_binds_names_ttft() -> None:
    """A stage cap longer than the TTFT left is the TTFT deadline itself."""
    clock = FakeClock()
    budget = start(clock)
    clock.now = 101.5
    deadline = budget.before_first_token(1.0, "semantic_cache")
    assert deadline is budget.first_token
    assert (deadline.at, deadline.stage) == (102.0, "ttft")


def test_before_first_token_names_total_when_total_binds() -> None:
    """With a client timeout below the TTFT, an overlong cap is named after the total."""
    clock = FakeClock()
    budget = start(clock, client_timeout_s=1.0)
    deadline = budget.before_first_token(5.0, "parse")
    assert deadline is budget.total
    assert deadline.stage == "total"


def test_admission_deadline_from_class_budget() -> None:
    """admission() is the class's admission budget from now, named "admission"."""
    clock = FakeClock()
    budget = start(clock)
    clock.now = 100.25
    deadline = budget.admission()
    assert (deadline.at, deadline.stage) == (100.75, "admission")


def test_admission_deadline_capped_by_ttft() -> None:
    """Late in the TTFT budget, admission waits only until the TTFT deadline."""
    clock = FakeClock()
    budget = start(clock)
    clock.now = 101.75
    deadline = budget.admission()
    assert deadline is budget.first_token
    assert deadline.stage == "ttft"
