"""Identical concurrent requests on one backend call: each caller keeps its own deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import aiohttp
import orjson
import pytest

from bench.harness.processes import ProcessGroup
from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, control_clients, start_gateway, start_sim

# 30 tokens 60 ms apart: a call of ~1.8 s that a 600 ms deadline cannot see through.
_TOKENS, _ITL_MS, _SHORT_MS = 30, 60, "600"


@pytest.fixture(scope="module")
def coalescing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    log_dir = tmp_path_factory.mktemp("coalescing")
    with ProcessGroup(log_dir) as group:
        sim, sim_port = start_sim(group, "--itl-ms", str(_ITL_MS), "--output-tokens", "64")
        # No predictive refusal: the short-deadline caller must be let in to lead the call.
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {"GATEWAY_ADMISSION_PREDICT": "false", "GATEWAY_SLOW_START_S": "0"},
        )
        yield Stack(group, gateway, port, [sim], [sim_port], None)


@pytest.fixture
async def sim(coalescing_stack: Stack) -> AsyncIterator[ControlClient]:
    async with control_clients(coalescing_stack.sim_ports) as (client,):
        yield client


async def _post(
    url: str,
    text: str,
    timeout_ms: str | None,
    stream: bool = False,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes, float]:
    """Status, body and seconds taken of one chat request."""
    payload = {
        "model": "sim",
        "messages": [{"role": "user", "content": text}],
        "temperature": 0,
        "max_tokens": _TOKENS,
        "stream": stream,
    }
    headers = dict(headers or {})
    if timeout_ms is not None:
        headers["x-request-timeout-ms"] = timeout_ms
    started = time.monotonic()
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", json=payload, headers=headers) as response,
    ):
        return response.status, await response.read(), time.monotonic() - started


async def _lead_then_follow(
    stack: Stack,
    sim: ControlClient,
    text: str,
    leader_ms: str | None,
    follower_ms: str | None,
    leader_headers: dict[str, str] | None = None,
) -> tuple[tuple[int, bytes, float], tuple[int, bytes, float], int]:
    """The leader's and the follower's results, and the engine calls they made, the follower
    sent once the engine holds the leader's request."""
    before = (await sim.stats())["generate_calls"]
    leader = asyncio.ensure_future(_post(stack.api_url, text, leader_ms, headers=leader_headers))
    async with asyncio.timeout(30):
        while not (await sim.stats())["live_request_ids"]:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    follower = await _post(stack.api_url, text, follower_ms)
    return await leader, follower, (await sim.stats())["generate_calls"] - before


async def test_a_leaders_short_deadline_does_not_fail_its_follower(
    coalescing_stack: Stack, sim: ControlClient
) -> None:
    """The caller that started the shared call leaves at its deadline; the one that joined it
    without a deadline of its own gets the whole answer from that same call."""
    leader, follower, calls = await _lead_then_follow(
        coalescing_stack, sim, "coalesced, short leader", _SHORT_MS, None
    )
    assert leader[0] == 504
    assert follower[0] == 200, follower[1]
    assert orjson.loads(follower[1])["usage"]["completion_tokens"] == _TOKENS
    assert calls == 1


async def test_a_followers_own_deadline_is_kept(
    coalescing_stack: Stack, sim: ControlClient
) -> None:
    """A caller that joined a longer call leaves at its own deadline with a 504; the caller
    that started the call still gets its answer."""
    leader, follower, _ = await _lead_then_follow(
        coalescing_stack, sim, "coalesced, short follower", None, _SHORT_MS
    )
    assert follower[0] == 504
    assert orjson.loads(follower[1])["error"]["code"] == "deadline_exceeded"
    assert follower[2] < leader[2]
    assert leader[0] == 200


async def test_a_streaming_leaders_deadline_does_not_cut_its_followers_stream(
    coalescing_stack: Stack, sim: ControlClient
) -> None:
    """Streams: the follower's stream of the shared call runs to its end, no error event."""
    before = (await sim.stats())["generate_calls"]
    text = "coalesced stream, short leader"
    leader = asyncio.ensure_future(_post(coalescing_stack.api_url, text, _SHORT_MS, stream=True))
    async with asyncio.timeout(30):
        while not (await sim.stats())["live_request_ids"]:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    status, body, _ = await _post(coalescing_stack.api_url, text, None, stream=True)
    led = await leader
    assert status == 200
    assert b'"error"' not in body and b'"finish_reason":"length"' in body
    assert b'"error"' in led[1]  # the leader's own deadline cut its stream
    assert (await sim.stats())["generate_calls"] - before == 1


@pytest.mark.parametrize(
    "leader_headers", [{"x-priority": "batch"}, {"cache-control": "no-store"}], ids=str
)
async def test_a_call_is_shared_only_by_callers_of_one_class_and_one_write_back(
    coalescing_stack: Stack, sim: ControlClient, leader_headers: dict[str, str]
) -> None:
    """A batch leader's call waits in the batch queue, and a `no-store` leader's answer is
    not kept: an interactive follower who keeps answers gets a call of its own."""
    text = f"not shared with {leader_headers}"
    leader, follower, calls = await _lead_then_follow(
        coalescing_stack, sim, text, None, None, leader_headers
    )
    assert leader[0] == follower[0] == 200, (leader[1], follower[1])
    assert calls == 2
