"""The Hermes/Qwen tool-call parser: calls out, text kept, malformed markup returned as text,
and the same result however the output is split into pieces."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.tool_calls.hermes import HermesParser
from tests.backends.tool_calls.helpers import TOOLS as FUNCTIONS
from tests.backends.tool_calls.helpers import cut, parse_pieces

TOOLS = ("get_weather", "search")


def _whole(parser: HermesParser, pieces: list[str]) -> tuple[str, list[tuple[str, object]]]:
    """Content and (name, arguments) of every call, feeding `pieces` one by one."""
    return parse_pieces(parser, pieces)


CASES = [
    ("Just text, no tools used.", "Just text, no tools used.", []),
    (  # a closing tag inside a JSON string is the arguments' text, not the call's end
        '<tool_call>{"name": "search", "arguments": {"q": "</tool_call>"}}</tool_call>ok',
        "ok",
        [("search", {"q": "</tool_call>"})],
    ),
    (  # members after the arguments are markup, markers in their strings too
        '<tool_call>{"name": "search", "arguments": {"q": 1}, "x": "</tool_call>"}</tool_call>',
        "",
        [("search", {"q": 1})],
    ),
    (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        "",
        [("get_weather", {"city": "Paris"})],
    ),
    (
        'Let me check. <tool_call>{"name": "search", "arguments": {"q": "a<b"}}</tool_call>',
        "Let me check. ",
        [("search", {"q": "a<b"})],
    ),
    (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>\n'
        '<tool_call>{"name": "search", "arguments": {}}</tool_call>',
        "\n",
        [("get_weather", {"city": "Oslo"}), ("search", {})],
    ),
    (  # the header was sent: the call stays, its arguments what was valid of them
        '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> sorry',
        " sorry",
        [("get_weather", '{"city": ')],
    ),
    (  # a name after the arguments: read whole
        '<tool_call>{"arguments": {"city": "Oslo"}, "name": "get_weather"}</tool_call>',
        "",
        [("get_weather", {"city": "Oslo"})],
    ),
    (
        '<tool_call>{"name": "search", "arguments": {"q": 1} , }\n</tool_call>ok',
        "ok",
        [("search", {"q": 1})],
    ),
    (
        '<tool_call>{"name": "launch_missiles", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "launch_missiles", "arguments": {}}</tool_call>',
        [],
    ),
    ("Use <tool for this, or <tool_c", "Use <tool for this, or <tool_c", []),
    (
        '<tool_call>{"name": "search", "arguments": {"q": "x"}}',
        "",
        [("search", {"q": "x"})],
    ),
    (
        '<tool_call>{"name": "search", "arguments": "{\\"q\\": \\"y\\"}"}</tool_call>',
        "",
        [("search", {"q": "y"})],
    ),
]


@pytest.mark.parametrize(("output", "content", "calls"), CASES)
def test_parses_whole_output(output: str, content: str, calls: list[tuple[str, object]]) -> None:
    """Each output gives its content and calls (ids aside)."""
    assert _whole(HermesParser(TOOLS), [output]) == (content, calls)


@pytest.mark.parametrize(("output", "content", "calls"), CASES)
def test_any_split_gives_the_same_result(
    output: str, content: str, calls: list[tuple[str, object]]
) -> None:
    """Split at every pair of points (as tokens arrive), the result is the whole output's."""
    for first, second in itertools.combinations(range(len(output) + 1), 2):
        pieces = [output[:first], output[first:second], output[second:]]
        assert _whole(HermesParser(TOOLS), pieces) == (content, calls), pieces


@given(st.sampled_from(CASES), st.lists(st.integers(min_value=0), max_size=12))
def test_random_splits_give_the_same_result(
    case: tuple[str, str, list[tuple[str, object]]], points: list[int]
) -> None:
    """Split anywhere into many pieces, the result is the whole output's."""
    output, content, calls = case
    assert _whole(HermesParser(TOOLS), cut(output, points)) == (content, calls)


def test_functions_with_schemas_work_as_names_do() -> None:
    """Built from the request's functions (name -> schema), it reads the same calls."""
    for output, content, calls in CASES:
        assert _whole(HermesParser(FUNCTIONS), [output]) == (content, calls)


def test_text_before_a_call_streams_before_the_call_is_complete() -> None:
    """Plain text leaves at once; only a tail that may open a tag is held back."""
    parser = HermesParser(TOOLS)
    assert parser.feed("Checking the <to").content == "Checking the "
    assert parser.feed('ol_call>{"name": "search"').content == ""
    done = parser.feed(', "arguments": {}}</tool_call>')
    assert done.content == "" and [c.name for c in done.calls] == ["search"]
    assert done.calls[0].id.startswith("call_")
