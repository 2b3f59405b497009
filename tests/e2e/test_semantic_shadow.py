"""Shadow mode through a real gateway over Redis Stack, without an error bound: would-be hits
are looked up, never served, judged against the backend's answer, counted and logged."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from tests.e2e.semantic_requests import entries_beyond
from tests.e2e.stack import semantic_entries, semantic_gateway

PAIRS = (
    ("How do I reset my password?", "How can I reset my password?"),
    ("How do I change my email address?", "How can I change my email address?"),
)
SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$", re.M)


@dataclass
class Shadow:
    """The running gateway's URL and its log file."""

    url: str
    log: Path


@pytest.fixture(scope="module")
def shadow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shadow]:
    log_dir = tmp_path_factory.mktemp("semantic-shadow")
    env = {"GATEWAY_SEMANTIC_CACHE": "shadow", "GATEWAY_LOG_LEVEL": "info"}
    with semantic_gateway(log_dir, env) as port:
        yield Shadow(f"http://127.0.0.1:{port}", log_dir / "gateway.log")


async def _ask(session: aiohttp.ClientSession, url: str, text: str) -> tuple[str, str]:
    payload = {"model": "sim", "messages": [{"role": "user", "content": text}], "seed": 1}
    async with session.post(f"{url}/v1/chat/completions", json=payload) as response:
        await response.read()
        assert response.status == 200
        return response.headers["x-cache"], response.headers["x-request-id"]


async def _metrics(session: aiohttp.ClientSession, url: str) -> dict[tuple[str, str], float]:
    """The samples of /metrics, by name and label text."""
    async with session.get(f"{url}/metrics") as response:
        text = await response.text()
    return {(name, labels or ""): float(value) for name, labels, value in SAMPLE.findall(text)}


def _line(log: Path, request_id: str) -> dict[str, Any]:
    """The access log line of `request_id`, once written (after the last byte)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for raw in log.read_bytes().splitlines():
            if raw.startswith(b"{") and request_id.encode() in raw:
                line: dict[str, Any] = orjson.loads(raw)
                return line
        time.sleep(0.05)
    raise AssertionError(f"no log line for {request_id}")


async def test_would_be_hits_are_judged_counted_and_logged(shadow: Shadow) -> None:
    """Each paraphrase is answered by the backend (a miss), logged as a shadow hit, counted
    under kind="semantic_shadow" and judged, with no error bound set."""
    async with aiohttp.ClientSession() as session:
        for stored, paraphrase in PAIRS:
            entries = await asyncio.to_thread(semantic_entries, shadow.url)
            first, first_id = await _ask(session, shadow.url, stored)
            assert first == "miss"
            for _ in range(200):  # until the write-back landed
                if (await _ask(session, shadow.url, stored))[0] == "hit-exact":
                    break
            else:
                raise AssertionError("the answer was never written back")
            await entries_beyond(shadow.url, entries)
            status, request_id = await _ask(session, shadow.url, paraphrase)
            assert status == "miss"
            line = await asyncio.to_thread(_line, shadow.log, request_id)
            assert (line["cache"], line["cache_shadow"]) == ("miss", "hit")
            first_line = await asyncio.to_thread(_line, shadow.log, first_id)
            assert first_line["cache_shadow"] == "miss"
        wanted = len(PAIRS)
        for _ in range(100):  # the sampler copies the judgement counts once a second
            samples = await _metrics(session, shadow.url)
            judged = sum(
                value
                for (name, _), value in samples.items()
                if name == "gateway_semantic_judgements_total"
            )
            if judged == wanted:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"judgements never reached {wanted}")
    lookups = "gateway_cache_lookups_total"
    assert samples[lookups, 'kind="semantic_shadow",result="hit"'] == wanted
    assert samples[lookups, 'kind="semantic_shadow",result="miss"'] == wanted
    assert not [key for key in samples if key[0] == lookups and 'kind="semantic"' in key[1]]
