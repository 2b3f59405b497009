"""Messages sent back as history: an appended answer's response fields are resolved, and each
role has what it needs."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request

USER = {"role": "user", "content": "hi"}


def _parse(*messages: dict[str, Any]) -> ChatCompletionRequest:
    return parse_request(
        orjson.dumps({"model": "m", "messages": list(messages)}), ChatCompletionRequest
    )


def test_an_appended_answer_is_accepted() -> None:
    """`message.model_dump()` of an answer (null refusal, audio, function call) is history."""
    answer: dict[str, Any] = {
        "role": "assistant",
        "content": "Hello",
        "refusal": None,
        "annotations": [],
        "audio": None,
        "function_call": None,
        "tool_calls": None,
    }
    body = _parse(USER, answer, {"role": "user", "content": "more"})
    assert body.messages[1].content == "Hello"


@pytest.mark.parametrize(
    "thinking",
    [{"reasoning": "r"}, {"reasoning": "r", "reasoning_content": "r"}, {"reasoning_content": "r"}],
)
def test_an_appended_thinking_is_reasoning_content(thinking: dict[str, str]) -> None:
    """A reasoning answer's `reasoning` (vLLM's new name) is read as `reasoning_content`."""
    body = _parse(USER, {"role": "assistant", "content": "a", **thinking}, USER)
    assert body.messages[1].reasoning_content == "r"


def test_a_refusal_is_what_the_assistant_said() -> None:
    """An appended refusal becomes the assistant message's content."""
    body = _parse(USER, {"role": "assistant", "content": None, "refusal": "I can't help."})
    assert body.messages[1].content == "I can't help."


@pytest.mark.parametrize(
    ("message", "param", "error"),
    [
        (
            {"role": "assistant", "content": None, "audio": {"id": "a"}},
            "audio",
            UnsupportedParameter,
        ),
        (
            {"role": "assistant", "function_call": {"name": "f"}},
            "function_call",
            UnsupportedParameter,
        ),
        ({"role": "assistant", "content": "a", "refusal": "b"}, "refusal", InvalidRequest),
        ({"role": "user", "content": None, "refusal": "b"}, "refusal", InvalidRequest),
        ({"role": "assistant", "content": "a", "reasoning": ["r"]}, "reasoning", InvalidRequest),
    ],
)
def test_response_fields_that_cannot_be_replayed(
    message: dict[str, Any], param: str, error: type[InvalidRequest]
) -> None:
    """Audio, a legacy function call, or a refusal beside content: a 400 naming it."""
    with pytest.raises(error) as caught:
        _parse(USER, message)
    assert caught.value.param == f"messages[1].{param}"


@pytest.mark.parametrize(
    ("message", "param"),
    [
        ({"role": "user"}, "content"),
        ({"role": "system", "content": None}, "content"),
        ({"role": "user", "content": []}, "content"),
        ({"role": "tool", "content": "42"}, "tool_call_id"),
        ({"role": "assistant", "content": None}, "content"),
    ],
)
def test_each_role_has_what_it_needs(message: dict[str, Any], param: str) -> None:
    """A message missing what its role needs is a 400 naming the field."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(USER, message)
    assert caught.value.param == f"messages[1].{param}"


def test_an_assistant_turn_of_calls_needs_no_content() -> None:
    """An assistant message with tool calls, and the tool's answer, are history as they are."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = _parse(
        USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    )
    assert len(body.messages) == 3


@pytest.mark.parametrize(
    "answers",
    [
        [{"role": "tool", "tool_call_id": "nope", "content": "x"}],
        [
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
            {"role": "tool", "tool_call_id": "c1", "content": "43"},
        ],
    ],
)
def test_a_tool_output_answers_a_call_made_before_it_once(answers: list[dict[str, Any]]) -> None:
    """An output for a call no assistant message made, or a second one, is a 400 naming it."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with pytest.raises(InvalidRequest, match="No tool call found") as caught:
        _parse(USER, {"role": "assistant", "content": None, "tool_calls": [call]}, *answers)
    assert caught.value.param == f"messages[{1 + len(answers)}].tool_call_id"


def _call(call_id: str, arguments: Any = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


@pytest.mark.parametrize(
    "after",
    [[USER], [{"role": "assistant", "content": "done"}], [{"role": "system", "content": "s"}]],
)
def test_every_call_is_answered_before_the_conversation_goes_on(
    after: list[dict[str, Any]],
) -> None:
    """Two calls, one answered, then another turn: a 400 naming the turn and the call left."""
    calls = {"role": "assistant", "content": None, "tool_calls": [_call("c1"), _call("c2")]}
    answer = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    with pytest.raises(InvalidRequest, match="did not have response messages: c2") as caught:
        _parse(USER, calls, answer, *after)
    assert caught.value.param == "messages[1].tool_calls"
    assert len(_parse(USER, calls, answer).messages) == 3  # still to answer: the turn ends there


@pytest.mark.parametrize(
    ("arguments", "kind"), [({"city": "Paris"}, "an object"), ([1], "an array"), (None, "null")]
)
def test_call_arguments_are_a_string(arguments: Any, kind: str) -> None:
    """Arguments sent as JSON rather than its text, or null, are a 400 naming them, as
    OpenAI's."""
    calls = {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("c1"), _call("c2", arguments)],
    }
    with pytest.raises(InvalidRequest, match=f"expected a string, but got {kind}") as caught:
        _parse(USER, calls)
    assert caught.value.param == "messages[1].tool_calls[1].function.arguments"
