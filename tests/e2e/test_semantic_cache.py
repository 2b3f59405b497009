"""The semantic cache through a real gateway, at both embedding precisions: paraphrases hit,
hard negatives do not."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import aiohttp
import pytest

from tests.e2e.semantic_requests import ask, stored
from tests.e2e.stack import semantic_gateway

SYSTEM = {"role": "system", "content": "You are a support assistant."}
LOOKUPS = re.compile(r'^gateway_cache_lookups_total\{kind="(\w+)",result="(\w+)"\} (\S+)$', re.M)


@pytest.fixture(scope="module", params=["fp32", "int8"])
def gateway_url(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A gateway embedding at each GATEWAY_EMBEDDING_PRECISION: every test runs on both."""
    env = {"GATEWAY_EMBEDDING_PRECISION": request.param}
    with semantic_gateway(tmp_path_factory.mktemp("semantic"), env) as port:
        yield f"http://127.0.0.1:{port}/v1"


async def _ask(url: str, text: str, *, system: dict[str, str] = SYSTEM, token: str = "k") -> str:
    return await ask(url, [system, {"role": "user", "content": text}], token)


async def _stored(url: str, text: str, *, token: str = "k") -> None:
    await stored(url, [SYSTEM, {"role": "user", "content": text}], token)


async def test_paraphrase_is_a_semantic_hit(gateway_url: str) -> None:
    """A reworded question is answered from the semantic cache."""
    await _stored(gateway_url, "How do I reset my password?")
    assert await _ask(gateway_url, "How can I reset my password?") == "hit-semantic"


async def test_negation_is_not_a_hit(gateway_url: str) -> None:
    """'disable 2FA' never gets the answer cached for 'enable 2FA'."""
    await _stored(gateway_url, "How do I enable 2FA on my account?")
    assert await _ask(gateway_url, "How do I disable 2FA on my account?") == "miss"


async def test_changed_number_is_not_a_hit(gateway_url: str) -> None:
    """A different number is a different question."""
    await _stored(gateway_url, "What is the refund policy for orders over 30 days old?")
    assert (
        await _ask(gateway_url, "What is the refund policy for orders over 60 days old?") == "miss"
    )


async def test_scope_and_tenant_are_hard_filters(gateway_url: str) -> None:
    """Another system prompt or another tenant never shares semantic entries."""
    await _stored(gateway_url, "Where can I download my invoice?")
    other_system = {"role": "system", "content": "You are a pirate."}
    assert (
        await _ask(gateway_url, "Where can I download my invoices?", system=other_system) == "miss"
    )
    assert await _ask(gateway_url, "Where can I download my invoices?", token="other") == "miss"


async def _complete(url: str, prompt: str) -> tuple[str, str]:
    """A completion with `echo`: its X-Cache and text."""
    payload = {"model": "sim", "prompt": prompt, "seed": 1, "max_tokens": 6, "echo": True}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/completions", json=payload) as response,
    ):
        assert response.status == 200
        answer = await response.json()
        return response.headers["x-cache"], answer["choices"][0]["text"]


async def test_an_echoed_prompt_is_never_another_callers(gateway_url: str) -> None:
    """A paraphrase asked with `echo` gets its own prompt back, never the stored one."""
    stored = "How do I enable two-factor authentication?"
    for _ in range(200):  # until its write-back landed
        if (await _complete(gateway_url, stored))[0] == "hit-exact":
            break
    paraphrase = "How can I turn on two-factor authentication?"
    cache, text = await _complete(gateway_url, paraphrase)
    assert cache == "miss" and text.startswith(paraphrase)


async def _lookups(url: str) -> dict[tuple[str, str], float]:
    """gateway_cache_lookups_total by (kind, result)."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(url.removesuffix("/v1") + "/metrics") as response,
    ):
        text = await response.text()
    return {(kind, result): float(value) for kind, result, value in LOOKUPS.findall(text)}


async def test_semantic_lookups_are_counted_by_result(gateway_url: str) -> None:
    """`on` mode counts each semantic lookup under kind="semantic": the first ask a miss,
    the paraphrase a hit, and no shadow lookups."""
    before = await _lookups(gateway_url)
    await _stored(gateway_url, "How do I reset my password?", token="counted")
    assert await _ask(gateway_url, "How can I reset my password?", token="counted") == (
        "hit-semantic"
    )
    for _ in range(100):  # a request is counted just after its last byte
        after = await _lookups(gateway_url)
        if after.get(("semantic", "hit"), 0) > before.get(("semantic", "hit"), 0):
            break
        await asyncio.sleep(0.05)
    assert after[("semantic", "hit")] - before.get(("semantic", "hit"), 0) == 1
    assert after[("semantic", "miss")] - before.get(("semantic", "miss"), 0) == 1
    assert not [kind for kind, _ in after if kind == "semantic_shadow"]
