"""A scripted in-memory backend for routing and HTTP-layer tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from backends.base import EmbeddingCall, GenerationRequest
from backends.types import (
    BackendHealth,
    Choice,
    ChoiceDelta,
    Completion,
    Embeddings,
    StreamChunk,
    Usage,
)
from budgets.deadline import Deadline
from gateway.errors import GatewayError


@dataclass
class FakeBackend:
    """Answers with `words`; raises `fail_with` before (or after `fail_after` chunks of) output."""

    url: str = "fake://a"
    words: list[str] = field(default_factory=lambda: ["Hello", " world", "!"])
    healthy: bool = True
    fail_with: GatewayError | None = None
    fail_after: int | None = None
    hang_before_first: bool = False
    calls: int = 0
    closed_early: int = 0
    started: bool = False

    async def start(self) -> None:
        self.started = True

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self.calls += 1
        if self.fail_with is not None:
            raise self.fail_with
        text = "".join(self.words)
        choices = [Choice(i, text, "stop") for i in range(request.body.n)]
        usage = Usage(3, len(self.words) * request.body.n)
        return Completion(choices, usage)

    async def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        finished = False
        try:
            if self.hang_before_first:
                await asyncio.Event().wait()
            if self.fail_with is not None and self.fail_after is None:
                raise self.fail_with
            for position, word in enumerate(self.words):
                if self.fail_with is not None and position == self.fail_after:
                    raise self.fail_with
                yield StreamChunk([ChoiceDelta(i, word) for i in range(request.body.n)])
            usage = Usage(3, len(self.words) * request.body.n)
            yield StreamChunk([ChoiceDelta(i, "", "stop") for i in range(request.body.n)], usage)
            finished = True
        finally:
            if not finished:
                self.closed_early += 1

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        self.calls += 1
        inputs = request.body.input
        count = 1 if isinstance(inputs, str) or isinstance(inputs[0], int) else len(inputs)
        return Embeddings([[0.5, -0.5, 0.25]] * count, prompt_tokens=2 * count)

    async def health(self, timeout: float) -> BackendHealth:
        return BackendHealth(self.healthy, "fake")

    async def aclose(self) -> None:
        pass
