"""Open-loop traffic for the soak: Poisson arrivals at a fixed rate, each request sent at its
instant whatever the gateway does, each answer one `Record` (latency from the scheduled
instant, so a client that falls behind shows as latency)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

import aiohttp

from bench.load.sse import error_code, read_stream
from bench.scenarios.soak.mix import Kind, Mix, Request

PATH = "/v1/chat/completions"
_MAX_ERROR_BODY = 4096


@dataclass(frozen=True, slots=True)
class Record:
    """One answered (or failed) request. `end_s`: seconds from the traffic's start; `label`:
    "ok", the HTTP status, or what went wrong (see `label_of`)."""

    kind: Kind
    end_s: float
    latency_s: float
    status: int
    label: str
    cache: str = ""

    @property
    def ok(self) -> bool:
        return self.label == "ok"


def label_of(kind: Kind, status: int, problem: str = "") -> str:
    """ok: a 200 (a stream with output and [DONE]); "4xx expected": a bad request refused;
    the status otherwise; "stream error" / "broken stream" for a 200 stream that failed."""
    if status == 200 and not problem:
        return "ok" if kind != "bad" else "200 to a bad request"
    if status == 200:
        return "stream error" if problem.startswith("error event") else "broken stream"
    if kind == "bad" and 400 <= status < 500:
        return "4xx expected"
    return str(status)


async def send(
    session: aiohttp.ClientSession, url: str, request: Request, headers: dict[str, str],
    due: float, origin: float,
) -> Record:  # fmt: skip
    """One request, classified; never raises (client errors become labels)."""
    status, problem, cache = 0, "", ""
    try:
        async with session.post(url, data=request.body, headers=headers) as response:
            status = response.status
            cache = response.headers.get("x-cache", "")
            if status == 200 and request.stream:
                problem = (await read_stream(response.content.iter_any())).problem
            else:
                body = await response.content.read(_MAX_ERROR_BODY)
                if status != 200:
                    problem = error_code(body)
        label = label_of(request.kind, status, problem)
    except TimeoutError:
        label = "client timeout"
    except aiohttp.ClientError as exc:
        label = f"connection error ({type(exc).__name__})"
    end = time.monotonic()
    return Record(request.kind, end - origin, end - due, status, label, cache)


class Traffic:
    """Sends `mix` at `rate` per second to `base_url` until `duration_s`; `records` fills in
    as answers arrive (the sampler reads it)."""

    def __init__(self, base_url: str, mix: Mix, rate: float, budget_ms: int, seed: int) -> None:
        self.url = base_url + PATH
        self.mix = mix
        self.rate = rate
        self.records: list[Record] = []
        self.sent = 0
        self.lag_s = 0.0  # the largest delay past a scheduled instant
        self._gaps = random.Random(seed ^ 0xA77)
        self._headers = {
            "content-type": "application/json",
            "x-request-timeout-ms": str(budget_ms),
        }
        self._pending: set[asyncio.Task[None]] = set()

    async def _one(
        self, session: aiohttp.ClientSession, request: Request, due: float, origin: float
    ) -> None:
        record = await send(session, self.url, request, self._headers, due, origin)
        self.records.append(record)

    async def run(self, session: aiohttp.ClientSession, origin: float, duration_s: float) -> None:
        """Send until `duration_s` after `origin` (a monotonic instant); then wait for the
        answers still running (each is bounded by the session's timeout)."""
        due = origin
        while True:
            due += self._gaps.expovariate(self.rate)
            if due - origin >= duration_s:
                break
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.lag_s = max(self.lag_s, time.monotonic() - due)
            task = asyncio.create_task(self._one(session, self.mix.next(), due, origin))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            self.sent += 1
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    @property
    def in_flight(self) -> int:
        return len(self._pending)


def new_session(timeout_s: float) -> aiohttp.ClientSession:
    """One keep-alive session for the run, with a per-request timeout."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1024),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
        auto_decompress=False,
    )
