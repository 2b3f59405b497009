"""The Llama 3 JSON parser: calls after `<|python_tag|>` or as a bare object opening the
answer, several separated by `;`; any other JSON, or a malformed call, stays text; the same
result however the output is split."""

from __future__ import annotations

from backends.tool_calls.llama3_json import Llama3JsonParser
from tests.backends.tool_calls.helpers import (
    TOOLS,
    Case,
    one_char_at_a_time,
)
from tests.backends.tool_calls.split_suite import split_tests

WEATHER = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
BROKEN_CALL = '<|python_tag|>{"name": "get_weather", "parameters": {"city": }} sorry'
CASES: list[Case] = [
    ("Just text, no tools used.", "Just text, no tools used.", []),
    (WEATHER, "", [("get_weather", {"city": "Paris"})]),
    (  # members after the arguments are markup, as in the call read whole
        '{"name": "search", "parameters": {"q": "x"}, "x": {"y": "}"}} tail',
        " tail",
        [("search", {"q": "x"})],
    ),
    (
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}; '
        '{"name": "search", "arguments": {"q": "x"}}',
        "",
        [("get_weather", {"city": "Oslo"}), ("search", {"q": "x"})],
    ),
    (
        'Checking now. <|python_tag|>{"name": "search", "parameters": {"q": "a;b}"}}',
        "Checking now. ",
        [("search", {"q": "a;b}"})],
    ),
    (BROKEN_CALL, "} sorry", [("get_weather", '{"city": ')]),  # its header was sent
    ('{"name": "launch", "parameters": {}}', '{"name": "launch", "parameters": {}}', []),
    ('{"answer": 42} is the JSON', '{"answer": 42} is the JSON', []),
    ('{"name": "search"} lacks parameters', '{"name": "search"} lacks parameters', []),
    ("Use <|python_ta or {braces} later <|pyt", "Use <|python_ta or {braces} later <|pyt", []),
    ('\n {"name": "search", "parameters": {}}', "", [("search", {})]),
    ('{"name": "search", "parameters": {}}\nDone.', "\nDone.", [("search", {})]),
    ('{"name": "search", "parameters": {}} ;\n', "", [("search", {})]),
    ('<|python_tag|>{"name": "search", "parameters": {"q": "x"}', "", [("search", {"q": "x"})]),
    (
        '<|python_tag|>brave_search.call(query="x")',
        '<|python_tag|>brave_search.call(query="x")',
        [],
    ),
    ('{"name": "search", "parameters": "{\\"q\\": \\"y\\"}"}', "", [("search", {"q": "y"})]),
    ('{"name": "search", "parameters": {"q": "a\nb"}} then', 'b"}} then', [("search", '{"q": "a')]),
    (
        '{"parameters": {"q": "a\nb"}, "name": "search"} then',
        '{"parameters": {"q": "a\nb"}, "name": "search"} then',
        [],
    ),
    (
        '{"name": "search", "parameters": {}}; {"oops": 1}',
        '; {"oops": 1}',
        [("search", {})],
    ),
]


def _parser() -> Llama3JsonParser:
    return Llama3JsonParser(TOOLS)


(
    test_parses_whole_output,
    test_any_split_gives_the_same_result,
    test_random_splits_give_the_same_result,
) = split_tests(_parser, CASES)


def test_text_streams_before_the_tag_and_the_call_leaves_with_its_arguments_brace() -> None:
    """Text leaves at once (the tag's possible start held back); the call once its name and
    its arguments' `{` are read, then its arguments as they come."""
    output = f"Sure. <|python_tag|>{WEATHER}"
    results = one_char_at_a_time(_parser, output)
    assert "".join(r.content for r in results[:6]) == "Sure. "
    assert [len(r.calls) for r in results].index(1) == output.index('{"city"')
    assert "".join(r.arguments for r in results) == '"city": "Paris"}'


def test_a_bare_answer_that_is_not_a_call_streams_once_its_object_closes() -> None:
    """An answer opening with JSON waits only for that object, then is text."""
    parser = _parser()
    assert parser.feed('{"answer": ').content == ""
    assert parser.feed("42} and more").content == '{"answer": 42} and more'
