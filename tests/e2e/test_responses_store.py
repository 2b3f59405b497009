"""Stored Responses in a real Redis, with the official client: a Redis that dies and comes
back, one that refuses writes, and entries the gateway did not write."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
import redis.asyncio as aioredis
from openai.types.responses import Response, ResponseCompletedEvent, ResponseIncompleteEvent

from access.caller import unverified_caller
from bench.harness.processes import ManagedProcess, ProcessGroup
from bench.harness.redis_stack import RedisProcess, redis_stack
from tests.e2e.stack import start_gateway, start_sim
from tests.support.fault_proxy import FaultProxy

API_KEY = "store-test-key"
TENANT = unverified_caller(f"Bearer {API_KEY}").tenant


@dataclass
class StoreStack:
    """A gateway whose Redis sits behind a fault proxy, and that Redis."""

    gateway: ManagedProcess
    api_url: str
    redis: RedisProcess
    proxy: FaultProxy


@pytest.fixture(scope="module")
def store_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreStack]:
    log_dir = tmp_path_factory.mktemp("responses-store")
    with redis_stack() as redis_server, ProcessGroup(log_dir) as group:
        if redis_server.port == 0:
            pytest.skip("REDIS_URL names an external Redis; the proxy needs a local port")
        proxy = FaultProxy(redis_server.port)
        with proxy.in_thread():
            _, sim_port = start_sim(group)
            env = {
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"),
                "GATEWAY_REDIS_URL": f"redis://127.0.0.1:{proxy.port}/0",
                "GATEWAY_REDIS_BREAKER_FAILURES": "3",
                "GATEWAY_REDIS_BREAKER_COOLDOWN_MS": "300",
            }
            gateway, port = start_gateway(group, f"sim=grpc://127.0.0.1:{sim_port}", env)
            yield StoreStack(gateway, f"http://127.0.0.1:{port}/v1", redis_server, proxy)


@pytest.fixture
async def stack(store_stack: StoreStack) -> AsyncIterator[StoreStack]:
    """The shared stack; afterwards Redis is reachable and writable and the store stores."""
    try:
        yield store_stack
    finally:
        store_stack.proxy.clear()
        await _allow_set(store_stack, True)
        await _until_stored(_client(store_stack))


def _client(stack: StoreStack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.api_url, api_key=API_KEY, max_retries=0)


def _redis(stack: StoreStack) -> aioredis.Redis:
    return aioredis.Redis.from_url(stack.redis.url)


async def _allow_set(stack: StoreStack, allowed: bool) -> None:
    """Let Redis's default user run SET, or refuse it (NOPERM): writes fail, reads work."""
    async with _redis(stack) as redis:
        await redis.acl_setuser("default", enabled=True, commands=["+set" if allowed else "-set"])


def _says_stored(response: Response) -> bool:
    """The response's `store` field (the SDK's model keeps it as an extra field)."""
    return bool((response.model_extra or {})["store"])


async def _create(client: openai.AsyncOpenAI, text: str = "Hello") -> Response:
    return await client.responses.create(model="sim", input=text, max_output_tokens=4)


async def _until_stored(client: openai.AsyncOpenAI, within_s: float = 10.0) -> Response:
    """POSTs only (nothing reads the store) until one answers `store: true`."""
    async with asyncio.timeout(within_s):
        while True:
            response = await _create(client)
            if _says_stored(response):
                return response
            await asyncio.sleep(0.1)


async def test_writes_recover_on_their_own_once_redis_is_back(stack: StoreStack) -> None:
    """With Redis gone responses say `store: false`; once it is back, POSTs alone (no read of
    the store in between) store again after the breaker's cool-down, and the id reads back."""
    client = _client(stack)
    stack.proxy.reset()
    async with asyncio.timeout(20):
        while _says_stored(await _create(client)):
            pass
    assert not _says_stored(await _create(client))  # the breaker is open: not even tried
    stack.proxy.clear()
    stored = await _until_stored(client)
    again = await client.responses.retrieve(stored.id)
    assert again.id == stored.id and _says_stored(again)


async def test_a_failed_write_says_store_false(stack: StoreStack) -> None:
    """A write that Redis refuses (breaker still closed) is `store: false` in the body and in
    the streamed `response.completed`, never `store: true` for an id that is then a 404."""
    client = _client(stack)
    await _allow_set(stack, False)
    whole = await _create(client)
    assert whole.output_text and not _says_stored(whole)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(whole.id)
    done = await _streamed(client)
    assert done.output_text and not _says_stored(done)


async def test_a_stored_stream_says_so_and_reads_back(stack: StoreStack) -> None:
    """With Redis healthy, the streamed `response.completed` says `store: true` and its id
    reads back, with the same output."""
    client = _client(stack)
    done = await _streamed(client)
    assert _says_stored(done)
    kept = await client.responses.retrieve(done.id)
    assert kept.output_text == done.output_text


@pytest.mark.parametrize(
    "value",
    [
        b"not json{",
        b"\xff\xfe",
        b"[1, 2]",
        b'{"response": {"id": "x"}}',
        b'{"response": {"id": "resp_foreign", "object": "response", "output": []}}',
        b'{"response": {"id": "resp_foreign", "object": "response", "output": 1}, "items": []}',
    ],
)
async def test_foreign_or_corrupt_entries_read_as_not_found(
    stack: StoreStack, value: bytes
) -> None:
    """An entry that does not decode, or lacks the shape the gateway writes, is a 404 naming
    the id (for GET and input items; `previous_response_not_found`, a 400, for
    `previous_response_id`), logged as a warning, never a
    500 and never served as it is."""
    async with _redis(stack) as redis:
        await redis.set(f"gw:r:{TENANT}:resp_foreign", value)
    client = _client(stack)
    log_from = stack.gateway.log_path.stat().st_size
    with pytest.raises(openai.NotFoundError) as read:
        await client.responses.retrieve("resp_foreign")
    assert "resp_foreign" in _error(read.value)["message"]
    with pytest.raises(openai.NotFoundError):
        await client.responses.input_items.list("resp_foreign")
    with pytest.raises(openai.BadRequestError) as chained:
        await client.responses.create(
            model="sim", input="And then?", previous_response_id="resp_foreign"
        )
    error = _error(chained.value)
    assert error["param"] == "previous_response_id" and "resp_foreign" in error["message"]
    path = stack.gateway.log_path
    async with asyncio.timeout(5):  # the gateway writes its log from a queue
        while _log_since(path, log_from).count("unreadable") < 3:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    log = _log_since(path, log_from)
    assert log.count("resp_foreign is unreadable") == 3  # one warning per lookup
    assert "Traceback" not in log and '"level":"error"' not in log


def _log_since(path: Path, offset: int) -> str:
    with path.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


async def _streamed(client: openai.AsyncOpenAI) -> Response:
    """A streamed response as its last event (`response.completed`, or `response.incomplete`
    when 4 tokens cut it short) shows it."""
    async with client.responses.stream(model="sim", input="Hi", max_output_tokens=4) as stream:
        events = [event async for event in stream]
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent | ResponseIncompleteEvent)
    return last.response


def _error(exc: openai.APIStatusError) -> dict[str, str]:
    body = exc.body
    assert isinstance(body, dict)
    error: dict[str, str] = body.get("error", body)
    return error
