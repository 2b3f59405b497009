"""The stand-in's `SubscribeKvEvents`: vLLM's KV cache events (`BlockStored`, `BlockRemoved`,
`AllBlocksCleared`, as `vllm/distributed/kv_events.py` defines them) in smg-grpc-proto's
`KvEventBatch`, one batch per scheduling of a request, to every live subscriber.

A subscription starts from the current state (no replay), numbered batches from then on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from smg_grpc_proto.generated import common_pb2 as pb


@dataclass(frozen=True, slots=True)
class Stored:
    """Full blocks newly cached, each (hash, token ids), children of `parent` (None: first)."""

    parent: int | None
    blocks: tuple[tuple[int, tuple[int, ...]], ...]
    block_size: int


@dataclass(frozen=True, slots=True)
class Removed:
    """Blocks evicted from the cache."""

    hashes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Cleared:
    """The whole cache was dropped (a reset, or a restart)."""


KvEvent = Stored | Removed | Cleared


class KvEventHub:
    """Fans event batches out to subscribers; `load` gives the record each batch carries and
    `delay_s` how long after publishing a batch reaches them (vLLM's publisher sends a
    step's events after the step, over ZMQ: a gateway hears of blocks a moment late)."""

    def __init__(
        self, load: Callable[[], Any] | None = None, delay_s: Callable[[], float] | None = None
    ) -> None:
        self.sequence = 0
        self._load = load
        self._delay_s = delay_s
        self._queues: set[asyncio.Queue[Any]] = set()

    @property
    def subscribers(self) -> int:
        return len(self._queues)

    def publish(self, events: Sequence[KvEvent]) -> None:
        if not events:
            return
        self.sequence += 1
        if not self._queues:
            return
        batch = pb.KvEventBatch(
            sequence_number=self.sequence,
            timestamp=time.time(),
            events=[_message(event) for event in events],
            dp_rank=0,
        )
        if self._load is not None:
            batch.load.CopyFrom(self._load())
        delay = self._delay_s() if self._delay_s is not None else 0.0
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self._deliver, batch)
        else:
            self._deliver(batch)

    def _deliver(self, batch: Any) -> None:
        for queue in self._queues:
            queue.put_nowait(batch)

    async def subscribe(self) -> AsyncGenerator[Any, None]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queues.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)


def _message(event: KvEvent) -> Any:
    if isinstance(event, Stored):
        stored = pb.KvBlocksStored(
            blocks=[
                pb.KvBlock(block_hash=h, token_ids=ids, block_size=event.block_size)
                for h, ids in event.blocks
            ],
            tier=pb.KV_CACHE_TIER_DEVICE,
            medium="GPU",
        )
        if event.parent is not None:
            stored.parent_block_hash = event.parent
        return pb.KvCacheEvent(stored=stored)
    if isinstance(event, Removed):
        removed = pb.KvBlocksRemoved(
            block_hashes=event.hashes, tier=pb.KV_CACHE_TIER_DEVICE, medium="GPU"
        )
        return pb.KvCacheEvent(removed=removed)
    return pb.KvCacheEvent(cleared=pb.KvCacheCleared())
