"""parallel_tool_calls false: only the first call of an answer is kept, whatever the pieces."""

from __future__ import annotations

import orjson

from backends.tool_calls.choice import tool_parser
from backends.tool_calls.single import FirstCallOnly
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from tests.backends.tool_calls.helpers import call_values

TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
CALL = '<tool_call>{"name": "f", "arguments": {"a": %d}}</tool_call>'
TWO = "Ok." + CALL % 1 + CALL % 2


def _body(**fields: object) -> ChatCompletionRequest:
    payload = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [TOOL]}
    return parse_request(orjson.dumps({**payload, **fields}), ChatCompletionRequest)


def test_only_the_first_call_is_kept() -> None:
    """Two calls in the output, one in the answer; the text stays."""
    parser = tool_parser(_body(parallel_tool_calls=False), "hermes", "")
    assert isinstance(parser, FirstCallOnly)
    pieces = [parser.feed(TWO[i : i + 7]) for i in range(0, len(TWO), 7)] + [parser.finish()]
    assert call_values(pieces) == [("f", {"a": 1})]
    assert "".join(piece.content for piece in pieces) == "Ok."
    assert parser.finish_reason == "tool_calls"


def test_parallel_calls_are_the_default() -> None:
    """Unset or true, every call is kept."""
    for fields in ({}, {"parallel_tool_calls": True}):
        parser = tool_parser(_body(**fields), "hermes", "")
        assert parser is not None and not isinstance(parser, FirstCallOnly)
        assert len(parser.feed(TWO).calls + parser.finish().calls) == 2


def test_a_later_calls_streamed_arguments_are_dropped_too() -> None:
    """Fed a character at a time, the second call's header and arguments never come out."""
    parser = tool_parser(_body(parallel_tool_calls=False), "hermes", "")
    assert parser is not None
    pieces = [*(parser.feed(char) for char in TWO), parser.finish()]
    assert call_values(pieces) == [("f", {"a": 1})]
