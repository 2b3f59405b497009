"""Following a replica's KV event stream: resubscribing with backoff, clearing on reconnect."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import grpc
import pytest
from smg_grpc_proto.generated import common_pb2 as pb

from backends.prefix.blocks import block_keys
from backends.prefix.index import PrefixIndex
from backends.prefix.subscriber import (
    FIRST_BACKOFF_S,
    UNIMPLEMENTED_RETRY_S,
    follow,
    readmitted,
)

PROMPT = list(range(16))
KEYS = block_keys(PROMPT, 16)


def _store(seq: int, engine_hash: int = 5) -> pb.KvEventBatch:
    block = pb.KvBlock(block_hash=engine_hash, token_ids=PROMPT, block_size=16)
    event = pb.KvCacheEvent(stored=pb.KvBlocksStored(blocks=[block]))
    return pb.KvEventBatch(sequence_number=seq, events=[event])


def _streams(*plans: list[Any]) -> Callable[[], AsyncIterator[Any]]:
    """Each call yields the next plan's batches, then raises its trailing exception if any."""
    queue = list(plans)

    def subscribe() -> AsyncIterator[Any]:
        plan = queue.pop(0)

        async def stream() -> AsyncIterator[Any]:
            for item in plan:
                if isinstance(item, BaseException):
                    raise item
                yield item

        return stream()

    return subscribe


def _rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "x", None)


async def test_reconnect_backs_off_and_clears() -> None:
    """A dropped stream is resubscribed after a doubling backoff; the index restarts empty."""
    index = PrefixIndex()
    waits: list[float] = []
    seen: list[int] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        seen.append(index.cached_blocks(KEYS))
        if len(waits) == 3:
            raise asyncio.CancelledError

    subscribe = _streams(
        [_store(1), _rpc_error(grpc.StatusCode.UNAVAILABLE)],
        [RuntimeError("boom")],
        [_store(1, engine_hash=6), ConnectionError("gone")],
    )
    with pytest.raises(asyncio.CancelledError):
        await follow(index, subscribe, "r", sleep)
    assert waits == [FIRST_BACKOFF_S, FIRST_BACKOFF_S * 2, FIRST_BACKOFF_S]
    assert seen == [0, 0, 0] and not index.live


async def test_sequence_going_back_means_restart() -> None:
    """A sequence number lower than the last one clears the index before applying."""
    index = PrefixIndex()
    removal = pb.KvEventBatch(
        sequence_number=9,
        events=[pb.KvCacheEvent(removed=pb.KvBlocksRemoved(block_hashes=[]))],
    )
    states: list[int] = []

    async def sleep(seconds: float) -> None:
        raise asyncio.CancelledError

    async def stream() -> AsyncIterator[Any]:
        yield _store(5)
        yield removal
        states.append(len(index))
        yield pb.KvEventBatch(sequence_number=1)
        states.append(len(index))
        raise ConnectionError

    with pytest.raises(asyncio.CancelledError):
        await follow(index, stream, "r", sleep)
    assert states == [1, 0]


async def test_a_replica_without_events_is_asked_again_later() -> None:
    """A replica that answers UNIMPLEMENTED leaves its index not live, and after the long wait
    it is subscribed again: restarted with KV events on, it is followed."""
    index = PrefixIndex()
    states: list[tuple[str, bool, int]] = []

    async def wait() -> None:
        states.append(("waited", index.live, index.cached_blocks(KEYS)))

    async def sleep(seconds: float) -> None:
        states.append(("dropped", index.live, index.cached_blocks(KEYS)))
        raise asyncio.CancelledError

    async def stored() -> AsyncIterator[Any]:
        yield _store(1)
        states.append(("stored", index.live, index.cached_blocks(KEYS)))
        raise ConnectionError

    unimplemented = _rpc_error(grpc.StatusCode.UNIMPLEMENTED)
    plans: Iterator[Callable[[], AsyncIterator[Any]]] = iter(
        [_streams([unimplemented]), _streams([unimplemented]), stored]
    )
    with pytest.raises(asyncio.CancelledError):
        await follow(index, lambda: next(plans)(), "r", sleep, unimplemented_wait=wait)
    assert states == [
        ("waited", False, 0),
        ("waited", False, 0),
        ("stored", True, 1),
        ("dropped", False, 0),
    ]


async def test_the_wait_ends_when_the_replica_is_readmitted() -> None:
    """The wait before asking a replica without events again ends at the first check after
    it turned healthy again (a restart), else after the long retry interval."""
    since = [1.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            since[0] = 50.0  # a probe found it serving again after it was down

    await readmitted(lambda: since[0], 2.0, sleep)
    assert slept == [2.0, 2.0, 2.0]
    slept.clear()
    await readmitted(lambda: since[0], 2.0, sleep)
    assert sum(slept) == UNIMPLEMENTED_RETRY_S


async def test_live_from_the_opened_stream_with_the_reported_block_size() -> None:
    """Before any event, the index is live and sized by the server's report, so prompts sent
    now can be expected there; a failing report only leaves the size to the first event."""
    index = PrefixIndex()
    states: list[tuple[bool, int]] = []

    async def stream() -> AsyncIterator[Any]:
        states.append((index.live, index.block_size))
        yield _store(1)
        states.append((index.live, index.block_size))
        raise ConnectionError

    async def sixteen() -> int:
        return 16

    async def sleep(seconds: float) -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await follow(index, stream, "r", sleep, block_size=sixteen)
    assert states == [(True, 16), (True, 16)]

    async def unreported() -> int:
        raise _rpc_error(grpc.StatusCode.UNIMPLEMENTED)

    index, states = PrefixIndex(), []
    with pytest.raises(asyncio.CancelledError):
        await follow(index, stream, "r", sleep, block_size=unreported)
    assert states == [(True, 0), (True, 16)]


async def test_expectations_made_before_the_first_event_survive_it() -> None:
    """The first batch of a subscription does not wipe the prompts sent while it was open."""
    index = PrefixIndex()
    other = block_keys(list(range(100, 116)), 16)
    seen: list[int] = []

    async def stream() -> AsyncIterator[Any]:
        index.expect(other, now=0.0)
        yield _store(1)
        seen.append(index.cached_blocks(other, now=1.0))
        raise ConnectionError

    async def sleep(seconds: float) -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await follow(index, stream, "r", sleep)
    assert seen == [1]
