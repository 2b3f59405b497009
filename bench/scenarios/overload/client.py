"""Sending the overload scenario's requests, streamed or not, and classifying each answer,
including what an admitted request that then ran out of time cost the engine."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aiohttp

from bench.harness import interrupts
from bench.load.open_loop import (
    Arrival,
    Outcome,
    RequestRecord,
    retry_after_ms,
    status_outcome,
)
from bench.load.sse import error_code, read_stream
from bench.scenarios.overload.mixes import Planned

_MAX_BODY = 1 << 20
DEADLINE_CODE = "deadline_exceeded"


@dataclass(frozen=True, slots=True)
class MixRecord(RequestRecord):
    """A request record that also knows the request's kind and length, the engine time that
    length takes (`engine_s`), and `wasted_s`: the engine seconds spent on it when it was
    admitted and then ran out of time (0 otherwise)."""

    stream: bool = True
    max_tokens: int = 0
    engine_s: float = 0.0
    wasted_s: float = 0.0


def failed_after_admission(record: RequestRecord) -> bool:
    """A 504, or a stream cut off by a deadline after its first byte: work the engine did for
    nothing."""
    return record.status == 504 or (
        record.outcome == "stream_error" and record.code == DEADLINE_CODE
    )


def timing(header: str | None) -> dict[str, float]:
    """`Server-Timing` durations in seconds by stage name."""
    stages: dict[str, float] = {}
    for part in (header or "").split(","):
        name, _, duration = part.strip().partition(";dur=")
        try:
            stages[name] = float(duration) / 1000
        except ValueError:
            continue
    return stages


def _engine_seconds(headers: Mapping[str, str]) -> float:
    """The time a request held the engine before the gateway answered: its backend stage
    (whole answers) or its wait for the first token (streams)."""
    stages = timing(headers.get("server-timing"))
    return stages.get("backend", 0.0) + stages.get("ttft", 0.0)


async def send_planned(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    planned: Planned,
    due: float,
    phase_start: float,
    lag_s: float = 0.0,
) -> MixRecord:
    """One request, classified. `due` and `phase_start` are perf_counter instants."""
    arrival = planned.arrival
    status, code, retry, first, wasted = 0, "", math.nan, math.nan, 0.0
    outcome: Outcome
    headers = {"content-type": "application/json", "x-priority": arrival.priority}
    try:
        async with session.post(url, data=body, headers=headers) as response:
            status, opened = response.status, time.perf_counter()
            if status == 200 and planned.stream:
                read = await read_stream(response.content.iter_any())
                code, first = read.error or read.problem, read.first_text_at
                outcome = "stream_error" if read.error else "broken" if read.problem else "ok"
                if read.error == DEADLINE_CODE:
                    wasted = _engine_seconds(response.headers) + time.perf_counter() - opened
            else:
                payload = await response.content.read(_MAX_BODY)
                if status == 200:
                    outcome = "ok" if b'"choices"' in payload else "broken"
                else:
                    code = error_code(payload)
                    outcome = status_outcome(status, code)
                if status == 429:
                    retry = retry_after_ms(response.headers)
                if status == 504:
                    wasted = _engine_seconds(response.headers)
    except TimeoutError:
        outcome, code = "timeout", "client timeout"
    except aiohttp.ClientError as exc:
        outcome, code = "conn_error", type(exc).__name__
    end = time.perf_counter()
    return MixRecord(
        priority=arrival.priority,
        offset_s=arrival.offset_s,
        lag_s=lag_s,
        outcome=outcome,
        status=status,
        code=code,
        latency_s=end - due,
        ttft_s=first - due,
        end_s=end - phase_start,
        retry_after_ms=retry,
        stream=planned.stream,
        max_tokens=planned.max_tokens,
        engine_s=planned.engine_s,
        wasted_s=wasted,
    )


def _unfinished(planned: Planned, outcome: Outcome, code: str = "") -> MixRecord:
    arrival: Arrival = planned.arrival
    return MixRecord(
        arrival.priority,
        arrival.offset_s,
        0.0,
        outcome,
        code=code,
        stream=planned.stream,
        max_tokens=planned.max_tokens,
        engine_s=planned.engine_s,
    )


async def run_planned(
    session: aiohttp.ClientSession,
    url: str,
    bodies: Sequence[bytes],
    plan: Sequence[Planned],
    drain_cap_s: float,
    duration_s: float,
) -> list[MixRecord]:
    """Send every planned request at its instant (open loop); then wait for the answers, at
    most `drain_cap_s` after the level's `duration_s`. Requests still running are
    `unfinished`."""
    start = time.perf_counter() + 0.02
    tasks: list[asyncio.Task[MixRecord]] = []
    for planned, body in zip(plan, bodies, strict=True):
        interrupts.check()
        due = start + planned.arrival.offset_s
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        lag = max(0.0, time.perf_counter() - due)
        tasks.append(
            asyncio.create_task(send_planned(session, url, body, planned, due, start, lag))
        )
    left = start + duration_s - time.perf_counter()
    if left > 0:
        await asyncio.sleep(left)
    deadline = time.perf_counter() + drain_cap_s
    pending = {t for t in tasks if not t.done()}
    while pending and (left := deadline - time.perf_counter()) > 0:
        interrupts.check()
        _done, pending = await asyncio.wait(pending, timeout=min(left, 0.2))
    records: list[MixRecord] = []
    for planned, task in zip(plan, tasks, strict=True):
        if not task.done():
            task.cancel()
            records.append(_unfinished(planned, "unfinished"))
        elif (error := task.exception()) is not None:
            records.append(_unfinished(planned, "conn_error", type(error).__name__))
        else:
            records.append(task.result())
    await asyncio.gather(*tasks, return_exceptions=True)
    return records
