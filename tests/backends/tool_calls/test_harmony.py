"""The Harmony tool-call parser: calls out of the messages the reasoning parser passes on (or out
of raw output), everything else text; malformed or unknown calls stay text; the same result
however the output is split; and the two parsers together on realistic gpt-oss outputs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.reasoning.harmony import HarmonyParser as HarmonyReasoning
from backends.tool_calls import harmony, markers
from backends.tool_calls.harmony import HarmonyParser
from backends.tool_calls.parsed import Parsed
from tests.backends.reasoning.harmony_samples import SAMPLES, SEARCH_CALL, WEATHER_CALL, Sample
from tests.backends.tool_calls.helpers import (
    TOOLS,
    Calls,
    Case,
    call_values,
    cut,
    one_char_at_a_time,
)
from tests.backends.tool_calls.split_suite import split_tests

WEATHER = ("get_weather", {"city": "Paris"})
SEARCH = ("search", {"q": "a<b", "limit": 2})
RAW_THINKING = "<|channel|>analysis<|message|>Need the weather.<|end|>"
UNKNOWN = "<|start|>assistant<|channel|>commentary to=functions.launch json<|message|>{}<|call|>"
BROWSER = '<|start|>assistant<|channel|>commentary to=browser.search<|message|>{"q": 1}<|call|>'
CUT_HEADER = "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json"
CASES: list[Case] = [
    *((s.content, s.answer, [*s.calls]) for s in SAMPLES),
    ("Just text, no tools used.", "Just text, no tools used.", []),
    (  # end markers inside a JSON string are the arguments' text
        '<|channel|>commentary to=functions.search<|message|>{"q": "<|call|><|start|>"}<|call|>',
        "",
        [("search", {"q": "<|call|><|start|>"})],
    ),
    (RAW_THINKING + WEATHER_CALL, RAW_THINKING, [WEATHER]),
    (
        '<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"q": "z"}<|call|>',
        "",
        [("search", {"q": "z"})],
    ),
    (WEATHER_CALL.replace("<|call|>", "<|end|>"), "", [WEATHER]),
    (WEATHER_CALL.removesuffix("<|call|>") + SEARCH_CALL, "", [WEATHER, SEARCH]),
    (UNKNOWN + WEATHER_CALL, UNKNOWN, [WEATHER]),
    (BROWSER, BROWSER, []),
    (CUT_HEADER, CUT_HEADER, []),
    (CUT_HEADER + '<|message|>{"q": "cu', "", [("search", '{"q": "cu')]),
    (
        '<|channel|>commentary to=functions.launch json<|message|>{"q": "cu',
        '<|channel|>commentary to=functions.launch json<|message|>{"q": "cu',
        [],
    ),
    (CUT_HEADER + "<|message|>[1]<|call|>", CUT_HEADER + "<|message|>[1]<|call|>", []),
    (
        CUT_HEADER + '<|message|>"{\\"q\\": 1}"<|call|>',
        CUT_HEADER + '<|message|>"{\\"q\\": 1}"<|call|>',
        [],
    ),
    ("Use <|start or <|chan", "Use <|start or <|chan", []),
    ("<|start|>" + "x" * 300 + "<|message|>y", "<|start|>" + "x" * 300 + "<|message|>y", []),
    ("<|start|>assistant<|end|>" + WEATHER_CALL, "<|start|>assistant<|end|>", [WEATHER]),
]


def _parser() -> HarmonyParser:
    return HarmonyParser(TOOLS)


(
    test_parses_whole_output,
    test_any_split_gives_the_same_result,
    test_random_splits_give_the_same_result,
) = split_tests(_parser, CASES)


def test_a_call_leaves_with_its_body_brace_and_text_before_it_at_once() -> None:
    """Text leaves as it comes; the call as soon as its body's `{` arrives, its arguments as
    they come, before `<|call|>`."""
    text = "Checking now."
    results = one_char_at_a_time(_parser, text + WEATHER_CALL + SEARCH_CALL)
    assert "".join(r.content for r in results[: len(text)]) == text
    assert [len(r.calls) for r in results].index(1) == len(text) + WEATHER_CALL.index("{")
    arguments = "".join(r.arguments for r in results[: len(text + WEATHER_CALL) - 1])
    assert arguments == '"city": "Paris"}'
    assert sum(len(r.calls) for r in results) == 2


def _both(pieces: list[str]) -> tuple[str, str, Calls]:
    """Reasoning, answer and calls from the reasoning parser piped into the tool parser."""
    reasoning, tools = HarmonyReasoning(), _parser()
    thought: list[str] = []
    parsed: list[Parsed] = []
    for piece in pieces:
        split = reasoning.feed(piece)
        thought.append(split.reasoning)
        parsed.append(tools.feed(split.content))
    last = reasoning.finish()
    thought.append(last.reasoning)
    parsed += [tools.feed(last.content), tools.finish()]
    return "".join(thought), "".join(p.content for p in parsed), call_values(parsed)


def _expected(sample: Sample) -> tuple[str, str, Calls]:
    """What the sample says the two parsers make of its output."""
    return sample.reasoning, sample.answer, [*sample.calls]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_both_parsers_read_gpt_oss_outputs(sample: Sample) -> None:
    """Thinking, answer and calls, fed whole, a character at a time, or cut at any point."""
    expected = _expected(sample)
    assert _both([sample.output]) == expected
    assert _both(list(sample.output)) == expected
    for point in range(len(sample.output) + 1):
        pieces = [sample.output[:point], sample.output[point:]]
        assert _both(pieces) == expected, pieces


@given(st.sampled_from(SAMPLES), st.lists(st.integers(min_value=0), max_size=12))
def test_both_parsers_agree_however_split(sample: Sample, points: list[int]) -> None:
    """Random cuts of a gpt-oss output give its thinking, answer and calls."""
    assert _both(cut(sample.output, points)) == _expected(sample)


def test_a_waiting_call_body_is_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body that is not JSON, fed a character at a time, is searched in linear total."""
    searched = 0
    search = markers.first_marker

    def counting(
        text: str, ends: tuple[str, ...], start: int = 0, end: int | None = None
    ) -> tuple[int, str] | None:
        nonlocal searched
        searched += (len(text) if end is None else min(end, len(text))) - start
        return search(text, ends, start, end)

    monkeypatch.setattr(harmony, "first_marker", counting)
    body = "x" * 8000
    parser = _parser()
    for char in "<|channel|>commentary to=functions.search<|message|>" + body + "<|call|>":
        parser.feed(char)
    parser.finish()
    assert searched < 500 * len(body)  # a header's length per piece, not the body's
