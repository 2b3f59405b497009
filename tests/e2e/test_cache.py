"""Caching through a real gateway process backed by a real Redis Stack."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import openai
import orjson
import pytest
import redis
from openai.types.chat import ChatCompletionMessageParam

from access.caller import key_digest
from access.key_set import key_set_entry, new_key
from bench.harness.processes import ProcessGroup
from bench.harness.redis_stack import RedisProcess, redis_stack
from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, start_gateway, start_sim


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisProcess]:
    with redis_stack() as server:
        yield server


@pytest.fixture(scope="module")
def cached_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_server: RedisProcess
) -> Iterator[Stack]:
    log_dir = tmp_path_factory.mktemp("cache-e2e")
    with ProcessGroup(log_dir) as group:
        sim, sim_port = start_sim(group, "--itl-ms", "1")
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_REDIS_URL": redis_server.url,
                "GATEWAY_REDIS_TIMEOUT_MS": "2000",  # functional tests; fail-open has its own
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tok"),
            },
        )
        yield Stack(group, gateway, port, [sim], [sim_port], None)


@pytest.fixture
async def sim(cached_stack: Stack) -> AsyncIterator[ControlClient]:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{cached_stack.sim_ports[0]}")
    client = ControlClient(channel)
    await client.reset()
    try:
        yield client
    finally:
        await client.reset()
        await channel.close(grace=None)


def _messages(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": text}]


async def _chat(
    url: str,
    text: str,
    *,
    token: str = "t1",
    headers: dict[str, str] | None = None,
    **fields: object,
) -> tuple[int, dict[str, str], bytes]:
    payload = {"model": "sim", "messages": _messages(text), "temperature": 0, **fields}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{url}/chat/completions",
            json=payload,
            headers={"authorization": f"Bearer {token}", **(headers or {})},
        ) as response,
    ):
        return (
            response.status,
            {k.lower(): v for k, v in response.headers.items()},
            await response.read(),
        )


async def test_miss_then_exact_hit_with_age(cached_stack: Stack) -> None:
    """The second identical request is an exact hit with the same content and an Age."""
    _, first, body1 = await _chat(cached_stack.api_url, "cache me one")
    assert first["x-cache"] == "miss"
    async with asyncio.timeout(10):
        while True:
            _, second, body2 = await _chat(cached_stack.api_url, "cache me one")
            if second["x-cache"] == "hit-exact":
                break
    assert "age" in second
    content = [orjson.loads(b)["choices"][0]["message"]["content"] for b in (body1, body2)]
    assert content[0] == content[1]


async def test_sampling_without_seed_bypasses(cached_stack: Stack) -> None:
    """A non-reproducible request is never cached."""
    for _ in range(2):
        _, headers, _ = await _chat(cached_stack.api_url, "random please", temperature=0.9)
        assert headers["x-cache"] == "bypass"


async def test_cache_control_and_tenants(cached_stack: Stack) -> None:
    """no-cache skips the read but writes; another bearer token never sees the entry."""
    _, headers, _ = await _chat(
        cached_stack.api_url, "cc test", headers={"cache-control": "no-cache"}
    )
    assert headers["x-cache"] == "bypass"
    async with asyncio.timeout(10):
        while (await _chat(cached_stack.api_url, "cc test"))[1]["x-cache"] != "hit-exact":
            pass
    _, other, _ = await _chat(cached_stack.api_url, "cc test", token="someone-else")
    assert other["x-cache"] == "miss"
    _, stored_nothing, _ = await _chat(
        cached_stack.api_url, "no store test", headers={"cache-control": "no-store"}
    )
    assert stored_nothing["x-cache"] == "miss"
    _, again, _ = await _chat(cached_stack.api_url, "no store test")
    assert again["x-cache"] == "miss"


async def test_stream_replay_matches_original(cached_stack: Stack) -> None:
    """A hit on stream=true replays chunks the openai client assembles into the same content."""
    client = openai.AsyncOpenAI(base_url=cached_stack.api_url, api_key="t1")

    async def streamed() -> tuple[str, str | None, int, str]:
        raw = await client.chat.completions.with_raw_response.create(
            model="sim",
            messages=_messages("replay me 🙂"),
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, finish, tokens = "", None, 0
        async for chunk in raw.parse():
            if chunk.usage is not None:
                tokens = chunk.usage.completion_tokens
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
        return text, finish, tokens, raw.headers["x-cache"]

    original = await streamed()
    assert original[3] == "miss"
    async with asyncio.timeout(10):
        replayed = await streamed()
        while replayed[3] != "hit-exact":
            replayed = await streamed()
    assert replayed[:3] == original[:3]
    whole = await client.chat.completions.with_raw_response.create(
        model="sim",
        messages=_messages("replay me 🙂"),
        temperature=0,
    )
    assert whole.headers["x-cache"] == "hit-exact"
    assert whole.parse().choices[0].message.content == original[0]


async def test_identical_concurrent_misses_make_one_backend_call(
    cached_stack: Stack, sim: ControlClient
) -> None:
    """50 identical concurrent requests share one backend call."""
    await sim.configure(itl_ms=40)
    before = (await sim.stats())["generate_calls"]
    results = await asyncio.gather(
        *(_chat(cached_stack.api_url, "coalesce me", seed=11) for _ in range(50))
    )
    assert all(status == 200 for status, _, _ in results)
    assert (
        len({orjson.loads(body)["choices"][0]["message"]["content"] for _, _, body in results}) == 1
    )
    assert (await sim.stats())["generate_calls"] - before == 1


async def test_concurrent_streams_share_one_call(cached_stack: Stack, sim: ControlClient) -> None:
    """Identical concurrent streams are served from one backend stream, each complete."""
    await sim.configure(itl_ms=40)
    before = (await sim.stats())["generate_calls"]
    client = openai.AsyncOpenAI(base_url=cached_stack.api_url, api_key="t1")

    async def stream_text() -> str:
        stream = await client.chat.completions.create(
            model="sim",
            messages=_messages("stream coalesce"),
            temperature=0,
            stream=True,
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    texts = await asyncio.gather(*(stream_text() for _ in range(10)))
    assert len(set(texts)) == 1 and texts[0]
    assert (await sim.stats())["generate_calls"] - before == 1


def _redis_keys(url: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return len(list(client.scan_iter("gw:x:*")))
    finally:
        client.close()


async def test_writeback_drains_on_shutdown(tmp_path: Path) -> None:
    """Answers given just before SIGTERM are in Redis after the gateway exits."""
    with redis_stack() as server, ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group)
        # A generous Redis deadline: this test is about draining, not about slow writes.
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {"GATEWAY_REDIS_URL": server.url, "GATEWAY_REDIS_TIMEOUT_MS": "2000"},
        )
        url = f"http://127.0.0.1:{port}/v1"
        results = await asyncio.gather(*(_chat(url, f"drain {i}") for i in range(20)))
        assert all(status == 200 for status, _, _ in results)
        gateway.popen.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it captured.
        assert gateway.popen.wait(30) in (0, -signal.SIGTERM)
        assert _redis_keys(server.url) == 20


async def test_replayed_calls_get_fresh_ids(cached_stack: Stack) -> None:
    """Hits on an answer with calls, whole and streamed: each answer's call ids are its own,
    unique across answers and calls; a streamed call keeps its id across its deltas."""
    client = openai.AsyncOpenAI(base_url=cached_stack.api_url, api_key="t1")
    tool: Any = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    ask: Any = {
        "model": "sim",
        "messages": _messages("Weather in Paris? [[parallel]]"),
        "tools": [tool],
        "temperature": 0,
    }

    async def whole() -> tuple[list[str], str]:
        raw = await client.chat.completions.with_raw_response.create(**ask)
        calls = raw.parse().choices[0].message.tool_calls or []
        return [call.id for call in calls], raw.headers["x-cache"]

    async def streamed() -> tuple[list[str], str]:
        raw = await client.chat.completions.with_raw_response.create(**ask, stream=True)
        ids: dict[int, list[str]] = {}
        async for chunk in raw.parse():
            for call in chunk.choices[0].delta.tool_calls or ():
                ids.setdefault(call.index, [])
                if call.id is not None:
                    ids[call.index].append(call.id)
        assert all(len(call_ids) == 1 for call_ids in ids.values()), ids
        return [call_ids[0] for _, call_ids in sorted(ids.items())], raw.headers["x-cache"]

    answers = [await whole()]
    async with asyncio.timeout(10):
        while answers[-1][1] != "hit-exact":
            answers.append(await whole())
    answers += [await whole(), await streamed(), await streamed()]
    assert [cache for _, cache in answers[-4:]] == ["hit-exact"] * 4
    ids = [call_id for call_ids, _ in answers for call_id in call_ids]
    assert all(len(call_ids) == 2 for call_ids, _ in answers)
    assert len(set(ids)) == len(ids) and all(call_id.startswith("call_") for call_id in ids)


async def test_callers_sharing_one_call_get_their_own_call_ids(
    cached_stack: Stack, sim: ControlClient
) -> None:
    """Identical concurrent requests with tools, whole and streamed, share one backend call
    each, yet every answer's call ids are its own."""
    await sim.configure(itl_ms=20)
    client = openai.AsyncOpenAI(base_url=cached_stack.api_url, api_key="t1")
    tool: Any = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}

    async def ids(stream: bool) -> list[str]:
        ask: Any = {
            "model": "sim",
            "messages": _messages(f"Weather in Oslo, stream {stream}? [[single]]"),
            "tools": [tool],
            "temperature": 0,
        }
        if not stream:
            answer = await client.chat.completions.create(**ask)
            return [call.id for call in answer.choices[0].message.tool_calls or ()]
        chunks = await client.chat.completions.create(**ask, stream=True)
        return [
            call.id
            async for chunk in chunks
            for call in chunk.choices[0].delta.tool_calls or ()
            if call.id is not None
        ]

    for stream in (False, True):
        before = (await sim.stats())["generate_calls"]
        answers = await asyncio.gather(*(ids(stream) for _ in range(5)))
        assert (await sim.stats())["generate_calls"] - before == 1
        every = [call_id for answer in answers for call_id in answer]
        assert len(every) == 5 and len(set(every)) == 5, (stream, answers)


async def test_an_answer_run_at_the_keys_cap_never_serves_the_clients_max_tokens(
    tmp_path: Path, redis_server: RedisProcess
) -> None:
    """Near the context's end a request naming no max_tokens under a key capped at 8 runs to
    the room left and is cached; the same request asking max_tokens=8 itself stays a 400."""
    key = new_key()
    keys = tmp_path / "keys.json"
    keys.write_text(f"[{key_set_entry(key_digest(key), 'globex', models=['sim'], max_tokens=8)}]")
    with ProcessGroup(tmp_path) as group:
        _, sim_port = start_sim(group)
        _, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_REDIS_URL": redis_server.url,
                "GATEWAY_REDIS_TIMEOUT_MS": "2000",
                "GATEWAY_API_KEYS_FILE": str(keys),
                "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tok"),
            },
        )
        client = openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0
        )
        ask: dict[str, Any] = {
            "model": "sim",
            "prompt": [1] * (4096 - 3),
            "temperature": 0,
            "extra_body": {"ignore_eos": True},
        }
        async with asyncio.timeout(20):
            while True:  # until the capped answer is stored
                raw = await client.completions.with_raw_response.create(**ask)
                answer = raw.parse()
                assert answer.choices[0].finish_reason == "length"
                assert answer.usage is not None and answer.usage.completion_tokens == 3
                if raw.headers["x-cache"] == "hit-exact":
                    break
        with pytest.raises(openai.BadRequestError) as asked:
            await client.completions.create(**ask, max_tokens=8)
        assert asked.value.param == "max_tokens" and asked.value.code == "context_length_exceeded"
