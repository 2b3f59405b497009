"""Access control through a real gateway process and the official `openai` client: keys from
a file, typed errors, per-key models and caps, a key file rewritten while requests flow, and
no key in the logs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from access.caller import key_digest
from access.key_set import key_set_entry, new_key
from tests.e2e.stack import Stack, running_stack

FULL, LIMITED, LATE, BUSY = new_key(), new_key(), new_key(), new_key()
TOKENS = new_key()
JSON = {"content-type": "application/json"}
HELLO: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]


def _write_keys(path: Path, *entries: str) -> None:
    staged = path.with_suffix(".tmp")
    staged.write_text("[" + ",".join(entries) + "]")
    staged.replace(path)  # like a Secret update: the file is swapped whole


BUSY_RPM = 30  # one request every 2 s once the burst is spent
FIRST_KEYS = (
    key_set_entry(key_digest(FULL), "acme", name="acme-prod"),
    key_set_entry(key_digest(LIMITED), "globex", models=["sim"], max_tokens=8, priority="batch"),
    key_set_entry(key_digest(BUSY), "initech", requests_per_minute=BUSY_RPM),
    key_set_entry(key_digest(TOKENS), "umbrella", tokens_per_minute=300),
)


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    _write_keys(path, *FIRST_KEYS)
    return path


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, keys_file: Path) -> Iterator[Stack]:
    env = {
        "GATEWAY_API_KEYS_FILE": str(keys_file),
        "GATEWAY_API_KEYS_RELOAD_S": "0.2",
        "GATEWAY_LOG_LEVEL": "info",
    }
    with running_stack(tmp_path_factory.mktemp("access"), sims=1, env=env) as running:
        yield running


def _client(stack: Stack, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.api_url, api_key=key, max_retries=0)


async def test_wrong_key_is_authentication_error(guarded: Stack) -> None:
    """An unknown key: the client raises AuthenticationError (401 invalid_api_key)."""
    client = _client(guarded, "sk-gw-not-a-key")
    with pytest.raises(openai.AuthenticationError) as info:
        await client.chat.completions.create(model="sim", messages=HELLO)
    assert info.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        await client.models.list()


async def test_missing_key_is_401_before_the_body_is_read(guarded: Stack) -> None:
    """No Authorization header: 401 with OpenAI's envelope and a Bearer challenge."""
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            f"{guarded.api_url}/chat/completions", data=b"{}", headers=JSON
        )
        body = await response.json()
    assert response.status == 401 and body["error"]["code"] == "invalid_api_key"
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_401_before_the_body_ends_the_connection(guarded: Stack) -> None:
    """A 401 answered with most of the body still to come says `Connection: close`, and
    once the client has sent the rest and fallen silent the connection is ended."""
    reader, writer = await asyncio.open_connection("127.0.0.1", guarded.gateway_port)
    try:
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 300\r\n\r\n{"
        )
        async with asyncio.timeout(30):
            head = (await reader.readuntil(b"\r\n\r\n")).lower()
            assert head.startswith(b"http/1.1 401 ") and b"\r\nconnection: close\r\n" in head
            writer.write(b" " * 299)
            with contextlib.suppress(ConnectionError):  # a hang fails on the timeout
                while await reader.read(65536):  # the end of the gateway's stream, then
                    pass
                while True:  # a byte sent is answered with a reset once it is closed
                    writer.write(b" ")
                    await writer.drain()
                    await asyncio.sleep(0.5)  # the probe's pace, not a wait for anything
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([("Authorization", "Bearer sk-gw-wrong"), ("Authorization", f"Bearer {FULL}")], 400),
        ([("Authorization", f"Bearer {FULL}"), ("Authorization", "Bearer sk-gw-wrong")], 400),
        ([("Authorization", FULL)], 401),
        ([("Authorization", f"bearer {FULL}")], 200),
    ],
)
async def test_the_key_must_be_one_bearer_credential(
    guarded: Stack, headers: list[tuple[str, str]], status: int
) -> None:
    """Two Authorization headers are a 400 in either order; a key without the Bearer scheme is
    a 401; the scheme's case does not matter."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{guarded.api_url}/models", headers=headers) as response,
    ):
        body = await response.json()
    assert response.status == status, body
    if status != 200:
        assert body["error"]["type"] == "invalid_request_error"


async def test_a_key_sees_and_uses_only_its_models(guarded: Stack) -> None:
    """A key limited to `sim` lists only it, and `mock` is not found for it."""
    full, limited = _client(guarded, FULL), _client(guarded, LIMITED)
    assert {m.id async for m in full.models.list()} == {"sim", "mock"}
    assert [m.id async for m in limited.models.list()] == ["sim"]
    answer = await limited.chat.completions.create(model="sim", messages=HELLO, max_tokens=4)
    assert answer.choices[0].message.content is not None
    with pytest.raises(openai.NotFoundError) as info:
        await limited.chat.completions.create(model="mock", messages=HELLO)
    assert info.value.code == "model_not_found"
    assert (await full.chat.completions.create(model="mock", messages=HELLO)).choices


async def test_max_tokens_above_the_keys_cap_is_rejected(guarded: Stack) -> None:
    """max_tokens above the key's cap is a 400 naming max_tokens, before any backend work."""
    with pytest.raises(openai.BadRequestError) as info:
        await _client(guarded, LIMITED).chat.completions.create(
            model="sim", messages=HELLO, max_tokens=9
        )
    assert info.value.param == "max_tokens"


async def test_the_cap_error_names_the_field_sent(guarded: Stack) -> None:
    """Over the cap, max_completion_tokens (chat) and max_output_tokens (Responses) are named
    as the client sent them."""
    client = _client(guarded, LIMITED)
    with pytest.raises(openai.BadRequestError) as chat:
        await client.chat.completions.create(model="sim", messages=HELLO, max_completion_tokens=9)
    assert chat.value.param == "max_completion_tokens"
    with pytest.raises(openai.BadRequestError) as responses:
        await client.responses.create(model="sim", input="Hi", max_output_tokens=20)
    assert responses.value.param == "max_output_tokens"
    assert "max_output_tokens is 20" in responses.value.message


async def test_leaving_max_tokens_out_runs_at_the_keys_cap(guarded: Stack) -> None:
    """A request that names no max_tokens (chat, streamed, Responses) generates at most the
    key's cap, not up to the context."""
    limited = _client(guarded, LIMITED)
    answer = await limited.chat.completions.create(
        model="sim", messages=HELLO, extra_body={"ignore_eos": True}
    )
    assert answer.usage is not None and answer.usage.completion_tokens == 8
    stream = await limited.chat.completions.create(
        model="sim",
        messages=HELLO,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    usage = [chunk.usage async for chunk in stream if chunk.usage is not None]
    assert usage[0].completion_tokens == 8
    response = await limited.responses.create(model="sim", input="Hello", store=False)
    assert response.usage is not None and response.usage.output_tokens <= 8


async def test_the_keys_cap_gives_way_to_the_room_the_context_leaves(guarded: Stack) -> None:
    """Near the context's end (4096 tokens), a request naming no max_tokens under a key capped
    at 8 runs to the room left (chat, streamed, Responses), as it would without the cap; the
    client's own max_tokens of 8 there is a 400 naming it."""
    limited, eos = _client(guarded, LIMITED), {"ignore_eos": True}
    prompt = [1] * (4096 - 3)
    answer = await limited.completions.create(model="sim", prompt=prompt, extra_body=eos)
    assert answer.choices[0].finish_reason == "length"
    assert answer.usage is not None and answer.usage.completion_tokens == 3
    with pytest.raises(openai.BadRequestError) as asked:
        await limited.completions.create(model="sim", prompt=prompt, max_tokens=8)
    assert asked.value.param == "max_tokens"
    text = await _words_short_of_the_context(_client(guarded, FULL), 8)
    words: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": text}]
    chat = await limited.chat.completions.create(model="sim", messages=words, extra_body=eos)
    assert chat.choices[0].finish_reason == "length"
    assert chat.usage is not None and chat.usage.completion_tokens < 8
    stream = await limited.chat.completions.create(
        model="sim", messages=words, stream=True, extra_body=eos
    )
    assert [c.choices[0].finish_reason async for c in stream if c.choices][-1] == "length"
    response = await limited.responses.create(model="sim", input=text, store=False)
    assert response.usage is not None and response.usage.output_tokens < 8


async def _words_short_of_the_context(client: openai.AsyncOpenAI, most: int) -> str:
    """A user message whose chat prompt leaves fewer than `most` tokens of the context."""

    async def prompt_tokens(words: int) -> int:
        answer = await client.chat.completions.create(
            model="sim", messages=[{"role": "user", "content": "w " * words}], max_tokens=1
        )
        assert answer.usage is not None
        return answer.usage.prompt_tokens

    base, step = await prompt_tokens(100), await prompt_tokens(101) - await prompt_tokens(100)
    words = 100 + (4096 - most + 1 - base + step - 1) // step
    assert 0 < 4096 - await prompt_tokens(words) < most
    return "w " * words


async def test_a_batch_is_held_to_the_key_cap_for_each_choice(guarded: Stack) -> None:
    """A batch of prompts under a key capped at 8 tokens: asking more is a 400 naming
    max_tokens; asking nothing runs every choice of every prompt at the cap."""
    limited = _client(guarded, LIMITED)
    with pytest.raises(openai.BadRequestError) as refused:
        await limited.completions.create(model="sim", prompt=["a", "b"], max_tokens=20)
    assert refused.value.param == "max_tokens"
    batch = await limited.completions.create(
        model="sim", prompt=["One", "Two"], n=2, extra_body={"ignore_eos": True}
    )
    assert len(batch.choices) == 4 and {c.finish_reason for c in batch.choices} == {"length"}
    assert batch.usage is not None and batch.usage.completion_tokens == 4 * 8


async def test_a_request_no_minute_of_tokens_could_hold_is_a_400(guarded: Stack) -> None:
    """Under a 300-token-a-minute key, n choices (streamed or not), max_tokens,
    max_output_tokens or embedding inputs no full minute could hold are a 400 naming the
    field to lower and the limit; n choices that fit but exceed what is left are a 429."""
    client, eos = _client(guarded, TOKENS), {"ignore_eos": True}
    too_large = [
        client.completions.create(model="sim", prompt="Hi", n=30, max_tokens=50, extra_body=eos),
        client.chat.completions.create(
            model="sim", messages=HELLO, n=30, max_tokens=50, stream=True, extra_body=eos
        ),
        client.chat.completions.create(model="sim", messages=HELLO, max_tokens=400),
        client.responses.create(model="sim", input="Hi", max_output_tokens=400, store=False),
        client.embeddings.create(model="sim", input=["word " * 400] * 3),
    ]
    named = []
    for call in too_large:
        with pytest.raises(openai.BadRequestError) as refused:
            await call
        assert refused.value.code == "request_too_large" and "limit 300" in refused.value.message
        named.append(refused.value.param)
    assert named == ["n", "n", "max_tokens", "max_output_tokens", "input"]
    fits = await client.completions.create(
        model="sim", prompt="Hi", n=5, max_tokens=50, extra_body=eos
    )
    assert fits.usage is not None and 250 <= fits.usage.total_tokens <= 300
    with pytest.raises(openai.RateLimitError) as waits:
        await client.completions.create(
            model="sim", prompt="Hi", n=5, max_tokens=50, extra_body=eos
        )
    assert int(waits.value.response.headers["retry-after"]) > 0


async def test_stored_responses_belong_to_their_tenant(guarded: Stack) -> None:
    """Another tenant's key can neither read a stored response, its input items, nor continue
    from it nor delete it: all are refused as for an id that never existed (404; continuing,
    OpenAI's 400 `previous_response_not_found`); the owner reads it."""
    owner, other = _client(guarded, FULL), _client(guarded, LIMITED)
    stored = await owner.responses.create(model="sim", input="Secret plans", max_output_tokens=4)
    assert (await owner.responses.retrieve(stored.id)).id == stored.id
    with pytest.raises(openai.NotFoundError):
        await other.responses.retrieve(stored.id)
    with pytest.raises(openai.BadRequestError) as chained:
        await other.responses.create(
            model="sim", input="Go on", previous_response_id=stored.id, max_output_tokens=4
        )
    assert chained.value.code == "previous_response_not_found"
    with pytest.raises(openai.NotFoundError):
        await other.responses.delete(stored.id)
    with pytest.raises(openai.NotFoundError):
        await other.responses.input_items.list(stored.id)
    assert (await owner.responses.retrieve(stored.id)).id == stored.id
    items = await owner.responses.input_items.list(stored.id)
    assert [item.type for item in items.data] == ["message"]


async def test_rewritten_key_file_is_followed_without_dropping_requests(
    guarded: Stack, keys_file: Path
) -> None:
    """A key added to the file works once the gateway has re-read it, and requests with the
    existing keys keep succeeding while it does."""
    client, late = _client(guarded, FULL), _client(guarded, LATE)
    with pytest.raises(openai.AuthenticationError):
        await late.chat.completions.create(model="sim", messages=HELLO)
    _write_keys(keys_file, *FIRST_KEYS, key_set_entry(key_digest(LATE), "initech"))
    answered = 0
    async with asyncio.timeout(30):
        while True:
            await client.chat.completions.create(model="sim", messages=HELLO, max_tokens=2)
            answered += 1
            try:
                await late.chat.completions.create(model="sim", messages=HELLO, max_tokens=2)
                break
            except openai.AuthenticationError:
                continue
    assert answered >= 1


async def test_the_client_retries_a_429_after_the_time_it_names(guarded: Stack) -> None:
    """Past its limit, a key gets RateLimitErrors whose headers the SDK honours: with retries
    on, the same calls succeed after waiting what `retry-after-ms` said."""
    strict, patient = _client(guarded, BUSY), _client(guarded, BUSY).with_options(max_retries=5)

    async def ask(client: openai.AsyncOpenAI) -> Any:  # the SDK's raw response
        return await client.chat.completions.with_raw_response.create(
            model="sim", messages=HELLO, max_tokens=1
        )

    burst = await asyncio.gather(
        *(ask(strict) for _ in range(2 * BUSY_RPM)), return_exceptions=True
    )
    refused = [o for o in burst if isinstance(o, openai.RateLimitError)]
    assert len(refused) >= BUSY_RPM // 2 and refused[0].code == "rate_limit_exceeded"
    assert 0 < int(refused[0].response.headers["retry-after-ms"]) <= 2000
    assert refused[0].response.headers["x-ratelimit-limit-requests"] == str(BUSY_RPM)
    # The bucket is empty and refills one request per 2 s: three calls at once cannot all pass
    # without waiting, so the client must have retried at least once.
    answers = await asyncio.gather(*(ask(patient) for _ in range(3)))
    assert all(a.http_response.status_code == 200 for a in answers)
    assert sum(a.retries_taken for a in answers) >= 1


async def test_logs_name_the_key_id_never_the_key(guarded: Stack) -> None:
    """The access line carries tenant and key id; no API key appears in the gateway's log."""
    await _client(guarded, FULL).chat.completions.create(model="sim", messages=HELLO)
    log = guarded.gateway.log_path.read_text()
    assert key_digest(FULL)[:12] in log and '"tenant": "acme"' in log.replace('":"', '": "')
    for key in (FULL, LIMITED, LATE, BUSY):
        assert key not in log
