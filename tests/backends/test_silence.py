"""How much silence a whole answer explains, and which of a replica's answers is overdue."""

from __future__ import annotations

import asyncio
import time

import orjson

from backends.outlook import Demand
from backends.silence import HangPolicy, Silence, Waiting
from budgets.request_budget import ClassBudgets, RequestBudget
from core.protocol import CompletionRequest
from core.request_parsing import parse_request


def test_patience_is_the_learned_time_scaled_or_an_allowance_per_token() -> None:
    """Learned: `factor` times it, never under the first-token budget; unlearned: the
    first-token budget plus the allowance for each output token."""
    policy = HangPolicy(factor=4.0, token_allowance_s=0.2)
    assert policy.patience(30.0, 20.0, 100) == 80.0
    assert policy.patience(30.0, 1.0, 100) == 30.0
    assert policy.patience(30.0, None, 100) == 50.0


async def test_only_an_answer_held_through_more_silence_than_it_explains_is_overdue() -> None:
    """Silence counts from the later of the answer's start and the replica's last word."""
    budgets = ClassBudgets(total_s=60.0, ttft_s=5.0, admission_s=5.0, stall_s=5.0)
    budget = RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())
    body = parse_request(orjson.dumps({"model": "m", "prompt": "hi"}), CompletionRequest)
    task = asyncio.current_task()
    assert task is not None
    silence = Silence()
    early = Waiting(task, 0.0, Demand.of(body), budget, "completion")
    late = Waiting(task, 8.0, Demand.of(body), budget, "completion")
    silence.waiting.update((early, late))
    assert silence.overdue(9.5, lambda w: 10.0) is None
    assert silence.overdue(10.0, lambda w: 9.0) is early
    silence.heard_at = 4.0
    assert silence.overdue(12.0, lambda w: 9.0) is None
    assert silence.overdue(14.0, lambda w: 11.0 if w is early else 6.0) is late
    assert silence.overdue(100.0, lambda w: None) is None  # unknown: never overdue
