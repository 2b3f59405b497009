"""Closed-loop HTTP load: `concurrency` keep-alive connections, each sending the next request
as soon as the previous answer ends. Streams are timed per SSE event (time to first token,
inter-token gaps). Every phase stops by itself: at its duration or its request count.

Runs as a worker process (`python -m bench.loadgen`), pinned by the caller.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from bench import worker
from bench.closed_loop import drive
from bench.specs import HttpPhase
from bench.sse import DONE, DataEvents, has_text
from bench.stats import Recorder

_HEADERS = {"content-type": "application/json", "accept": "*/*"}


class Failure(Exception):
    """A request that did not produce a valid answer."""


@dataclass(slots=True)
class StreamTiming:
    ttft: float
    gaps: list[float]
    events: int


def _has_text(payload: bytes) -> bool:
    """The event carries output text (a chat delta's content or a completion's text)."""
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise Failure(f"bad SSE JSON: {payload[:80]!r}") from exc
    if "error" in data:
        raise Failure(f"error event: {payload[:160]!r}")
    return has_text(data)


async def _read_stream(response: aiohttp.ClientResponse, start: float) -> StreamTiming:
    reader = DataEvents()
    first: float | None = None
    last = 0.0
    gaps: list[float] = []
    events = 0
    async for chunk in response.content.iter_any():
        now = time.perf_counter()
        for payload in reader.feed(chunk):
            if payload == DONE:
                if first is None:
                    raise Failure("stream ended without any output text")
                return StreamTiming(first - start, gaps, events)
            events += 1
            if first is None:
                if _has_text(payload):
                    first = last = now
            else:
                if payload.startswith(b'{"error"'):
                    raise Failure(f"error event: {payload[:160]!r}")
                gaps.append(now - last)
                last = now
    raise Failure("stream ended without data: [DONE]")


async def _one(session: aiohttp.ClientSession, phase: HttpPhase, recorder: Recorder) -> None:
    start = time.perf_counter()
    try:
        async with session.post(phase.url, data=phase.body, headers=_HEADERS) as response:
            if response.status != 200:
                body = await response.read()
                raise Failure(f"HTTP {response.status}: {body[:160]!r}")
            if phase.stream:
                timing = await _read_stream(response, start)
            else:
                body = await response.read()
                if b'"choices"' not in body:
                    raise Failure(f"no choices in answer: {body[:160]!r}")
    except Failure as exc:
        recorder.failure(str(exc))
        await asyncio.sleep(0.001)  # an erroring server must not turn this into a busy loop
        return
    except (aiohttp.ClientError, TimeoutError) as exc:
        recorder.failure(f"{type(exc).__name__}: {exc}")
        await asyncio.sleep(0.001)
        return
    latency = time.perf_counter() - start
    if phase.stream:
        recorder.success(latency, timing.ttft, timing.gaps, timing.events)
    else:
        recorder.success(latency)


async def run_phase(phase: HttpPhase) -> dict[str, Any]:
    """One phase over a fresh keep-alive connection pool of `concurrency` connections."""
    connector = aiohttp.TCPConnector(limit=phase.bounds.concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=phase.bounds.request_timeout_s)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False
    ) as session:
        return await drive(lambda recorder: _one(session, phase, recorder), phase.bounds)


async def _handle(spec: dict[str, Any]) -> dict[str, Any]:
    return await run_phase(HttpPhase.from_json(spec))


if __name__ == "__main__":
    sys.exit(worker.serve(_handle))
