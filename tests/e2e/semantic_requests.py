"""Chat requests for the semantic-cache end-to-end tests: ask, and store until written back."""

from __future__ import annotations

from typing import Any

import aiohttp


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
    """Ask once, then until the write-back landed (exact hit)."""
    await ask(url, messages, token)
    for _ in range(200):
        if await ask(url, messages, token) == "hit-exact":
            return
    raise AssertionError("the answer was never written back")
