"""A scripted in-memory backend for routing and HTTP-layer tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from backends.base import EmbeddingCall, GenerationRequest
from budgets.deadline import Deadline
from core.answers import (
    BackendHealth,
    Choice,
    ChoiceDelta,
    Completion,
    Embeddings,
    StreamChunk,
    Usage,
)
from core.errors import DeadlineExceeded, GatewayError


@dataclass
class FakeBackend:
    """Answers with `words`; raises `fail_with` before (or after `fail_after` chunks of) output."""

    url: str = "fake://a"
    words: list[str] = field(default_factory=lambda: ["Hello", " world", "!"])
    healthy: bool = True
    fail_with: GatewayError | None = None
    fail_after: int | None = None
    hang_before_first: bool = False
    stall_after: int | None = None
    hold: asyncio.Event | None = None
    calls: int = 0
    raws: list[bytes] = field(default_factory=list)  # the body each call was sent
    closed_early: int = 0
    held: int = 0
    _held_changed: asyncio.Event = field(default_factory=asyncio.Event)
    started: bool = False

    async def start(self) -> None:
        self.started = True

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self.calls += 1
        self.raws.append(request.raw)
        if self.hold is not None:
            await self._held(request, deadline)
        if self.fail_with is not None:
            raise self.fail_with
        text = "".join(self.words)
        choices = [Choice(i, text, "stop") for i in range(request.body.n)]
        usage = Usage(3, len(self.words) * request.body.n)
        return Completion(choices, usage)

    async def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        self.calls += 1
        self.raws.append(request.raw)
        finished = False
        try:
            if self.hold is not None:
                await self._held(request, deadline)
            if self.hang_before_first:
                await asyncio.Event().wait()
            if self.fail_with is not None and self.fail_after is None:
                raise self.fail_with
            for position, word in enumerate(self.words):
                if self.fail_with is not None and position == self.fail_after:
                    raise self.fail_with
                if position == self.stall_after:
                    await asyncio.Event().wait()
                yield StreamChunk([ChoiceDelta(i, word) for i in range(request.body.n)])
            usage = Usage(3, len(self.words) * request.body.n)
            yield StreamChunk([ChoiceDelta(i, "", "stop") for i in range(request.body.n)], usage)
            finished = True
        finally:
            if not finished:
                self.closed_early += 1

    async def _held(self, request: GenerationRequest, deadline: Deadline) -> None:
        """Requests whose user content starts with "hold" wait until `hold` is set, or until
        their deadline, which ends them as a real backend's deadline would."""
        if request.raw.find(b'"hold') >= 0:
            assert self.hold is not None
            self._count_held(+1)
            try:
                async with asyncio.timeout(deadline.remaining()):
                    await self.hold.wait()
            except TimeoutError:
                raise DeadlineExceeded(deadline.stage) from None
            finally:
                self._count_held(-1)

    def _count_held(self, delta: int) -> None:
        self.held += delta
        self._held_changed.set()

    async def wait_held(self, count: int, timeout_s: float = 10.0) -> None:
        """Until exactly `count` requests are being held."""
        async with asyncio.timeout(timeout_s):
            while self.held != count:
                self._held_changed.clear()
                await self._held_changed.wait()

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        self.calls += 1
        self.raws.append(request.raw)
        inputs = request.body.input
        count = 1 if isinstance(inputs, str) or isinstance(inputs[0], int) else len(inputs)
        return Embeddings([[0.5, -0.5, 0.25]] * count, prompt_tokens=2 * count)

    async def health(self, timeout: float) -> BackendHealth:
        return BackendHealth(self.healthy, "fake")

    async def aclose(self) -> None:
        pass
