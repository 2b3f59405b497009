"""A real gateway process on a real three-master Redis Cluster: exact hits, stored Responses
API responses and a tenant's shared limit through the cluster; the semantic cache against a
cluster stops the gateway at startup, naming the variables."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import openai
import orjson
import pytest

from access.caller import key_digest
from access.key_set import key_set_entry, new_key
from bench.harness.processes import ProcessGroup
from tests.e2e.stack import Stack, start_gateway, start_sim
from tests.support.redis_cluster import RedisClusterProcess

CACHER, LIMITED_A, LIMITED_B = new_key(), new_key(), new_key()
TENANT_RPM = 3


@pytest.fixture(scope="module")
def cluster_stack(
    tmp_path_factory: pytest.TempPathFactory, redis_cluster_server: RedisClusterProcess
) -> Iterator[Stack]:
    log_dir = tmp_path_factory.mktemp("redis-cluster-e2e")
    keys = {
        "keys": [
            orjson.loads(key_set_entry(key_digest(CACHER), "cachers")),
            orjson.loads(key_set_entry(key_digest(LIMITED_A), "limited", requests_per_minute=50)),
            orjson.loads(key_set_entry(key_digest(LIMITED_B), "limited", requests_per_minute=50)),
        ],
        "tenants": [{"tenant": "limited", "requests_per_minute": TENANT_RPM}],
    }
    with ProcessGroup(log_dir) as group:
        sim, sim_port = start_sim(group, "--itl-ms", "1")
        gateway, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_REDIS_URL": redis_cluster_server.url,
                "GATEWAY_REDIS_TIMEOUT_MS": "2000",  # functional tests; fail-open has its own
                "GATEWAY_LIMIT_TIMEOUT_MS": "2000",
                "GATEWAY_API_KEYS": orjson.dumps(keys).decode(),
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tok"),
            },
        )
        yield Stack(group, gateway, port, [sim], [sim_port], None)


def _client(stack: Stack, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.api_url, api_key=key, max_retries=0)


async def _chat(stack: Stack, text: str) -> tuple[str, str]:
    raw = await _client(stack, CACHER).chat.completions.with_raw_response.create(
        model="sim", messages=[{"role": "user", "content": text}], temperature=0, max_tokens=8
    )
    return raw.headers["x-cache"], raw.parse().choices[0].message.content or ""


async def test_an_exact_hit_is_served_from_the_cluster(
    cluster_stack: Stack, redis_cluster_server: RedisClusterProcess
) -> None:
    """A miss is written to the cluster and the same request is then an exact hit."""
    first, content = await _chat(cluster_stack, "cache me on the cluster")
    assert first == "miss"
    async with asyncio.timeout(10):
        while (hit := await _chat(cluster_stack, "cache me on the cluster"))[0] != "hit-exact":
            pass
    assert hit[1] == content
    stored = 0
    for port in redis_cluster_server.ports:
        with redis_cluster_server.node(port) as node:
            stored += sum(1 for _ in node.scan_iter(match="gw:x:*"))
    assert stored >= 1 or not redis_cluster_server.ports


async def test_a_stored_response_is_read_back_from_the_cluster(cluster_stack: Stack) -> None:
    """A Responses API response stored in the cluster is retrieved, then continued."""
    client = _client(cluster_stack, CACHER)
    first = await client.responses.create(model="sim", input="Remember this", max_output_tokens=8)
    again = await client.responses.retrieve(first.id)
    assert again.id == first.id and again.output_text == first.output_text
    second = await client.responses.create(
        model="sim", input="And then?", previous_response_id=first.id, max_output_tokens=8
    )
    assert second.previous_response_id == first.id


async def test_a_tenant_limit_is_shared_through_the_cluster(cluster_stack: Stack) -> None:
    """Two keys of one tenant get its requests-per-minute between them, then a 429."""
    answered = 0
    for i in range(TENANT_RPM):
        client = _client(cluster_stack, (LIMITED_A, LIMITED_B)[i % 2])
        await client.chat.completions.create(
            model="sim", messages=[{"role": "user", "content": f"hi {i}"}], max_tokens=2
        )
        answered += 1
    with pytest.raises(openai.RateLimitError, match="tenant limited"):
        await _client(cluster_stack, LIMITED_B).chat.completions.create(
            model="sim", messages=[{"role": "user", "content": "one more"}], max_tokens=2
        )
    assert answered == TENANT_RPM


def test_the_semantic_cache_on_a_cluster_stops_the_gateway(
    redis_cluster_server: RedisClusterProcess,
) -> None:
    """GATEWAY_SEMANTIC_CACHE=on with a cluster URL: exit status 2 and a message naming both
    variables, before anything is served."""
    env = {
        **os.environ,
        "GATEWAY_BACKENDS": "sim=grpc://127.0.0.1:1",
        "GATEWAY_REDIS_URL": redis_cluster_server.url,
        "GATEWAY_SEMANTIC_CACHE": "on",
    }
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "invalid configuration" in done.stderr
    assert "GATEWAY_SEMANTIC_CACHE=on" in done.stderr and "GATEWAY_REDIS_URL" in done.stderr
