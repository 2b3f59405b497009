"""Single-flight: identical concurrent misses in one process share one backend call.

`SingleFlight` shares one awaited result; `StreamFlight` shares one stream, replaying what
was already produced to late joiners. In both, the shared call runs in a task owned by the
flight, so a caller that leaves does not cancel it while others still wait; the last one to
leave does. A key is forgotten as soon as its call ends, so later callers start afresh.

The shared task runs in the leader's context (contextvars) and under whatever deadline the
leader's `call`/`start` closed over; items and results are the same objects for everyone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from core.errors import GatewayError

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Tap(Protocol[T_contra]):
    """Hears every item of a shared stream, and `finish()` when it ended cleanly."""

    def add(self, item: T_contra) -> None: ...

    def finish(self) -> None: ...


class _Call(Generic[T]):
    __slots__ = ("task", "waiters")

    def __init__(self, task: asyncio.Task[T]) -> None:
        self.task = task
        self.waiters = 0


class SingleFlight(Generic[T]):
    """One `call` per key at a time; concurrent callers with the key await its result."""

    def __init__(self) -> None:
        self._calls: dict[str, _Call[T]] = {}
        self.leaders = 0
        self.followers = 0

    @property
    def in_flight(self) -> int:
        return len(self._calls)

    async def do(self, key: str, call: Callable[[], Awaitable[T]]) -> T:
        """The result of the call running for `key`, starting `call` if none is."""
        result, _ = await self.do_shared(key, call)
        return result

    async def do_shared(self, key: str, call: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """Like `do`, and whether the result came from another caller's call."""
        flight = self._calls.get(key)
        shared = flight is not None
        if flight is None:
            flight = _Call(asyncio.create_task(_await(call)))
            self._calls[key] = flight
            flight.task.add_done_callback(lambda _: self._forget(key, flight))
            self.leaders += 1
        else:
            self.followers += 1
        flight.waiters += 1
        try:
            return await asyncio.shield(flight.task), shared
        except GatewayError as exc:  # each caller's own: its holder may name or head it
            raise exc.twin() from exc
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                self._forget(key, flight)
                flight.task.cancel()

    def _forget(self, key: str, flight: _Call[T]) -> None:
        if self._calls.get(key) is flight:
            del self._calls[key]


async def _await(call: Callable[[], Awaitable[T]]) -> T:
    return await call()


class _Stream(Generic[T]):
    """The shared state of one streaming flight: everything produced so far, and its end."""

    __slots__ = ("_loop", "_waiters", "done", "error", "items", "pump", "started", "subscribers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.items: list[T] = []
        self.started = False
        self.done = False
        self.error: BaseException | None = None
        self.subscribers = 0
        self.pump: asyncio.Task[None] | None = None
        self._loop = loop
        self._waiters: list[asyncio.Future[None]] = []

    def waiter(self) -> asyncio.Future[None]:
        """A future resolved by the next item, the start, or the end."""
        # One future per waiting subscriber rather than one shared future: awaiting a
        # shared future directly would cancel it for everyone when one waiter is cancelled.
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        return waiter

    def wake(self) -> None:
        waiters = self._waiters
        if waiters:
            self._waiters = []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)


class Subscription(AsyncIterator[T], Generic[T]):
    """One subscriber's view of a shared stream: every item from the first, then its end.

    Closing it (`aclose`, cancellation while waiting for an item, or being garbage
    collected unclosed) unsubscribes; the last subscriber to leave aborts the stream.
    """

    first: T | None = None  # a subscription replays everything through `chunks`

    def __init__(self, owner: StreamFlight[T], key: str, flight: _Stream[T], shared: bool) -> None:
        self._owner = owner
        self._key = key
        self._flight = flight
        self._next = 0
        self._closed = False
        self.shared = shared  # another caller started the stream

    def __aiter__(self) -> Subscription[T]:
        return self

    @property
    def chunks(self) -> Subscription[T]:
        return self

    def failed(self, exc: BaseException) -> None:
        """The shared stream's own pump deals with its failures."""

    def finished(self, usage: object) -> None:
        """A shared stream's end is learned by its leader's source, once (see `iterate`)."""

    async def close(self) -> None:
        self._leave()

    async def __anext__(self) -> T:
        flight = self._flight
        while not self._closed:
            if self._next < len(flight.items):
                item = flight.items[self._next]
                self._next += 1
                return item
            if flight.done:
                self._leave()
                if flight.error is not None:
                    raise _own(flight.error)
                break
            waiter = flight.waiter()
            try:
                await waiter
            except BaseException:
                self._leave()
                raise
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._leave()

    def _leave(self) -> None:
        if not self._closed:
            self._closed = True
            self._owner._unsubscribe(self._key, self._flight)

    def __del__(self) -> None:
        if not self._closed:
            with contextlib.suppress(Exception):  # e.g. the loop closed before collection
                self._leave()


class StreamFlight(Generic[T]):
    """One upstream stream per key at a time, fanned out to every concurrent subscriber."""

    def __init__(self) -> None:
        self._streams: dict[str, _Stream[T]] = {}
        self.leaders = 0
        self.followers = 0

    @property
    def in_flight(self) -> int:
        return len(self._streams)

    async def open(
        self,
        key: str,
        start: Callable[[], Awaitable[AsyncGenerator[T, None]]],
        tap: Tap[T] | None = None,
    ) -> Subscription[T]:
        """Subscribe to the stream running for `key`, starting one with `start()` if none is;
        a stream started here feeds `tap` once, however many subscribe.

        Returns once `start()` has returned; if it raised, every subscriber waiting here
        gets that exception instead.
        """
        flight = self._streams.get(key)
        shared = flight is not None
        if flight is None:
            flight = _Stream[T](asyncio.get_running_loop())
            self._streams[key] = flight
            flight.pump = asyncio.create_task(self._pump(key, flight, start, tap))
            self.leaders += 1
        else:
            self.followers += 1
        flight.subscribers += 1
        subscription = Subscription(self, key, flight, shared)
        try:
            while not flight.started and not flight.done:
                await flight.waiter()
        except BaseException:
            subscription._leave()
            raise
        if not flight.started:
            subscription._leave()
            assert flight.error is not None
            raise _own(flight.error)
        return subscription

    async def _pump(
        self,
        key: str,
        flight: _Stream[T],
        start: Callable[[], Awaitable[AsyncGenerator[T, None]]],
        tap: Tap[T] | None,
    ) -> None:
        upstream: AsyncGenerator[T, None] | None = None
        try:
            upstream = await start()
            flight.started = True
            flight.wake()
            async for item in upstream:
                flight.items.append(item)
                flight.wake()
                if tap is not None:
                    tap.add(item)
            if tap is not None:
                tap.finish()
        except BaseException as exc:
            # Recorded even for cancellation, so no subscriber mistakes a cut stream for
            # a complete one.
            flight.error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            flight.done = True
            flight.wake()
            self._forget(key, flight)
            if upstream is not None:
                with contextlib.suppress(Exception):
                    await upstream.aclose()

    def _unsubscribe(self, key: str, flight: _Stream[T]) -> None:
        flight.subscribers -= 1
        if flight.subscribers == 0 and not flight.done:
            self._forget(key, flight)
            assert flight.pump is not None
            flight.pump.cancel()

    def _forget(self, key: str, flight: _Stream[T]) -> None:
        if self._streams.get(key) is flight:
            del self._streams[key]


def _own(error: BaseException) -> BaseException:
    """A subscriber's own copy of the stream's error, when its holder may change it."""
    return error.twin() if isinstance(error, GatewayError) else error
