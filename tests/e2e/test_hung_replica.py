"""A replica that takes whole (non-streamed) answers and never answers them, while its health
check passes: found by its silence and a probe, ejected, and its answers retried on the other
replica long before their deadline."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import NamedTuple

import aiohttp

from bench.harness.processes import ProcessGroup
from tests.e2e.stack import control_clients, running_stack, start_gateway, start_mock

TOTAL_MS = 30_000
ENV = {
    "GATEWAY_CACHE": "off",
    "GATEWAY_COALESCE": "false",
    "GATEWAY_BUDGET_TOTAL_MS": str(TOTAL_MS),
    # What a whole answer of 8 tokens on a replica that learned nothing explains: 2 s plus
    # 200 ms a token; the probe then has 2 s to answer.
    "GATEWAY_BUDGET_TTFT_MS": "2000",
}


class Outcome(NamedTuple):
    status: int
    seconds: float


async def _ask(session: aiohttp.ClientSession, url: str, text: str, model: str = "sim") -> Outcome:
    payload = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 8}
    started = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=TOTAL_MS / 1000 + 30)
    async with session.post(f"{url}/chat/completions", json=payload, timeout=timeout) as reply:
        await reply.read()
        return Outcome(reply.status, time.monotonic() - started)


async def test_whole_answers_on_a_hung_replica_finish_on_the_other(tmp_path: Path) -> None:
    """Whole answers sent while one of two replicas hangs all succeed, well within half their
    total budget (without the watch, those on the hung replica wait out the whole 30 s and
    fail); the hung replica, its health check passing throughout, gets no request after."""
    with running_stack(tmp_path, sims=2, mock=False, env=ENV) as stack:
        async with (
            control_clients(stack.sim_ports) as (hung, _),
            aiohttp.ClientSession() as session,
        ):
            await hung.configure(hang_rate=1.0)
            first = await asyncio.gather(
                *(_ask(session, stack.api_url, f"whole answer {i}") for i in range(8))
            )
            assert [o.status for o in first] == [200] * 8, first
            assert max(o.seconds for o in first) < TOTAL_MS / 1000 / 2, first
            stats = await hung.stats()
            assert stats["injected_hangs"] >= 2, stats  # some of them, and the probe
            calls = stats["generate_calls"]
            later = await asyncio.gather(
                *(_ask(session, stack.api_url, f"later answer {i}") for i in range(6))
            )
            assert [o.status for o in later] == [200] * 6, later
            assert (await hung.stats())["generate_calls"] == calls
            async with session.get(f"{stack.base_url}/readyz") as ready:
                assert ready.status == 200


async def test_whole_answers_on_a_silent_http_replica_finish_on_the_other(tmp_path: Path) -> None:
    """The same over OpenAI-compatible HTTP: a server whose /health answers but whose
    completions never come is probed on the chat endpoint, ejected, and its answers are
    served by the other."""
    with ProcessGroup(tmp_path) as group:
        silent = start_mock(group, "--ttft-ms", "3600000", name="mock-silent")
        healthy = start_mock(group, name="mock-healthy")
        backends = f"mock=http://127.0.0.1:{silent}/v1,http://127.0.0.1:{healthy}/v1"
        _, port = start_gateway(group, backends, ENV)
        url = f"http://127.0.0.1:{port}/v1"
        async with aiohttp.ClientSession() as session:
            first = await asyncio.gather(
                *(_ask(session, url, f"whole answer {i}", "mock") for i in range(8))
            )
            assert [o.status for o in first] == [200] * 8, first
            assert max(o.seconds for o in first) < TOTAL_MS / 1000 / 2, first
