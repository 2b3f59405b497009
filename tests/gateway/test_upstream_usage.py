"""A stream over an OpenAI-compatible upstream always has its usage, which the client is shown
only when it asked for it: the gateway charges the key's limits by it."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from access.caller import key_digest
from access.key_set import key_set_entry, new_key, parse_key_set
from access.settings import AccessSettings
from gateway.settings import Settings
from tests.support.scripted_upstream import Handler, gateway_over

KEY = new_key()
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def _upstream(sent: list[dict[str, Any]], honours_usage: bool = True) -> Handler:
    """Two deltas, the finish, the usage when asked for it (unless told not to honour that),
    then `[DONE]`, as vLLM streams; what each request sent goes to `sent`."""

    async def answer(request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        sent.append(body)
        events: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            for word in ("Hel", "lo")
        ]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        if honours_usage and (body.get("stream_options") or {}).get("include_usage"):
            events.append({"choices": [], "usage": USAGE})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events:
            await response.write(b"data: " + orjson.dumps({"id": "up", **event}) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response

    return answer


async def _stream(session: aiohttp.ClientSession, url: str, body: object) -> bytes:
    """The stream's bytes, less what differs between two answers (their id and time)."""
    async with session.post(f"{url}/chat/completions", json=body) as response:
        assert response.status == 200
        text = await response.read()
    return re.sub(rb'"created":\d+', b"", re.sub(rb"chatcmpl-\w+", b"", text))


async def test_a_stream_shows_only_the_usage_its_client_asked_for() -> None:
    """The upstream is asked for the usage of every stream; a client that did not ask for it
    gets byte for byte the stream of an upstream that sent none, one that asked gets it."""
    sent: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    async with (
        gateway_over({"/v1/chat/completions": _upstream(sent)}) as (url, _),
        gateway_over({"/v1/chat/completions": _upstream(plain, False)}) as (plain_url, _),
        aiohttp.ClientSession() as session,
    ):
        hidden = await _stream(session, url, CHAT)
        declined = {**CHAT, "stream_options": {"include_usage": False}}
        hidden_too = await _stream(session, url, declined)
        without = await _stream(session, plain_url, CHAT)
        shown = await _stream(session, url, {**CHAT, "stream_options": {"include_usage": True}})
    assert [body["stream_options"] for body in sent] == [{"include_usage": True}] * 3
    assert hidden == hidden_too == without and b"usage" not in hidden
    assert b'"usage":{"prompt_tokens":3,"completion_tokens":2' in shown


async def test_a_stream_is_charged_the_usage_its_upstream_reported() -> None:
    """A stream whose client did not ask for its usage gives back to the key's token limit
    what it reserved beyond its usage, as one that asked does."""
    keys = parse_key_set(f"[{key_set_entry(key_digest(KEY), 'acme', tokens_per_minute=1000)}]", "t")
    settings = Settings(access=AccessSettings(inline_keys=keys))
    body = {**CHAT, "max_tokens": 400}  # each reserves its prompt and 400 more
    async with (
        gateway_over({"/v1/chat/completions": _upstream([])}, settings) as (url, _),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"}) as session,
    ):
        await _stream(session, url, body)
        async with session.post(f"{url}/chat/completions", json=body) as response:
            await response.read()
            remaining = int(response.headers["x-ratelimit-remaining-tokens"])
    # Charged its whole reservation, the first would leave less than 1000 - 2 * 400.
    assert remaining > 1000 - 2 * 400
