"""Watches a started stream: notes its usage and finish reasons, and ends it when the backend
stalls or the request's total budget runs out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from backends.types import StreamChunk
from budgets.request_budget import RequestBudget
from gateway.errors import DeadlineExceeded, GatewayError
from obs.request_record import RequestRecord


async def guarded(
    stream: AsyncIterator[StreamChunk], budget: RequestBudget, record: RequestRecord
) -> AsyncIterator[StreamChunk]:
    """Pass the stream through. A gap longer than the stall budget, or running past the
    total, ends it with `DeadlineExceeded` (an error event for the client) and closes the
    backend stream, which aborts the request there.

    The timer is armed only while waiting for the backend, never while the client is
    being written to: a slow reader is not a stalled backend.
    """
    loop = asyncio.get_running_loop()
    total, stall_s = budget.total, budget.budgets.stall_s
    total_at = loop.time() + total.remaining()
    stalled = False
    content = record.content_out  # None unless GATEWAY_TRACE_CONTENT=true
    try:
        async with asyncio.timeout(None) as timer:
            while True:
                stall_at = loop.time() + stall_s
                stalled = stall_at < total_at
                timer.reschedule(stall_at if stalled else total_at)
                try:
                    chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                timer.reschedule(None)
                for delta in chunk.deltas:
                    if delta.finish_reason is not None:
                        record.finish_reasons.append(delta.finish_reason)
                    if content is not None:
                        content.append(delta.text)
                if chunk.usage is not None:
                    record.input_tokens = chunk.usage.prompt_tokens
                    record.output_tokens = chunk.usage.completion_tokens
                yield chunk
    except TimeoutError:
        stage = "stall" if stalled else total.stage
        record.overruns.append(stage)
        record.error = "deadline_exceeded"
        raise DeadlineExceeded(stage) from None
    except GatewayError as exc:
        record.error = exc.code or exc.type
        raise
    finally:
        record.stream_ended_at = budget.timeline.clock()
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
