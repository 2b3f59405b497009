"""The Mistral parser: `[TOOL_CALLS]` then a JSON array of calls (older models) or
`NAME[ARGS]{...}` per call (newer ones); malformed markup stays text; the same result however
the output is split."""

from __future__ import annotations

from backends.tool_calls.mistral import MistralParser
from tests.backends.tool_calls.helpers import (
    TOOLS,
    Case,
    one_char_at_a_time,
)
from tests.backends.tool_calls.split_suite import split_tests

ARRAY = (
    '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Oslo"}}, '
    '{"name": "search", "arguments": {"q": "[x]"}}]'
)
BROKEN_ARGS = '[TOOL_CALLS]get_weather[ARGS]{"city": } sorry'
CASES: list[Case] = [
    ("Just text, no tools used.", "Just text, no tools used.", []),
    ('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', "", [("get_weather", {"city": "Paris"})]),
    (  # the token inside a JSON string is the arguments' text
        '[TOOL_CALLS]search[ARGS]{"q": "[TOOL_CALLS]x", "n": [1]}[TOOL_CALLS]get_weather[ARGS]{}',
        "",
        [("search", {"q": "[TOOL_CALLS]x", "n": [1]}), ("get_weather", {})],
    ),
    (ARRAY, "", [("get_weather", {"city": "Oslo"}), ("search", {"q": "[x]"})]),
    (
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}[TOOL_CALLS]search[ARGS]{"q": "}"}',
        "",
        [("get_weather", {"city": "Rome"}), ("search", {"q": "}"})],
    ),
    (
        'Let me check.[TOOL_CALLS]search[CALL_ID]a1B2c3D4e[ARGS]{"q": "y"}',
        "Let me check.",
        [("search", {"q": "y"})],
    ),
    (BROKEN_ARGS, "} sorry", [("get_weather", '{"city": ')]),  # its header was sent
    ('[TOOL_CALLS]launch[ARGS]{"x": 1}', '[TOOL_CALLS]launch[ARGS]{"x": 1}', []),
    (
        '[TOOL_CALLS][{"name": "search", "arguments": {}}, {"name": "launch", "arguments": {}}]',
        '[TOOL_CALLS][{"name": "search", "arguments": {}}, {"name": "launch", "arguments": {}}]',
        [],
    ),
    ("Use [TOOL or [ARGS] here, [TOOL_CA", "Use [TOOL or [ARGS] here, [TOOL_CA", []),
    ("[TOOL_CALLS] is a token", "[TOOL_CALLS] is a token", []),
    ("[TOOL_CALLS]search then words", "[TOOL_CALLS]search then words", []),
    ('[TOOL_CALLS]search{"q": "z"} done', " done", [("search", {"q": "z"})]),
    ('[TOOL_CALLS]search[ARGS]{"q": "cut', "", [("search", '{"q": "cut')]),
    (
        '[TOOL_CALLS]launch[ARGS]{"q": "cut',
        '[TOOL_CALLS]launch[ARGS]{"q": "cut',
        [],
    ),
    ('[TOOL_CALLS]search[ARGS]"{\\"q\\": 1}"', '[TOOL_CALLS]search[ARGS]"{\\"q\\": 1}"', []),
]


def _parser() -> MistralParser:
    return MistralParser(TOOLS)


(
    test_parses_whole_output,
    test_any_split_gives_the_same_result,
    test_random_splits_give_the_same_result,
) = split_tests(_parser, CASES)


def test_each_named_call_leaves_as_soon_as_its_arguments_open() -> None:
    """A call's header leaves with its arguments' `{`, its arguments as they come; text
    before the calls leaves at once."""
    first = 'Ok.[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}'
    results = one_char_at_a_time(_parser, first + '[TOOL_CALLS]search[ARGS]{"q": "}"}')
    assert "".join(r.content for r in results[:3]) == "Ok."
    assert [len(r.calls) for r in results].index(1) == first.index("{")
    assert "".join(r.arguments for r in results[: len(first)]) == '"city": "Rome"}'
