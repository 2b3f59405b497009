"""The OpenAI contract as clients see it: every body and stream chunk the gateway sends
validates against the official `openai` SDK's own pydantic types, with every required field
present and no key the SDK type does not declare; streams end as OpenAI's do; error bodies
are `{"error": {message, type, param, code}}`."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from typing import Any, Literal, TypeVar

import aiohttp
import orjson
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import BaseModel as SdkModel
from openai.types import Completion, CompletionChoice, CreateEmbeddingResponse, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseItemList, ResponseStreamEvent
from openai.types.shared import ErrorObject
from pydantic import TypeAdapter
from schemathesis import BaseSchema, Case, GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from tests.e2e.stack import Stack

TIMEOUT_S = 30.0
ASK = [{"role": "user", "content": "Weather in Paris?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
M = TypeVar("M", bound=SdkModel)
_EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


# Keys the real OpenAI API sends that this SDK version's types leave out: `store` on a
# Response (OpenAI echoes whether it was stored; `openai.types.responses.Response` omits it),
# and the function's `name` on response.function_call_arguments.done (in OpenAI's API
# reference, not in the SDK's event type).
ALLOWED_UNDECLARED = {
    ("Response", "store"),
    ("ResponseFunctionCallArgumentsDoneEvent", "name"),
}


class CompletionStreamChoice(CompletionChoice):
    """A streamed completion choice: OpenAI sends `finish_reason: null` until the last chunk,
    which the SDK's `CompletionChoice` (typed for whole answers) does not allow."""

    finish_reason: Literal["stop", "length", "content_filter"] | None  # type: ignore[assignment]


class CompletionChunk(Completion):
    """A streamed text completion chunk: a `Completion` of streamed choices."""

    choices: list[CompletionStreamChoice]  # type: ignore[assignment]


def _undeclared(value: object, where: str = "$") -> list[str]:
    """Paths of keys the SDK types do not declare: the SDK's models keep unknown keys as
    `model_extra` (they allow extras), so a strict check walks the validated tree."""
    found: list[str] = []
    if isinstance(value, SdkModel):
        found += [
            f"{where}.{key}"
            for key in value.model_extra or {}
            if (type(value).__name__, key) not in ALLOWED_UNDECLARED
        ]
        for name in type(value).model_fields:
            found += _undeclared(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += _undeclared(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _undeclared(item, f"{where}.{key}")
    return found


def _strict(model: type[M], data: Any) -> M:
    """`data` as `model`, in pydantic's strict mode, with no undeclared key anywhere."""
    parsed = model.model_validate(data, strict=True)
    assert _undeclared(parsed) == [], _undeclared(parsed)
    return parsed


def _strict_event(data: Any) -> Any:
    """One Responses stream event, strictly, as the SDK's discriminated union."""
    parsed = _EVENTS.validate_python(data, strict=True)
    assert _undeclared(parsed) == [], _undeclared(parsed)
    return parsed


async def _post(stack: Stack, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        asyncio.timeout(TIMEOUT_S),
        session.post(stack.base_url + path, json=payload) as response,
    ):
        return response.status, await response.read()


async def _get(stack: Stack, path: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        asyncio.timeout(TIMEOUT_S),
        session.get(stack.base_url + path) as response,
    ):
        return response.status, await response.read()


def _sse(body: bytes) -> list[tuple[str | None, bytes]]:
    """(event name, data) for each server-sent event."""
    events = []
    for block in body.split(b"\n\n"):
        if not block.strip():
            continue
        name, data = None, b""
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line.removeprefix(b"event: ").decode()
            elif line.startswith(b"data: "):
                data += line.removeprefix(b"data: ")
        events.append((name, data))
    return events


def _chunks(body: bytes) -> list[Any]:
    """The JSON chunks of a chat or completions stream, which must end with [DONE]."""
    events = _sse(body)
    assert events and events[-1][1] == b"[DONE]", events[-3:]
    assert all(data != b"[DONE]" for _, data in events[:-1])
    return [orjson.loads(data) for _, data in events[:-1]]


@pytest.mark.parametrize("model", ["sim", "mock"])
@pytest.mark.parametrize(
    "extra",
    [{}, {"tools": [WEATHER]}, {"logprobs": True, "top_logprobs": 2}],
    ids=["plain", "tools", "logprobs"],
)
async def test_chat_whole_is_strict_chat_completion(
    stack: Stack, model: str, extra: dict[str, Any]
) -> None:
    """A whole chat answer (plain, with tools, with logprobs) is a strict ChatCompletion."""
    status, body = await _post(
        stack, "/v1/chat/completions", {"model": model, "messages": ASK, "seed": 3, **extra}
    )
    assert status == 200, body
    parsed = _strict(ChatCompletion, orjson.loads(body))
    assert isinstance(parsed, ChatCompletion) and parsed.object == "chat.completion"
    if "logprobs" in extra and model == "sim":
        assert parsed.choices[0].logprobs is not None


@pytest.mark.parametrize("model", ["sim", "mock"])
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"stream_options": {"include_usage": True}},
        {"tools": [WEATHER]},
        {"logprobs": True, "top_logprobs": 2},
    ],
    ids=["plain", "usage", "tools", "logprobs"],
)
async def test_chat_stream_chunks_are_strict_and_end_with_done(
    stack: Stack, model: str, extra: dict[str, Any]
) -> None:
    """Every chat stream chunk is a strict ChatCompletionChunk and the stream ends [DONE]."""
    payload = {"model": model, "messages": ASK, "seed": 3, "stream": True, **extra}
    status, body = await _post(stack, "/v1/chat/completions", payload)
    assert status == 200, body
    chunks = [_strict(ChatCompletionChunk, c) for c in _chunks(body)]
    assert chunks and all(isinstance(c, ChatCompletionChunk) for c in chunks)
    finishes = [
        c.finish_reason for k in chunks for c in k.choices if isinstance(k, ChatCompletionChunk)
    ]
    assert any(f is not None for f in finishes)
    if "stream_options" in extra:
        last = chunks[-1]
        assert isinstance(last, ChatCompletionChunk) and last.usage is not None


@pytest.mark.parametrize("model", ["sim", "mock"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("logprobs", [None, 0, 2])
async def test_completions_are_strict(
    stack: Stack, model: str, stream: bool, logprobs: int | None
) -> None:
    """A text completion, whole or each streamed chunk, with or without logprobs (0 too: each
    position's top_logprobs then holds the sampled token alone), is a strict Completion."""
    payload = {"model": model, "prompt": "Once upon a time", "seed": 1, "stream": stream}
    if logprobs is not None:
        payload["logprobs"] = logprobs
    status, body = await _post(stack, "/v1/completions", payload)
    assert status == 200, body
    if stream:
        chunks = [_strict(CompletionChunk, chunk) for chunk in _chunks(body)]
        assert chunks[-1].choices[0].finish_reason is not None
    else:
        _strict(Completion, orjson.loads(body))


@pytest.mark.parametrize("model", ["sim", "mock"])
@pytest.mark.parametrize("stream", [False, True])
async def test_batched_completions_are_strict(stack: Stack, model: str, stream: bool) -> None:
    """A batch of prompts, whole or each streamed chunk, is a strict Completion; the stream
    ends with one [DONE], after every choice of every prompt has finished."""
    prompts = ["Once upon a time", "Far away"]
    payload = {"model": model, "prompt": prompts, "n": 2, "seed": 1, "stream": stream}
    status, body = await _post(stack, "/v1/completions", payload)
    assert status == 200, body
    if stream:
        chunks = [_strict(CompletionChunk, chunk) for chunk in _chunks(body)]
        finished = {c.index for chunk in chunks for c in chunk.choices if c.finish_reason}
        assert finished == {0, 1, 2, 3}
    else:
        whole = _strict(Completion, orjson.loads(body))
        assert [choice.index for choice in whole.choices] == [0, 1, 2, 3]


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_embeddings_are_strict(stack: Stack, model: str) -> None:
    """An embeddings answer is a strict CreateEmbeddingResponse."""
    status, body = await _post(stack, "/v1/embeddings", {"model": model, "input": ["a", "b"]})
    assert status == 200, body
    parsed = _strict(CreateEmbeddingResponse, orjson.loads(body))
    assert isinstance(parsed, CreateEmbeddingResponse) and len(parsed.data) == 2


async def test_models_are_strict(stack: Stack) -> None:
    """The model list is {object: list, data: [Model]} with strict Model entries."""
    status, body = await _get(stack, "/v1/models")
    assert status == 200
    page = orjson.loads(body)
    assert set(page) == {"object", "data"} and page["object"] == "list"
    assert {_strict(Model, m).id for m in page["data"]} >= {"sim", "mock"}


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_responses_whole_is_strict(stack: Stack, model: str) -> None:
    """A whole Responses answer, and the same read back, is a strict Response; its input
    items a strict ResponseItemList."""
    status, body = await _post(stack, "/v1/responses", {"model": model, "input": "Hello"})
    assert status == 200, body
    parsed = _strict(Response, orjson.loads(body))
    assert isinstance(parsed, Response) and parsed.status == "completed"
    status, body = await _get(stack, f"/v1/responses/{parsed.id}")
    assert status == 200
    _strict(Response, orjson.loads(body))
    status, body = await _get(stack, f"/v1/responses/{parsed.id}/input_items")
    assert status == 200
    assert len(_strict(ResponseItemList, orjson.loads(body)).data) == 1


@pytest.mark.parametrize("model", ["sim", "mock"])
@pytest.mark.parametrize("tools", [False, True])
async def test_responses_stream_events_are_strict(stack: Stack, model: str, tools: bool) -> None:
    """Every Responses stream event is a strict event of the SDK's union, named by its SSE
    `event:` line, and the stream ends with response.completed."""
    payload: dict[str, Any] = {"model": model, "input": "Weather in Paris?", "stream": True}
    if tools:
        payload["tools"] = [{"type": "function", **WEATHER["function"]}]  # type: ignore[dict-item]
    status, body = await _post(stack, "/v1/responses", payload)
    assert status == 200, body
    events = _sse(body)
    parsed = [_strict_event(orjson.loads(data)) for _, data in events]
    assert [name for name, _ in events] == [event.type for event in parsed]
    assert parsed[-1].type == "response.completed"
    assert [e.sequence_number for e in parsed] == list(range(len(parsed)))


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/v1/chat/completions", {"model": "sim", "messages": []}),
        ("/v1/chat/completions", {"model": "gpt-9", "messages": ASK}),
        ("/v1/completions", {"model": "sim", "prompt": "x", "suffix": "y"}),
        ("/v1/embeddings", {"model": "sim"}),
        ("/v1/responses", {"model": "sim", "input": "x", "previous_response_id": "resp_nope"}),
    ],
    ids=["empty_messages", "unknown_model", "unsupported", "missing", "unknown_previous"],
)
async def test_error_bodies_are_strict_error_objects(
    stack: Stack, path: str, payload: dict[str, Any]
) -> None:
    """An error body is exactly {"error": {message, type, param, code}}, a strict ErrorObject."""
    status, body = await _post(stack, path, payload)
    assert 400 <= status < 500
    answer = orjson.loads(body)
    assert set(answer) == {"error"} and set(answer["error"]) == {"message", "type", "param", "code"}
    _strict(ErrorObject, answer["error"])


async def test_unknown_route_and_method_are_error_objects(stack: Stack) -> None:
    """A 404 route and a 405 method answer with the same error envelope."""
    for status_expected, request in (
        (404, _get(stack, "/v1/nope")),
        (405, _get(stack, "/v1/chat/completions")),
    ):
        status, body = await request
        assert status == status_expected
        _strict(ErrorObject, orjson.loads(body)["error"])


def _openapi_schema(stack: Stack) -> BaseSchema:
    """The gateway's own /openapi.json, fetched from the running process."""
    with urllib.request.urlopen(f"{stack.base_url}/openapi.json", timeout=TIMEOUT_S) as answer:
        document = json.loads(answer.read())
    return schemathesis.openapi.from_dict(document)


def _operations(stack: Stack) -> dict[str, Any]:
    """Every documented operation by `METHOD path` (its schema must load whole)."""
    operations = {}
    for result in _openapi_schema(stack).get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        operations[f"{operation.method.upper()} {operation.path}"] = operation
    return operations


async def test_openapi_documents_every_route(stack: Stack) -> None:
    """/openapi.json documents every route with the request models the gateway validates."""
    status, body = await _get(stack, "/openapi.json")
    assert status == 200
    document = orjson.loads(body)
    schemas = document["components"]["schemas"]
    assert {"ChatCompletionRequest", "CompletionRequest", "EmbeddingRequest"} <= set(schemas)
    assert set(document["paths"]) >= set(ENDPOINTS_DOCUMENTED)


ENDPOINTS_DOCUMENTED = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/embeddings",
    "/v1/responses",
    "/v1/responses/{response_id}",
    "/v1/responses/{response_id}/input_items",
    "/v1/models",
    "/healthz",
    "/readyz",
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.mark.parametrize(
    "operation",
    [
        "POST /v1/chat/completions",
        "POST /v1/completions",
        "POST /v1/embeddings",
        "POST /v1/responses",
        "GET /v1/responses/{response_id}",
        "DELETE /v1/responses/{response_id}",
        "GET /v1/responses/{response_id}/input_items",
        "GET /v1/models",
    ],
)
def test_schemathesis_finds_no_5xx_and_no_broken_response(stack: Stack, operation: str) -> None:
    """Requests schemathesis generates from /openapi.json (valid and invalid): no 5xx, and
    every status, content type and body as documented, errors in the OpenAI envelope; each
    bounded by a timeout, so a hang fails."""
    documented = _operations(stack)[operation]
    positive = documented.as_strategy(generation_mode=GenerationMode.POSITIVE)
    negative = documented.as_strategy(generation_mode=GenerationMode.NEGATIVE)
    statuses: list[int] = []

    @given(case=positive | negative, served=st.sampled_from([None, "sim", "mock"]))
    @settings(
        max_examples=int(os.environ.get("CONTRACT_FUZZ_EXAMPLES", "50")),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Case[Any], served: str | None) -> None:
        if served and isinstance(case.body, dict) and "model" in case.body:
            case.body["model"] = served  # past routing, into normalization and the backend
        response = case.call_and_validate(base_url=stack.base_url, timeout=TIMEOUT_S, checks=CHECKS)
        statuses.append(response.status_code)

    run()
    assert statuses and all(status < 500 for status in statuses)


def test_stateful_responses_workflow_finds_no_5xx(stack: Stack) -> None:
    """Chains schemathesis builds from the document's links (create a response, read it back,
    delete it, read it again): every step as documented and no 5xx, each bounded by a timeout.
    Only the Responses operations take part: the others have no links, and steps spent on them
    are steps the chain does not get."""
    schema = _openapi_schema(stack).include(path_regex="^/v1/responses")
    schema.config.base_url = stack.base_url
    machine = schema.as_state_machine()
    statuses: list[tuple[str, int]] = []

    class Workflow(machine):  # type: ignore[valid-type,misc]
        def get_call_kwargs(self, case: Case[Any]) -> dict[str, Any]:
            if isinstance(case.body, dict) and "model" in case.body:
                case.body["model"] = "sim"  # served, so that responses get stored
            return {"timeout": TIMEOUT_S}

        def validate_response(self, response: Any, case: Case[Any], **kwargs: Any) -> None:
            statuses.append((f"{case.method} {case.path}", response.status_code))
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None)

    Workflow.run(
        settings=settings(
            max_examples=int(os.environ.get("CONTRACT_STATEFUL_EXAMPLES", "15")),
            stateful_step_count=6,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    assert all(status < 500 for _, status in statuses), statuses
    chained = {operation for operation, status in statuses if status == 200}
    assert {"GET /v1/responses/{response_id}", "DELETE /v1/responses/{response_id}"} & chained, (
        statuses
    )
