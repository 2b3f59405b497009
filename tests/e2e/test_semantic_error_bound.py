"""The semantic error bound through a real gateway: without evidence a verified paraphrase is
withheld (a miss) and judged against the backend's answer, which the metrics count."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import aiohttp
import pytest

from tests.e2e.semantic_requests import entries_beyond
from tests.e2e.stack import semantic_entries, semantic_gateway

JUDGEMENTS = re.compile(r'^gateway_semantic_judgements_total\{outcome="(\w+)"\} (\S+)$', re.M)


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    bound = {"GATEWAY_SEMANTIC_MAX_ERROR_RATE": "0.01"}
    with semantic_gateway(tmp_path_factory.mktemp("semantic-bound"), bound) as port:
        yield f"http://127.0.0.1:{port}"


async def _ask(session: aiohttp.ClientSession, url: str, text: str) -> str:
    payload = {"model": "sim", "messages": [{"role": "user", "content": text}], "seed": 1}
    async with session.post(f"{url}/v1/chat/completions", json=payload) as response:
        await response.read()
        assert response.status == 200
        return response.headers["x-cache"]


async def _judgements(session: aiohttp.ClientSession, url: str) -> int:
    async with session.get(f"{url}/metrics") as response:
        text = await response.text()
    return sum(int(float(value)) for _, value in JUDGEMENTS.findall(text))


async def test_paraphrase_without_evidence_is_withheld_and_judged(gateway_url: str) -> None:
    """The bound has no evidence: the paraphrase is a miss, and its withheld match is judged."""
    async with aiohttp.ClientSession() as session:
        entries = await asyncio.to_thread(semantic_entries, gateway_url)
        await _ask(session, gateway_url, "How do I reset my password?")
        for _ in range(200):  # until the write-back landed
            if await _ask(session, gateway_url, "How do I reset my password?") == "hit-exact":
                break
        else:
            raise AssertionError("the answer was never written back")
        await entries_beyond(gateway_url, entries)
        before = await _judgements(session, gateway_url)
        assert await _ask(session, gateway_url, "How can I reset my password?") == "miss"
        for _ in range(100):  # the sampler copies the bound's counts once a second
            if await _judgements(session, gateway_url) == before + 1:
                return
            await asyncio.sleep(0.1)
        raise AssertionError("the withheld match was never judged")
