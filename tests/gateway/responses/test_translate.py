"""Responses API input as the chat completion the pipeline serves: roles, text parts, calls
and their outputs, reasoning, history, tools and formats; bad items are 400s naming them."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatMessage
from core.responses_protocol import ResponsesRequest
from gateway.responses.translate import chat_request, input_items


def _messages(
    request: ResponsesRequest, history: list[dict[str, Any]] | None = None
) -> list[ChatMessage]:
    return chat_request(request, history or [], input_items(request))[0].messages


def test_a_string_input_with_instructions() -> None:
    """Instructions become the system message, a string input the user's."""
    request = ResponsesRequest(model="m", input="Hi", instructions="Be brief.")
    messages = _messages(request)
    assert [(m.role, m.content) for m in messages] == [("system", "Be brief."), ("user", "Hi")]


def test_items_map_onto_one_assistant_turn_per_call_group() -> None:
    """Reasoning, text and consecutive calls are one assistant message; outputs are tool
    messages answering their call ids; text parts are joined by a line break, as vLLM joins a
    chat message's parts (never glued: "Hello there" + "general Kenobi")."""
    items: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Weather "},
                {"type": "input_text", "text": "twice?"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "Two calls."}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking."}],
        },
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": '{"city":"A"}'},
        {"type": "function_call", "call_id": "c2", "name": "w", "arguments": '{"city":"B"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sun"},
        {"type": "function_call_output", "call_id": "c2", "output": "rain"},
    ]
    messages = _messages(ResponsesRequest(model="m", input=items))
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[0].content == "Weather \ntwice?"
    assistant = messages[1]
    assert assistant.content == "Checking." and assistant.reasoning_content == "Two calls."
    assert [c["id"] for c in assistant.tool_calls or ()] == ["c1", "c2"]
    assert [(m.tool_call_id, m.content) for m in messages[2:]] == [("c1", "sun"), ("c2", "rain")]


def test_history_comes_before_the_new_input_and_instructions_first() -> None:
    """A stored conversation is replayed before the new input; instructions are not inherited
    but lead the prompt when given."""
    history: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "First"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "One"}],
        },
    ]
    request = ResponsesRequest(model="m", input="Second", instructions="Sys")
    assert [(m.role, m.content) for m in _messages(request, history)] == [
        ("system", "Sys"),
        ("user", "First"),
        ("assistant", "One"),
        ("user", "Second"),
    ]


def test_tools_choice_format_and_limits() -> None:
    """Function tools, tool_choice by name, text.format and max_output_tokens carry over."""
    request = ResponsesRequest.model_validate(
        {
            "model": "m",
            "input": "x",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "f"},
            "text": {
                "format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}
            },
            "max_output_tokens": 9,
            "stream": True,
        }
    )
    body, _ = chat_request(request, [], input_items(request))
    assert body.tools == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ]
    assert body.tool_choice == {"type": "function", "function": {"name": "f"}}
    assert body.response_format is not None and body.response_format.type == "json_schema"
    assert body.max_completion_tokens == 9 and body.include_usage


def test_effort_verbosity_and_hints_carry_over() -> None:
    """reasoning.effort and text.verbosity become chat's reasoning_effort and verbosity, and
    the hints and the service tier go along (to a pass-through backend), so both APIs treat
    them alike."""
    request = ResponsesRequest.model_validate(
        {
            "model": "m",
            "input": "x",
            "reasoning": {"effort": "low"},
            "text": {"verbosity": "high"},
            "prompt_cache_key": "p",
            "safety_identifier": "s",
            "service_tier": "default",
        }
    )
    body, _ = chat_request(request, [], input_items(request))
    assert (body.reasoning_effort, body.verbosity) == ("low", "high")
    assert (body.prompt_cache_key, body.safety_identifier) == ("p", "s")
    assert body.service_tier == "default"
    assert body.chat_template_kwargs is None


@pytest.mark.parametrize(
    ("item", "param"),
    [
        (
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_image", "image_url": "x"}],
            },
            "input[0].content[0]",
        ),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "input[0].call_id"),
        (
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}},
            "input[0].arguments",
        ),
        ({"type": "item_reference", "id": "x"}, "input[0].type"),
        (
            {"role": "user", "content": [{"type": "output_text", "text": "x"}]},
            "input[0].content[0].type",
        ),
        (
            {"role": "developer", "content": [{"type": "refusal", "refusal": "x"}]},
            "input[0].content[0].type",
        ),
        (
            {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]},
            "input[0].content[0].type",
        ),
        (
            {"role": "assistant", "content": [{"type": "input_image", "image_url": "x"}]},
            "input[0].content[0].type",
        ),
        ({"type": "message", "role": "robot", "content": "x"}, "input[0].role"),
    ],
)
def test_bad_items_are_400s_naming_them(item: dict[str, Any], param: str) -> None:
    """Images, missing ids, arguments that are not a string, unknown item types and roles, and
    parts of the other side's kind (a user's output_text, an assistant's input_text: as
    OpenAI's, an invalid value) are refused."""
    with pytest.raises(InvalidRequest) as refused:
        _messages(ResponsesRequest(model="m", input=[item]))
    assert refused.value.param == param


def test_a_chat_check_names_the_item_it_came_from() -> None:
    """An output answering no call names its item's call_id, counted in the input (not in
    the chat messages, which the instructions and merged calls shift)."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "function_call_output", "call_id": "c2", "output": "2"},
        {"type": "function_call_output", "call_id": "c9", "output": "3"},
    ]
    request = ResponsesRequest(model="m", input=items, instructions="Be brief.")
    with pytest.raises(InvalidRequest) as refused:
        _messages(request)
    assert refused.value.param == "input[5].call_id"


def test_hosted_tools_and_background_are_refused() -> None:
    """The gateway runs no hosted tools and no background responses."""
    with pytest.raises(UnsupportedParameter) as tool:
        ResponsesRequest.model_validate(
            {"model": "m", "input": "x", "tools": [{"type": "file_search"}]}
        )
    assert tool.value.param == "tools[0].type"
    with pytest.raises(UnsupportedParameter) as background:
        ResponsesRequest.model_validate({"model": "m", "input": "x", "background": True})
    assert background.value.param == "background"


def test_input_with_nothing_to_answer_is_a_400() -> None:
    """Only a reasoning item leaves no message: a 400 naming the input."""
    item = {"type": "reasoning", "id": "rs", "summary": []}
    with pytest.raises(InvalidRequest) as refused:
        _messages(ResponsesRequest(model="m", input=[item]))
    assert refused.value.param == "input"


def test_a_call_with_broken_arguments_can_be_answered() -> None:
    """A model's call whose arguments are not JSON (stored, or echoed back by the Agents SDK)
    still translates, with its output: the conversation goes on."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{not json"},
        {"type": "function_call_output", "call_id": "c1", "output": "sun"},
    ]
    messages = _messages(ResponsesRequest(model="m", input=items))
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert (messages[1].tool_calls or [])[0]["function"]["arguments"] == "{not json"


def test_a_call_output_takes_input_parts() -> None:
    """A function_call_output's parts are input parts: output_text is an invalid value."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "output_text", "text": "sun"}],
        },
    ]
    with pytest.raises(InvalidRequest) as refused:
        _messages(ResponsesRequest(model="m", input=items))
    assert refused.value.param == "input[2].output[0].type"
    assert refused.value.message.startswith("Invalid value: 'output_text'.")


@pytest.mark.parametrize("where", ["history", "input"])
def test_a_call_left_unanswered_is_a_400(where: str) -> None:
    """Every call made must be answered by an output after it, in the stored conversation
    or this input: else OpenAI's 400 naming the input and the call."""
    call = {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{}"}
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather?"}]
    items: list[dict[str, Any]] = [{"role": "user", "content": "Never mind."}]
    (history if where == "history" else items).insert(1 if where == "history" else 0, call)
    request = ResponsesRequest(model="m", input=items)
    with pytest.raises(InvalidRequest) as refused:
        chat_request(request, history, input_items(request))
    assert refused.value.param == "input"
    assert refused.value.message == "No tool output found for function call call_1."


def test_an_output_answering_no_call_is_named_before_the_call_it_leaves() -> None:
    """An output whose call_id matches no call before it is the client's mistake: a 400
    naming its call_id, even where a call is then left unanswered too (that was named)."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_zz", "output": "sun"},
    ]
    request = ResponsesRequest(model="m", input=items)
    with pytest.raises(InvalidRequest) as refused:
        chat_request(request, [], input_items(request))
    assert refused.value.param == "input[2].call_id"
    assert "call_zz" in refused.value.message


def test_answered_and_cut_calls_need_no_output_now() -> None:
    """A call answered earlier in the chain needs nothing more; a call a failure cut short
    (`incomplete`) was never made."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sun"},
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "w",
            "arguments": "{",
            "status": "incomplete",
        },
    ]
    request = ResponsesRequest(model="m", input="And tomorrow?")
    chat, _ = chat_request(request, history, input_items(request))
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool", "user"]
    assert chat.messages[-1].content == "And tomorrow?"


def test_logprobs_are_asked_of_chat_when_included() -> None:
    """`include` output text logprobs asks chat for logprobs with `top_logprobs`
    alternatives (none unless said); `top_logprobs` alone asks for none."""
    included = ["message.output_text.logprobs"]
    cases: list[tuple[dict[str, Any], tuple[bool | None, int | None]]] = [
        ({"include": included, "top_logprobs": 3}, (True, 3)),
        ({"include": included}, (True, 0)),
        ({"top_logprobs": 3}, (False, None)),
    ]
    for fields, expected in cases:
        request = ResponsesRequest.model_validate({"model": "m", "input": "x", **fields})
        chat = chat_request(request, [], input_items(request))[0]
        assert (chat.logprobs, chat.top_logprobs) == expected
