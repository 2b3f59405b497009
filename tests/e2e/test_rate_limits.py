"""Rate limits through real gateway processes sharing one real Redis: two replicas admit a
key's limit between them, 429s carry what the official client reads, and a Redis that dies
turns limits local, never into errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from access.caller import key_digest
from access.key_set import key_set_entry, new_key
from bench.harness.processes import ProcessGroup
from bench.harness.redis_stack import RedisProcess, redis_stack
from tests.e2e.stack import start_gateway, start_sim

LIMITED = new_key()
RPM = 10
HELLO: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]


@pytest.fixture
def redis_server() -> Iterator[RedisProcess]:
    with redis_stack() as server:
        yield server


def _env(keys: Path, redis_url: str) -> dict[str, str]:
    return {
        "GATEWAY_API_KEYS_FILE": str(keys),
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_LIMIT_REPLICAS": "2",
        # Generous: on a loaded 2-core box the script can take over 100 ms (Redis itself slow,
        # not the gateway's loop). A killed Redis refuses at once, whatever this is.
        "GATEWAY_LIMIT_TIMEOUT_MS": "2000",
    }


async def _ask(url: str) -> tuple[int, dict[str, str], str | None]:
    """The status, headers and error code of one request (200 or 429; others fail)."""
    client = openai.AsyncOpenAI(base_url=url, api_key=LIMITED, max_retries=0)
    try:
        raw = await client.chat.completions.with_raw_response.create(
            model="sim", messages=HELLO, max_tokens=2
        )
    except openai.RateLimitError as exc:
        return 429, dict(exc.response.headers), exc.code
    return raw.http_response.status_code, dict(raw.headers), None


def _admitted(outcomes: list[tuple[int, dict[str, str], str | None]], limit: int) -> int:
    """How many were answered; every answer and refusal states `limit`, every refusal says
    when to retry."""
    for status, headers, code in outcomes:
        assert status in (200, 429) and headers["x-ratelimit-limit-requests"] == str(limit)
        if status == 429:
            assert code == "rate_limit_exceeded" and int(headers["retry-after-ms"]) > 0
    return sum(status == 200 for status, _, _ in outcomes)


async def test_two_replicas_share_one_limit_then_survive_redis_dying(
    tmp_path: Path, redis_server: RedisProcess
) -> None:
    """Two gateways admit one key's requests-per-minute between them, not twice; once Redis is
    killed each decides alone on its share of what was left (here nothing) and nothing fails."""
    keys = tmp_path / "keys.json"
    keys.write_text(f"[{key_set_entry(key_digest(LIMITED), 'acme', requests_per_minute=RPM)}]")
    with ProcessGroup(tmp_path / "logs") as group:
        _, sim_port = start_sim(group)
        backends = f"sim=grpc://127.0.0.1:{sim_port}"
        urls = [
            f"http://127.0.0.1:{port}/v1"
            for _, port in (
                start_gateway(group, backends, _env(keys, redis_server.url)) for _ in range(2)
            )
        ]
        started = time.monotonic()
        shared = await asyncio.gather(*(_ask(urls[i % 2]) for i in range(3 * RPM)))
        refilled = int((time.monotonic() - started) / (60 / RPM))  # one request per 6 s
        redis_server.kill()
        alone = [await _ask(url) for url in urls for _ in range(RPM)]
    assert RPM <= _admitted(shared, RPM) <= RPM + refilled
    # Each replica now decides alone on its share (half) of what Redis last said was left:
    # nothing, the key having spent its limit, so only what rested since passes (not a fresh
    # bucket each), and every answer still states the key's limit, not the half.
    refilled_alone = int((time.monotonic() - started) / (60 / (RPM // 2)))
    assert _admitted(alone, RPM) <= 2 * refilled_alone
