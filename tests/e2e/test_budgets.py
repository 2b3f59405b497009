"""Admission control and priorities on a real gateway process in front of a real stand-in:
fast 429s instead of timeouts, refusal of work that cannot finish, batch's guaranteed share."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import orjson
import pytest

from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, running_stack

ADMISSION_BUDGET_S = 1.0
ENV = {
    "GATEWAY_CACHE": "off",
    "GATEWAY_COALESCE": "false",
    "GATEWAY_BUDGET_TOTAL_MS": "10000",
    "GATEWAY_BUDGET_TTFT_MS": "5000",
    "GATEWAY_BUDGET_ADMISSION_MS": str(int(ADMISSION_BUDGET_S * 1000)),
    "GATEWAY_ADMISSION_BATCH_SHARE": "0.5",
}
# Two slots, about 0.2 s per request: the gateway learns both from the stand-in.
SIM_ARGS = ("--max-concurrency", "2", "--ttft-ms", "100", "--itl-ms", "10", "--output-tokens", "10")


class Outcome(NamedTuple):
    status: int
    code: str | None
    seconds: float


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(
        tmp_path_factory.mktemp("budgets"), sims=1, sim_args=SIM_ARGS, mock=False, env=ENV
    ) as running:
        yield running


async def _ask(
    session: aiohttp.ClientSession,
    url: str,
    text: str,
    headers: Mapping[str, str] | None = None,
    stream: bool = False,
) -> Outcome:
    payload: dict[str, Any] = {
        "model": "sim",
        "messages": [{"role": "user", "content": text}],
        "stream": stream,
    }
    started = time.monotonic()
    async with session.post(f"{url}/chat/completions", json=payload, headers=headers) as response:
        body = await response.read()
    code = None if response.status == 200 else orjson.loads(body)["error"]["code"]
    return Outcome(response.status, code, time.monotonic() - started)


async def _warm(session: aiohttp.ClientSession, url: str) -> None:
    """A few requests one at a time: the replica's service-time history."""
    for i in range(4):
        assert (await _ask(session, url, f"warm {i}")).status == 200


async def test_overload_gets_fast_429s_not_timeouts(stack: Stack) -> None:
    """A burst far beyond capacity is answered with quick 429s; nothing times out."""
    async with aiohttp.ClientSession() as session:
        await _warm(session, stack.api_url)
        burst = await asyncio.gather(
            *(_ask(session, stack.api_url, f"burst {i}") for i in range(40))
        )
    statuses = [o.status for o in burst]
    shed = [o for o in burst if o.status == 429]
    assert set(statuses) <= {200, 429}, statuses
    assert statuses.count(200) >= 2 and shed
    assert sum(o.code == "overloaded" for o in shed) >= 0.8 * len(shed)
    # Refused at once, not after waiting out the admission budget (with room for a loaded box).
    assert statistics.median(o.seconds for o in shed) < ADMISSION_BUDGET_S * 0.8


async def test_batch_flood_does_not_delay_interactive(stack: Stack) -> None:
    """While batch work floods the queue, interactive requests are still admitted at once."""
    async with aiohttp.ClientSession() as session:
        batch = {"x-priority": "batch"}
        flood = [
            asyncio.create_task(_ask(session, stack.api_url, f"batch {i}", batch))
            for i in range(30)
        ]
        interactive = [await _ask(session, stack.api_url, f"interactive {i}") for i in range(5)]
        flooded = await asyncio.gather(*flood)
    assert all(o.status == 200 for o in interactive), interactive
    assert all(o.status == 200 for o in flooded)


async def test_burst_past_capacity_is_answered_or_refused_never_timed_out(stack: Stack) -> None:
    """The issue's burst, scaled to two slots: concurrent non-streaming requests with a short
    X-Request-Timeout-Ms are answered in time or refused quickly; admitted ones do not run
    out of time (one is tolerated: this machine is shared and the last admitted has little
    slack by design)."""
    headers = {"x-request-timeout-ms": "1000"}
    async with aiohttp.ClientSession() as session:
        await _warm(session, stack.api_url)
        burst = await asyncio.gather(
            *(_ask(session, stack.api_url, f"issue {i}", headers) for i in range(48))
        )
    statuses = [o.status for o in burst]
    assert set(statuses) <= {200, 429, 504}, statuses
    assert statuses.count(200) >= 2 and statuses.count(504) <= 1, burst
    shed = [o for o in burst if o.status == 429]
    # Refused, not held to the deadline: one held would take the whole 1 s (a loaded 2-core
    # machine has been seen at 0.53 s for the median refusal, so the bar is not 0.5 s).
    assert statistics.median(o.seconds for o in shed) < 0.8


async def test_batch_gets_its_share_during_an_interactive_flood(stack: Stack) -> None:
    """With interactive requests always waiting for both slots, batch requests are still
    served (its guaranteed slot), while the flood goes on."""
    stop, under_way = asyncio.Event(), asyncio.Event()
    served: list[Outcome] = []

    async def flood(session: aiohttp.ClientSession, worker: int) -> None:
        while not stop.is_set():
            served.append(await _ask(session, stack.api_url, f"flood {worker} {len(served)}"))
            if sum(o.status == 200 for o in served) >= 4:
                under_way.set()

    async with aiohttp.ClientSession() as session:
        workers = [asyncio.create_task(flood(session, w)) for w in range(8)]
        try:
            await asyncio.wait_for(under_way.wait(), timeout=30)
            batch = await asyncio.wait_for(
                asyncio.gather(
                    *(
                        _ask(session, stack.api_url, f"batch share {i}", {"x-priority": "batch"})
                        for i in range(3)
                    )
                ),
                timeout=20,
            )
            assert not any(w.done() for w in workers)  # the flood was still on
        finally:
            stop.set()
            await asyncio.gather(*workers, return_exceptions=True)
    assert [o.status for o in batch] == [200, 200, 200]
    assert sum(o.status == 200 for o in served) >= 4


async def test_queued_request_that_can_no_longer_finish_is_dropped_unsent(
    stack: Stack, sims: list[ControlClient]
) -> None:
    """A request queued behind work that runs far longer than predicted leaves the queue with
    429 expired_in_queue once it could no longer finish, before its deadline and without ever
    reaching the engine. (Last in this module: the hung requests disturb the history.)"""
    (sim,) = sims
    async with aiohttp.ClientSession() as session:
        await _warm(session, stack.api_url)
        await sim.configure(hang_rate=1.0)
        hung = [
            asyncio.create_task(
                _ask(session, stack.api_url, f"hang {i}", {"x-request-timeout-ms": "2500"}, True)
            )
            for i in range(2)
        ]
        async with asyncio.timeout(10):
            while (await sim.stats())["running"] < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        calls = (await sim.stats())["generate_calls"]
        late = await _ask(session, stack.api_url, "late", {"x-request-timeout-ms": "1000"})
        # `expired_in_queue` says it left the queue before its deadline (the client's clock
        # would add both event loops' stalls to the ~0.7 s it waited); a hang stays a failure.
        assert (late.status, late.code) == (429, "expired_in_queue"), late
        assert late.seconds < 3.0
        assert (await sim.stats())["generate_calls"] == calls
        await sim.configure(hang_rate=0.0)
        assert {o.status for o in await asyncio.gather(*hung)} == {504}


def test_invalid_budget_configuration_fails_at_startup(tmp_path: Path) -> None:
    """`serve` refuses a first-token budget above the total, naming both variables."""
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve"],
        env={
            "GATEWAY_BACKENDS": "embedded",
            "GATEWAY_BUDGET_TOTAL_MS": "1000",
            "GATEWAY_BUDGET_TTFT_MS": "5000",
            "PATH": "",
        },
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert result.returncode == 2
    assert "GATEWAY_BUDGET_TTFT_MS" in result.stderr and "GATEWAY_BUDGET_TOTAL_MS" in result.stderr
