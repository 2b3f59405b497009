"""Follows one replica's `SubscribeKvEvents` stream into its `PrefixIndex`, resubscribing
after a disconnect with backoff, and asking a replica that publishes none again later."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from backends.prefix.events import apply_batch
from backends.prefix.index import PrefixIndex

log = logging.getLogger("gateway.prefix")

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0
# How long a replica that publishes no KV events waits before it is asked again, unless it
# turns healthy again after being down first (it may have restarted with them on).
UNIMPLEMENTED_RETRY_S = 60.0


async def follow(
    index: PrefixIndex,
    subscribe: Callable[[], AsyncIterator[Any]],
    name: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    block_size: Callable[[], Awaitable[int]] | None = None,
    unimplemented_wait: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Apply `subscribe()`'s batches to `index` until cancelled.

    The index is `live` from the moment a subscription is opened, so prompts routed before
    the replica's first event are expected there (`PrefixIndex.expect`); `block_size()` (the
    server's own report, when it gives one) lets that start before any block was stored.
    A fresh subscription starts from the replica's current state (no replay), and the index
    is cleared whenever a stream ends: what was evicted while disconnected, or everything
    when the replica restarted, would otherwise linger. A sequence number going backwards on
    one stream also means a restart. A replica that answers UNIMPLEMENTED publishes no
    events: the index is left not `live` and routing falls back to load, and it is asked
    again after `unimplemented_wait()` (`UNIMPLEMENTED_RETRY_S` when not given), since a
    restart may turn them on.
    """
    backoff = FIRST_BACKOFF_S
    silent = False  # it answered UNIMPLEMENTED last time
    while True:
        try:
            if block_size is not None and index.block_size == 0:
                index.block_size = await _reported(block_size, name)
            index.live = True
            last = -1
            async for batch in subscribe():
                if silent:
                    log.info("%s publishes KV events now: prefix routing follows it", name)
                    silent = False
                if batch.sequence_number < last:
                    index.clear()
                last = batch.sequence_number
                apply_batch(index, batch)
                backoff = FIRST_BACKOFF_S
        except asyncio.CancelledError:
            raise
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                if not silent:
                    log.info("%s publishes no KV events: prefix routing skips it", name)
                silent = True
                index.live = False
                index.clear()
                await (
                    sleep(UNIMPLEMENTED_RETRY_S)
                    if unimplemented_wait is None
                    else unimplemented_wait()
                )
                backoff = FIRST_BACKOFF_S
                continue
            log.info("KV event stream of %s ended: %s", name, exc.code().name)
        except Exception as exc:  # a follower must never die
            log.warning("KV event stream of %s failed: %s", name, exc)
        index.live = False
        index.clear()
        await sleep(backoff)
        backoff = min(MAX_BACKOFF_S, backoff * 2)


async def _reported(block_size: Callable[[], Awaitable[int]], name: str) -> int:
    """The server's block size, or 0 (unknown until its first event) when it cannot say."""
    try:
        return await block_size()
    except Exception as exc:  # an info call failing must not stop following the events
        log.debug("%s reports no block size: %s", name, exc)
        return 0


async def readmitted(
    healthy_since: Callable[[], float],
    interval_s: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Returns once a replica turned healthy again after being down (`healthy_since()`
    moved), checked every `interval_s`, or after `UNIMPLEMENTED_RETRY_S` at the latest."""
    since = healthy_since()
    for _ in range(max(1, math.ceil(UNIMPLEMENTED_RETRY_S / interval_s))):
        await sleep(interval_s)
        if healthy_since() != since:
            return
