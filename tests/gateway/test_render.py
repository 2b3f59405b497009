"""Chat answers rendered as OpenAI JSON and SSE: reasoning under both of its names (or none
with include_reasoning false), reasoning tokens in usage, content null where none was
produced, and a streamed call in OpenAI's delta shape."""

from __future__ import annotations

from typing import Any

import orjson

from core.answers import Choice, ChoiceDelta, Completion, StreamChunk, Usage
from gateway.render import ChunkRenderer, completion_body

CALL = {
    "index": 0,
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}


def _renderer() -> ChunkRenderer:
    return ChunkRenderer(
        "chat", response_id="r", created=1, model="m", fingerprint="fp", include_usage=True
    )


def _deltas(raw: bytes) -> list[dict[str, Any]]:
    events = [orjson.loads(e.removeprefix(b"data: ")) for e in raw.split(b"\n\n") if e]
    return [choice for event in events for choice in event["choices"]]


def test_reasoning_and_reasoning_tokens_in_a_whole_answer() -> None:
    """The message carries reasoning_content and reasoning; usage counts reasoning tokens."""
    completion = Completion([Choice(0, "Answer", "stop", reasoning="Because")], Usage(3, 9, 0, 4))
    body = orjson.loads(
        completion_body("chat", completion, response_id="r", created=1, model="m", fingerprint="f")
    )
    message = body["choices"][0]["message"]
    assert message["reasoning_content"] == message["reasoning"] == "Because"
    assert body["usage"]["completion_tokens_details"] == {"reasoning_tokens": 4}


def test_an_answer_without_reasoning_has_no_reasoning_fields() -> None:
    """No parser, no fields: the plain shape stays as it was."""
    completion = Completion([Choice(0, "Answer", "stop")], Usage(3, 2))
    body = orjson.loads(
        completion_body("chat", completion, response_id="r", created=1, model="m", fingerprint="f")
    )
    assert "reasoning_content" not in body["choices"][0]["message"]
    assert "completion_tokens_details" not in body["usage"]


def _message(completion: Completion, include_reasoning: bool = True) -> dict[str, Any]:
    body = completion_body(
        "chat", completion, response_id="r", created=1, model="m", fingerprint="f",
        include_reasoning=include_reasoning,
    )  # fmt: skip
    message: dict[str, Any] = orjson.loads(body)["choices"][0]["message"]
    return message


def test_content_is_null_where_none_was_produced() -> None:
    """Cut while thinking, or calls alone: content null; a plain empty answer keeps ""."""
    thinking = Completion([Choice(0, "", "length", reasoning="Hmm")], Usage(3, 5, 0, 5))
    assert _message(thinking)["content"] is None
    assert _message(thinking, include_reasoning=False)["content"] is None
    called = Completion([Choice(0, "", "tool_calls", tool_calls=[CALL])], Usage(3, 5))
    assert _message(called)["content"] is None
    assert _message(Completion([Choice(0, "", "stop")], Usage(3, 0)))["content"] == ""


def test_include_reasoning_false_leaves_the_thinking_out() -> None:
    """Whole and streamed: no reasoning fields, the content as it is, the usage unchanged."""
    completion = Completion([Choice(0, "Answer", "stop", reasoning="Because")], Usage(3, 9, 0, 4))
    message = _message(completion, include_reasoning=False)
    assert message == {"role": "assistant", "content": "Answer"}
    renderer = ChunkRenderer(
        "chat", response_id="r", created=1, model="m", fingerprint="fp", include_usage=True,
        include_reasoning=False,
    )  # fmt: skip
    chunks = [
        StreamChunk([ChoiceDelta(0, reasoning="Because")]),
        StreamChunk([ChoiceDelta(0, reasoning=" so")]),
        StreamChunk([ChoiceDelta(0, "Answer", "stop")], Usage(3, 9, 0, 4)),
    ]
    raw = b"".join(renderer.render(chunk) for chunk in chunks)
    assert [d["delta"] for d in _deltas(raw)] == [{"role": "assistant", "content": "Answer"}]
    assert b'"completion_tokens_details":{"reasoning_tokens":4}' in raw


def test_a_whole_call_streams_as_a_head_then_its_arguments() -> None:
    """Text, then the call's id, type, name and empty arguments, then the arguments, then the
    finish: each its own event, as OpenAI streams a call."""
    delta = ChoiceDelta(0, "Let me check.", "tool_calls", tool_calls=[CALL])
    deltas = _deltas(_renderer().render(StreamChunk([delta])))
    assert deltas[0]["delta"] == {"role": "assistant", "content": "Let me check."}
    assert deltas[1]["delta"]["tool_calls"] == [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
    ]
    assert deltas[2]["delta"]["tool_calls"] == [
        {"index": 0, "function": {"arguments": '{"city":"Paris"}'}}
    ]
    assert deltas[3]["finish_reason"] == "tool_calls" and deltas[3]["delta"] == {}
    assert [d["finish_reason"] for d in deltas[:3]] == [None, None, None]


def test_fragments_pass_through_unchanged() -> None:
    """A pass-through backend's fragments are already OpenAI's shape: not split again."""
    fragment = {"index": 0, "function": {"arguments": '{"ci'}}
    deltas = _deltas(_renderer().render(StreamChunk([ChoiceDelta(0, tool_calls=[fragment])])))
    assert [d["delta"].get("tool_calls") for d in deltas] == [[fragment]]


def test_reasoning_streams_under_both_names() -> None:
    """A reasoning delta carries reasoning_content and reasoning."""
    deltas = _deltas(_renderer().render(StreamChunk([ChoiceDelta(0, reasoning="hmm")])))
    assert deltas[0]["delta"]["reasoning_content"] == deltas[0]["delta"]["reasoning"] == "hmm"


def test_a_streamed_upstream_fingerprint_replaces_the_default() -> None:
    """Events show the gateway's fingerprint until a chunk brings the upstream's, then that
    one, as a whole answer shows the upstream's; chunks without one change nothing."""
    renderer = _renderer()
    chunks = [
        StreamChunk([ChoiceDelta(0, "A")]),
        StreamChunk([ChoiceDelta(0, "B")], system_fingerprint="fp_up"),
        StreamChunk([ChoiceDelta(0, "C", "stop")], Usage(1, 3)),
    ]
    events = [orjson.loads(e.removeprefix(b"data: ")) for e in _events(renderer, chunks)]
    assert [event["system_fingerprint"] for event in events] == ["fp", "fp_up", "fp_up", "fp_up"]


def _events(renderer: ChunkRenderer, chunks: list[StreamChunk]) -> list[bytes]:
    raw = b"".join(renderer.render(chunk) for chunk in chunks)
    return [event for event in raw.split(b"\n\n") if event]


def _accumulated(raw: bytes) -> dict[str, Any]:
    """The message the official client accumulates from the deltas (`accumulate_delta`: a key
    missing or null takes the delta's value, strings are joined)."""
    message: dict[str, Any] = {}
    for choice in _deltas(raw):
        for key, value in choice["delta"].items():
            if key == "tool_calls":
                message.setdefault(key, []).extend(value)
            elif message.get(key) is None or not isinstance(value, str):
                message[key] = value
            else:
                message[key] += value
    return message


LOGPROBS: dict[str, list[Any]] = {"content": []}
CUT_THINKING = ChoiceDelta(0, "", "length", thought=True)
NOTHING = Choice(0, "", "length", reasoning="")
SHAPES: list[tuple[list[ChoiceDelta], Choice]] = [
    (
        [ChoiceDelta(0), ChoiceDelta(0, tool_calls=[CALL]), ChoiceDelta(0, "", "tool_calls")],
        Choice(0, "", "tool_calls", tool_calls=[CALL]),
    ),
    ([ChoiceDelta(0), CUT_THINKING], NOTHING),
    ([ChoiceDelta(0, "", logprobs=LOGPROBS), CUT_THINKING], NOTHING),
    ([ChoiceDelta(0, reasoning="r"), CUT_THINKING], Choice(0, "", "length", reasoning="r")),
    (
        [ChoiceDelta(0, reasoning="r"), ChoiceDelta(0, "Hi", "stop", thought=True)],
        Choice(0, "Hi", "stop", reasoning="r"),
    ),
    ([ChoiceDelta(0), ChoiceDelta(0, "Hi"), ChoiceDelta(0, "", "stop")], Choice(0, "Hi", "stop")),
    (
        [ChoiceDelta(0, "", logprobs=LOGPROBS), ChoiceDelta(0, "Hi", "stop")],
        Choice(0, "Hi", "stop"),
    ),
    ([ChoiceDelta(0, "", logprobs=LOGPROBS), ChoiceDelta(0, "", "stop")], Choice(0, "", "stop")),
    ([ChoiceDelta(0), ChoiceDelta(0, "", "length")], Choice(0, "", "length")),
]


def test_streamed_content_adds_up_to_the_whole_answers() -> None:
    """Null or "" alike: the message the client accumulates from the stream has the content
    and thinking of the whole answer, for calls alone, thinking alone, text and nothing."""
    for deltas, choice in SHAPES:
        renderer = _renderer()
        raw = b"".join(renderer.render(StreamChunk([delta])) for delta in deltas)
        streamed = _accumulated(raw)
        whole = _message(Completion([choice], Usage()))
        assert streamed["role"] == "assistant"
        for key in ("content", "reasoning_content"):
            assert (key, streamed.get(key, "absent")) == (key, whole.get(key, "absent")), deltas


def test_a_streamed_call_alone_starts_with_null_content() -> None:
    """As OpenAI's stream: the first delta has the role, content null and the call's head."""
    renderer = _renderer()
    raw = b"".join(
        renderer.render(StreamChunk([delta]))
        for delta in (ChoiceDelta(0), ChoiceDelta(0, tool_calls=[CALL]))
    )
    first = _deltas(raw)[0]["delta"]
    assert first["role"] == "assistant" and first["content"] is None
    assert first["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
