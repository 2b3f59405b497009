"""Chooses a replica per request, retries once before the first byte, and polls health."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

from backends.base import EmbeddingCall, GenerationRequest
from backends.replica import Replica
from backends.types import Completion, Embeddings, StreamChunk
from budgets.deadline import Deadline
from gateway.errors import (
    BackendError,
    BackendUnavailable,
    DeadlineExceeded,
    ModelNotFound,
    NoHealthyBackend,
)

log = logging.getLogger("gateway.fleet")
T = TypeVar("T")


class Fleet:
    """Every configured model's replicas."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        *,
        retry_attempts: int,
        health_interval_s: float,
        health_timeout_s: float,
    ) -> None:
        self._by_model: dict[str, list[Replica]] = {}
        for replica in replicas:
            self._by_model.setdefault(replica.model, []).append(replica)
        self._retry_attempts = retry_attempts
        self._health_interval_s = health_interval_s
        self._health_timeout_s = health_timeout_s
        self._tiebreak = itertools.count()
        self._pollers: list[asyncio.Task[None]] = []

    @property
    def models(self) -> list[str]:
        return list(self._by_model)

    def replicas(self, model: str) -> list[Replica]:
        try:
            return self._by_model[model]
        except KeyError:
            raise ModelNotFound(model) from None

    def ready(self) -> bool:
        """Every model has at least one healthy replica."""
        return all(any(r.healthy for r in rs) for rs in self._by_model.values())

    def pick(self, model: str, exclude: Sequence[Replica] = ()) -> Replica:
        """The least-loaded healthy replica; ties rotate so equal replicas share work."""
        candidates = [r for r in self.replicas(model) if r.healthy and r not in exclude]
        if not candidates:
            raise NoHealthyBackend(f"No healthy backend for model {model!r}.")
        if len(candidates) == 1:
            return candidates[0]
        turn = next(self._tiebreak)
        n = len(candidates)
        return min(
            candidates,
            key=lambda r: (r.load_score(), (candidates.index(r) - turn) % n),
        )

    async def start(self) -> None:
        all_replicas = [r for rs in self._by_model.values() for r in rs]
        await asyncio.gather(*(r.backend.start() for r in all_replicas))
        await asyncio.gather(*(self._probe(r) for r in all_replicas))
        self._pollers = [asyncio.create_task(self._poll(r)) for r in all_replicas]

    async def aclose(self) -> None:
        for task in self._pollers:
            task.cancel()
        for task in self._pollers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for replicas in self._by_model.values():
            for replica in replicas:
                await replica.backend.aclose()

    async def _probe(self, replica: Replica) -> None:
        replica.observe(await replica.backend.health(self._health_timeout_s))

    async def _poll(self, replica: Replica) -> None:
        while True:
            await asyncio.sleep(self._health_interval_s)
            try:
                await self._probe(replica)
            except Exception:  # a poller must never die
                log.exception("health probe of %s failed", replica.url)

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        model = request.body.model
        return await self._with_retry(
            model, deadline, lambda r: r.backend.complete(request, deadline)
        )

    async def embed(self, request: EmbeddingCall, deadline: Deadline) -> Embeddings:
        return await self._with_retry(
            request.body.model, deadline, lambda r: r.backend.embed(request, deadline)
        )

    async def _with_retry(
        self, model: str, deadline: Deadline, call: Callable[[Replica], Awaitable[T]]
    ) -> T:
        tried: list[Replica] = []
        while True:
            replica = self.pick(model, tried)
            tried.append(replica)
            replica.inflight += 1
            try:
                return await call(replica)
            except BackendError as exc:
                if not self._may_retry(exc, replica, tried, model, deadline):
                    raise
            finally:
                replica.inflight -= 1

    async def open_stream(
        self, request: GenerationRequest, deadline: Deadline, first_chunk_deadline: Deadline
    ) -> AsyncIterator[StreamChunk]:
        """A stream whose first chunk has already arrived, so failures so far were retried.

        Waiting for the first chunk is bounded by `first_chunk_deadline`; when it fires the
        backend request is cancelled and `DeadlineExceeded` names that budget.
        """
        model = request.body.model
        tried: list[Replica] = []
        while True:
            replica = self.pick(model, tried)
            tried.append(replica)
            replica.inflight += 1
            stream = aiter(replica.backend.stream(request, deadline))
            try:
                async with asyncio.timeout(first_chunk_deadline.remaining()):
                    first = await anext(stream)
            except TimeoutError:
                replica.inflight -= 1
                await _close(stream)
                raise DeadlineExceeded(first_chunk_deadline.stage) from None
            except StopAsyncIteration:
                first = None
            except BackendError as exc:
                replica.inflight -= 1
                await _close(stream)
                if not self._may_retry(exc, replica, tried, model, deadline):
                    raise
                continue
            except BaseException:
                replica.inflight -= 1
                await _close(stream)
                raise
            return _tracked(replica, first, stream)

    def _may_retry(
        self,
        exc: BackendError,
        replica: Replica,
        tried: list[Replica],
        model: str,
        deadline: Deadline,
    ) -> bool:
        if isinstance(exc, BackendUnavailable):
            replica.eject(str(exc))
        if not exc.retryable or len(tried) > self._retry_attempts or deadline.expired:
            return False
        others = [r for r in self.replicas(model) if r.healthy and r not in tried]
        if others:
            log.info("retrying request on another replica of %s after: %s", model, exc)
        return bool(others)


async def _close(stream: AsyncIterator[StreamChunk]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


async def _tracked(
    replica: Replica, first: StreamChunk | None, stream: AsyncIterator[StreamChunk]
) -> AsyncIterator[StreamChunk]:
    try:
        if first is None:
            return
        yield first
        async for chunk in stream:
            yield chunk
    except BackendUnavailable as exc:
        replica.eject(str(exc))
        raise
    finally:
        replica.inflight -= 1
        await _close(stream)
