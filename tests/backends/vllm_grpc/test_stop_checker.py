"""Stop strings: streamed output equals the whole text cut at the first stop string."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from backends.vllm_grpc.stop_checker import StopChecker

ALPHABET = "ab c🙂"
texts = st.text(alphabet=ALPHABET, max_size=40)
stop_lists = st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=4), min_size=1, max_size=3)


def reference(text: str, stops: Sequence[str], include: bool, searchable_from: int = 0) -> str:
    """The whole text cut at the match ending earliest (ties: request order)."""
    best: tuple[int, int] | None = None
    for stop in stops:
        start = text.find(stop, max(0, searchable_from - len(stop) + 1))
        if start >= 0 and (best is None or start + len(stop) < best[1]):
            best = (start, start + len(stop))
    if best is None:
        return text
    return text[: best[1] if include else best[0]]


def vllm_check_stop_strings(
    output_text: str, new_char_count: int, stop: Sequence[str], include_in_output: bool
) -> tuple[str, int] | None:
    """A transcription of vLLM's `StopChecker.check_stop_strings`, the behaviour to match."""
    if not new_char_count or not stop:
        return None
    for stop_str in stop:
        stop_string_len = len(stop_str)
        stop_index = output_text.find(stop_str, 1 - new_char_count - stop_string_len)
        if stop_index == -1:
            continue
        if include_in_output:
            stop_index += stop_string_len
            if stop_index >= len(output_text):
                return stop_str, -1
        return stop_str, stop_index
    return None


def split(text: str, cuts: list[int]) -> list[str]:
    """Split `text` at the given positions (clamped and sorted)."""
    points = sorted({min(max(c, 0), len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def stream(checker: StopChecker, chunks: Sequence[str]) -> tuple[str, list[str]]:
    """Feed chunks like a stream; returns the client's text and each emission."""
    emitted: list[str] = []
    for chunk in chunks:
        text, matched = checker.feed(chunk)
        emitted.append(text)
        if matched:
            return "".join(emitted), emitted
    emitted.append(checker.finish())
    return "".join(emitted), emitted


@given(texts, stop_lists, st.booleans(), st.lists(st.integers(0, 40), max_size=12))
def test_streamed_output_equals_reference(
    text: str, stops: list[str], include: bool, cuts: list[int]
) -> None:
    """Any chunking of the text streams exactly the reference cut."""
    out, _ = stream(StopChecker(stops, include), split(text, cuts))
    assert out == reference(text, stops, include)


@given(texts, stop_lists, st.lists(st.integers(0, 40), max_size=12))
def test_no_partial_stop_string_is_ever_emitted(
    text: str, stops: list[str], cuts: list[int]
) -> None:
    """Without include_stop_str, text that ends in a stop string's start is held back."""
    checker = StopChecker(stops, include_stop_str=False)
    shown = ""
    seen = ""
    for chunk in split(text, cuts):
        seen += chunk
        out, matched = checker.feed(chunk)
        shown += out
        if matched:
            break
        held = seen[len(shown) :]
        assert seen.startswith(shown)
        assert all(not seen.endswith(s) for s in stops)
        # Only a possible stop-string start is held back, never more.
        assert held == "" or any(s.startswith(held) for s in stops)


@given(texts, stop_lists, st.booleans())
def test_char_by_char_agrees_with_vllm(text: str, stops: list[str], include: bool) -> None:
    """Fed one character at a time (one per step), the cut is where vLLM's server cuts."""
    checker = StopChecker(stops, include)
    out, _ = stream(checker, list(text))
    output_text = ""
    expected = text
    for char in text:
        output_text += char
        hit = vllm_check_stop_strings(output_text, 1, stops, include)
        if hit is not None:
            stop_str, truncate_to = hit
            expected = output_text if truncate_to == -1 else output_text[:truncate_to]
            assert checker.matched == stop_str
            break
    assert out == expected


@given(texts, texts, stop_lists, st.booleans())
def test_unchecked_text_cannot_end_a_match(
    first: str, second: str, stops: list[str], include: bool
) -> None:
    """With check=False (vLLM's min_tokens), matches must end after that text."""
    checker = StopChecker(stops, include)
    out, matched = checker.feed(first, check=False)
    assert not matched
    if second:
        more, matched = checker.feed(second)
        out += more
    if not matched:
        out += checker.finish()
    assert out == reference(first + second, stops, include, searchable_from=len(first))


def test_held_text_is_released_at_finish() -> None:
    """A possible start of a stop string waits, then comes out when the sequence ends."""
    checker = StopChecker(["</answer>"])
    assert checker.feed("42 </ans") == ("42 ", False)
    assert checker.finish() == "</ans"
    assert checker.matched is None


def test_match_trims_and_drops_the_rest() -> None:
    """The match cuts the text; later feeds return nothing."""
    checker = StopChecker(["STOP", "END"])
    assert checker.feed("one ST") == ("one ", False)
    assert checker.feed("OP two END") == ("", True)
    assert checker.matched == "STOP"
    assert checker.feed("more") == ("", True)
    assert checker.finish() == ""


def test_include_stop_str_emits_through_the_stop_string() -> None:
    """With include_stop_str the text ends right after the stop string."""
    checker = StopChecker(["\n\n"], include_stop_str=True)
    assert checker.feed("a\n") == ("a\n", False)
    assert checker.feed("\nb") == ("\n", True)


def test_earliest_end_wins_over_request_order() -> None:
    """Among stop strings completed in one chunk, the one ending first is used."""
    checker = StopChecker(["cd", "b"])
    assert checker.feed("abcd") == ("a", True)
    assert checker.matched == "b"


def test_same_end_goes_to_request_order() -> None:
    """Two stop strings ending at the same place: the first listed decides the cut."""
    checker = StopChecker(["b", "ab"])
    assert checker.feed("xab") == ("xa", True)
    assert checker.matched == "b"


def test_no_stop_strings_pass_text_through() -> None:
    """An empty stop list (or empty strings) never holds anything back."""
    checker = StopChecker(["", ""])
    assert checker.feed("abc") == ("abc", False)
    assert checker.finish() == ""
