"""Fault scenarios over real processes (issue #14): two stand-ins and Redis, each reached by the
gateway through a fault proxy. Every scenario checks that no request outlives its budget, that
only the expected statuses appear, and that service comes back once the fault is cleared."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from bench.harness.probes import free_port, http_ok, tcp_open
from bench.harness.processes import ManagedProcess, ProcessGroup, ProcessSpec, python_module
from bench.harness.redis_stack import redis_stack
from standin.vllm.control import ControlClient
from tests.e2e.stack import READY_TIMEOUT_S, start_gateway, start_sim
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
    ended_at: float = 0.0  # time.monotonic() at its end (streams read by `_stream`)


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


@pytest.fixture(scope="module")
def fault_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    log_dir = tmp_path_factory.mktemp("faults")
    with redis_stack() as redis_server, ProcessGroup(log_dir) as group:
        if redis_server.port == 0:
            pytest.skip("REDIS_URL names an external Redis; the proxy needs a local port")
        started = [start_sim(group) for _ in range(2)]
        sims = [port for _, port in started]
        mock_port = _start_mock(group)
        redis = FaultProxy(redis_server.port)
        replicas = [FaultProxy(port) for port in sims]
        http = FaultProxy(mock_port)
        with redis.in_thread(), replicas[0].in_thread(), replicas[1].in_thread(), http.in_thread():
            backends = "sim=" + ",".join(f"grpc://127.0.0.1:{p.port}" for p in replicas)
            backends += f";mock=http://127.0.0.1:{http.port}/v1"
            env = {
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"),
                "GATEWAY_REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
                "GATEWAY_REDIS_TIMEOUT_MS": "50",
                "GATEWAY_BUDGET_EXACT_CACHE_MS": "50",
                "GATEWAY_REDIS_BREAKER_FAILURES": "3",
                "GATEWAY_REDIS_BREAKER_COOLDOWN_MS": "300",
                "GATEWAY_CACHE_NEAR_ENTRIES": "0",
                "GATEWAY_HEALTH_TIMEOUT_S": "0.5",
                "GATEWAY_SLOW_START_S": "0",
                "GATEWAY_BUDGET_STALL_MS": str(STALL_MS),
            }
            gateway, port = start_gateway(group, backends, env)
            yield FaultStack(
                f"http://127.0.0.1:{port}",
                replicas,
                redis,
                sims,
                http,
                group,
                [process for process, _ in started],
                gateway.pid,
            )
    target = os.environ.get("FAULT_TABLE_PATH")
    if target:  # the README's table: FAULT_TABLE_PATH=path pytest tests/e2e/test_faults.py
        header = [
            "| scenario | requests | outcomes by status | p99 during the fault | recovery |",
            "|---|---|---|---|---|",
        ]
        Path(target).write_text("\n".join(header + [row.markdown() for row in TABLE]) + "\n")


@pytest.fixture
async def stack(fault_stack: FaultStack) -> AsyncIterator[FaultStack]:
    """The shared stack, healthy before the test; faults are cleared and service recovered after."""
    yield fault_stack
    for proxy in (*fault_stack.replicas, fault_stack.redis, fault_stack.http):
        proxy.clear()
    async with aiohttp.ClientSession() as session:
        await _recovery_s(session, fault_stack.url)
        await _recovery_s(session, fault_stack.url, model="mock")


def _start_mock(group: ProcessGroup) -> int:
    """The OpenAI mock, streaming slowly enough to be cut mid-stream."""
    port = free_port()
    argv = ["--port", str(port), "--itl-ms", str(MOCK_ITL_MS), "--output-tokens", str(MOCK_TOKENS)]
    process = group.start(ProcessSpec("mock-openai", python_module("standin.openai", *argv)))
    process.wait_ready(lambda: http_ok(port, "/health"), READY_TIMEOUT_S, "/health")
    return port


@pytest.fixture
async def sims(fault_stack: FaultStack) -> AsyncIterator[list[ControlClient]]:
    """Control clients reaching each stand-in directly (not through its proxy), reset after."""
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for port in fault_stack.sim_ports]
    clients = [ControlClient(channel) for channel in channels]
    for client in clients:
        await client.reset()
    try:
        yield clients
    finally:
        for client in clients:
            await client.reset()
        for channel in channels:
            await channel.close(grace=None)


async def _ask(
    session: aiohttp.ClientSession,
    url: str,
    text: str,
    *,
    temperature: float = 0.7,
    stream: bool = False,
    model: str = "sim",
    max_tokens: int | None = None,
) -> Result:
    payload: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "temperature": temperature,
        "stream": stream,
    }
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    headers = {"X-Request-Timeout-Ms": str(BUDGET_MS)}
    timeout = aiohttp.ClientTimeout(total=BUDGET_MS / 1000 + 30)
    start = time.monotonic()
    async with session.post(
        f"{url}/v1/chat/completions", json=payload, headers=headers, timeout=timeout
    ) as response:
        body = await response.read()
        elapsed = time.monotonic() - start
        content, error = _content(body, stream and response.status == 200)
        return Result(
            response.status,
            elapsed,
            response.headers.get("x-cache", ""),
            response.headers.get("x-request-id", ""),
            content,
            error is not None,
            error or "",
        )


def _content(body: bytes, stream: bool) -> tuple[str, str | None]:
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


async def _round(
    session: aiohttp.ClientSession, url: str, tag: str, count: int = 12, **kwargs: Any
) -> list[Result]:
    """`count` requests, four at a time."""
    gate = asyncio.Semaphore(4)

    async def one(i: int) -> Result:
        async with gate:
            return await _ask(session, url, f"{tag} {i}", **kwargs)

    return await asyncio.gather(*(one(i) for i in range(count)))


async def _recovery_s(
    session: aiohttp.ClientSession, url: str, in_a_row: int = 5, model: str = "sim"
) -> float:
    """Seconds until `in_a_row` consecutive requests succeed (bounded); short answers, so
    that a slow stand-in does not count as a slow recovery."""
    start = time.monotonic()
    streak = 0
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while streak < in_a_row:
            text = f"recovery {time.monotonic()}"
            result = await _ask(session, url, text, model=model, max_tokens=2)
            streak = streak + 1 if result.status == 200 else 0
            if result.status != 200:
                await asyncio.sleep(0.1)
    return time.monotonic() - start


def _within_budget(results: list[Result]) -> None:
    late = [r for r in results if r.elapsed_s > BUDGET_MS / 1000 + SLACK_S]
    assert late == [], late


async def _aborted(sims: list[ControlClient], request_id: str) -> bool:
    for sim in sims:
        stats = await sim.stats()
        if request_id in stats["aborted_request_ids"]:
            return True
    return False


async def test_partitioned_replica(stack: FaultStack) -> None:
    """One replica accepts and never answers: 200 or 504 within budget; the rest is served."""
    async with aiohttp.ClientSession() as session:
        stack.replicas[0].blackhole()
        during = await _round(session, stack.url, "partition")
        # Once its health probe times out it leaves the rotation: all served by the other.
        assert await _recovery_s(session, stack.url) < RECOVERY_TIMEOUT_S
        stack.replicas[0].clear()
        TABLE.append(Row("one replica blackholed", during, await _recovery_s(session, stack.url)))
    assert {r.status for r in during} <= {200, 504}
    assert 200 in {r.status for r in during}
    _within_budget(during)


async def test_replica_answering_internal(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A replica failing every call INTERNAL: retried on the other, never past the budget."""
    await sims[0].configure(error_rate=1.0)
    async with aiohttp.ClientSession() as session:
        during = await _round(session, stack.url, "internal")
        await sims[0].reset()
        TABLE.append(Row("one replica INTERNAL", during, await _recovery_s(session, stack.url)))
    assert {r.status for r in during} <= {200, 502}
    assert 200 in {r.status for r in during}
    _within_budget(during)


async def test_all_replicas_down_is_a_fast_503(stack: FaultStack) -> None:
    """Every replica resetting connections: 502/503 at first, then a fast 503; then recovery."""
    async with aiohttp.ClientSession() as session:
        for proxy in stack.replicas:
            proxy.reset()
        first = await _round(session, stack.url, "down")
        async with asyncio.timeout(30):
            while (await session.get(f"{stack.url}/readyz")).status != 503:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        after = await _round(session, stack.url, "down later")
        for proxy in stack.replicas:
            proxy.clear()
        recovery = await _recovery_s(session, stack.url)
    TABLE.append(Row("all replicas reset", first + after, recovery))
    assert {r.status for r in first} <= {502, 503}
    assert {r.status for r in after} == {503}
    assert all(r.elapsed_s < SLACK_S for r in after), [r.elapsed_s for r in after]
    _within_budget(first)
    assert recovery < RECOVERY_TIMEOUT_S


async def test_blackholed_redis_then_back(stack: FaultStack) -> None:
    """Redis that never answers costs only cache errors; once back, hits return and are right."""
    async with aiohttp.ClientSession() as session:
        stack.redis.blackhole()
        during = await _round(session, stack.url, "redis hole", temperature=0.0)
        stack.redis.clear()
        recovery = await _cache_recovers(session, stack.url, "redis hole back")
        TABLE.append(Row("Redis blackholed", during, recovery))
        again = await _round(session, stack.url, "redis hole", temperature=0.0)
    assert {r.status for r in during + again} == {200}
    assert {r.cache for r in during} <= {"error", "skipped"}
    _within_budget(during)
    # Whatever Redis holds now, it is the same answer as the backend gave.
    assert [r.content for r in again] == [r.content for r in during]


async def test_flapping_redis(stack: FaultStack) -> None:
    """Redis flapping between up and reset: every request answered, hits always right."""
    async with aiohttp.ClientSession() as session:
        first = await _round(session, stack.url, "flap", temperature=0.0)
        stack.redis.flap(up_s=0.3, down_s=0.3)
        during = [
            r for _ in range(3) for r in await _round(session, stack.url, "flap", temperature=0.0)
        ]
        stack.redis.clear()
        recovery = await _cache_recovers(session, stack.url, "flap back")
        TABLE.append(Row("Redis flapping (0.3 s up / 0.3 s reset)", during, recovery))
    assert {r.status for r in first} == {200}
    assert {r.status for r in during} == {200}
    assert [r for r in during if r.status == 200 and not r.content] == []
    assert {r.cache for r in during if r.status == 200} <= {"hit-exact", "miss", "error", "skipped"}
    expected = [r.content for r in first] * 3
    assert [r.content for r, e in zip(during, expected, strict=True) if r.status == 200] == [
        e for r, e in zip(during, expected, strict=True) if r.status == 200
    ]
    _within_budget(during)


async def test_redis_connections_reset(stack: FaultStack) -> None:
    """Redis resetting the gateway's pooled connections costs cache errors, never a 500."""
    async with aiohttp.ClientSession() as session:
        warm = await _round(session, stack.url, "reset warm", count=16, temperature=0.0)
        stack.redis.reset()
        stack.redis.clear()
        after = await _round(session, stack.url, "reset after", count=16, temperature=0.0)
        recovery = await _cache_recovers(session, stack.url, "reset back")
        TABLE.append(Row("Redis resets its connections", after, recovery))
    assert {r.status for r in warm} == {200}
    assert {r.status for r in after} == {200}, sorted(r.status for r in after)


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


async def _cache_recovers(session: aiohttp.ClientSession, url: str, text: str) -> float:
    """Seconds until a fresh prompt is a hit: Redis reads and writes again (bounded)."""
    start = time.monotonic()
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while (await _ask(session, url, text, temperature=0.0)).cache != "hit-exact":  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    return time.monotonic() - start


# -- streams cut by a fault, and clients that leave ----------------------------------------


async def _stream(
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
        content, error = _content(b"".join(lines), response.status == 200)
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


async def _live(sims: list[ControlClient]) -> list[list[str]]:
    return [list((await sim.stats())["live_request_ids"]) for sim in sims]


async def _until_aborted(sims: list[ControlClient], ids: list[str], timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        while not all([await _aborted(sims, rid) for rid in ids]):  # noqa: ASYNC110
            await asyncio.sleep(0.05)


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
    """Six streams of about 2 s (`LONG_BUDGET_MS` each), each past its first event; the ids
    live on each stand-in, and the victim: the first stand-in holding some (routing may
    favour one replica)."""
    for sim in sims:
        await sim.configure(itl_ms=20, output_tokens=100)
    firsts = [asyncio.Event() for _ in range(6)]
    pending = [
        asyncio.ensure_future(
            _stream(
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
            live = await _live(sims)
    return pending, live, 0 if live[0] else 1


async def test_replica_killed_mid_stream(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A stand-in SIGKILLed mid-stream: its streams get an error event, the rest is served."""
    async with aiohttp.ClientSession() as session:
        pending, live, victim = await _streams_on_both(session, stack, sims, "kill")
        process = stack.sim_processes[victim]
        os.kill(process.pid, signal.SIGKILL)
        await asyncio.to_thread(process.popen.wait, 10)
        during = list(await asyncio.gather(*pending))
        after = await _round(session, stack.url, "kill after")
        await _restart_sim(stack, victim)
        await _control_answers(sims[victim])
        async with asyncio.timeout(RECOVERY_TIMEOUT_S):  # health re-admits the restarted one
            while not await _healthy(session, stack.url, stack.replicas[victim].port):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        recovery = await _recovery_s(session, stack.url)
    TABLE.append(Row("one replica SIGKILLed mid-stream", during + after, recovery))
    by_id = {r.request_id: r for r in during}
    assert {r.status for r in during} == {200}
    assert {r.status for r in after} == {200}, sorted(r.status for r in after)
    assert all(by_id[rid].stream_error for rid in live[victim]), during
    assert all(not by_id[rid].stream_error and by_id[rid].content for rid in live[1 - victim])
    _within_budget(after)
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
        recovery = await _recovery_s(session, stack.url)
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
                _stream(session, stack.url, text, model="mock", temperature=0.0, first=first)
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
        later = await _round(session, stack.url, f"{fault} later", count=8, model="mock")
        proxy.clear()
        recovery = await _recovery_s(session, stack.url, model="mock")
        # A cut stream is never cached: the same prompts are misses, answered whole.
        again = [await _ask(session, stack.url, t, model="mock", temperature=0.0) for t in texts]
    assert [(r.status, r.cache) for r in again] == [(200, "miss")] * len(texts), again
    return streams, later, ended_after_cut, recovery


async def test_http_backend_stalling_mid_stream(stack: FaultStack) -> None:
    """An HTTP backend silent mid-stream: the stall budget ends each stream; then 504/503."""
    streams, later, ended_after_cut, recovery = await _http_streams_cut(stack, "blackhole")
    TABLE.append(Row("HTTP backend silent mid-stream", streams + later, recovery))
    assert {r.status for r in streams} == {200}
    assert all("stall" in r.error for r in streams), [r.error for r in streams]
    assert ended_after_cut < STALL_MS / 1000 + SLACK_S
    assert {r.status for r in later} <= {503, 504}, sorted(r.status for r in later)
    _within_budget(streams + later)


async def test_http_backend_resetting_mid_stream(stack: FaultStack) -> None:
    """An HTTP backend reset mid-stream: each stream ends at once with an error; then 502/503."""
    streams, later, ended_after_cut, recovery = await _http_streams_cut(stack, "reset")
    TABLE.append(Row("HTTP backend reset mid-stream", streams + later, recovery))
    assert {r.status for r in streams} == {200}
    assert all(r.stream_error for r in streams), streams
    assert ended_after_cut < SLACK_S
    assert {r.status for r in later} <= {502, 503}, sorted(r.status for r in later)
    assert all(r.elapsed_s < SLACK_S for r in later), [r.elapsed_s for r in later]


async def test_slow_redis(stack: FaultStack) -> None:
    """Redis answering in 200-500 ms: the cache is skipped, every request served within budget."""
    async with aiohttp.ClientSession() as session:
        stack.redis.set_latency(0.2, 0.3)
        during = await _round(session, stack.url, "slow redis", temperature=0.0)
        stack.redis.clear()
        recovery = await _cache_recovers(session, stack.url, "slow redis back")
        TABLE.append(Row("Redis slow (200-500 ms)", during, recovery))
        again = await _round(session, stack.url, "slow redis", temperature=0.0)
    assert {r.status for r in during + again} == {200}
    assert {r.cache for r in during} <= {"error", "skipped", "miss"}
    _within_budget(during)
    assert max(r.elapsed_s for r in during) < 1.0 + SLACK_S  # never waits on Redis
    assert [r.content for r in again] == [r.content for r in during]


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
        seen = await _live(sims)
        for request in requests:
            request.cancel()
        for request in requests:
            with contextlib.suppress(asyncio.CancelledError):
                await request
    taken = [rid for ids in seen for rid in ids]
    await _until_aborted(sims, taken, 10)
    async with asyncio.timeout(15):
        while sum([len(ids) for ids in await _live(sims)]):  # noqa: ASYNC110
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
            await _stream(session, stack.url, f"leave {time.monotonic()}", leave_after=1)
            for _ in range(3)
        ]
    await _until_aborted(sims, [r.request_id for r in left], 10)
    await _fds_settle(stack.gateway_pid, baseline)


async def test_client_leaving_a_cache_replay(stack: FaultStack, sims: list[ControlClient]) -> None:
    """A client that leaves while an exact hit is replayed: no engine work, the entry intact."""
    text = f"replay {time.monotonic()}"
    async with aiohttp.ClientSession() as session:
        original = await _stream(session, stack.url, text, temperature=0.0)
        async with asyncio.timeout(30):  # written back off the response path
            while (await _stream(session, stack.url, text, temperature=0.0)).cache != "hit-exact":  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        baseline = _open_fds(stack.gateway_pid)
        calls = await _generate_calls(sims)
        for _ in range(5):
            response = await session.post(
                f"{stack.url}/v1/chat/completions",
                json={
                    "model": "sim",
                    "messages": [{"role": "user", "content": text}],
                    "temperature": 0.0,
                    "stream": True,
                },
            )
            assert response.headers["x-cache"] == "hit-exact"
            response.close()
        again = await _stream(session, stack.url, text, temperature=0.0)
    assert again.cache == "hit-exact" and again.content == original.content
    assert await _generate_calls(sims) == calls
    await _fds_settle(stack.gateway_pid, baseline)


async def test_client_leaving_a_coalesced_stream(
    stack: FaultStack, sims: list[ControlClient]
) -> None:
    """One of three coalesced streams leaves: the others get the whole answer; all leave: Abort."""
    for sim in sims:
        await sim.configure(itl_ms=30, output_tokens=40)
    baseline = _open_fds(stack.gateway_pid)
    async with aiohttp.ClientSession() as session:
        calls = await _generate_calls(sims)
        text = f"coalesce {time.monotonic()}"
        results = await asyncio.gather(
            _stream(session, stack.url, text, temperature=0.0, leave_after=2),
            _stream(session, stack.url, text, temperature=0.0),
            _stream(session, stack.url, text, temperature=0.0),
        )
        shared_calls = await _generate_calls(sims) - calls
        text = f"coalesce all leave {time.monotonic()}"
        gone = await asyncio.gather(
            *(_stream(session, stack.url, text, temperature=0.0, leave_after=2) for _ in range(3))
        )
    leaver, *stayers = results
    assert {r.status for r in results} == {200}
    assert shared_calls == 1
    assert not any(r.stream_error for r in stayers) and stayers[0].content == stayers[1].content
    assert stayers[0].content.startswith(leaver.content)
    for result in results:
        assert not await _aborted(sims, result.request_id)
    async with asyncio.timeout(10):
        while not any([await _aborted(sims, r.request_id) for r in gone]):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await _fds_settle(stack.gateway_pid, baseline)
