"""Every tool-call format end to end over real gRPC: one stand-in per format answers in it, the
gateway (told each model's format) parses a call, parallel calls, text then a call and a
malformed call, streamed and whole, with the official client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionToolParam

from backends.tool_calls.choice import FORMATS
from bench.harness.processes import ProcessGroup
from tests.e2e.stack import start_gateway, start_sim

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
    for name in ("get_weather", "get_time")
]


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway in front of one stand-in per format, serving model `sim-FORMAT`."""
    with ProcessGroup(tmp_path_factory.mktemp("formats")) as group:
        ports = {
            name: start_sim(group, "--model", f"sim-{name}", "--tool-format", name)[1]
            for name in FORMATS
        }
        backends = ";".join(f"sim-{name}=grpc://127.0.0.1:{port}" for name, port in ports.items())
        parsers = ";".join(f"sim-{name}={name}" for name in FORMATS)
        _, port = start_gateway(group, backends, {"GATEWAY_TOOL_PARSERS": parsers})
        yield f"http://127.0.0.1:{port}/v1"


async def _ask(api_url: str, name: str, marker: str, stream: bool) -> tuple[str, list[Any], str]:
    """Content, calls (name, arguments) and finish reason of one answer, whole or streamed."""
    client = openai.AsyncOpenAI(base_url=api_url, api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": f"Weather and time in Paris? {marker}"}]
    if not stream:
        answer = await client.chat.completions.create(
            model=f"sim-{name}", messages=messages, tools=TOOLS, seed=5
        )
        message = answer.choices[0].message
        calls = [
            (c.function.name, orjson.loads(c.function.arguments))
            for c in message.tool_calls or ()
            if c.type == "function"
        ]
        return message.content or "", calls, answer.choices[0].finish_reason
    chunks = await client.chat.completions.create(
        model=f"sim-{name}", messages=messages, tools=TOOLS, seed=5, stream=True
    )
    content, finish = "", ""
    parts: dict[int, list[str]] = {}
    async for chunk in chunks:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for call in delta.tool_calls or ():
            function = call.function
            entry = parts.setdefault(call.index, ["", ""])
            entry[0] += (function.name or "") if function else ""
            entry[1] += (function.arguments or "") if function else ""
        finish = chunk.choices[0].finish_reason or finish
    streamed = [(entry[0], orjson.loads(entry[1])) for _, entry in sorted(parts.items())]
    return content, streamed, finish


@pytest.mark.parametrize("name", FORMATS)
async def test_calls_in_every_format(api_url: str, name: str) -> None:
    """A single call, two parallel calls and text then a call: parsed into OpenAI calls, no
    markup left in the content, the stream accumulating to the whole answer."""
    for marker, count in (("[[single]]", 1), ("[[parallel]]", 2), ("[[text-then-call]]", 1)):
        whole = await _ask(api_url, name, marker, stream=False)
        content, calls, finish = whole
        assert finish == "tool_calls", (name, marker, whole)
        assert len(calls) == count and all(c[0] in ("get_weather", "get_time") for c in calls)
        assert all(isinstance(arguments.get("city"), str) for _, arguments in calls)
        if marker == "[[text-then-call]]":
            assert content.strip()
        for sign in ("<tool_call>", "[TOOL_CALLS]", "<function=", "tool▁call", "<|python"):
            assert sign not in content, (name, marker, content)
        assert await _ask(api_url, name, marker, stream=True) == whole


@pytest.mark.parametrize("name", FORMATS)
async def test_a_malformed_call_stays_text(api_url: str, name: str) -> None:
    """Broken call markup is the answer's text, finish reason stop, never an invented call."""
    content, calls, finish = await _ask(api_url, name, "[[malformed]]", stream=False)
    assert calls == [] and finish == "stop" and content
    assert await _ask(api_url, name, "[[malformed]]", stream=True) == (content, calls, finish)


async def _cut(
    api_url: str, name: str, max_tokens: int, stream: bool
) -> tuple[str, list[Any], str]:
    """Content, calls and finish reason of two parallel calls cut at `max_tokens`."""
    client = openai.AsyncOpenAI(base_url=api_url, api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "Weather and time in Paris? [[parallel]]"}]
    if not stream:
        answer = await client.chat.completions.create(
            model=f"sim-{name}", messages=messages, tools=TOOLS, seed=5, max_tokens=max_tokens
        )
        message = answer.choices[0].message
        calls = [c.function.name for c in message.tool_calls or () if c.type == "function"]
        return message.content or "", calls, answer.choices[0].finish_reason
    chunks = await client.chat.completions.create(
        model=f"sim-{name}", messages=messages, tools=TOOLS, seed=5, max_tokens=max_tokens,
        stream=True,
    )  # fmt: skip
    content, names, finish = "", [], ""
    async for chunk in chunks:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        names += [c.function.name for c in delta.tool_calls or () if c.function and c.function.name]
        finish = chunk.choices[0].finish_reason or finish
    return content, names, finish


@pytest.mark.parametrize("name", FORMATS)
async def test_a_call_cut_by_max_tokens_is_never_content(api_url: str, name: str) -> None:
    """Cut anywhere by max_tokens, two parallel calls give no content (none of the markup of
    the call left unfinished), finish reason length, and the calls that ended; the same
    streamed."""
    client = openai.AsyncOpenAI(base_url=api_url, api_key="k", max_retries=0)
    full = await client.chat.completions.create(
        model=f"sim-{name}",
        messages=[{"role": "user", "content": "Weather and time in Paris? [[parallel]]"}],
        tools=TOOLS,
        seed=5,
    )
    assert full.usage is not None and full.choices[0].finish_reason == "tool_calls"
    names = [
        c.function.name for c in full.choices[0].message.tool_calls or () if c.type == "function"
    ]
    tokens = full.usage.completion_tokens
    for max_tokens in sorted({2, tokens // 3, tokens // 2, 2 * tokens // 3, tokens - 2}):
        whole = await _cut(api_url, name, max_tokens, stream=False)
        content, calls, finish = whole
        assert content == "" and finish == "length", (name, max_tokens, whole)
        assert calls == names[: len(calls)], (name, max_tokens, whole)
        assert await _cut(api_url, name, max_tokens, stream=True) == whole
