"""Streamed calls in every JSON-arguments format: the header leaves as soon as the name and the
arguments' `{` are read, the arguments follow as written, and their pieces add up to exactly
the arguments of the same answer read whole (the model's own text)."""

from __future__ import annotations

import pytest

from backends.tool_calls.choice import PARSERS
from tests.backends.tool_calls.helpers import TOOLS, one_char_at_a_time, whole_calls

ARGUMENTS = '{"q": "def f(x):\\n    return {\\"a\\": [x]}", "limit": 3,\n "exact": true}'
OUTPUTS = {
    "hermes": f'Ok. <tool_call>\n{{"name": "search", "arguments": {ARGUMENTS}}}\n</tool_call>',
    "llama3_json": f'Ok. <|python_tag|>{{"name": "search", "parameters": {ARGUMENTS}}}',
    "mistral": f"Ok. [TOOL_CALLS]search[ARGS]{ARGUMENTS}",
    "deepseek_v3": (
        "Ok. <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n"
        f"```json\n{ARGUMENTS}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "harmony": (
        "Ok. <|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json"
        f"<|message|>{ARGUMENTS}<|call|>"
    ),
}


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_the_header_leaves_first_then_the_arguments_as_written(name: str) -> None:
    """A character at a time: the call begins at its arguments' `{`, each later character of
    the arguments leaves with it or soon after, and all of them add up to the model's text."""
    output = OUTPUTS[name]
    results = one_char_at_a_time(lambda: PARSERS[name](TOOLS), output)
    begun = [i for i, r in enumerate(results) if r.calls]
    assert begun == [output.index(ARGUMENTS)]
    pieces = [r.arguments for r in results if r.arguments]
    assert len(pieces) > len(ARGUMENTS) // 2
    assert whole_calls(results) == [("search", ARGUMENTS)]
    assert "".join(r.content for r in results) == "Ok. "


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_whole_and_streamed_answers_carry_the_same_arguments(name: str) -> None:
    """Fed whole, the call's arguments are the same text, the model's own."""
    parser = PARSERS[name](TOOLS)
    results = [parser.feed(OUTPUTS[name]), parser.finish()]
    assert whole_calls(results) == [("search", ARGUMENTS)]


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_a_name_that_is_no_tool_sends_nothing_and_stays_text(name: str) -> None:
    """No header leaves for a function that was not offered: the markup is text, as before."""
    output = OUTPUTS[name].replace("search", "launch")
    results = one_char_at_a_time(lambda: PARSERS[name](TOOLS), output)
    assert not any(r.calls or r.arguments for r in results)
    assert "".join(r.content for r in results) == output
