"""A whole answer under the budgets: watched (first token and stall bound it) or only counted
(its total alone bounds it), and how many tokens a call that ran out had produced."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import orjson
import pytest

from backends.base import GenerationRequest
from backends.whole_answer import complete_within_budget
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.answers import Completion
from core.errors import DeadlineExceeded
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend


@dataclass
class SlowPrefill(FakeBackend):
    """Its first token comes after `prefill_s` (real time), then `tokens` at once; or it runs
    out of time (`DeadlineExceeded` naming the total) once they came, with `run_out`."""

    prefill_s: float = 0.0
    tokens: int = 3
    run_out: bool = False
    reports_progress: bool = False
    can_report_progress: bool = True

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        await asyncio.sleep(self.prefill_s)  # the behaviour under test: a slow prefill
        if request.progress is not None:
            request.progress.tick(self.tokens)
        if self.run_out:
            raise DeadlineExceeded("total")
        return await super().complete(request, deadline)


def _chat() -> GenerationRequest:
    raw = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, "r1")


def _budget(ttft_s: float) -> RequestBudget:
    budgets = ClassBudgets(total_s=60.0, ttft_s=ttft_s, admission_s=60.0, stall_s=60.0)
    return RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())


async def test_a_counted_answer_is_not_held_to_the_first_token_budget() -> None:
    """Counted only (the model's lengths in doubt), a whole answer whose prefill outlasts
    the first-token budget still comes (it was a 504 naming ttft); watched, it is one."""
    backend = SlowPrefill(prefill_s=0.3)
    completion = await complete_within_budget(backend, _chat(), _budget(0.05), counted=True)
    assert completion.choices[0].text == "Hello world!"
    backend.reports_progress = True
    with pytest.raises(DeadlineExceeded) as info:
        await complete_within_budget(backend, _chat(), _budget(0.05))
    assert (info.value.stage, info.value.produced) == ("ttft", 0)


async def test_a_counted_answer_that_runs_out_says_how_far_it_got() -> None:
    """The total runs out after 7 tokens of a counted answer: the overrun says 7; one not
    counted knows nothing."""
    backend = SlowPrefill(tokens=7, run_out=True)
    with pytest.raises(DeadlineExceeded) as info:
        await complete_within_budget(backend, _chat(), _budget(60.0), counted=True)
    assert info.value.produced == 7
    with pytest.raises(DeadlineExceeded) as info:
        await complete_within_budget(backend, _chat(), _budget(60.0))
    assert info.value.produced is None
