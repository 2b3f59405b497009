"""What the fault scenarios share: the stack they run on, how they ask and read answers, and
the README table's rows."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.harness.processes import ManagedProcess, ProcessGroup
from standin.vllm.control import ControlClient
from tests.support.fault_proxy import FaultProxy

BUDGET_MS = 3000


STALL_MS = 1000  # GATEWAY_BUDGET_STALL_MS: within the request budget, so a stall fires first


SLACK_S = 2.0  # a loaded machine may answer late, never later than this past the budget


RECOVERY_TIMEOUT_S = 60.0


FD_SLACK = 4  # descriptors the gateway may open meanwhile (a health probe, a pooled connection)


LONG_BUDGET_MS = 10_000  # streams that must outlast a fault injected while they run


MOCK_ITL_MS = 20


MOCK_TOKENS = 60  # the OpenAI mock's streams last about 1.2 s


@dataclass
class FaultStack:
    """A gateway whose replicas and Redis sit behind fault proxies."""

    url: str
    replicas: list[FaultProxy]
    redis: FaultProxy
    sim_ports: list[int]
    http: FaultProxy  # in front of the OpenAI mock serving model "mock"
    group: ProcessGroup
    sim_processes: list[ManagedProcess]
    gateway_pid: int


@dataclass
class Result:
    status: int
    elapsed_s: float
    cache: str
    request_id: str
    content: str
    stream_error: bool = False
    error: str = ""  # the error event's message, if any
    ended_at: float = 0.0  # time.monotonic() at its end (streams read by `ask_streaming`)


@dataclass
class Row:
    """One line of the README's reliability table."""

    scenario: str
    results: list[Result]
    recovery_s: float

    def markdown(self) -> str:
        statuses: dict[int, int] = {}
        for result in self.results:
            statuses[result.status] = statuses.get(result.status, 0) + 1
        outcomes = ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items()))
        times = sorted(r.elapsed_s for r in self.results)
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        return (
            f"| {self.scenario} | {len(self.results)} | {outcomes} | {p99 * 1000:.0f} ms "
            f"| {self.recovery_s:.1f} s |"
        )


TABLE: list[Row] = []


async def ask(
    session: aiohttp.ClientSession,
    url: str,
    text: str,
    *,
    temperature: float = 0.7,
    stream: bool = False,
    model: str = "sim",
    max_tokens: int | None = None,
    budget_ms: int = BUDGET_MS,
    headers: dict[str, str] | None = None,
) -> Result:
    payload: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "temperature": temperature,
        "stream": stream,
    }
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    headers = {"X-Request-Timeout-Ms": str(budget_ms), **(headers or {})}
    timeout = aiohttp.ClientTimeout(total=budget_ms / 1000 + 30)
    start = time.monotonic()
    async with session.post(
        f"{url}/v1/chat/completions", json=payload, headers=headers, timeout=timeout
    ) as response:
        body = await response.read()
        elapsed = time.monotonic() - start
        content, error = answer_text(body, stream and response.status == 200)
        return Result(
            response.status,
            elapsed,
            response.headers.get("x-cache", ""),
            response.headers.get("x-request-id", ""),
            content,
            error is not None,
            error or ("" if response.status == 200 else body.decode(errors="replace")),
        )


def answer_text(body: bytes, stream: bool) -> tuple[str, str | None]:
    """The answer's text, and its error event's message (None: none)."""
    if not stream:
        try:
            document = json.loads(body)
            return str(document["choices"][0]["message"]["content"]), None
        except (ValueError, KeyError, IndexError, TypeError):
            return "", None
    text, error = "", None
    for line in body.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if "error" in event:
            error = str(event["error"].get("message") or event["error"])
        for choice in event.get("choices", []):
            text += choice.get("delta", {}).get("content") or ""
    return text, error


async def ask_many(
    session: aiohttp.ClientSession, url: str, tag: str, count: int = 12, **kwargs: Any
) -> list[Result]:
    """`count` requests, four at a time."""
    gate = asyncio.Semaphore(4)

    async def one(i: int) -> Result:
        async with gate:
            return await ask(session, url, f"{tag} {i}", **kwargs)

    return await asyncio.gather(*(one(i) for i in range(count)))


async def recovery_s(
    session: aiohttp.ClientSession, url: str, in_a_row: int = 5, model: str = "sim"
) -> float:
    """Seconds until `in_a_row` consecutive requests succeed (bounded); short answers, so
    that a slow stand-in does not count as a slow recovery."""
    start = time.monotonic()
    streak = 0
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while streak < in_a_row:
            text = f"recovery {time.monotonic()}"
            result = await ask(session, url, text, model=model, max_tokens=2)
            streak = streak + 1 if result.status == 200 else 0
            if result.status != 200:
                await asyncio.sleep(0.1)
    return time.monotonic() - start


def within_budget(results: list[Result]) -> None:
    late = [r for r in results if r.elapsed_s > BUDGET_MS / 1000 + SLACK_S]
    assert late == [], late


async def ask_streaming(
    session: aiohttp.ClientSession,
    url: str,
    text: str,
    *,
    model: str = "sim",
    temperature: float = 0.7,
    first: asyncio.Event | None = None,
    leave_after: int | None = None,
    budget_ms: int = BUDGET_MS,
) -> Result:
    """A streamed request read event by event: `first` is set at its first event; with
    `leave_after`, the client closes the connection after that many events."""
    payload = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "temperature": temperature,
        "stream": True,
    }
    headers = {"X-Request-Timeout-Ms": str(budget_ms)}
    timeout = aiohttp.ClientTimeout(total=budget_ms / 1000 + 30)
    start = time.monotonic()
    async with session.post(
        f"{url}/v1/chat/completions", json=payload, headers=headers, timeout=timeout
    ) as response:
        lines: list[bytes] = []
        if response.status == 200:
            async for line in response.content:
                if not line.startswith(b"data: "):
                    continue
                lines.append(line)
                if first is not None:
                    first.set()
                if leave_after is not None and len(lines) >= leave_after:
                    response.close()
                    break
        else:
            await response.read()
        content, error = answer_text(b"".join(lines), response.status == 200)
        ended = time.monotonic()
        return Result(
            response.status,
            ended - start,
            response.headers.get("x-cache", ""),
            response.headers.get("x-request-id", ""),
            content,
            error is not None,
            error or "",
            ended,
        )


async def live_requests(sims: list[ControlClient]) -> list[list[str]]:
    return [list((await sim.stats())["live_request_ids"]) for sim in sims]
