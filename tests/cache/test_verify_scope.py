"""Tests for cache.verify_scope: "all" against "any", "always" against "ever", and "only"."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_features import extract
from cache.verify_scope import same_scope


def _same(a: str, b: str) -> bool:
    fa, fb = extract(a), extract(b)
    return same_scope(fa.scope, fb.scope)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Are all the trails open in winter?", "Are any of the trails open in winter?"),
        ("Is it always safe to refreeze thawed meat?", "Is it ever safe to refreeze thawed meat?"),
        ("Does the plan cover only dental?", "Does the plan cover dental?"),
    ],
)
def test_another_quantifier_is_another_question(a: str, b: str) -> None:
    """Universal against existential, and "only" on one side, change the question."""
    assert not _same(a, b)
    assert verify(a, b).reason == "scope"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Are all the trails open in winter?", "Are the trails open in winter?"),
        ("Can I cancel with only two days' notice?", "Can I cancel with two days' notice?"),
        ("Is there any way to undo a sent email?", "Is there a way to undo a sent email?"),
    ],
)
def test_an_implicit_quantifier_or_only_before_a_number_agrees(a: str, b: str) -> None:
    """A universal left implicit, "only" before a number, and an idiomatic "any" agree."""
    assert _same(a, b)
