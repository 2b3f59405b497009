"""Chat requests for the semantic-cache end-to-end tests: ask, and store until written back."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from tests.e2e.stack import semantic_entries


async def ask(url: str, messages: list[dict[str, Any]], token: str) -> str:
    """A seeded chat completion under `token`'s tenant; its X-Cache."""
    payload = {"model": "sim", "messages": messages, "seed": 1}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{url}/chat/completions", json=payload, headers={"authorization": f"Bearer {token}"}
        ) as response,
    ):
        await response.read()
        assert response.status == 200
        return response.headers["x-cache"]


async def stored(url: str, messages: list[dict[str, Any]], token: str) -> None:
    """Ask once, then until the write-back landed: an exact hit, and a new semantic entry
    (`semantic_entries`)."""
    entries = await asyncio.to_thread(semantic_entries, url)
    await ask(url, messages, token)
    for _ in range(200):
        if await ask(url, messages, token) == "hit-exact":
            break
    else:
        raise AssertionError("the answer was never written back")
    await entries_beyond(url, entries)


async def entries_beyond(url: str, entries: int) -> None:
    """Wait (up to 30 s) until the gateway at `url` holds more than `entries` semantic
    entries."""
    for _ in range(600):
        if await asyncio.to_thread(semantic_entries, url) > entries:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the semantic entry was never written")
