"""A batched completion (`prompt` a list of texts or of token lists) over gRPC, where a
`Generate` takes one prompt: one call per prompt, all at once under the request's deadline,
answered as OpenAI and vLLM answer a batch: choice `i * n + j` is choice j of prompt i, and
the usage is that of every prompt summed. One prompt failing ends the others (and the engine
hears Abort for each, as when a client leaves)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import Any

from backends.base import GenerationRequest
from core.answers import Completion, StreamChunk, Usage
from core.protocol import CompletionRequest


def is_batch(request: GenerationRequest) -> bool:
    body = request.body
    return isinstance(body, CompletionRequest) and body.batched


def split(request: GenerationRequest) -> list[GenerationRequest]:
    """One request per prompt, each with an engine request id of its own (`<id>-<i>`, which
    its Abort names) and the batch's progress listener (`reports_progress`)."""
    body = request.body
    assert isinstance(body, CompletionRequest)
    return [
        GenerationRequest(
            request.endpoint,
            body.model_copy(update={"prompt": prompt}),
            request.raw,  # the batch's: a pass-through backend would send it, gRPC never does
            f"{request.request_id}-{i}",
            request.headers,
            max_tokens_from_key=request.max_tokens_from_key,
            progress=request.progress,
        )
        for i, prompt in enumerate(body.prompts)
    ]


async def all_answers(calls: Sequence[Awaitable[Completion]], n: int) -> Completion:
    """The prompts' whole answers as one; the first failure cancels the calls still running."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        answers = await asyncio.gather(*tasks)
    except BaseException:
        await _cancel(tasks)
        raise
    choices = []
    for i, answer in enumerate(answers):
        for choice in answer.choices:
            choice.index += i * n  # the answers are this batch's own
            choices.append(choice)
    return Completion(choices, summed([answer.usage for answer in answers]))


async def merged_stream(
    streams: Sequence[AsyncGenerator[StreamChunk, None]], n: int
) -> AsyncGenerator[StreamChunk, None]:
    """The prompts' streams as one: each chunk as it arrives, its choices renumbered, and the
    usage of all, summed, on the chunk that ends the last of them. The first failure ends the
    stream; closing it closes every prompt's stream (cancelling its call upstream)."""
    queue: asyncio.Queue[tuple[int, StreamChunk | BaseException | None]] = asyncio.Queue()

    async def pump(i: int, chunks: AsyncGenerator[StreamChunk, None]) -> None:
        try:
            async for chunk in chunks:
                queue.put_nowait((i, chunk))
            queue.put_nowait((i, None))
        except Exception as exc:
            queue.put_nowait((i, exc))
        finally:
            with contextlib.suppress(Exception):
                await chunks.aclose()

    tasks = [asyncio.create_task(pump(i, chunks)) for i, chunks in enumerate(streams)]
    usages: list[Usage | None] = [None] * len(streams)
    running = len(streams)
    try:
        while running:
            i, item = await queue.get()
            if item is None:
                running -= 1
                continue
            if isinstance(item, BaseException):
                raise item
            for delta in item.deltas:
                delta.index += i * n  # the chunks are this batch's own
            if item.usage is not None:
                usages[i] = item.usage
                item.usage = summed(usages) if None not in usages else None
            if item.deltas or item.usage is not None:
                yield item
    finally:
        await _cancel(tasks)


def summed(usages: Sequence[Usage | None]) -> Usage:
    total = Usage()
    for usage in usages:
        if usage is not None:
            total.prompt_tokens += usage.prompt_tokens
            total.completion_tokens += usage.completion_tokens
            total.cached_tokens += usage.cached_tokens
            total.reasoning_tokens += usage.reasoning_tokens
    return total


async def _cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel what still runs and wait for it to end (its upstream call aborted)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
