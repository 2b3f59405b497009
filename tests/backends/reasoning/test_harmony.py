"""The Harmony parser: thinking from the analysis channel, the answer from final and preambles,
calls passed on whole for the tool-call parser, and the same result however the output is
split into pieces."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.reasoning.harmony import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    HEADER_LIMIT,
    MESSAGE,
    RETURN,
    START,
    HarmonyParser,
    Header,
)
from backends.reasoning.parsed import Split
from tests.backends.origins import copied
from tests.backends.reasoning.harmony_samples import SAMPLES

THINK = "<|channel|>analysis<|message|>"  # the first message, thinking
ANSWER = "<|start|>assistant<|channel|>final<|message|>"  # a later one, the answer
PASSED = "<|start|>assistant"  # the prefix a passed-on first message gets back
CALL_IN_THOUGHT = '<|channel|>analysis to=functions.search json<|message|>{"q": 1}<|call|>'
BROWSE = '<|channel|>commentary to=browser.search <|constrain|>json<|message|>{"q": "x"}<|call|>'

# output, reasoning, content: the rules' corners
CASES: list[tuple[str, str, str]] = [
    *((s.output, s.reasoning, s.content) for s in SAMPLES),
    ("<|channel|>final<|message|>Hi<|end|><|return|>", "", "Hi"),
    ("<|channel|>final<|message|>Hi<|call|>", "", "Hi"),
    (THINK + "x<|end|>\n" + ANSWER + "y", "x", "y"),
    (THINK + "a<|end|><|channel|>final<|message|>b<|return|>", "a", "b"),
    (THINK + "a" + ANSWER + "b", "a", "b"),
    ("<|channel|>analysis to=python code<|message|>print(1)<|call|>", "print(1)", ""),
    (CALL_IN_THOUGHT, "", PASSED + CALL_IN_THOUGHT),
    (BROWSE, "", PASSED + BROWSE),
    (THINK + "x<|end|><|start|>assistant<|channel|>fin", "x", ""),
    ("<|channel|>final", "", ""),
    (" to=functions.search<|channel|>comm", "", ""),
    ("<|channel|>analysis<|end|><|channel|>final<|message|>z", "", "z"),
    (THINK + "<|end|><|start|>assistant<|channel|>analysis<|message|>b", "b", ""),
    (ANSWER + "again<|return|>", "", "again"),
    ("<|channel|>final<|message|>done<|end|> stray", "", "done\nstray"),
    ("<|channel|>final<|message|>a<|end|><|ret", "", "a\n<|ret"),
    ("Hello, no Harmony here.", "", "Hello, no Harmony here."),
    (" to be or not", "", " to be or not"),
    ("<|chan", "", "<|chan"),
    ("", "", ""),
    ("<|start|>assistant<|message|>no channel<|end|>", "", "no channel"),
]


def _run(pieces: list[str]) -> Split:
    """Reasoning and content from feeding `pieces` one by one, then finishing."""
    parser = HarmonyParser()
    splits = [parser.feed(piece) for piece in pieces]
    splits.append(parser.finish())
    return Split("".join(s.reasoning for s in splits), "".join(s.content for s in splits))


def _pieces(output: str, cuts: list[int]) -> list[str]:
    """`output` cut at `cuts` (positions, in any order, repeats allowed)."""
    bounds = [0, *sorted(min(cut, len(output)) for cut in cuts), len(output)]
    return [output[start:end] for start, end in itertools.pairwise(bounds)]


@pytest.mark.parametrize(("output", "reasoning", "content"), CASES)
def test_parses_whole_output(output: str, reasoning: str, content: str) -> None:
    """Each output, fed whole, gives its reasoning and content."""
    assert _run([output]) == Split(reasoning, content)


@pytest.mark.parametrize(("output", "reasoning", "content"), CASES)
def test_any_split_gives_the_same_result(output: str, reasoning: str, content: str) -> None:
    """Cut at one or two points, or fed a character at a time, the result is the whole's."""
    expected = Split(reasoning, content)
    assert _run(list(output)) == expected
    for first, second in itertools.combinations_with_replacement(range(len(output) + 1), 2):
        pieces = [output[:first], output[first:second], output[second:]]
        assert _run(pieces) == expected, pieces


@given(st.sampled_from(CASES), st.lists(st.integers(0, 400), max_size=10))
def test_random_splits_of_the_cases(case: tuple[str, str, str], cuts: list[int]) -> None:
    """Random cuts of each representative output give its expected result."""
    output, reasoning, content = case
    assert _run(_pieces(output, cuts)) == Split(reasoning, content)


_TEXT = st.text(alphabet='ab <|{}":\n', max_size=10)  # no `>`: never a marker
_MESSAGE = st.tuples(
    st.sampled_from(["analysis", "commentary", "final"]),
    st.sampled_from([None, "functions.search", "functions.launch", "python"]),
    st.booleans(),  # the recipient after the role, before the channel
    st.sampled_from(["", " <|constrain|>json", " json"]),
    _TEXT,
    st.sampled_from([END, CALL, RETURN]),
)


def _render(messages: list[tuple[str, str | None, bool, str, str, str]], cut: bool) -> str:
    """The output of these messages, the last one missing its end marker when `cut`."""
    out = []
    for i, (channel, recipient, early, constrain, body, end) in enumerate(messages):
        to = f" to={recipient}" if recipient else ""
        header = (to if early else "") + CHANNEL + channel + ("" if early else to) + constrain
        last = cut and i == len(messages) - 1
        out.append(("" if i == 0 else START + "assistant") + header + MESSAGE + body)
        out.append("" if last else end)
    return "".join(out)


def _expected(messages: list[tuple[str, str | None, bool, str, str, str]], cut: bool) -> Split:
    """What the rules make of these messages, from the messages rather than their text."""
    reasoning: list[str] = []
    content, said = "", False
    for i, (channel, recipient, early, constrain, body, end) in enumerate(messages):
        to = f" to={recipient}" if recipient else ""
        header = (to if early else "") + CHANNEL + channel + ("" if early else to) + constrain
        calls = recipient is not None and (
            recipient.startswith("functions.") or channel == "commentary"
        )
        last = cut and i == len(messages) - 1
        if calls:
            content += START + "assistant" + header + MESSAGE + body + ("" if last else end)
        elif channel == "analysis":
            reasoning += [body] if body else []
        elif body:
            content, said = content + ("\n" if said else "") + body, True
    return Split("\n".join(reasoning), content)


@given(st.lists(_MESSAGE, min_size=1, max_size=5), st.booleans(), st.lists(st.integers(0, 300)))
def test_well_formed_outputs_follow_the_rules(
    messages: list[tuple[str, str | None, bool, str, str, str]], cut: bool, cuts: list[int]
) -> None:
    """Any run of well-formed messages, cut anywhere, splits as the messages say."""
    output = _render(messages, cut)
    assert _run(_pieces(output, cuts)) == _expected(messages, cut)


FRAGMENTS = st.sampled_from(
    [START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL, "<|", "<|ch", "assistant", " to=",
     "functions.search", "analysis", "final", "commentary", "json", " ", "\n", "a", "{}", "|>"]
)  # fmt: skip


@given(st.lists(FRAGMENTS, max_size=20).map("".join), st.lists(st.integers(0, 200), max_size=8))
def test_any_text_gives_one_result_however_split(output: str, cuts: list[int]) -> None:
    """Marker soup: no exception, and every split agrees with the whole."""
    assert _run(_pieces(output, cuts)) == _run([output])


def _indicator(pieces: list[str]) -> list[bool]:
    """`in_reasoning` after each piece is fed."""
    parser = HarmonyParser()
    seen = []
    for piece in pieces:
        parser.feed(piece)
        seen.append(parser.in_reasoning)
    return seen


TOKENS = [CHANNEL, "analysis", MESSAGE, "Need", " weather", END, START, "assistant", CHANNEL]
TOKENS += ["final", MESSAGE, "Sunny", RETURN]


def test_in_reasoning_is_the_analysis_body() -> None:
    """The indicator is on from an analysis header's `<|message|>` to the message's end."""
    on = [False, False, True, True, True, False, False, False, False, False, False, False, False]
    assert _indicator(TOKENS) == on
    assert not HarmonyParser().in_reasoning


def test_reasoning_tokens_are_the_analysis_text() -> None:
    """Counting tokens in reasoning before and after them leaves headers and markers out."""
    parser = HarmonyParser()
    counted = 0
    for token in TOKENS:
        before = parser.in_reasoning
        parser.feed(token)
        counted += before and parser.in_reasoning
    assert counted == 2


def test_bodies_stream_and_headers_wait() -> None:
    """A body leaves at once but for a tail that may start an end marker; a header waits."""
    parser = HarmonyParser()
    assert parser.feed("<|channel|>analy") == Split()
    assert parser.feed("sis<|message|>Think <|") == Split("Think ")
    assert parser.feed("en") == Split()
    assert parser.feed("d|><|start|>assistant<|channel|>final<|message|>Hi") == Split("", "Hi")
    assert parser.feed(" there<|return|>") == Split("", " there")
    assert parser.finish() == Split()


def test_a_call_passes_through_as_it_arrives() -> None:
    """A call's header leaves once whole, then its arguments as they come."""
    parser = HarmonyParser()
    head = "<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
    assert parser.feed(head[:-3]) == Split()
    assert parser.feed(head[-3:] + '{"q"') == Split("", START + "assistant" + head + '{"q"')
    assert parser.feed(": 1}<|call|>") == Split("", ": 1}<|call|>")


def test_an_overlong_header_is_no_header() -> None:
    """Past the limit without `<|message|>`, the header's text is content as written."""
    text = CHANNEL + "x" * HEADER_LIMIT
    assert _run([text + "<|message|>y"]) == Split("", text + "<|message|>y")
    assert _run([CHANNEL + "final" + "z" * (HEADER_LIMIT - 20) + MESSAGE + "w"]) == Split("", "w")


@pytest.mark.parametrize(
    ("header", "channel", "recipient", "function"),
    [
        ("<|channel|>analysis", "analysis", None, None),
        (
            "<|channel|>commentary to=functions.get_weather <|constrain|>json",
            "commentary",
            "functions.get_weather",
            "get_weather",
        ),
        ("assistant to=functions.a.b<|channel|>commentary", "commentary", "functions.a.b", "a.b"),
        ("assistant<|channel|>analysis to=python code", "analysis", "python", None),
        ("assistant<|channel|>commentary", "commentary", None, None),
        ("assistant auto=x<|channel|>final", "final", None, None),
        ("assistant to=functions.<|channel|>commentary", "commentary", "functions.", None),
        ("assistant", None, None, None),
    ],
)  # fmt: skip
def test_reads_channel_and_recipient_from_headers(
    header: str, channel: str | None, recipient: str | None, function: str | None
) -> None:
    """Channel and recipient wherever the header puts them; the function after `functions.`."""
    read = Header.read(header)
    assert (read.channel, read.recipient, read.function) == (channel, recipient, function)


# output cut by max_tokens, reasoning, content
CUT_CASES = [
    ("<|chan", "", ""),
    ("<|channel|>analysis<|message|>Need it.<|e", "Need it.", ""),
    ("<|channel|>analysis<|message|>Need it.<|end|><|sta", "Need it.", ""),
    ("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>fin", "a", ""),
    ("<|channel|>final<|message|>Hi <", "", "Hi "),
    ("plain text <|en", "", "plain text "),
]


@pytest.mark.parametrize(("output", "reasoning", "content"), CUT_CASES)
def test_a_cut_drops_a_marker_begun(output: str, reasoning: str, content: str) -> None:
    """A max_tokens cut inside a marker drops its start, however the output was split."""
    for size in (1, 3, len(output)):
        parser = HarmonyParser()
        pieces = [output[i : i + size] for i in range(0, len(output), size)]
        splits = [parser.feed(piece) for piece in pieces] + [parser.finish(cut=True)]
        got = Split("".join(s.reasoning for s in splits), "".join(s.content for s in splits))
        assert got == Split(reasoning, content)


@given(st.sampled_from(CASES), st.lists(st.integers(0, 400), max_size=10))
def test_content_is_the_outputs_text_or_what_the_parser_wrote(
    case: tuple[str, str, str], cuts: list[int]
) -> None:
    """Each piece of content comes with where it stands in the output; the only text the
    parser writes itself is the newline joining two messages and the `<|start|>assistant` a
    passed-on call gets back, so the answer's tokens can be told from the markers'."""
    output = case[0]
    parser = HarmonyParser()
    splits = [parser.feed(piece) for piece in _pieces(output, cuts)]
    splits.append(parser.finish())
    content = "".join(s.content for s in splits)
    copied(output, content, [p for s in splits for p in s.origin], {"\n", START, PASSED})
