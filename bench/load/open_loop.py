"""Open-loop load for `python -m bench --scenario overload`: Poisson arrivals on a fixed seed,
each request sent at its scheduled instant whatever the server does (no coordinated omission).
Every request ends as one `RequestRecord` (`send` also serves the capacity phase's closed loop).

Latency counts from the scheduled instant, so a load generator that falls behind shows up as
latency (and as `lag_s`) instead of silently offering less load.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

import aiohttp

from bench.harness import interrupts
from bench.load.sse import StreamRead, error_code, read_stream
from bench.load.stats import finite

Priority = Literal["interactive", "batch"]
PRIORITIES: tuple[Priority, ...] = ("interactive", "batch")
# ok: 200 with every event and `data: [DONE]`; shed: 429; deadline: 504; stream_error: 200 whose
# stream carried an error event; broken: 200 without output or without [DONE]; http_error: any
# other status; conn_error / timeout: no answer; unfinished: still running when the drain ended.
Outcome = Literal[
    "ok",
    "shed",
    "deadline",
    "stream_error",
    "broken",
    "http_error",
    "conn_error",
    "timeout",
    "unfinished",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
_MAX_ERROR_BODY = 4096


@dataclass(frozen=True, slots=True)
class Arrival:
    """One scheduled request: seconds after the level starts, and its priority class."""

    offset_s: float
    priority: Priority


def poisson_schedule(
    rate: float, duration_s: float, seed: int, batch_fraction: float = 0.0
) -> list[Arrival]:
    """Arrivals of a Poisson process at `rate` per second over `duration_s`, each one `batch`
    with probability `batch_fraction`. The same arguments always give the same schedule."""
    if rate <= 0 or duration_s <= 0:
        return []
    gaps = random.Random(seed)
    classes = random.Random(seed ^ 0x5EED)  # its own stream: the times do not depend on the mix
    arrivals: list[Arrival] = []
    t = gaps.expovariate(rate)
    while t < duration_s:
        batch = classes.random() < batch_fraction
        arrivals.append(Arrival(t, "batch" if batch else "interactive"))
        t += gaps.expovariate(rate)
    return arrivals


@dataclass(frozen=True, slots=True)
class Target:
    """Where requests go and what they carry (one body for every request)."""

    url: str
    body: bytes

    def headers(self, priority: Priority) -> dict[str, str]:
        return {"content-type": "application/json", "accept": "*/*", "x-priority": priority}


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What happened to one request. Times in seconds; `latency_s` and `ttft_s` count from
    the scheduled instant; `end_s` is when it ended, from the start of its phase."""

    priority: Priority
    offset_s: float
    lag_s: float
    outcome: Outcome
    status: int = 0
    code: str = ""
    latency_s: float = math.nan
    ttft_s: float = math.nan
    end_s: float = math.nan
    retry_after_ms: float = math.nan

    def to_json(self) -> dict[str, Any]:
        return {k: finite(v) if isinstance(v, float) else v for k, v in asdict(self).items()}


def _stream_outcome(read: StreamRead) -> Outcome:
    """A 200 stream: ok, stream_error (it carried an error event), or broken."""
    return "stream_error" if read.error else "broken" if read.problem else "ok"


def status_outcome(status: int, code: str = "") -> Outcome:
    """The outcome of an answer that is not a 200 stream; admission's 400 for a deadline no
    replica could meet is a refusal too."""
    if status == 429 or (status == 400 and code == "deadline_too_short"):
        return "shed"
    if status == 504:
        return "deadline"
    return "http_error"


def retry_after_ms(headers: Mapping[str, str]) -> float:
    """`retry-after-ms`, else `Retry-After` (seconds) in ms; NaN when neither is readable."""
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return float(ms)
        if (seconds := headers.get("retry-after")) is not None:
            return float(seconds) * 1000
    except ValueError:
        pass
    return math.nan


async def send(
    session: aiohttp.ClientSession,
    target: Target,
    arrival: Arrival,
    due: float,
    phase_start: float,
    lag_s: float = 0.0,
) -> RequestRecord:
    """One streamed request, classified. `due` and `phase_start` are perf_counter instants."""
    status = 0
    retry = math.nan
    first = math.nan
    try:
        async with session.post(
            target.url, data=target.body, headers=target.headers(arrival.priority)
        ) as response:
            status = response.status
            if status == 200:
                read = await read_stream(response.content.iter_any())
                outcome, code, first = (
                    _stream_outcome(read),
                    read.error or read.problem,
                    read.first_text_at,
                )
            else:
                body = await response.content.read(_MAX_ERROR_BODY)
                code = error_code(body)
                outcome = status_outcome(status, code)
                if status == 429:
                    retry = retry_after_ms(response.headers)
    except TimeoutError:
        outcome, code = "timeout", "client timeout"
    except aiohttp.ClientError as exc:
        outcome, code = "conn_error", type(exc).__name__
    end = time.perf_counter()
    return RequestRecord(
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
    )


async def _wait_all(tasks: list[asyncio.Task[RequestRecord]], cap_s: float) -> None:
    """Wait for every task, at most `cap_s` seconds, polling for a stop request."""
    deadline = time.perf_counter() + cap_s
    pending = {t for t in tasks if not t.done()}
    while pending:
        interrupts.check()
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        _done, pending = await asyncio.wait(pending, timeout=min(left, 0.2))


async def run_open_loop(
    session: aiohttp.ClientSession,
    target: Target,
    schedule: list[Arrival],
    drain_cap_s: float,
    duration_s: float,
) -> list[RequestRecord]:
    """Send every arrival at its instant; then wait for the answers, at most `drain_cap_s`
    after the window of `duration_s` ends. Requests still running then are `unfinished`."""
    start = time.perf_counter() + 0.02
    tasks: list[asyncio.Task[RequestRecord]] = []
    for arrival in schedule:
        interrupts.check()
        due = start + arrival.offset_s
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        lag = max(0.0, time.perf_counter() - due)
        tasks.append(asyncio.create_task(send(session, target, arrival, due, start, lag)))
    left = start + duration_s - time.perf_counter()
    if left > 0:
        await asyncio.sleep(left)
    await _wait_all(tasks, drain_cap_s)
    records: list[RequestRecord] = []
    for arrival, task in zip(schedule, tasks, strict=True):
        if not task.done():
            task.cancel()
            records.append(RequestRecord(arrival.priority, arrival.offset_s, 0.0, "unfinished"))
        elif (error := task.exception()) is not None:
            code = type(error).__name__
            records.append(
                RequestRecord(arrival.priority, arrival.offset_s, 0.0, "conn_error", code=code)
            )
        else:
            records.append(task.result())
    await asyncio.gather(*tasks, return_exceptions=True)
    return records


def new_session(timeout_s: float, connections: int = 2048) -> aiohttp.ClientSession:
    """One keep-alive session for a whole run: a large pool, a per-request timeout."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=connections, force_close=False),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
        auto_decompress=False,
    )
