"""Multi-turn conversations over shared long system prompts, streamed, timed at the client."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from bench.harness.errors import HarnessError


@dataclass(frozen=True, slots=True)
class Workload:
    """`users` concurrent conversations of `turns` turns over `prompts` shared system prompts
    of about `prompt_words` words each; every user turn carries `turn_words` words of its own
    (a pasted document, a tool's output: what an agent loop sends), so a conversation's own
    history, not the shared prompt, makes most of its later prompts."""

    users: int = 32
    turns: int = 4
    prompts: int = 8
    prompt_words: int = 500
    max_tokens: int = 16
    turn_words: int = 0


@dataclass(frozen=True, slots=True)
class Turn:
    """One streamed request: time to first token, and its prompt and cached tokens."""

    ttft_s: float
    prompt_tokens: int
    cached_tokens: int


def system_prompt(index: int, words: int) -> str:
    return " ".join(f"policy{index} clause {i} says answer plainly" for i in range(words // 5))


_VOCABULARY = (
    "the report shows that our team found a new way to ship faster while keeping costs low and "
    "customers happy across every region we serve this quarter with fewer errors than before"
).split()


def pasted_text(user: int, turn: int, words: int) -> str:
    """`words` ordinary words (about a token each), a different sequence per user and turn."""
    n, seed = len(_VOCABULARY), user * 7919 + turn * 104729
    return " ".join(_VOCABULARY[(seed + i * i * 31 + i) % n] for i in range(words))


async def _turn(session: aiohttp.ClientSession, url: str, body: dict[str, object]) -> Turn:
    started = time.perf_counter()
    ttft = 0.0
    usage: dict[str, Any] = {}
    headers = {"Content-Type": "application/json"}
    async with session.post(url, data=orjson.dumps(body), headers=headers) as response:
        if response.status != 200:
            # The gateway's error body names the reason (and the param): keep it.
            raise HarnessError(f"HTTP {response.status} from the gateway: {await response.text()}")
        async for raw in response.content:
            line = raw.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = orjson.loads(line[6:])
            if not ttft and chunk.get("choices"):
                ttft = time.perf_counter() - started
            if chunk.get("usage"):
                usage = chunk["usage"]
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens", 0) if isinstance(details, dict) else 0
    return Turn(ttft, int(usage.get("prompt_tokens", 0)), int(cached or 0))


async def _user(
    session: aiohttp.ClientSession, url: str, user: int, workload: Workload, out: list[Turn]
) -> None:
    history: list[dict[str, str]] = [
        {"role": "system", "content": system_prompt(user % workload.prompts, workload.prompt_words)}
    ]
    for turn in range(workload.turns):
        pasted = pasted_text(user, turn, workload.turn_words)
        history.append({"role": "user", "content": f"user {user} asks question {turn} {pasted}"})
        body = {
            "model": "sim",
            "messages": history,
            "max_tokens": workload.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        result = await _turn(session, url, body)
        out.append(result)
        history.append({"role": "assistant", "content": f"answer {turn} to user {user}"})


async def drive(api_url: str, workload: Workload) -> list[Turn]:
    """Run every user's conversation concurrently; the turns in completion order."""
    turns: list[Turn] = []
    url = f"{api_url}/chat/completions"
    connector = aiohttp.TCPConnector(limit=workload.users * 2)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(
            *(_user(session, url, u, workload, turns) for u in range(workload.users))
        )
    return turns
