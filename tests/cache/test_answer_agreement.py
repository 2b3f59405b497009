"""Answer agreement: the same text up to whitespace and case, choice by choice."""

from __future__ import annotations

from cache.answer_agreement import same_text


def test_whitespace_and_case_are_no_difference() -> None:
    """Spacing, line breaks and case do not make another answer."""
    assert same_text(["Use  the link.\n"], ["use the link."])
    assert same_text(["A", "b"], ["a", "B "])


def test_another_word_or_choice_count_disagrees() -> None:
    """One changed word, or another number of choices, is another answer."""
    assert not same_text(["Use the link."], ["Use this link."])
    assert not same_text(["a"], ["a", "a"])
    assert not same_text(["Returns within 30 days."], ["Returns within 14 days."])
