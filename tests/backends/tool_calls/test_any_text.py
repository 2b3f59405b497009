"""Every parser on arbitrary text made of its markup's pieces: never an exception, the same
result however the text is split, and nothing lost when no call comes out of it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.tool_calls.choice import PARSERS
from tests.backends.origins import copied
from tests.backends.tool_calls.helpers import TOOLS, cut, parse_pieces

FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<function=search>", "<function=launch>", "</function>",
    "<parameter=q>", "<parameter=limit>", "</parameter>", "<|python_tag|>", "[TOOL_CALLS]",
    "[ARGS]", "[CALL_ID]", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "function", "```json\n", "```",
    "<|python_start|>", "<|python_end|>", '{"name": "search", ', '"arguments": {}}',
    '"parameters": {"q": "x"}}', '{"q": 1}', "search", "launch", "(q='a')", "(limit=2)", "[", "]",
    "{", "}", "(", ")", '"', "'", "\\", ";", ",", " ", "\n", "<", "text", "1",
    "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>", "assistant",
    "commentary to=functions.search ", " to=functions.launch", "json",
    # whole calls, one per format, so that calls mix with the soup
    '<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>',
    "<tool_call>\n<function=search>\n<parameter=limit>\n2\n</parameter>\n</function>\n</tool_call>",
    '{"name": "search", "parameters": {}}',
    '[TOOL_CALLS]search[ARGS]{"q": "y"}',
    '[TOOL_CALLS][{"name": "search", "arguments": {}}]',
    '<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{"q": "z"}'
    "\n```<｜tool▁call▁end｜>",
    "\n[search(q='w'), get_weather(city='v')]",
    '<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>'
    '{"q": "h"}<|call|>',
]  # fmt: skip


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_text_gives_one_result_however_split(name: str, data: st.DataObject) -> None:
    """Random markup soup: no exception, splits agree, and no calls means all text."""
    text = "".join(data.draw(st.lists(st.sampled_from(FRAGMENTS), max_size=25)))
    points = data.draw(st.lists(st.integers(min_value=0), max_size=10))
    whole = parse_pieces(PARSERS[name](TOOLS), [text])
    assert parse_pieces(PARSERS[name](TOOLS), cut(text, points)) == whole
    assert parse_pieces(PARSERS[name](TOOLS), list(text)) == whole
    if not whole[1]:
        assert whole[0] == text


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_content_is_a_copy_of_the_text_where_it_says(name: str, data: st.DataObject) -> None:
    """Every piece of content comes with where it stands in the text (never written by the
    parser), so that a call's markup tokens can be told from the content's."""
    text = "".join(data.draw(st.lists(st.sampled_from(FRAGMENTS), max_size=25)))
    points = data.draw(st.lists(st.integers(min_value=0), max_size=10))
    cut_short = data.draw(st.booleans())
    parser = PARSERS[name](TOOLS)
    results = [parser.feed(piece) for piece in cut(text, points)]
    results.append(parser.finish(cut=cut_short))
    content = "".join(r.content for r in results)
    copied(text, content, [p for r in results for p in r.origin], written=set())
