"""Numbers as wire formats write them."""

from __future__ import annotations

import pytest

from core.digits import ascii_digits


@pytest.mark.parametrize("text", ["0", "42", "4294967295"])
def test_ascii_digits_are_numbers(text: str) -> None:
    """One or more of 0-9 is a number."""
    assert ascii_digits(text)


@pytest.mark.parametrize(
    "text", ["", "-1", "1.0", " 1", "\u00b2", "1\u00b9", "\uff11", "\u0661", "1" * 5000]
)
def test_other_digits_signs_blanks_and_endless_runs_are_not(text: str) -> None:
    """Superscripts, fullwidth and Arabic-Indic digits, signs, points, spaces, and runs too
    long for `int` to read are not."""
    assert not ascii_digits(text)
