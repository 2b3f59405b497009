"""The DeepSeek V3 / R1 parser (and V3.1's shorter calls): calls out of the fullwidth-token
markup, text kept, malformed calls returned as text, the same result however it is split."""

from __future__ import annotations

from backends.tool_calls.deepseek_v3 import DeepSeekV3Parser
from tests.backends.tool_calls.helpers import (
    TOOLS,
    Case,
    one_char_at_a_time,
)
from tests.backends.tool_calls.split_suite import split_tests

BEGIN, END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"


def _call(name: str, arguments: str, kind: str = "function") -> str:
    return (
        f"<｜tool▁call▁begin｜>{kind}<｜tool▁sep｜>{name}\n```json\n{arguments}\n```"
        "<｜tool▁call▁end｜>"
    )


WEATHER = _call("get_weather", '{"city": "Paris"}')
SEARCH = _call("search", '{"q": "```"}')
BAD = _call("get_weather", '{"city": }')
UNKNOWN = _call("launch", "{}")
V31 = '<｜tool▁call▁begin｜>search<｜tool▁sep｜>{"q": "v"}<｜tool▁call▁end｜>'
CASES: list[Case] = [
    ("Just text, no tools used.", "Just text, no tools used.", []),
    (f"{BEGIN}{WEATHER}{END}", "", [("get_weather", {"city": "Paris"})]),
    (
        f"{BEGIN}{WEATHER}\n{SEARCH}{END}",
        "",
        [("get_weather", {"city": "Paris"}), ("search", {"q": "```"})],
    ),
    (f"Let me check.\n\n{BEGIN}{SEARCH}{END}", "Let me check.\n\n", [("search", {"q": "```"})]),
    (f"{BEGIN}{BAD}{END} sorry", " sorry", [("get_weather", '{"city": ')]),  # header sent
    (f"{BEGIN}{UNKNOWN}{END}", f"{BEGIN}{UNKNOWN}{END}", []),
    (
        f"{BEGIN}{BAD}\n{WEATHER}{END}",
        "",
        [("get_weather", '{"city": '), ("get_weather", {"city": "Paris"})],
    ),
    (
        f"{BEGIN}{UNKNOWN}\n{WEATHER}{END}",
        f"{BEGIN}{UNKNOWN}",
        [("get_weather", {"city": "Paris"})],
    ),
    (
        f"{BEGIN}{_call('search', '{}', kind='method')}{END}",
        f"{BEGIN}{_call('search', '{}', kind='method')}{END}",
        [],
    ),
    (
        "Tokens like <｜tool▁calls or <｜tool▁sep｜> alone, and <｜tool",
        "Tokens like <｜tool▁calls or <｜tool▁sep｜> alone, and <｜tool",
        [],
    ),
    (f"{BEGIN} then words", f"{BEGIN} then words", []),
    (f"{BEGIN}{V31}{END}", "", [("search", {"q": "v"})]),
    (f"{BEGIN}{WEATHER}{END}Done.", "Done.", [("get_weather", {"city": "Paris"})]),
    (f"{BEGIN}{WEATHER}\nDone.", "\nDone.", [("get_weather", {"city": "Paris"})]),
    (
        f"{BEGIN}<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{{}}\n```",
        "",
        [("search", {})],
    ),
    (
        f'{BEGIN}<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{{"q": ',
        "",
        [("search", '{"q": ')],
    ),
    (
        f'{BEGIN}<｜tool▁call▁begin｜>function<｜tool▁sep｜>launch\n```json\n{{"q": ',
        f'{BEGIN}<｜tool▁call▁begin｜>function<｜tool▁sep｜>launch\n```json\n{{"q": ',
        [],
    ),
]


def _parser() -> DeepSeekV3Parser:
    return DeepSeekV3Parser(TOOLS)


(
    test_parses_whole_output,
    test_any_split_gives_the_same_result,
    test_random_splits_give_the_same_result,
) = split_tests(_parser, CASES)


def test_each_call_leaves_with_its_arguments_brace() -> None:
    """A call's header leaves once its arguments' `{` is read, its arguments as they come; the
    first call does not wait for the second or for the section's end."""
    head = f"Ok. {BEGIN}{WEATHER}"
    results = one_char_at_a_time(_parser, f"{head}\n{SEARCH}{END}")
    assert "".join(r.content for r in results[:4]) == "Ok. "
    assert [len(r.calls) for r in results].index(1) == head.index("{")
    assert "".join(r.arguments for r in results[: len(head)]) == '"city": "Paris"}'
