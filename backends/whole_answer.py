"""A whole (non-streamed) answer from one replica under the same budgets as a stream: where
the backend sees its tokens arrive, no first token within the first-token budget, or a gap
between tokens longer than the stall budget, ends the call (and the engine hears Abort)
instead of holding the request until its total runs out.

A call can also have its tokens counted without those budgets (`counted`): the count is what a
call that runs out teaches admission, and a whole answer the operator did not ask to watch is
bound by its total alone (held to the first-token budget while only being counted, uncapped
answers whose prefill took 1.5 s failed as 504s at 1 s, and their replica was ejected)."""

from __future__ import annotations

import asyncio

from backends.base import Backend, GenerationRequest, reports_progress
from budgets.progress_watch import ProgressWatch
from budgets.request_budget import RequestBudget
from core.answers import Completion
from core.errors import DeadlineExceeded


class TokenCount:
    """Counts a whole answer's tokens as they arrive, and bounds nothing."""

    __slots__ = ("produced",)

    def __init__(self) -> None:
        self.produced = 0

    def tick(self, tokens: int) -> None:
        self.produced += tokens


async def complete_within_budget(
    backend: Backend, request: GenerationRequest, budget: RequestBudget, counted: bool = False
) -> Completion:
    """`backend.complete` bounded by the total (the backend's own deadline) and, when the
    backend reports progress, by the first-token and stall budgets; a `DeadlineExceeded` then
    says how many output tokens had come, as it does when the answer is only `counted` (where
    the backend can count it)."""
    task = asyncio.current_task()
    if task is not None and reports_progress(backend):
        return await _watched(backend, request, budget, task)
    if not counted:
        return await backend.complete(request, budget.total)
    count = TokenCount()
    request.progress = count
    try:
        return await backend.complete(request, budget.total)
    except DeadlineExceeded as exc:
        raise exc.having_produced(count.produced) from None
    finally:
        request.progress = None


async def _watched(
    backend: Backend, request: GenerationRequest, budget: RequestBudget, task: asyncio.Task[object]
) -> Completion:
    watch = ProgressWatch(task, budget.first_token, budget.budgets.stall_s)
    request.progress = watch
    try:
        return await backend.complete(request, budget.total)
    except asyncio.CancelledError:
        if watch.fired is None:
            raise
        task.uncancel()
        raise DeadlineExceeded(watch.fired, produced=watch.produced) from None
    except DeadlineExceeded as exc:  # the total, which the backend enforces
        raise exc.having_produced(watch.produced) from None
    finally:
        watch.stop()
        request.progress = None
