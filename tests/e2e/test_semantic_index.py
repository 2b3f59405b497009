"""A foreign `gw:sem` index in the gateway's Redis Stack: the semantic cache refuses it loudly
(lookups are errors, one warning, a gauge), writes nothing into it, and recovers once the
index is dropped."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import redis

from bench.harness.processes import ProcessGroup
from bench.harness.redis_stack import redis_stack
from cache.semantic_factory import INDEX_RECHECK_S
from tests.e2e.stack import start_gateway, start_sim

FOREIGN = (
    "FT.CREATE gw:sem ON HASH PREFIX 1 gw:sem: "
    "SCHEMA v VECTOR FLAT 6 TYPE FLOAT32 DIM 8 DISTANCE_METRIC COSINE"
)
SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$", re.M)


@dataclass
class Foreign:
    """The gateway's URL, a client of its Redis (holding the foreign index) and its log."""

    url: str
    redis: redis.Redis
    log: Path


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Foreign]:
    log_dir = tmp_path_factory.mktemp("semantic-index")
    with redis_stack() as server, ProcessGroup(log_dir) as group:
        client = redis.Redis.from_url(server.url)
        client.execute_command(*FOREIGN.split())  # type: ignore[no-untyped-call]
        _, sim_port = start_sim(group)
        env = {
            "GATEWAY_REDIS_URL": server.url,
            "GATEWAY_SEMANTIC_CACHE": "on",
            "GATEWAY_SEMANTIC_TIMEOUT_MS": "5000",
            "GATEWAY_REDIS_TIMEOUT_MS": "2000",
        }
        _, port = start_gateway(group, f"sim=grpc://127.0.0.1:{sim_port}", env)
        try:
            yield Foreign(f"http://127.0.0.1:{port}", client, log_dir / "gateway.log")
        finally:
            client.close()


async def _ask(session: aiohttp.ClientSession, url: str, text: str) -> str:
    payload = {"model": "sim", "messages": [{"role": "user", "content": text}], "seed": 1}
    async with session.post(f"{url}/v1/chat/completions", json=payload) as response:
        await response.read()
        assert response.status == 200
        return response.headers["x-cache"]


async def _metrics(session: aiohttp.ClientSession, url: str) -> dict[tuple[str, str], float]:
    """The samples of /metrics, by name and label text."""
    async with session.get(f"{url}/metrics") as response:
        text = await response.text()
    return {(name, labels or ""): float(value) for name, labels, value in SAMPLE.findall(text)}


def _index_warnings(log: Path) -> list[str]:
    return [
        line for line in log.read_text().splitlines() if '"warning"' in line and "gw:sem" in line
    ]


async def _until(condition: Callable[[], bool], failure: str) -> None:
    """Poll `condition` until it holds (within 60 s, else fail saying `failure`)."""
    for _ in range(1200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(failure)


async def _metrics_once(
    session: aiohttp.ClientSession,
    url: str,
    condition: Callable[[dict[tuple[str, str], float]], bool],
) -> dict[tuple[str, str], float]:
    """The samples of /metrics once they meet `condition` (within 60 s: the sampler copies
    gauges once a second)."""
    for _ in range(600):
        samples = await _metrics(session, url)
        if condition(samples):
            return samples
        await asyncio.sleep(0.1)
    raise AssertionError(f"the metrics never met the condition: {samples}")


async def test_a_foreign_index_is_an_error_until_it_is_dropped(foreign: Foreign) -> None:
    """Lookups against another schema's `gw:sem` are errors, not misses; the gateway warns
    once naming the index, its gauge says so, and nothing lands under the index's prefix.
    After FT.DROPINDEX the gateway creates its own index and misses, then hits."""
    async with aiohttp.ClientSession() as session:
        assert await _ask(session, foreign.url, "How do I reset my password?") == "error"
        errors = 1
        for _ in range(200):  # the exact cache still works
            seen = await _ask(session, foreign.url, "How do I reset my password?")
            if seen == "hit-exact":
                break
            assert seen == "error"  # looked up again before the exact write-back landed
            errors += 1
        assert await _ask(session, foreign.url, "How can I reset my password?") == "error"
        lookups = "gateway_cache_lookups_total"
        error = (lookups, 'kind="semantic",result="error"')
        samples = await _metrics_once(  # counted after the last byte; the gauge sampled
            session,
            foreign.url,
            lambda s: (
                s.get(error) == errors + 1 and s.get(("gateway_semantic_index_mismatch", "")) == 1
            ),
        )
        assert (lookups, 'kind="semantic",result="miss"') not in samples
        assert foreign.redis.keys("gw:sem:*") == []  # a refused index is never written
        await _until(lambda: bool(_index_warnings(foreign.log)), "no warning logged")
        warnings = _index_warnings(foreign.log)
        assert len(warnings) == 1 and "no tenant" in warnings[0]

        foreign.redis.execute_command("FT.DROPINDEX", "gw:sem")  # type: ignore[no-untyped-call]
        await asyncio.sleep(INDEX_RECHECK_S)  # not synchronisation: the recheck's interval
        assert await _ask(session, foreign.url, "Where can I download my invoice?") == "miss"
        for _ in range(200):
            if await _ask(session, foreign.url, "Where can I download my invoice?") == "hit-exact":
                break
        # The vector entry is written beside the exact one, by another write-back worker.
        await _until(lambda: bool(foreign.redis.keys("gw:sem:*")), "no vector entry written")
        assert await _ask(session, foreign.url, "Where can I download my invoices?") == (
            "hit-semantic"
        )
        await _metrics_once(
            session, foreign.url, lambda s: s.get(("gateway_semantic_index_mismatch", "")) == 0
        )
