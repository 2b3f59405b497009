"""Single-flight for awaited results and for shared streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cache.coalesce import SingleFlight, StreamFlight, Subscription
from core.backend_errors import BackendRejected


async def settle(done: Callable[[], bool]) -> None:
    """Yield to the loop until `done()` holds (a bounded number of turns, no wall time)."""
    for _ in range(1000):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


class Upstream:
    """A call whose completion the test controls, recording how it ended."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False
        self.result = "answer"
        self.error: Exception | None = None

    async def __call__(self) -> str:
        self.calls += 1
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.error is not None:
            raise self.error
        return self.result


async def test_concurrent_identical_calls_share_one_call() -> None:
    """50 concurrent callers with one key cause exactly one underlying call."""
    flight, upstream = SingleFlight[str](), Upstream()
    tasks = [asyncio.create_task(flight.do_shared("k", upstream)) for _ in range(50)]
    await upstream.entered.wait()
    upstream.release.set()
    results = await asyncio.gather(*tasks)
    assert upstream.calls == 1
    assert [r for r, _ in results] == ["answer"] * 50
    assert [shared for _, shared in results].count(False) == 1
    assert (flight.leaders, flight.followers, flight.in_flight) == (1, 49, 0)


async def test_different_keys_are_independent() -> None:
    """Each key gets its own call and its own result."""
    flight, a, b = SingleFlight[str](), Upstream(), Upstream()
    b.result = "other"
    ta = asyncio.create_task(flight.do("a", a))
    tb = asyncio.create_task(flight.do("b", b))
    await a.entered.wait()
    await b.entered.wait()
    a.release.set()
    b.release.set()
    assert (await ta, await tb) == ("answer", "other")
    assert a.calls == b.calls == 1


async def test_key_is_released_after_completion() -> None:
    """A call after the shared one finished starts afresh."""
    flight, upstream = SingleFlight[str](), Upstream()
    upstream.release.set()
    assert await flight.do("k", upstream) == "answer"
    assert flight.in_flight == 0
    assert await flight.do("k", upstream) == "answer"
    assert upstream.calls == 2 and flight.followers == 0


async def test_exception_reaches_every_waiter_and_releases_the_key() -> None:
    """The shared call's error is raised to each caller; the next call starts afresh."""
    flight, upstream = SingleFlight[str](), Upstream()
    upstream.error = ConnectionError("backend down")
    tasks = [asyncio.create_task(flight.do("k", upstream)) for _ in range(3)]
    await upstream.entered.wait()
    upstream.release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
    assert flight.in_flight == 0


async def test_each_waiter_gets_its_own_gateway_error() -> None:
    """A gateway error reaches each caller as its own copy: one caller naming it otherwise
    (the Responses API) or heading it (its key's limits) changes no other caller's."""
    flight, upstream = SingleFlight[str](), Upstream()
    upstream.error = BackendRejected("max_tokens is too large.", param="max_tokens")
    tasks = [asyncio.create_task(flight.do("k", upstream)) for _ in range(3)]
    await upstream.entered.wait()
    upstream.release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, BackendRejected) and r.param == "max_tokens" for r in results)
    assert len({id(r) for r in results}) == 3


async def test_leader_cancellation_does_not_cancel_followers() -> None:
    """The caller that started the call may leave; the others still get the result."""
    flight, upstream = SingleFlight[str](), Upstream()
    leader = asyncio.create_task(flight.do("k", upstream))
    await upstream.entered.wait()
    follower = asyncio.create_task(flight.do("k", upstream))
    await settle(lambda: flight.followers == 1)
    leader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leader
    upstream.release.set()
    assert await follower == "answer"
    assert not upstream.cancelled and upstream.calls == 1


async def test_last_waiter_leaving_cancels_the_call() -> None:
    """When every caller has left, the shared call is cancelled and the key released."""
    flight, upstream = SingleFlight[str](), Upstream()
    tasks = [asyncio.create_task(flight.do("k", upstream)) for _ in range(3)]
    await upstream.entered.wait()
    for task in tasks[:2]:
        task.cancel()
    await asyncio.gather(*tasks[:2], return_exceptions=True)
    assert not upstream.cancelled and flight.in_flight == 1
    tasks[2].cancel()
    await asyncio.gather(tasks[2], return_exceptions=True)
    assert flight.in_flight == 0
    await settle(lambda: upstream.cancelled)
    fresh = Upstream()
    fresh.release.set()
    assert await flight.do("k", fresh) == "answer" and fresh.calls == 1


class Source:
    """A stream the test feeds item by item, recording whether it was closed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[int | BaseException | None] = asyncio.Queue()
        self.produced: list[int] = []
        self.yielded = 0
        self.closed = False

    def push(self, item: int) -> None:
        self.produced.append(item)
        self.queue.put_nowait(item)

    def end(self, error: BaseException | None = None) -> None:
        self.queue.put_nowait(error)

    async def iterate(self) -> AsyncGenerator[int, None]:
        try:
            while True:
                item = await self.queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                self.yielded += 1
                yield item
        finally:
            self.closed = True


class Starter:
    """A `start` callable that opens a new Source per call, optionally gated or failing."""

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self.gate: asyncio.Event | None = None
        self.error: Exception | None = None
        self.entered = asyncio.Event()
        self.cancelled = False

    @property
    def source(self) -> Source:
        return self.sources[-1]

    async def __call__(self) -> AsyncGenerator[int, None]:
        self.entered.set()
        if self.gate is not None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        if self.error is not None:
            raise self.error
        self.sources.append(Source())
        return self.source.iterate()


async def pushed(source: Source, *items: int) -> None:
    for item in items:
        source.push(item)
    await settle(lambda: source.yielded == len(source.produced))


async def collect(subscription: Subscription[int]) -> list[int]:
    return [item async for item in subscription]


async def read_to_end(subscription: Subscription[int]) -> tuple[list[int], Exception | None]:
    """Every remaining item, and the error that ended the stream if one did."""
    items: list[int] = []
    try:
        async for item in subscription:
            items.append(item)
    except Exception as exc:
        return items, exc
    return items, None


async def test_concurrent_identical_streams_share_one_upstream() -> None:
    """50 subscribers of one key cause one start and each receive the whole stream."""
    flight, starter = StreamFlight[int](), Starter()
    starter.gate = asyncio.Event()
    opens = [asyncio.create_task(flight.open("k", starter)) for _ in range(50)]
    await starter.entered.wait()
    starter.gate.set()
    subscriptions = await asyncio.gather(*opens)
    readers = [asyncio.create_task(collect(s)) for s in subscriptions]
    await pushed(starter.source, 1, 2, 3)
    starter.source.end()
    assert await asyncio.gather(*readers) == [[1, 2, 3]] * 50
    assert len(starter.sources) == 1 and flight.leaders == 1 and flight.followers == 49
    assert [s.shared for s in subscriptions].count(False) == 1


async def test_error_before_the_first_item_reaches_every_opener() -> None:
    """A failing start is raised from each waiting subscriber's own open call."""
    flight, starter = StreamFlight[int](), Starter()
    starter.gate = asyncio.Event()
    starter.error = ConnectionRefusedError("backend said 503")
    opens = [asyncio.create_task(flight.open("k", starter)) for _ in range(5)]
    await starter.entered.wait()
    await settle(lambda: flight.followers == 4)
    starter.gate.set()
    results = await asyncio.gather(*opens, return_exceptions=True)
    assert all(isinstance(r, ConnectionRefusedError) for r in results)
    assert flight.in_flight == 0


async def test_each_opener_gets_its_own_gateway_error() -> None:
    """A failing start's gateway error reaches each opener as its own copy."""
    flight, starter = StreamFlight[int](), Starter()
    starter.gate = asyncio.Event()
    starter.error = BackendRejected("bad", param="max_tokens")
    opens = [asyncio.create_task(flight.open("k", starter)) for _ in range(3)]
    await starter.entered.wait()
    await settle(lambda: flight.followers == 2)
    starter.gate.set()
    results = await asyncio.gather(*opens, return_exceptions=True)
    assert all(isinstance(r, BackendRejected) and r.param == "max_tokens" for r in results)
    assert len({id(r) for r in results}) == 3


async def test_error_after_items_follows_the_unseen_items() -> None:
    """Each subscriber gets every item it had not seen, then the stream's error."""
    flight, starter = StreamFlight[int](), Starter()
    early = await flight.open("k", starter)
    await pushed(starter.source, 1, 2)
    assert await anext(early) == 1
    late = await flight.open("k", starter)
    starter.source.end(RuntimeError("backend died mid-stream"))
    for subscription, expected in ((early, [2]), (late, [1, 2])):
        seen, error = await read_to_end(subscription)
        assert seen == expected
        assert isinstance(error, RuntimeError) and "mid-stream" in str(error)


async def test_late_joiner_replays_then_follows_live() -> None:
    """A subscriber joining mid-stream first gets what was produced, then new items."""
    flight, starter = StreamFlight[int](), Starter()
    first = await flight.open("k", starter)
    reader = asyncio.create_task(collect(first))
    await pushed(starter.source, 1, 2, 3)
    late = await flight.open("k", starter)
    assert late.shared and [await anext(late) for _ in range(3)] == [1, 2, 3]
    waiting = asyncio.create_task(anext(late))
    await asyncio.sleep(0)
    assert not waiting.done()
    await pushed(starter.source, 4)
    assert await waiting == 4
    await pushed(starter.source, 5)
    starter.source.end()
    assert await collect(late) == [5]
    assert await reader == [1, 2, 3, 4, 5] and len(starter.sources) == 1


async def test_key_is_released_when_the_stream_ends() -> None:
    """After completion a new subscriber starts a new upstream call."""
    flight, starter = StreamFlight[int](), Starter()
    first = await flight.open("k", starter)
    await pushed(starter.source, 1)
    starter.source.end()
    assert await collect(first) == [1]
    await settle(lambda: flight.in_flight == 0)
    second = await flight.open("k", starter)
    assert not second.shared and len(starter.sources) == 2
    await pushed(starter.source, 7)
    starter.source.end()
    assert await collect(second) == [7]


async def test_leaving_early_keeps_the_stream_for_others() -> None:
    """One subscriber closing early does not abort the stream the others still read."""
    flight, starter = StreamFlight[int](), Starter()
    leaver = await flight.open("k", starter)
    stayer = await flight.open("k", starter)
    await pushed(starter.source, 1)
    await leaver.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(leaver)
    await pushed(starter.source, 2)
    starter.source.end()
    assert await collect(stayer) == [1, 2] and starter.source.yielded == 2


async def test_last_subscriber_leaving_aborts_the_upstream() -> None:
    """aclose by the last subscriber cancels the pump and closes the upstream iterator."""
    flight, starter = StreamFlight[int](), Starter()
    subscriptions = [await flight.open("k", starter) for _ in range(2)]
    await pushed(starter.source, 1)
    await subscriptions[0].aclose()
    assert not starter.source.closed
    await subscriptions[1].aclose()
    assert flight.in_flight == 0
    await settle(lambda: starter.source.closed)


async def test_cancelled_reader_counts_as_leaving() -> None:
    """A subscriber cancelled while waiting for an item unsubscribes; if last, aborts."""
    flight, starter = StreamFlight[int](), Starter()
    subscription = await flight.open("k", starter)
    reader = asyncio.create_task(collect(subscription))
    await pushed(starter.source, 1)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    await settle(lambda: starter.source.closed)
    assert flight.in_flight == 0


async def test_all_openers_leaving_before_the_start_cancels_it() -> None:
    """Subscribers that give up while start() runs cancel it when the last one leaves."""
    flight, starter = StreamFlight[int](), Starter()
    starter.gate = asyncio.Event()
    opens = [asyncio.create_task(flight.open("k", starter)) for _ in range(3)]
    await starter.entered.wait()
    for task in opens:
        task.cancel()
    await asyncio.gather(*opens, return_exceptions=True)
    await settle(lambda: starter.cancelled)
    assert flight.in_flight == 0 and starter.sources == []


async def test_garbage_collected_subscription_unsubscribes() -> None:
    """A subscription dropped without aclose still lets the upstream be aborted."""
    flight, starter = StreamFlight[int](), Starter()
    await flight.open("k", starter)  # the result is dropped at once
    await settle(lambda: flight.in_flight == 0)
    await settle(lambda: starter.sources != [] and starter.source.closed)


Op = tuple[str, int]
OPS = st.lists(
    st.tuples(st.sampled_from(["join", "push", "read", "close", "cancel"]), st.integers(0, 7)),
    max_size=30,
)


async def run_interleaving(ops: list[Op], error_at_end: bool) -> None:
    flight, starter = StreamFlight[int](), Starter()
    active: list[tuple[Subscription[int], Source, list[int]]] = []
    counter = 0
    for op, arg in ops:
        if op == "join":
            subscription = await flight.open("k", starter)
            active.append((subscription, starter.source, []))
        elif op == "push" and flight.in_flight:
            counter += 1
            await pushed(starter.source, counter)
        elif active:
            subscription, source, seen = active[arg % len(active)]
            if op == "read" and len(seen) < len(source.produced):
                seen.append(await anext(subscription))
                assert seen == source.produced[: len(seen)]
            elif op in ("close", "cancel"):
                if op == "close" or len(seen) < len(source.produced):
                    await subscription.aclose()
                else:
                    reader = asyncio.create_task(anext(subscription))
                    await asyncio.sleep(0)  # the reader is now waiting for the next item
                    reader.cancel()
                    await asyncio.gather(reader, return_exceptions=True)
                active.remove((subscription, source, seen))
                if not any(s is source for _, s, _ in active):
                    await settle(lambda: source.closed)  # noqa: B023 - awaited right here
    if active:
        starter.source.end(RuntimeError("cut") if error_at_end else None)
    for subscription, source, seen in active:
        rest, error = await read_to_end(subscription)
        assert seen + rest == source.produced
        assert isinstance(error, RuntimeError) if error_at_end else error is None
    await settle(lambda: flight.in_flight == 0)
    await settle(lambda: all(source.closed for source in starter.sources))


@settings(deadline=None, max_examples=150)
@given(ops=OPS, error_at_end=st.booleans())
def test_random_interleavings_keep_every_subscriber_consistent(
    ops: list[Op], error_at_end: bool
) -> None:
    """Any order of joins, items, reads and leaves: each subscriber sees the stream's prefix
    from its start, the end it ended with, and the upstream closes when nobody is left."""
    asyncio.run(run_interleaving(ops, error_at_end))
