"""The stand-in's KV cache events (vLLM semantics) and prefill time per uncached token."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc
import pytest
from smg_grpc_proto.generated import common_pb2
from smg_grpc_proto.generated import vllm_engine_pb2_grpc as pb_grpc

from backends.prefix.blocks import block_keys
from backends.prefix.events import apply_batch
from backends.prefix.index import PrefixIndex
from standin.vllm.kv_events import Cleared, KvEvent, KvEventHub, Removed, Stored
from standin.vllm.prefix_cache import BLOCK_SIZE, PrefixCache
from standin.vllm.server import SimServer
from tests.standin.vllm.conftest import StartSim
from tests.standin.vllm.helpers import collect, generate_request, wait_until

PROMPT = list(range(10, 60))  # 3 full blocks and 2 tokens over


def _recording(capacity: int) -> tuple[PrefixCache, list[KvEvent]]:
    events: list[KvEvent] = []

    def publish(batch: Sequence[KvEvent]) -> None:
        events.extend(batch)

    return PrefixCache(capacity, publish), events


def test_new_blocks_are_stored_with_their_parent() -> None:
    """A prompt extending a cached one stores only its new full blocks, naming the parent."""
    cache, events = _recording(100)
    cache.lookup_and_insert(PROMPT[:32])
    cache.lookup_and_insert(PROMPT)
    first, second = events
    assert isinstance(first, Stored) and isinstance(second, Stored)
    assert first.parent is None and [ids for _, ids in first.blocks] == [
        tuple(PROMPT[:16]),
        tuple(PROMPT[16:32]),
    ]
    assert second.parent == first.blocks[-1][0]
    assert [ids for _, ids in second.blocks] == [tuple(PROMPT[32:48])]
    assert second.block_size == BLOCK_SIZE


def test_eviction_and_clear_are_published() -> None:
    """Evicted blocks are removed; clearing the cache publishes AllBlocksCleared."""
    cache, events = _recording(2)
    cache.lookup_and_insert(PROMPT)
    stored, removed = events
    assert isinstance(stored, Stored) and isinstance(removed, Removed)
    assert removed.hashes == (stored.blocks[0][0],)
    cache.clear()
    assert isinstance(events[-1], Cleared)


def test_engine_hashes_are_not_the_gateway_keys() -> None:
    """Like vLLM's, the chain starts from a random seed: only token ids can be matched."""
    cache, events = _recording(100)
    cache.lookup_and_insert(PROMPT)
    (stored,) = events
    assert isinstance(stored, Stored)
    assert [h for h, _ in stored.blocks] != block_keys(PROMPT, BLOCK_SIZE)


async def test_subscriber_index_matches_the_prompt(sim: SimServer, stub: Any) -> None:
    """A gateway index fed by SubscribeKvEvents holds the prompt's full blocks."""
    stream = stub.SubscribeKvEvents(common_pb2.SubscribeKvEventsRequest(), timeout=30)
    await wait_until(lambda: sim.state.kv_events.subscribers == 1)
    await collect(stub, generate_request(PROMPT))
    batch = await stream.read()
    stream.cancel()
    index = PrefixIndex()
    apply_batch(index, batch)
    assert batch.sequence_number == 1 and batch.HasField("load")
    assert index.block_size == BLOCK_SIZE
    assert index.cached_blocks(block_keys(PROMPT, BLOCK_SIZE)) == 3


async def test_kv_events_off_is_unimplemented(start_sim: StartSim) -> None:
    """With kv_events off the RPC answers UNIMPLEMENTED, as a server without it would."""
    server = await start_sim(kv_events=False)
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = pb_grpc.VllmEngineStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for _ in stub.SubscribeKvEvents(common_pb2.SubscribeKvEventsRequest()):
                pass
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_prefill_time_follows_uncached_tokens(start_sim: StartSim) -> None:
    """A repeated prompt's first token comes sooner by the prefill of its cached blocks."""
    # 10 ms a token: 2 s cold; warm, the 192 cached tokens skip 1.92 s, a margin far wider
    # than a loaded machine's scheduling noise.
    server = await start_sim(prefill_ms_per_token=10.0)
    long_prompt = list(range(10, 210))
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = pb_grpc.VllmEngineStub(channel)
        loop_time = asyncio.get_running_loop().time
        took: list[float] = []
        for n in range(2):
            started = loop_time()
            call = stub.Generate(generate_request(long_prompt, request_id=f"r{n}"), timeout=30)
            await call.read()
            took.append(loop_time() - started)
            call.cancel()
    assert took[0] >= 2.0
    assert took[1] < took[0] - 1.0


async def test_a_delayed_batch_reaches_subscribers_later() -> None:
    """With a delivery delay a batch is held back (vLLM's events reach a gateway late); a batch
    published without one is delivered at once."""
    delay = [600.0]
    hub = KvEventHub(delay_s=lambda: delay[0])
    updates = hub.subscribe()
    first = asyncio.ensure_future(anext(updates))
    await wait_until(lambda: hub.subscribers == 1)
    hub.publish([Cleared()])
    delay[0] = 0.0
    hub.publish([Cleared()])
    batch = await first
    assert batch.sequence_number == 2
    await updates.aclose()
