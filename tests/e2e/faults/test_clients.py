"""Clients that leave at every stage: the engine is told to abort what nobody awaits, and
nothing leaks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

import aiohttp

from standin.vllm.control import ControlClient
from tests.e2e.faults.harness import (
    FD_SLACK,
    LONG_BUDGET_MS,
    FaultStack,
    Result,
    ask_streaming,
    live_requests,
)


async def _aborted(sims: list[ControlClient], request_id: str) -> bool:
    for sim in sims:
        stats = await sim.stats()
        if request_id in stats["aborted_request_ids"]:
            return True
    return False


async def test_client_leaving_before_the_first_token(
    stack: FaultStack, sims: list[ControlClient]
) -> None:
    """A client that leaves while the engine has produced nothing yet: Abort within 10 s."""
    for sim in sims:
        await sim.configure(hang_rate=1.0)
    baseline = _open_fds(stack.gateway_pid)
    payload = {"model": "sim", "messages": [{"role": "user", "content": "hang"}], "stream": True}
    async with aiohttp.ClientSession() as session:
        request = asyncio.ensure_future(
            session.post(f"{stack.url}/v1/chat/completions", json=payload)
        )
        # Wait until the engine holds the request, then leave.
        async with asyncio.timeout(30):
            while not any([(await sim.stats())["live_request_ids"] for sim in sims]):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        live = [rid for sim in sims for rid in (await sim.stats())["live_request_ids"]]
        request.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await request
    # The gateway's own first-token deadline (30 s) would abort it anyway: 10 s tells apart.
    async with asyncio.timeout(10):
        while not all([await _aborted(sims, rid) for rid in live]):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await _fds_settle(stack.gateway_pid, baseline)


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _fds_settle(pid: int, baseline: int, timeout_s: float = 30.0) -> int:
    """Poll until the gateway's open descriptors are back near `baseline`; the count."""
    async with asyncio.timeout(timeout_s):
        while (count := _open_fds(pid)) > baseline + FD_SLACK:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    return count


async def _generate_calls(sims: list[ControlClient]) -> int:
    return sum([(await sim.stats())["generate_calls"] for sim in sims])


async def _until_aborted(sims: list[ControlClient], ids: list[str], timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        while not all([await _aborted(sims, rid) for rid in ids]):  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_client_leaving_before_the_body_is_read(
    stack: FaultStack, sims: list[ControlClient]
) -> None:
    """A client that sends half its body and leaves: no engine work, no descriptor kept."""
    baseline = _open_fds(stack.gateway_pid)
    calls = await _generate_calls(sims)
    host, port = stack.url.removeprefix("http://").split(":")
    for _ in range(5):
        _, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
            b'content-length: 4096\r\n\r\n{"model": "sim", "messages": ['
        )
        await writer.drain()
        writer.close()
        await writer.wait_closed()
    await _fds_settle(stack.gateway_pid, baseline)
    assert await _generate_calls(sims) == calls


async def test_client_leaving_while_queued(stack: FaultStack, sims: list[ControlClient]) -> None:
    """Clients leaving while queued for a busy engine slot: the engine aborts each it had taken."""
    for sim in sims:
        await sim.configure(max_concurrency=1, hang_rate=1.0)
    baseline = _open_fds(stack.gateway_pid)
    payload = {"model": "sim", "messages": [{"role": "user", "content": "queue"}], "stream": True}
    async with aiohttp.ClientSession() as session:
        # Each engine's one slot is held by a request that never ends; the others wait behind
        # them (in the engine's queue, or the gateway's once a probe learned the capacity).
        requests = [
            asyncio.ensure_future(session.post(f"{stack.url}/v1/chat/completions", json=payload))
            for _ in range(6)
        ]
        async with asyncio.timeout(30):
            while True:
                calls = await _generate_calls(sims)
                if calls + await _queued(session, stack.url) >= len(requests):
                    break
                await asyncio.sleep(0.05)
        seen = await live_requests(sims)
        for request in requests:
            request.cancel()
        for request in requests:
            with contextlib.suppress(asyncio.CancelledError):
                await request
    taken = [rid for ids in seen for rid in ids]
    await _until_aborted(sims, taken, 10)
    async with asyncio.timeout(15):
        while sum([len(ids) for ids in await live_requests(sims)]):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await _fds_settle(stack.gateway_pid, baseline)


async def _queued(session: aiohttp.ClientSession, url: str) -> int:
    """Requests waiting in the gateway's admission queues (`gateway_replica_queued_requests`)."""
    async with session.get(f"{url}/metrics") as response:
        text = await response.text()
    return int(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("gateway_replica_queued_requests{")
        )
    )


async def test_client_leaving_mid_stream(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A client that leaves after the first event: Abort at once, descriptors back."""
    for sim in sims:
        await sim.configure(itl_ms=20, output_tokens=500)
    baseline = _open_fds(stack.gateway_pid)
    async with aiohttp.ClientSession() as session:
        left = [
            await ask_streaming(session, stack.url, f"leave {time.monotonic()}", leave_after=1)
            for _ in range(3)
        ]
    await _until_aborted(sims, [r.request_id for r in left], 10)
    await _fds_settle(stack.gateway_pid, baseline)


INCONCLUSIVE = ("error", "skipped")  # exact-cache lookups that did not conclude in time


async def test_client_leaving_a_cache_replay(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A client that leaves while an exact hit is replayed: no engine work, the entry intact."""
    text = f"replay {time.monotonic()}"
    async with aiohttp.ClientSession() as session:
        original = await ask_streaming(session, stack.url, text, temperature=0.0)
        async with asyncio.timeout(30):  # written back off the response path
            while (  # noqa: ASYNC110
                await ask_streaming(session, stack.url, text, temperature=0.0)
            ).cache != "hit-exact":
                await asyncio.sleep(0.05)
        baseline = _open_fds(stack.gateway_pid)
        calls = await _generate_calls(sims)
        hits = inconclusive = 0
        while hits < 5:
            response = await session.post(
                f"{stack.url}/v1/chat/completions",
                json={
                    "model": "sim",
                    "messages": [{"role": "user", "content": text}],
                    "temperature": 0.0,
                    "stream": True,
                },
            )
            cache = response.headers["x-cache"]
            response.close()
            if cache == "hit-exact":
                hits += 1
                continue
            # The fault stack's 50 ms lookup budget can run out on a loaded box: that request
            # went to the engine, as it should.
            assert cache in INCONCLUSIVE, cache
            inconclusive += 1
            assert inconclusive < 20
        while (again := await ask_streaming(session, stack.url, text, temperature=0.0)).cache in (
            INCONCLUSIVE
        ):
            inconclusive += 1
    assert again.cache == "hit-exact" and again.content == original.content
    assert await _generate_calls(sims) == calls + inconclusive
    await _fds_settle(stack.gateway_pid, baseline)


async def test_client_leaving_a_coalesced_stream(
    stack: FaultStack, sims: list[ControlClient]
) -> None:
    """One of three coalesced streams leaves: the others get the whole answer; all leave: Abort."""
    for sim in sims:
        await sim.configure(itl_ms=30, output_tokens=40)
    baseline = _open_fds(stack.gateway_pid)
    # A deadline no prediction refuses: without max_tokens a request is judged by the model's
    # recent output lengths, and earlier tests' 100-token answers at 30 ms take 3 s.
    async with aiohttp.ClientSession() as session:

        async def ask(text: str, leave_after: int | None = None) -> Result:
            return await ask_streaming(
                session,
                stack.url,
                text,
                temperature=0.0,
                leave_after=leave_after,
                budget_ms=LONG_BUDGET_MS,
            )

        calls = await _generate_calls(sims)
        text = f"coalesce {time.monotonic()}"
        results = await asyncio.gather(ask(text, 2), ask(text), ask(text))
        shared_calls = await _generate_calls(sims) - calls
        text = f"coalesce all leave {time.monotonic()}"
        gone = await asyncio.gather(*(ask(text, 2) for _ in range(3)))
    leaver, *stayers = results
    assert {r.status for r in results} == {200}
    assert {r.status for r in gone} == {200}
    assert shared_calls == 1
    assert not any(r.stream_error for r in stayers) and stayers[0].content == stayers[1].content
    assert stayers[0].content.startswith(leaver.content)
    for result in results:
        assert not await _aborted(sims, result.request_id)
    async with asyncio.timeout(10):
        while not any([await _aborted(sims, r.request_id) for r in gone]):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await _fds_settle(stack.gateway_pid, baseline)
