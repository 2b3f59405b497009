"""Tests for cache.verify_case: where writing a word another way names another thing."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_case import case_forms, same_case


def _same(a: str, b: str) -> bool:
    return same_case(case_forms(a), case_forms(b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("What does ls -a show?", "What does ls -A show?"),
        ("What does grep -v do?", "what does grep -V do"),
        ("In regex, what does \\s match?", "In regex, what does \\S match?"),
        ("What does the vim key N do?", "what does the vim key n do"),
        ("What is 5 mA in amps?", "What is 5 MA in amps?"),
        ("Convert 500 MB to GB", "Convert 500 Mb to GB"),
        ("In Go, can another package call myFunc?", "In Go, can another package call MyFunc?"),
    ],
)
def test_case_that_carries_meaning_tells_requests_apart(a: str, b: str) -> None:
    """A flag, an escape, a one-letter key, a unit or a camel-cased name in another case."""
    assert not _same(a, b)
    assert verify(a, b).reason == "case"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("how do i reset my password", "How do I reset my password?"),
        ("WHAT'S THE CAPITAL OF FRANCE?", "What's the capital of France?"),
        ("What does HTTP stand for?", "What does http stand for?"),
        ("Translate this into French.", "Translate this into french."),
        ("How do I use GitHub Actions?", "How do I use Github actions?"),
        ("Does the shop open at 9 AM?", "Does the shop open at 9 am?"),
        ("Write hello world in C++", "Write hello world in c++"),
        ("X marks the spot", "x marks the spot"),
    ],
)
def test_case_that_is_only_style_is_the_same(a: str, b: str) -> None:
    """Lowercase or shouting writers, names, acronyms and sentence starts are not facts."""
    assert _same(a, b)
