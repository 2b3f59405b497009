"""Faults of the backends: replicas partitioned, failing, all down, killed or partitioned
mid-stream, and an HTTP backend silent or reset mid-stream."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import aiohttp
import grpc

from bench.harness.probes import tcp_open
from bench.harness.processes import ManagedProcess, ProcessSpec, python_module
from standin.vllm.control import ControlClient
from tests.e2e.faults.harness import (
    LONG_BUDGET_MS,
    RECOVERY_TIMEOUT_S,
    SLACK_S,
    STALL_MS,
    TABLE,
    FaultStack,
    Result,
    Row,
    ask,
    ask_many,
    ask_streaming,
    live_requests,
    recovery_s,
    within_budget,
)
from tests.e2e.stack import READY_TIMEOUT_S


async def test_partitioned_replica(stack: FaultStack) -> None:
    """One replica accepts and never answers: 200 or 504 within budget; the rest is served."""
    async with aiohttp.ClientSession() as session:
        stack.replicas[0].blackhole()
        during = await ask_many(session, stack.url, "partition")
        # Once its health probe times out it leaves the rotation: all served by the other.
        assert await recovery_s(session, stack.url) < RECOVERY_TIMEOUT_S
        stack.replicas[0].clear()
        TABLE.append(Row("one replica blackholed", during, await recovery_s(session, stack.url)))
    assert {r.status for r in during} <= {200, 504}
    assert 200 in {r.status for r in during}
    within_budget(during)


async def test_replica_answering_internal(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A replica failing every call INTERNAL: retried on the other, never past the budget."""
    await sims[0].configure(error_rate=1.0)
    async with aiohttp.ClientSession() as session:
        during = await ask_many(session, stack.url, "internal")
        await sims[0].reset()
        TABLE.append(Row("one replica INTERNAL", during, await recovery_s(session, stack.url)))
    assert {r.status for r in during} <= {200, 502}
    assert 200 in {r.status for r in during}
    within_budget(during)


async def test_all_replicas_down_is_a_fast_503(stack: FaultStack) -> None:
    """Every replica resetting connections: 502/503 at first, then a fast 503; then recovery."""
    async with aiohttp.ClientSession() as session:
        for proxy in stack.replicas:
            proxy.reset()
        first = await ask_many(session, stack.url, "down")
        # Every replica of `sim` ejected (/readyz stays 200: the `mock` model is still served).
        async with asyncio.timeout(30):
            while not all(  # noqa: ASYNC110
                [await _healthy(session, stack.url, p.port) is False for p in stack.replicas]
            ):
                await asyncio.sleep(0.1)
        after = await ask_many(session, stack.url, "down later")
        for proxy in stack.replicas:
            proxy.clear()
        recovery = await recovery_s(session, stack.url)
    TABLE.append(Row("all replicas reset", first + after, recovery))
    assert {r.status for r in first} <= {502, 503}
    assert {r.status for r in after} == {503}
    assert all(r.elapsed_s < SLACK_S for r in after), [r.elapsed_s for r in after]
    within_budget(first)
    assert recovery < RECOVERY_TIMEOUT_S


async def _healthy(session: aiohttp.ClientSession, url: str, replica_port: int) -> bool | None:
    """The gateway's view of a replica (`gateway_replica_healthy`), None before it is sampled."""
    async with session.get(f"{url}/metrics") as response:
        text = await response.text()
    for line in text.splitlines():
        if line.startswith("gateway_replica_healthy{") and f':{replica_port}"' in line:
            return float(line.rsplit(" ", 1)[1]) == 1.0
    return None


async def _restart_sim(stack: FaultStack, index: int) -> ManagedProcess:
    """Start stand-in `index` again on its port (the proxy in front of it is unchanged)."""
    port = stack.sim_ports[index]
    spec = ProcessSpec(
        f"sim-{port}-{time.monotonic_ns()}", python_module("standin.vllm", "--port", str(port))
    )
    process = stack.group.start(spec)
    await asyncio.to_thread(
        process.wait_ready, lambda: tcp_open(port), READY_TIMEOUT_S, "gRPC port open"
    )
    stack.sim_processes[index] = process
    return process


async def _control_answers(sim: ControlClient) -> None:
    """Until the stand-in's control service answers again (its channel reconnects)."""
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while True:
            try:
                await sim.reset()
                return
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.2)


async def _streams_on_both(
    session: aiohttp.ClientSession, stack: FaultStack, sims: list[ControlClient], tag: str
) -> tuple[list[asyncio.Task[Result]], list[list[str]], int]:
    """Six streams of about 2 s (`LONG_BUDGET_MS` each), started once both replicas are in
    rotation, each past its first event; the ids live on each stand-in, and the victim: the
    first stand-in holding some (routing may favour one replica)."""
    # Both replicas in rotation first: one ejected by the test before (and still backing
    # off) would take no stream, and then killing the other leaves no replica at all.
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        for proxy in stack.replicas:
            while not await _healthy(session, stack.url, proxy.port):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
    for sim in sims:
        await sim.configure(itl_ms=20, output_tokens=100)
    firsts = [asyncio.Event() for _ in range(6)]
    pending = [
        asyncio.ensure_future(
            ask_streaming(
                session,
                stack.url,
                f"{tag} {time.monotonic()} {i}",
                first=first,
                budget_ms=LONG_BUDGET_MS,
            )
        )
        for i, first in enumerate(firsts)
    ]
    live: list[list[str]] = [[], []]
    async with asyncio.timeout(30):
        while sum(map(len, live)) < len(pending) or not all(f.is_set() for f in firsts):
            await asyncio.sleep(0.02)
            live = await live_requests(sims)
    return pending, live, 0 if live[0] else 1


async def test_replica_killed_mid_stream(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A stand-in SIGKILLed mid-stream: its streams get an error event, the rest is served."""
    async with aiohttp.ClientSession() as session:
        pending, live, victim = await _streams_on_both(session, stack, sims, "kill")
        process = stack.sim_processes[victim]
        os.kill(process.pid, signal.SIGKILL)
        await asyncio.to_thread(process.popen.wait, 10)
        during = list(await asyncio.gather(*pending))
        after = await ask_many(session, stack.url, "kill after")
        await _restart_sim(stack, victim)
        await _control_answers(sims[victim])
        async with asyncio.timeout(RECOVERY_TIMEOUT_S):  # health re-admits the restarted one
            while not await _healthy(session, stack.url, stack.replicas[victim].port):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        recovery = await recovery_s(session, stack.url)
    TABLE.append(Row("one replica SIGKILLed mid-stream", during + after, recovery))
    by_id = {r.request_id: r for r in during}
    assert {r.status for r in during} == {200}
    assert {r.status for r in after} == {200}, [r for r in after if r.status != 200]
    assert all(by_id[rid].stream_error for rid in live[victim]), during
    assert all(not by_id[rid].stream_error and by_id[rid].content for rid in live[1 - victim])
    within_budget(after)
    assert all(r.elapsed_s < LONG_BUDGET_MS / 1000 + SLACK_S for r in during)


async def test_stall_after_the_replica_is_ejected(
    stack: FaultStack, sims: list[ControlClient]
) -> None:
    """A replica ejected mid-stream: its in-flight streams still end at the stall budget."""
    async with aiohttp.ClientSession() as session:
        pending, live, victim = await _streams_on_both(session, stack, sims, "eject")
        proxy = stack.replicas[victim]
        proxy.blackhole()
        cut = time.monotonic()
        during = list(await asyncio.gather(*pending))
        async with asyncio.timeout(30):  # the partition also took it out of rotation
            while await _healthy(session, stack.url, proxy.port) is not False:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        proxy.clear()
        recovery = await recovery_s(session, stack.url)
    by_id = {r.request_id: r for r in during}
    stalled = [by_id[rid] for rid in live[victim]]
    assert {r.status for r in during} == {200}
    assert stalled and all("stall" in r.error for r in stalled), stalled
    assert all(not by_id[rid].stream_error for rid in live[1 - victim])
    assert max(r.ended_at for r in stalled) - cut < STALL_MS / 1000 + SLACK_S
    # The cancelled calls reach the engine once the partition heals (the Abort, or the RPC's
    # cancellation: either frees the engine's slot).
    async with asyncio.timeout(30):
        while True:
            stats = await sims[victim].stats()
            heard = set(stats["aborted_request_ids"]) | set(stats["cancelled_request_ids"])
            if set(live[victim]) <= heard:
                break
            await asyncio.sleep(0.1)
    TABLE.append(Row("one replica partitioned mid-stream (ejected)", during, recovery))


async def _http_streams_cut(
    stack: FaultStack, fault: str
) -> tuple[list[Result], list[Result], float, float]:
    """Four streams from the HTTP backend, each past its first event when `fault` starts;
    then a round started during the fault; the seconds from the fault to the streams' end,
    and the recovery."""
    proxy = stack.http
    texts = [f"{fault} {time.monotonic()} {i}" for i in range(4)]
    async with aiohttp.ClientSession() as session:
        firsts = [asyncio.Event() for _ in texts]
        pending = [
            asyncio.ensure_future(
                ask_streaming(session, stack.url, text, model="mock", temperature=0.0, first=first)
            )
            for text, first in zip(texts, firsts, strict=True)
        ]
        async with asyncio.timeout(30):
            while not all(f.is_set() for f in firsts):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        getattr(proxy, fault)()
        cut = time.monotonic()
        streams = list(await asyncio.gather(*pending))
        ended_after_cut = time.monotonic() - cut
        later = await ask_many(session, stack.url, f"{fault} later", count=8, model="mock")
        proxy.clear()
        recovery = await recovery_s(session, stack.url, model="mock")
        # A cut stream is never cached: the same prompts are misses, answered whole.
        again = [await _looked_up(session, stack.url, t) for t in texts]
    assert [(r.status, r.cache) for r in again] == [(200, "miss")] * len(texts), again
    return streams, later, ended_after_cut, recovery


async def _looked_up(session: aiohttp.ClientSession, url: str, text: str) -> Result:
    """The mock's answer to `text` once the exact cache's lookup was conclusive (the fault
    stack's 50 ms lookup budget can run out on a loaded box: `error`), with time to spare for
    an uncapped answer (a fresh stack's estimate is wide) and nothing stored, so a retry cannot
    find its own answer."""
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while True:
            result = await ask(
                session,
                url,
                text,
                model="mock",
                temperature=0.0,
                budget_ms=LONG_BUDGET_MS,
                headers={"cache-control": "no-store"},
            )
            if result.cache not in ("error", "skipped"):
                return result


async def test_http_backend_stalling_mid_stream(stack: FaultStack) -> None:
    """An HTTP backend silent mid-stream: the stall budget ends each stream; then 504/503."""
    streams, later, ended_after_cut, recovery = await _http_streams_cut(stack, "blackhole")
    TABLE.append(Row("HTTP backend silent mid-stream", streams + later, recovery))
    assert {r.status for r in streams} == {200}
    assert all("stall" in r.error for r in streams), [r.error for r in streams]
    assert ended_after_cut < STALL_MS / 1000 + SLACK_S
    assert {r.status for r in later} <= {503, 504}, sorted(r.status for r in later)
    within_budget(streams + later)


async def test_http_backend_resetting_mid_stream(stack: FaultStack) -> None:
    """An HTTP backend reset mid-stream: each stream ends at once with an error; then 502/503."""
    streams, later, ended_after_cut, recovery = await _http_streams_cut(stack, "reset")
    TABLE.append(Row("HTTP backend reset mid-stream", streams + later, recovery))
    assert {r.status for r in streams} == {200}
    assert all(r.stream_error for r in streams), streams
    assert ended_after_cut < SLACK_S
    assert {r.status for r in later} <= {502, 503}, sorted(r.status for r in later)
    assert all(r.elapsed_s < SLACK_S for r in later), [r.elapsed_s for r in later]
