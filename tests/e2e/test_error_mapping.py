"""Every error mapping, observed on a real gateway process in front of real stand-ins."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionMessageParam

from bench.harness.probes import free_port
from bench.harness.processes import ProcessGroup
from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, start_gateway, start_mock

CHAT: dict[str, Any] = {"model": "sim", "messages": [{"role": "user", "content": "hi"}]}


async def _post(url: str, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers={"content-type": content_type}) as response,
    ):
        return response.status, orjson.loads(await response.read())


async def _stream_events(url: str, payload: dict[str, Any]) -> tuple[int, list[bytes]]:
    async with aiohttp.ClientSession() as session, session.post(url, json=payload) as response:
        body = await response.read()
    return response.status, [e for e in body.split(b"\n\n") if e]


async def test_invalid_json_400(stack: Stack) -> None:
    """Invalid JSON is a 400 invalid_json."""
    status, body = await _post(f"{stack.api_url}/chat/completions", b'{"model":')
    assert status == 400 and body["error"]["code"] == "invalid_json"


async def test_bad_type_400_names_param(stack: Stack) -> None:
    """A wrong type is a 400 naming the parameter."""
    payload = orjson.dumps({**CHAT, "max_tokens": "ten"})
    status, body = await _post(f"{stack.api_url}/chat/completions", payload)
    assert status == 400 and body["error"]["param"] == "max_tokens"


async def test_unsupported_param_400(stack: Stack) -> None:
    """A combination the gRPC backend cannot honour (a forced tool call and a response format,
    two constraints on one answer) is a 400 naming the parameter."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    payload = orjson.dumps(
        {
            **CHAT,
            "tools": tools,
            "tool_choice": "required",
            "response_format": {"type": "json_object"},
        }
    )
    status, body = await _post(f"{stack.api_url}/chat/completions", payload)
    assert status == 400 and body["error"]["param"] == "response_format"


async def test_context_overflow_400(stack: Stack) -> None:
    """A request that cannot fit the context is refused before reaching the GPU."""
    payload = orjson.dumps({**CHAT, "max_tokens": 10_000})
    status, body = await _post(f"{stack.api_url}/chat/completions", payload)
    assert status == 400 and body["error"]["param"] == "max_tokens"


@pytest.mark.parametrize(
    ("inputs", "param"), [([[1, 2], [3], [99_999_999]], "input[2]"), ([99_999_999], "input")]
)
async def test_an_out_of_vocabulary_token_is_a_400_naming_the_input(
    stack: Stack, inputs: Any, param: str
) -> None:
    """A token id the model does not have is a 400 naming the input that holds it."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        await client.embeddings.create(model="sim", input=inputs)
    assert info.value.param == param and "99999999" in info.value.message
    with pytest.raises(openai.BadRequestError) as prompt:
        await client.completions.create(model="sim", prompt=[5, 99_999_999])
    assert prompt.value.param == "prompt"


@pytest.mark.parametrize("inputs", [[-1], [1.5]])
async def test_a_bad_token_id_is_a_400_saying_what_token_ids_are(stack: Stack, inputs: Any) -> None:
    """A token id that is no non-negative integer is a 400 saying so, naming `input`."""
    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        await client.embeddings.create(model="sim", input=inputs)
    assert info.value.param == "input"
    assert "token ids must be non-negative integers" in info.value.message


async def test_unknown_model_404(stack: Stack) -> None:
    """An unknown model is a 404 model_not_found."""
    payload = orjson.dumps({**CHAT, "model": "gpt-9"})
    status, body = await _post(f"{stack.api_url}/chat/completions", payload)
    assert status == 404 and body["error"]["code"] == "model_not_found"


async def test_oversized_body_413(stack: Stack) -> None:
    """A body over GATEWAY_MAX_BODY_BYTES is a 413."""
    status, body = await _post(f"{stack.api_url}/chat/completions", b" " * (5 * 1024 * 1024))
    assert status == 413 and body["error"]["code"] == "payload_too_large"


async def test_wrong_content_type_415(stack: Stack) -> None:
    """A form body is a 415."""
    status, _body = await _post(
        f"{stack.api_url}/chat/completions", b"a=b", "application/x-www-form-urlencoded"
    )
    assert status == 415


async def test_compressed_body_415(stack: Stack) -> None:
    """A gzip-encoded body is a 415 naming the encoding, not a confusing invalid_json."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{stack.api_url}/chat/completions",
            data=gzip.compress(orjson.dumps(CHAT)),
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        ) as response,
    ):
        body = orjson.loads(await response.read())
    assert response.status == 415 and "gzip" in body["error"]["message"]


async def test_backend_failure_502(stack: Stack, sims: list[ControlClient]) -> None:
    """When every replica fails, the client gets a 502, streaming or not, which names neither
    the replica's address nor the engine's words (the gateway's log has both)."""
    for sim in sims:
        await sim.configure(error_rate=1.0)
    status, body = await _post(f"{stack.api_url}/chat/completions", orjson.dumps(CHAT))
    assert status == 502 and body["error"]["code"] == "backend_error"
    assert "127.0.0.1" not in body["error"]["message"]
    assert "grpc" not in body["error"]["message"]
    status, _events = await _stream_events(
        f"{stack.api_url}/chat/completions", {**CHAT, "stream": True}
    )
    assert status == 502


async def test_failure_midstream_is_error_event_then_done(
    stack: Stack, sims: list[ControlClient]
) -> None:
    """A stream that dies after its first tokens ends with an error event and [DONE]."""
    for sim in sims:
        await sim.configure(die_after_tokens=3)
    status, events = await _stream_events(
        f"{stack.api_url}/chat/completions", {**CHAT, "stream": True}
    )
    assert status == 200
    assert events[-1] == b"data: [DONE]"
    error = orjson.loads(events[-2].removeprefix(b"data: "))
    assert error["error"]["type"] == "backend_error"
    assert "127.0.0.1" not in error["error"]["message"]
    assert any(b'"content"' in e for e in events[:-2])


async def test_first_token_deadline_504_aborts_backend(
    stack: Stack, sims: list[ControlClient]
) -> None:
    """A backend that never produces a token yields 504 deadline_exceeded naming ttft, and the
    stand-in sees the request cancelled."""
    for sim in sims:
        await sim.configure(hang_rate=1.0)
    started = time.monotonic()
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{stack.api_url}/chat/completions", json={**CHAT, "stream": True}
        ) as response,
    ):
        body = orjson.loads(await response.read())
        request_id = response.headers["x-request-id"]
    elapsed = time.monotonic() - started
    assert response.status == 504
    # The e2e stack's first-token budget is 3 s: not before it, and not long after.
    assert 3.0 <= elapsed < 9.0
    assert body["error"]["code"] == "deadline_exceeded" and "ttft" in body["error"]["message"]
    seen = [await sim.stats() for sim in sims]
    assert any(
        request_id in s["cancelled_request_ids"] or request_id in s["aborted_request_ids"]
        for s in seen
    )


async def test_no_healthy_backend_503(tmp_path: Path) -> None:
    """A model whose only replica is unreachable gets 503 no_healthy_backend."""
    with ProcessGroup(tmp_path) as group:
        _, port = start_gateway(
            group, f"dead=grpc://127.0.0.1:{free_port()}", {}, ready_path="/healthz"
        )
        payload = orjson.dumps({**CHAT, "model": "dead"})
        status, body = await _post(f"http://127.0.0.1:{port}/v1/chat/completions", payload)
        ready, _ = await _post(f"http://127.0.0.1:{port}/readyz", b"{}")
    assert status == 503 and body["error"]["code"] == "no_healthy_backend"
    assert ready == 405


@pytest.fixture(scope="module")
def routed_to_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API URL of a gateway routing `assistant` to version `upstream-v1` of a strict HTTP
    upstream that serves it, and `helper` to `upstream-v2` of one serving only another model."""
    with ProcessGroup(tmp_path_factory.mktemp("routed")) as group:
        serving = start_mock(group, "--strict-models", "--model", "upstream-v1")
        other = start_mock(group, "--strict-models", "--model", "something-else")
        _, port = start_gateway(
            group,
            f"upstream-v1=http://127.0.0.1:{serving}/v1;upstream-v2=http://127.0.0.1:{other}/v1",
            {"GATEWAY_MODEL_ROUTES": "assistant=upstream-v1:100;helper=upstream-v2:100"},
        )
        yield f"http://127.0.0.1:{port}/v1"


async def test_a_routed_request_reaches_an_http_upstream_as_the_version(
    routed_to_http: str,
) -> None:
    """The upstream is sent the version's name, the one it serves, not the public name the
    client asked for."""
    client = openai.AsyncOpenAI(base_url=routed_to_http, api_key="k", max_retries=0)
    answer = await client.chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.model == "upstream-v1" and answer.choices[0].message.content
    embedded = await client.embeddings.create(model="assistant", input="hi")
    assert embedded.data[0].embedding


async def test_an_upstream_model_not_found_is_a_404_naming_the_asked_model(
    routed_to_http: str,
) -> None:
    """An HTTP upstream's 404 model_not_found for the name the gateway sent it is a 404
    model_not_found naming the model the client asked for, never the upstream's name: for a
    whole answer, a stream, a completion, an embedding and a response alike."""
    client = openai.AsyncOpenAI(base_url=routed_to_http, api_key="k", max_retries=0)
    ask: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
    asks = [
        client.chat.completions.create(model="helper", messages=ask),
        client.chat.completions.create(model="helper", messages=ask, stream=True),
        client.completions.create(model="helper", prompt="hi"),
        client.embeddings.create(model="helper", input="hi"),
        client.responses.create(model="helper", input="hi"),
    ]
    for asked in asks:
        with pytest.raises(openai.NotFoundError) as refused:
            await asked
        error = refused.value.body
        assert isinstance(error, dict)
        assert (error["code"], error["param"]) == ("model_not_found", "model")
        assert "helper" in error["message"]
        assert "upstream-v2" not in error["message"] and "something-else" not in error["message"]


@pytest.mark.parametrize("path", ["/readyz", "/healthz"])
async def test_probes_ok(stack: Stack, path: str) -> None:
    """Liveness and readiness answer 200 while backends are healthy."""
    async with aiohttp.ClientSession() as session, session.get(stack.base_url + path) as response:
        assert response.status == 200
