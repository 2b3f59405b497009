"""Logprobs held until their tokens' text is shown: a token is shown when all of its text is,
and dropped once some of it is known to have gone elsewhere."""

from __future__ import annotations

from types import SimpleNamespace

from backends.vllm_grpc.held_logprobs import HeldLogprobs


def _held(lengths: list[int]) -> HeldLogprobs:
    """Tokens 0, 1, ... that decoded to `lengths` characters each."""
    held = HeldLogprobs()
    ids = list(range(len(lengths)))
    held.add(
        SimpleNamespace(token_ids=ids, token_logprobs=[-1.0] * len(ids), top_logprobs=[]),
        lengths,
    )
    return held


def test_a_token_across_a_boundary_is_not_shown() -> None:
    """`</think>` + `\\n\\nYes` as tokens of 8 and 5 characters, the answer being `Yes`: the
    second token holds text that went elsewhere (dropped newlines), so it has no logprob."""
    held = _held([8, 5, 3])
    assert held.show([(10, 3)], ended=False) is None  # token 1 is decided: not all shown
    taken = held.show([(13, 3)], ended=False)
    assert taken is not None and taken[0] == [2]


def test_a_token_waits_until_its_text_is_decided() -> None:
    """A token whose text may still be shown waits; the choice's end drops it."""
    held = _held([2, 2])
    taken = held.show([(0, 2)], ended=False)
    assert taken is not None and taken[0] == [0]
    assert held.show([], ended=False) is None
    assert held.show([], ended=True) is None


def test_an_empty_token_goes_with_the_character_after_it() -> None:
    """A token holding the first bytes of a character (decoded to nothing) is shown when that
    character is, and not when the text ends before any such character."""
    held = _held([0, 1, 2, 0])
    taken = held.show([(0, 1)], ended=False)
    assert taken is not None and taken[0] == [0, 1]
    assert held.show([], ended=True) is None  # token 2 never shown, token 3 at the end


def test_empty_tokens_at_the_end_go_with_the_character_before_them() -> None:
    """The bytes of a character the answer was cut inside are listed when the text before
    them was shown, as vLLM lists every token; not when it went elsewhere."""
    held = _held([1, 0, 0])
    taken = held.show([(0, 1)], ended=True)
    assert taken is not None and taken[0] == [0, 1, 2]
    assert _held([1, 0]).show([], ended=True) is None


def test_an_output_of_one_empty_token_lists_it_unless_thinking() -> None:
    """An answer whose only token is a character's first byte lists it; inside the thinking,
    it is the thinking's."""
    taken = _held([0]).show([], ended=True)
    assert taken is not None and taken[0] == [0]
    assert _held([0]).show([], ended=True, thinking=True) is None


def test_empty_tokens_before_unshown_flushed_text_go_with_it() -> None:
    """Text the detokenizer released at the end follows the empty tokens: they share its
    fate, even where the character before them was shown."""
    held = _held([1, 0])
    held.flushed(1)
    assert (held.show([(0, 1)], ended=True) or ([],))[0] == [0]


def test_no_empty_token_after_a_matched_stop_string_is_listed() -> None:
    """Tokens after the one that completed a stop string are not listed, empty ones too."""
    held = _held([1, 2, 0])
    taken = held.show([(0, 1)], ended=True, stop=(1, 2))
    assert taken is not None and taken[0] == [0, 1]
