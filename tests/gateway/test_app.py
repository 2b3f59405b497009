"""The HTTP layer end to end over a real uvicorn server, with scripted backends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest

from access.caller import Caller, key_digest
from access.settings import AccessSettings
from backends.replica import Replica
from core.backend_errors import BackendError, BackendOverloaded, BackendRejected, BackendUnavailable
from core.env import SettingsError
from gateway.app import check_embedded_standin, create_app, embedded_standin_config
from gateway.settings import Settings
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


SETTINGS = Settings(max_body_bytes=2048)


@pytest.fixture
def backends() -> list[FakeBackend]:
    return [FakeBackend(url="fake://a"), FakeBackend(url="fake://b")]


@pytest.fixture
async def base_url(backends: list[FakeBackend]) -> AsyncIterator[str]:
    replicas: Sequence[Replica] = [Replica("m", b) for b in backends]
    async with serving(create_app(SETTINGS, replicas)) as url:
        yield url


async def _post(url: str, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers={"content-type": content_type}) as response,
    ):
        return response.status, orjson.loads(await response.read())


async def test_chat_completion_through_openai_client(base_url: str) -> None:
    """The official client parses a non-streaming chat answer."""
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="k")
    answer = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content == "Hello world!"
    assert answer.usage is not None and answer.usage.total_tokens == 6
    assert answer.id.startswith("chatcmpl-") and answer.system_fingerprint


async def test_chat_stream_through_openai_client(base_url: str) -> None:
    """The official client assembles a streamed answer, with usage when asked."""
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="k")
    stream = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    async for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert (text, finish) == ("Hello world!", "stop")
    assert usage is not None and usage.completion_tokens == 3


async def test_invalid_json_is_400(base_url: str) -> None:
    """A body that is not JSON is a 400 invalid_json."""
    status, body = await _post(f"{base_url}/v1/chat/completions", b"{nope")
    assert status == 400 and body["error"]["code"] == "invalid_json"


async def test_wrong_type_names_param(base_url: str) -> None:
    """A wrongly typed field is a 400 naming the parameter."""
    payload = orjson.dumps({**CHAT, "temperature": "hot"})
    status, body = await _post(f"{base_url}/v1/chat/completions", payload)
    assert status == 400 and body["error"]["param"] == "temperature"


async def test_unknown_model_is_404(base_url: str) -> None:
    """An unknown model is a 404 model_not_found."""
    status, body = await _post(
        f"{base_url}/v1/chat/completions", orjson.dumps({**CHAT, "model": "x"})
    )
    assert status == 404 and body["error"]["code"] == "model_not_found"


async def test_body_over_limit_is_413(base_url: str) -> None:
    """A body over the configured limit is refused before parsing."""
    status, body = await _post(f"{base_url}/v1/chat/completions", b"x" * 4096)
    assert status == 413 and body["error"]["code"] == "payload_too_large"


async def test_wrong_content_type_is_415(base_url: str) -> None:
    """A non-JSON content type is a 415."""
    status, body = await _post(f"{base_url}/v1/chat/completions", orjson.dumps(CHAT), "text/plain")
    assert status == 415 and body["error"]["code"] == "unsupported_media_type"


async def test_unknown_route_is_404_envelope(base_url: str) -> None:
    """Unknown paths answer in the OpenAI error envelope."""
    status, body = await _post(f"{base_url}/v1/nothing", b"{}")
    assert status == 404 and body["error"]["code"] == "not_found"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/models"])
async def test_two_authorization_headers_are_400(base_url: str, path: str) -> None:
    """Two Authorization headers are a 400 in the envelope (with access control off, the last
    one would otherwise pick the tenant and its cache)."""
    headers = [("Authorization", "Bearer a"), ("Authorization", "Bearer b")]
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            "POST" if path.endswith("completions") else "GET",
            f"{base_url}{path}",
            data=orjson.dumps(CHAT),
            headers=[*headers, ("Content-Type", "application/json")],
        ) as response,
    ):
        body = await response.json()
    assert response.status == 400
    assert body["error"]["code"] == "duplicate_authorization_header"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/chat/completions/"), ("GET", "/healthz/"), ("GET", "/v1/models/")],
)
async def test_a_trailing_slash_is_404_never_a_redirect(
    base_url: str, method: str, path: str
) -> None:
    """A route with a slash too many is a 404 in the envelope, never a redirect whose Location
    would come from the client's Host header."""
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method,
            f"{base_url}{path}",
            data=orjson.dumps(CHAT),
            headers={"Content-Type": "application/json", "Host": "evil.example.com"},
            allow_redirects=False,
        ) as response,
    ):
        body = await response.json()
    assert response.status == 404 and "location" not in response.headers
    assert body["error"]["code"] == "not_found"


async def test_a_method_not_allowed_is_405_naming_the_allowed_ones(base_url: str) -> None:
    """A POST to a GET route answers in the envelope, with the Allow header RFC 9110 asks for."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/v1/models", json={}) as response,
    ):
        body = await response.json()
    assert response.status == 405 and body["error"]["code"] == "method_not_allowed"
    assert "GET" in response.headers["allow"]


async def test_no_healthy_backend_is_503(backends: list[FakeBackend]) -> None:
    """With every replica out of routing, requests get a 503 with Retry-After. An unreachable
    replica leaves at once; the last one in routing only when its probe fails."""
    replicas = [Replica("m", b) for b in backends]
    for backend in backends:
        backend.fail_with = BackendUnavailable("down")
    async with serving(create_app(SETTINGS, replicas)) as base_url:
        status, body = await _post(f"{base_url}/v1/chat/completions", orjson.dumps(CHAT))
        assert status == 502
        assert [r.healthy for r in replicas].count(True) == 1
        for replica, backend in zip(replicas, backends, strict=True):
            backend.healthy = False
            replica.observe(await backend.health(1.0))  # as its next probe finds it
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{base_url}/v1/chat/completions", json=CHAT) as response,
        ):
            status, headers, body = response.status, response.headers, await response.json()
    assert status == 503 and body["error"]["code"] == "no_healthy_backend"
    # The default health probe interval is 2 s: the soonest a replica can come back.
    assert headers["retry-after"] == "2"


async def test_backend_failure_is_502_after_one_retry(
    base_url: str, backends: list[FakeBackend]
) -> None:
    """A failing backend is retried once on the other replica, then 502."""
    for backend in backends:
        backend.fail_with = BackendError("boom")
    status, body = await _post(f"{base_url}/v1/chat/completions", orjson.dumps(CHAT))
    assert status == 502 and body["error"]["code"] == "backend_error"
    assert [b.calls for b in backends] == [1, 1]


async def test_overloaded_backends_are_429_with_the_upstreams_retry_after(
    base_url: str, backends: list[FakeBackend]
) -> None:
    """Replicas refusing for lack of room: each tried once, then the gateway's own 429
    `overloaded` with the last one's Retry-After, not a 502."""
    for backend in backends:
        backend.fail_with = BackendOverloaded("queue full", retry_after_s=7.0)
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/v1/chat/completions", json=CHAT) as response,
    ):
        status, headers, body = response.status, response.headers, await response.json()
    assert status == 429 and body["error"]["code"] == "overloaded"
    assert headers["retry-after"] == "7" and headers["retry-after-ms"] == "7000"
    assert [b.calls for b in backends] == [1, 1]


async def test_backend_rejection_is_400_and_not_retried(
    base_url: str, backends: list[FakeBackend]
) -> None:
    """A request the backend refuses as invalid is a 400, tried once."""
    for backend in backends:
        backend.fail_with = BackendRejected("prompt too long")
    status, body = await _post(f"{base_url}/v1/chat/completions", orjson.dumps(CHAT))
    assert status == 400 and "prompt too long" in body["error"]["message"]
    assert sum(b.calls for b in backends) == 1


async def test_stream_failure_before_first_chunk_is_http_error(
    base_url: str, backends: list[FakeBackend]
) -> None:
    """A stream that fails before its first chunk is a real HTTP error, not a 200."""
    for backend in backends:
        backend.fail_with = BackendError("boom")
    status, body = await _post(
        f"{base_url}/v1/chat/completions", orjson.dumps({**CHAT, "stream": True})
    )
    assert status == 502 and body["error"]["type"] == "backend_error"


async def test_stream_failure_after_first_chunk_is_error_event(
    base_url: str, backends: list[FakeBackend]
) -> None:
    """A stream that fails midway ends with an error event and [DONE]; the event says the model
    server failed, not the engine's words."""
    for backend in backends:
        backend.fail_with, backend.fail_after = BackendError("died"), 1
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/v1/chat/completions", json={**CHAT, "stream": True}) as response,
    ):
        assert response.status == 200
        events = [e for e in (await response.read()).split(b"\n\n") if e]
    assert events[-1] == b"data: [DONE]"
    error = orjson.loads(events[-2].removeprefix(b"data: "))["error"]
    assert error["type"] == "backend_error" and error["message"] == BackendError("x").public_message


async def test_stream_retries_on_other_replica_before_first_chunk(
    base_url: str, backends: list[FakeBackend]
) -> None:
    """A stream failing before any output is retried transparently on another replica."""
    backends[0].fail_with = BackendUnavailable("refused")
    for _ in range(2):
        status, _body = await _post(
            f"{base_url}/v1/completions", orjson.dumps({"model": "m", "prompt": "x"})
        )
        assert status == 200


async def test_models_and_health(base_url: str) -> None:
    """/v1/models lists the model and /v1/models/{id} retrieves it, with one stable creation
    time; /healthz and /readyz answer."""
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="k")
    models = await client.models.list()
    assert [m.id for m in models.data] == ["m"]
    assert models._request_id  # the official SDK reads x-request-id
    assert await client.models.retrieve("m") == models.data[0]
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("gpt-9")
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base_url}/healthz") as response:
            assert response.status == 200
        async with session.get(f"{base_url}/readyz") as response:
            assert response.status == 200


@pytest.fixture
async def keyed_url(backends: list[FakeBackend]) -> AsyncIterator[str]:
    """A gateway with access control on (one key, `k`)."""
    access = AccessSettings(inline_keys={key_digest("k"): Caller("t", key_id="id")})
    replicas: Sequence[Replica] = [Replica("m", b) for b in backends]
    async with serving(create_app(Settings(access=access), replicas)) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/v1/chat/completions"), ("GET", "/v1/models")]
)
async def test_a_401_carries_its_request_id_and_server_timing(
    keyed_url: str, method: str, path: str
) -> None:
    """A request without a key is a 401 with `x-request-id` and `Server-Timing`, like any
    other answer."""
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{keyed_url}{path}", json=CHAT) as response,
    ):
        assert response.status == 401
        assert response.headers["x-request-id"]
        assert response.headers["server-timing"].startswith("total;dur=")


async def test_embeddings_float_and_base64(base_url: str) -> None:
    """Embeddings come back as floats, or base64 float32 when asked."""
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="k")
    floats = await client.embeddings.create(model="m", input=["a", "b"], encoding_format="float")
    assert [d.embedding for d in floats.data] == [[0.5, -0.5, 0.25]] * 2
    packed = await client.embeddings.create(model="m", input="a")
    assert packed.data[0].embedding == [0.5, -0.5, 0.25]


def test_the_embedded_stand_in_cache_at_a_file_is_refused(tmp_path: Path) -> None:
    """GATEWAY_SIM_CACHE_DIR (where the embedded stand-in builds its tokenizer) at a file, or
    where nobody can create it, is a SettingsError naming it, checked before the workers
    start it."""
    (tmp_path / "file").touch()
    with pytest.raises(SettingsError, match="GATEWAY_SIM_CACHE_DIR must be a directory"):
        check_embedded_standin({"GATEWAY_SIM_CACHE_DIR": str(tmp_path / "file")})
    with pytest.raises(SettingsError, match="GATEWAY_SIM_CACHE_DIR: /proc/1/x cannot be"):
        check_embedded_standin({"GATEWAY_SIM_CACHE_DIR": "/proc/1/x"})
    check_embedded_standin({"GATEWAY_SIM_CACHE_DIR": str(tmp_path / "new")})
    assert (tmp_path / "new").is_dir()


def test_the_embedded_stand_in_takes_its_knobs_from_the_environment() -> None:
    """GATEWAY_SIM_* tune the embedded stand-in as they tune `python -m standin.vllm`; where
    it listens and the model it serves stay the gateway's."""
    config = embedded_standin_config(
        {"GATEWAY_SIM_ITL_MS": "50", "GATEWAY_SIM_OUTPUT_TOKENS": "4", "GATEWAY_PORT": "9"}
    )
    assert (config.itl_ms, config.output_tokens) == (50.0, 4)
    assert (config.host, config.port, config.model) == ("127.0.0.1", 0, "sim")


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("GATEWAY_SIM_PORT", "50051", "free port"),
        ("GATEWAY_SIM_MODEL", "llama", "'sim'"),
        ("GATEWAY_SIM_ITL", "50", "did you mean GATEWAY_SIM_ITL_MS"),
        ("GATEWAY_SIM_ITL_MS", "fast", "expects a float"),
        ("GATEWAY_SIM_ERROR_RATE", "2", "in [0, 1]"),
    ],
)
def test_a_knob_the_embedded_stand_in_cannot_take_is_refused(
    name: str, value: str, words: str
) -> None:
    """One the gateway sets, a misspelt one or a bad value: a SettingsError naming it, at
    startup, never a knob silently ignored."""
    with pytest.raises(SettingsError, match=name) as info:
        check_embedded_standin({name: value})
    assert words in str(info.value)


async def test_the_embedded_demo_answers_as_its_knobs_say() -> None:
    """GATEWAY_SIM_OUTPUT_TOKENS shapes the embedded demo's answers (its three tokens, then
    the EOS that ends them)."""
    settings = Settings.from_env({"GATEWAY_BACKENDS": "embedded"})
    app = create_app(settings, standin_env={"GATEWAY_SIM_OUTPUT_TOKENS": "3"})
    async with serving(app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        answer = await client.chat.completions.create(
            model="sim", messages=[{"role": "user", "content": "Hello"}]
        )
    assert answer.usage is not None and answer.usage.completion_tokens == 3 + 1
