"""Tests for cache.verify_digits: numerals other than decimal digits count as numbers."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_digits import has_digits, in_decimal_digits


@pytest.mark.parametrize(
    ("text", "written", "numbers"),
    [
        ("y³", "y3", [("3", "^")]),
        ("5⁻²", "5 ", [("-2", "^")]),
        ("10¹²", "10 ", [("12", "^")]),
        ("CH₄", "CH4", [("4", "_")]),
        ("3 m²", "3 m2", [("2", "^")]),
        ("Na⁺", "Na⁺", []),
        ("item ④", "item  4 ", []),
        ("⑱", " 18 ", []),
        ("⑵", " 2 ", []),
        ("⒊", " 3 ", []),
        ("Ⅸ", " 9 ", []),
        ("¾", " 0.75 ", []),
        ("plain 42", "plain 42", []),
        ("北京欢迎你", "北京欢迎你", []),
    ],
)
def test_numerals_are_written_in_decimal_digits_and_powers_taken_apart(
    text: str, written: str, numbers: list[tuple[str, str]]
) -> None:
    """Other numerals become decimal digits set apart; a raised or lowered run is a number of
    its own, a power or an index, glued to a letter before it (a unit or a variable) so
    that neither reads as a plain one."""
    assert in_decimal_digits(text) == (written, numbers)


def test_has_digits_sees_every_kind_of_numeral() -> None:
    """Decimal digits of any script, raised, circled and Roman numerals; no letters."""
    assert has_digits("page ⑦")
    assert has_digits("a²")
    assert has_digits("٣ apples")
    assert not has_digits("no numbers here")
    assert not has_digits("没有数字")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I simplify y² - 4?", "How do I simplify y³ - 4?"),
        ("What is 2¹⁰?", "What is 210?"),
        ("Convert 10⁻⁹ seconds to nanoseconds", "Convert 10⁻³ seconds to nanoseconds"),
        ("What happens in stage ③ of mitosis?", "What happens in stage ④ of mitosis?"),
        ("See note ⁴ for details", "See note ⁵ for details"),
        ("Is ⑪ a prime?", "Is ⑫ a prime?"),
        ("What did Pope Pius Ⅸ decree?", "What did Pope Pius Ⅺ decree?"),
        ("Can I use ⅓ cup of oil?", "Can I use ⅔ cup of oil?"),
        ("Expand (x+1)²", "Expand 2(x+1)"),  # a power is no coefficient
        ("What is 10² × 3?", "What is 10³ × 2?"),
        ("What is 2³?", "What is 3²?"),
        ("What is 3 m² in cm²?", "What is 300 cm² in m²?"),  # an area is no length
        ("How many cm² are in 1 m²?", "How many m² are in 100 cm²?"),
    ],
)
def test_different_numerals_are_different_questions(a: str, b: str) -> None:
    """Powers, footnotes, circled steps, Roman numerals and fractions compare by value."""
    verdict = verify(a, b)
    assert not verdict.ok
    assert verdict.reason == "number"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What happens in stage ③ of mitosis?", "What happens in stage 3 of mitosis?"),
        ("How do I simplify y² - 4?", "How can I simplify y² - 4?"),
    ],
)
def test_one_number_written_alike_still_passes(a: str, b: str) -> None:
    """A circled digit is its digit; the same power reworded around is the same question."""
    assert verify(a, b).ok
