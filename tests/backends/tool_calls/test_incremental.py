"""An answer cut short by the token limit: the markup of a call it left unfinished is dropped
in every format, the calls that ended are kept, and the text before them too; a call whose
header had left keeps the arguments written so far (OpenAI's partial arguments)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.tool_calls.choice import PARSERS
from backends.tool_calls.parsed import Parsed, ToolCallParser
from tests.backends.tool_calls.helpers import TOOLS, Calls, call_values, cut, parse_pieces

WEATHER, SEARCH = ("get_weather", {"city": "Oslo"}), ("search", {"q": "x"})
DS_WEATHER = (
    '<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Oslo"}\n```'
    "<｜tool▁call▁end｜>"
)
HARMONY = "<|start|>assistant<|channel|>commentary to=functions.{} <|constrain|>json<|message|>"

# format -> (output cut short, content, calls)
CASES: list[tuple[str, str, str, Calls]] = [
    ("hermes", 'Let me check. <tool_call>\n{"name": "get_weather",', "Let me check. ", []),
    ("hermes", '<tool_call>\n{"name": "', "", []),
    (
        "hermes",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>\n'
        '<tool_call>{"name": "search", "argu',
        "\n",
        [WEATHER],
    ),
    ("hermes", '<tool_call>{"name": "search", "arguments": {"q": "x"}}', "", [SEARCH]),
    ("hermes", "Use <tool", "Use ", []),
    (
        "qwen3_coder",
        "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOs",
        "Sure.\n",
        [],
    ),
    ("qwen3_coder", "<function=get_wea", "", []),
    (
        "qwen3_coder",
        "<tool_call>\n<function=search>\n<parameter=q>\nx\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=get_weather>\n<param",
        "\n",
        [SEARCH],
    ),
    (
        "llama3_json",
        '{"name": "get_weather", "parameters": {"city": "Os',
        "",
        [("get_weather", '{"city": "Os')],
    ),
    ("llama3_json", '{"name": "launch", "parameters": {"city": "Os', "", []),
    (
        "llama3_json",
        '<|python_tag|>{"name": "search", "parameters": {"q": "x"}}; {"name": "get_w',
        "",
        [SEARCH],
    ),
    ("llama3_json", 'Sure <|python_tag|>{"name"', "Sure ", []),
    ("llama3_json", "Sure <|python_tag|>", "Sure ", []),
    ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Os', "", []),
    (
        "mistral",
        'Checking.[TOOL_CALLS]search[ARGS]{"q": "x"}[TOOL_CALLS]get_weather[ARGS]{"ci',
        "Checking.",
        [SEARCH, ("get_weather", '{"ci')],
    ),
    ("mistral", "[TOOL_CALLS]get_wea", "", []),
    ("mistral", "[TOOL_CALLS]", "", []),
    (
        "deepseek_v3",
        f"<｜tool▁calls▁begin｜>{DS_WEATHER}\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>search"
        '\n```json\n{"q":',
        "",
        [WEATHER, ("search", '{"q":')],
    ),
    ("deepseek_v3", "Let me check.<｜tool▁calls▁begin｜>", "Let me check.", []),
    ("deepseek_v3", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get", "", []),
    ("deepseek_v3", f"<｜tool▁calls▁begin｜>{DS_WEATHER}\n<｜tool▁call", "", [WEATHER]),
    ("pythonic", '[get_weather(city="Oslo"), search(q=', "", []),
    ("pythonic", 'Let me look.\n[search(q="x")', "Let me look.\n", []),
    ("pythonic", '<|python_start|>[search(q="x"', "", []),
    (
        "harmony",
        HARMONY.format("get_weather") + '{"city": "Os',
        "",
        [("get_weather", '{"city": "Os')],
    ),
    (
        "harmony",
        HARMONY.format("search") + '{"q": "x"}<|call|>' + HARMONY.format("get_weather") + "{",
        "",
        [SEARCH, ("get_weather", "{")],
    ),
    ("harmony", "Checking. <|channel|>commentary to=functions.get_wea", "Checking. ", []),
]


def _cut_short(parser: ToolCallParser, pieces: list[str]) -> tuple[str, Calls]:
    """Content and (name, arguments) of each call of an answer fed in `pieces` that the token
    limit ended."""
    results: list[Parsed] = [*(parser.feed(piece) for piece in pieces), parser.finish(cut=True)]
    return "".join(r.content for r in results), call_values(results)


@pytest.mark.parametrize(("name", "output", "content", "calls"), CASES)
def test_cut_short_drops_the_unfinished_call(
    name: str, output: str, content: str, calls: Calls
) -> None:
    """Whole, and one character at a time: the ended calls and the text before them only."""
    assert _cut_short(PARSERS[name](TOOLS), [output]) == (content, calls)
    assert _cut_short(PARSERS[name](TOOLS), list(output)) == (content, calls)


@pytest.mark.parametrize(("name", "output", "content", "calls"), CASES)
def test_an_answer_that_ended_keeps_the_markup_as_text(
    name: str, output: str, content: str, calls: Calls
) -> None:
    """Not cut short (the model stopped), unfinished markup is text as before: nothing lost."""
    kept = parse_pieces(PARSERS[name](TOOLS), [output])
    assert kept[1] == calls and kept[0].startswith(content)


@pytest.mark.parametrize("name", sorted(PARSERS))
@given(st.sampled_from(CASES), st.lists(st.integers(min_value=0), max_size=8))
def test_cut_short_gives_one_result_however_split(
    name: str, case: tuple[str, str, str, Calls], points: list[int]
) -> None:
    """Any format on any case's text, split anywhere: the same as whole, and the same calls as
    an answer that was not cut."""
    output = case[1]
    whole = _cut_short(PARSERS[name](TOOLS), [output])
    assert _cut_short(PARSERS[name](TOOLS), cut(output, points)) == whole
    assert whole[1] == parse_pieces(PARSERS[name](TOOLS), [output])[1]
