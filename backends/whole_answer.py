"""A whole (non-streamed) answer from one replica under the same budgets as a stream: where
the backend sees its tokens arrive, no first token within the first-token budget, or a gap
between tokens longer than the stall budget, ends the call (and the engine hears Abort)
instead of holding the request until its total runs out."""

from __future__ import annotations

import asyncio

from backends.base import Backend, GenerationRequest, reports_progress
from budgets.progress_watch import ProgressWatch
from budgets.request_budget import RequestBudget
from core.answers import Completion
from core.errors import DeadlineExceeded


async def complete_within_budget(
    backend: Backend, request: GenerationRequest, budget: RequestBudget, watched: bool = False
) -> Completion:
    """`backend.complete` bounded by the total (the backend's own deadline) and, when the
    backend reports progress (on every answer, or on this one, `watched`, where it can), by the
    first-token and stall budgets (`DeadlineExceeded`, which then says how many output tokens
    had come)."""
    task = asyncio.current_task()
    if task is None or not (watched or reports_progress(backend)):
        return await backend.complete(request, budget.total)
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
