"""The `<think>` parser: reasoning and answer apart in both formats, markers and the newlines
after them gone, and the same result however the output is split into pieces."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.reasoning.parsed import Split
from backends.reasoning.think import CLOSE, DEEPSEEK_R1, OPEN, QWEN3, ThinkParser
from tests.backends.origins import copied

R1, R1_OPEN = (DEEPSEEK_R1, False), (DEEPSEEK_R1, True)
Q3, Q3_OPEN = (QWEN3, False), (QWEN3, True)

# (format, starts_inside), output, reasoning, content
CASES: list[tuple[tuple[str, bool], str, str, str]] = [
    (R1_OPEN, "Okay, 2+2.\n</think>\n\nIt is 4.", "Okay, 2+2.\n", "It is 4."),
    (R1, "<think>\nOkay.\n</think>\n\nAnswer", "Okay.\n", "Answer"),
    (R1, "\n<think>abc</think>\nrest", "abc", "rest"),
    (R1_OPEN, "</think>Answer", "", "Answer"),
    (R1_OPEN, "Still thinking whether a < b", "Still thinking whether a < b", ""),
    (R1, "No tags at all", "No tags at all", ""),
    (R1_OPEN, "r</think>see <think> and </think>", "r", "see <think> and </think>"),
    (R1_OPEN, "abc</thi", "abc</thi", ""),
    (R1_OPEN, "", "", ""),
    (Q3, "<think>\nLet me see.\n</think>\n\nHi!", "Let me see.\n", "Hi!"),
    (Q3_OPEN, "Let me see.\n</think>\n\nHi!", "Let me see.\n", "Hi!"),
    (Q3_OPEN, "\n<think>\nabc</think>x", "abc", "x"),
    (Q3_OPEN, "<think><think>a</think>", "<think>a", ""),
    (Q3, "Hello there.\n\nHow can I help?", "", "Hello there.\n\nHow can I help?"),
    (Q3, "\n\nHello", "", "\n\nHello"),
    (Q3, "a < b, and </think> is a tag", "", "a < b, and </think> is a tag"),
    (Q3, "<thinking is fun", "", "<thinking is fun"),
    (Q3, "<thi", "", "<thi"),
    (Q3, "\n<think>x</think>y", "x", "y"),
    (Q3, "<think>\n\n</think>\n\nAnswer", "", "Answer"),
    (Q3, "<think>\nhmm, cut off", "hmm, cut off", ""),
    (Q3_OPEN, "Let me see", "Let me see", ""),
    (Q3, "<think>a < b and <thinking> </thin k</think>ok", "a < b and <thinking> </thin k", "ok"),
    (Q3, "<think>r</think> \nx", "r", " \nx"),
]


def _run(mode: tuple[str, bool], pieces: list[str]) -> Split:
    """Reasoning and content from feeding `pieces` one by one, then finishing."""
    parser = ThinkParser(mode[0], starts_inside=mode[1])
    splits = [parser.feed(piece) for piece in pieces]
    splits.append(parser.finish())
    return Split("".join(s.reasoning for s in splits), "".join(s.content for s in splits))


@pytest.mark.parametrize(("mode", "output", "reasoning", "content"), CASES)
def test_parses_whole_output(
    mode: tuple[str, bool], output: str, reasoning: str, content: str
) -> None:
    """Each output, fed whole, gives its reasoning and content."""
    assert _run(mode, [output]) == Split(reasoning, content)


@pytest.mark.parametrize(("mode", "output", "reasoning", "content"), CASES)
def test_any_split_gives_the_same_result(
    mode: tuple[str, bool], output: str, reasoning: str, content: str
) -> None:
    """Cut at one or two points, or fed a character at a time, the result is the whole's."""
    expected = Split(reasoning, content)
    assert _run(mode, list(output)) == expected
    for first, second in itertools.combinations_with_replacement(range(len(output) + 1), 2):
        pieces = [output[:first], output[first:second], output[second:]]
        assert _run(mode, pieces) == expected, pieces


def _pieces(output: str, cuts: list[int]) -> list[str]:
    """`output` cut at `cuts` (positions, in any order, repeats allowed)."""
    bounds = [0, *sorted(min(cut, len(output)) for cut in cuts), len(output)]
    return [output[start:end] for start, end in itertools.pairwise(bounds)]


@given(st.data())
def test_random_splits_of_the_cases(data: st.DataObject) -> None:
    """Random cuts of each representative output give its expected result."""
    mode, output, reasoning, content = data.draw(st.sampled_from(CASES))
    cuts = data.draw(st.lists(st.integers(0, len(output)), max_size=8))
    assert _run(mode, _pieces(output, cuts)) == Split(reasoning, content)


def _reference(mode: tuple[str, bool], output: str) -> Split:
    """The rules stated plainly over a whole output, to check the incremental parser against."""
    text = output
    rest = text.lstrip("\n")
    if rest.startswith(OPEN):
        text = rest[len(OPEN) :]
    elif not (mode[1] or mode[0] == DEEPSEEK_R1):
        return Split(content=output)
    reasoning, closed, content = text.lstrip("\n").partition(CLOSE)
    return Split(reasoning, content.lstrip("\n") if closed else "")


FRAGMENTS = st.sampled_from([OPEN, CLOSE, "<", "</", "<th", "</thi", "think>", ">", "\n", " ", "a"])


@given(
    st.sampled_from([R1, R1_OPEN, Q3, Q3_OPEN]),
    st.lists(FRAGMENTS, max_size=12).map("".join),
    st.lists(st.integers(0, 60), max_size=8),
)
def test_random_outputs_match_the_plain_rules(
    mode: tuple[str, bool], output: str, cuts: list[int]
) -> None:
    """Outputs made of marker pieces, cut anywhere, split as the plain rules say."""
    assert _run(mode, _pieces(output, cuts)) == _reference(mode, output)


def _indicator(mode: tuple[str, bool], pieces: list[str]) -> list[bool]:
    """`in_reasoning` after each piece is fed."""
    parser = ThinkParser(mode[0], starts_inside=mode[1])
    seen = []
    for piece in pieces:
        parser.feed(piece)
        seen.append(parser.in_reasoning)
    return seen


def test_in_reasoning_follows_the_markers() -> None:
    """The indicator turns on with `<think>` (or the prompt's) and off with `</think>`."""
    tokens = ["\n", "<think>", "\n", "Hmm", "\n", "</think>", "\n\n", "Hi"]
    assert _indicator(Q3, tokens) == [False, True, True, True, True, False, False, False]
    assert _indicator(Q3, ["Hi", "<think>", "x"]) == [False, False, False]
    assert _indicator(Q3_OPEN, ["Hmm", "</th", "ink>", "Hi"]) == [True, True, False, False]
    assert _indicator(R1, ["No", " end"]) == [True, True]


def test_reasoning_tokens_are_those_between_the_markers() -> None:
    """Counting tokens in reasoning both before and after them leaves the markers out."""
    parser = ThinkParser(QWEN3, starts_inside=False)
    tokens = ["<think>", "\n", "Hmm", "\n", "</think>", "\n\n", "Hi"]
    counted = 0
    for token in tokens:
        before = parser.in_reasoning
        parser.feed(token)
        counted += before and parser.in_reasoning
    assert counted == 3


def test_reasoning_streams_before_the_end_marker() -> None:
    """Reasoning leaves at once; only a tail that may open a marker is held back."""
    parser = ThinkParser(DEEPSEEK_R1, starts_inside=True)
    assert parser.feed("\nStep one <").reasoning == "Step one "
    assert parser.feed("/think") == Split()
    assert parser.feed(">\n\nDone") == Split("", "Done")
    assert parser.finish() == Split()


def test_unknown_format_is_refused() -> None:
    """A format name that is not one of the two is a ValueError, not a silent default."""
    with pytest.raises(ValueError, match="granite"):
        ThinkParser("granite", starts_inside=False)


# (format, starts_inside), output cut by max_tokens, reasoning, content
CUT_CASES: list[tuple[tuple[str, bool], str, str, str]] = [
    (Q3, "<thin", "", ""),
    (Q3, "<think", "", ""),
    (Q3, "\n\n<th", "", ""),
    (Q3, "<think>\nabc\n</thi", "abc\n", ""),
    (Q3, "<think>\nabc\n<", "abc\n", ""),
    (Q3_OPEN, "abc</think", "abc", ""),
    (Q3_OPEN, "<thi", "", ""),
    (R1_OPEN, "abc\n</", "abc\n", ""),
    (Q3, "<think>a</think>\nAnswer <", "a", "Answer <"),
    (Q3, "Hello <thin", "", "Hello <thin"),
]


@pytest.mark.parametrize(("mode", "output", "reasoning", "content"), CUT_CASES)
def test_a_cut_drops_a_marker_begun(
    mode: tuple[str, bool], output: str, reasoning: str, content: str
) -> None:
    """A max_tokens cut inside a marker drops its start, however the output was split."""
    for size in (1, 2, len(output) or 1):
        parser = ThinkParser(mode[0], starts_inside=mode[1])
        pieces = [output[i : i + size] for i in range(0, len(output), size)]
        splits = [parser.feed(piece) for piece in pieces] + [parser.finish(cut=True)]
        got = Split("".join(s.reasoning for s in splits), "".join(s.content for s in splits))
        assert got == Split(reasoning, content)


@pytest.mark.parametrize("starts_inside", [False, True])
@given(st.text(alphabet="ab\n<>/thinkg", max_size=30), st.lists(st.integers(0, 40), max_size=6))
def test_content_is_a_copy_of_the_output_where_it_says(
    starts_inside: bool, output: str, cuts: list[int]
) -> None:
    """Each piece of content comes with where it stands in the output: the answer's text is
    the output's own, so its tokens can be told from the thinking's and the markers'."""
    parser = ThinkParser(QWEN3, starts_inside=starts_inside)
    bounds = [0, *sorted(min(c, len(output)) for c in cuts), len(output)]
    splits = [parser.feed(output[a:b]) for a, b in itertools.pairwise(bounds)]
    splits.append(parser.finish())
    content = "".join(s.content for s in splits)
    copied(output, content, [p for s in splits for p in s.origin], written=set())


def test_the_answer_after_the_thinking_starts_after_its_newlines() -> None:
    """`<think>\\nabc\\n</think>\\n\\nAnswer`: the answer is the output's last six characters."""
    output = "<think>\nabc\n</think>\n\nAnswer"
    parser = ThinkParser(QWEN3, starts_inside=False)
    split = parser.feed(output)
    assert split.content == "Answer" and split.origin == ((len(output) - 6, 6),)
