"""Tests for cache.verify_symbols: the operators and symbols a text writes."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_symbols import symbols


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What is 7 + 5?", "What is 7 - 5?"),
        ("What does x >>= 2 do?", "What does x <<= 2 do?"),
        ("Slice a[1:] in Python", "Slice a[:1] in Python"),
        ("What does $? hold in bash?", "What does $! hold in bash?"),
        ("Classify this review: fast delivery 👍", "Classify this review: fast delivery 👎"),
    ],
)
def test_another_operator_is_another_request(a: str, b: str) -> None:
    """Two requests that differ only in an operator or a symbol are told apart."""
    assert symbols(a) != symbols(b)
    assert verify(a, b).reason == "symbol"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What is 9+3?", "What is 9 + 3?"),
        ("Calculate 45 / 9", "What is 45 divided by 9?"),
        ("What's 12 * 4?", "What is twelve times 4?"),
        ("Is 10 >= 9?", "Is 10 greater than or equal to 9?"),
        ("Delivery takes 5-10 days", "Delivery takes 5 to 10 days"),
    ],
)
def test_an_operator_written_otherwise_is_the_same(a: str, b: str) -> None:
    """Spacing, and an operator spelled as a word between operands, change nothing."""
    assert symbols(a) == symbols(b)


@pytest.mark.parametrize(
    "text",
    [
        "Set up two-factor and/or single sign-on at AT&T",
        "- first item\n* second item",
        "Is 50% of $5 more than order #12?",
        "Write it in C++ or c#",
        "A 300-mile drive - how long?",
        "Mail me at jo@example.com (soon), please!",
        "It happens three times a day, plus on Disney plus",
    ],
)
def test_prose_joiners_markers_and_number_marks_are_not_operators(text: str) -> None:
    """Punctuation, joined words, list markers, a number's marks and names write no operator."""
    assert symbols(text) == ()


def test_operators_are_compared_as_a_multiset() -> None:
    """A paraphrase may move a clause and its operator: the order of operators does not count."""
    assert symbols("Is a != b when a == 1?") == symbols("When a == 1, is a != b?")
