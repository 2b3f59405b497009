"""Transforming templates: the text slot stays word for word, up to how it is spelled."""

from __future__ import annotations

import pytest

from cache.verify import verify

TRANSLATE = (
    "You are a professional translator for a fitness app. Translate the user-facing string "
    "below into {}. Keep placeholders unchanged and do not add explanations.\n\nString: {}"
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Start your 7-day free trial", "Start your seven-day free trial"),
        ("Pick a colour theme", "Pick a color theme"),
        ("You can't skip this step", "You cannot skip this step"),
    ],
)
def test_a_text_spelled_another_way_is_the_same_text(a: str, b: str) -> None:
    """Digits or number words, British or American spelling, a contraction: one translation."""
    assert verify(TRANSLATE.format("Italian", a), TRANSLATE.format("Italian", b)).ok


def test_a_reworded_text_is_another_translation() -> None:
    """Any other change to the text is another text to translate."""
    a = TRANSLATE.format("Italian", "Start your free trial")
    assert verify(a, TRANSLATE.format("Italian", "Start your free trial now")).reason == "quoted"
    assert verify(a, TRANSLATE.format("Italian", "Begin your free trial")).reason == "quoted"


def test_the_target_language_is_judged_as_a_slot() -> None:
    """A changed clause naming the language is the instruction: another language rejects,
    the language by its own name does not."""
    text = "Start your free trial"
    a = TRANSLATE.format("French", text)
    assert not verify(a, TRANSLATE.format("German", text)).ok
    assert verify(a, TRANSLATE.format("français", text)).ok
