"""Abbreviations: initialisms against their spelled-out words, and clipped forms."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_abbrev import clipped_of, expands_to, numeronym_of


@pytest.mark.parametrize(
    ("short", "text", "span"),
    [
        ("2fa", "turn on two factor authentication now", (2, 5)),
        ("mfa", "set up multi factor authentication", (2, 5)),
        ("eta", "the estimated time of arrival", (1, 5)),
        ("apis", "versioning application programming interfaces", (1, 4)),
        ("pto", "how much paid time off", (2, 5)),
    ],
)
def test_initialisms_match_their_expansion(short: str, text: str, span: tuple[int, int]) -> None:
    """Initials spell the initialism; a digit spells its number word; "of" may be skipped."""
    assert expands_to(short, tuple(text.split())) == span


@pytest.mark.parametrize(
    ("short", "text"),
    [
        ("2fa", "two factors"),
        ("mfa", "two factor authentication"),
        ("go", "good options"),
        ("42", "four two"),
        ("api", "an api call"),
    ],
)
def test_no_expansion(short: str, text: str) -> None:
    """Incomplete runs, other initials, stopwords, bare digits and literal uses do not match."""
    assert expands_to(short, tuple(text.split())) is None


def test_clipped_forms() -> None:
    """A few listed clipped forms stand for their full word."""
    assert clipped_of("pwd") == "password"
    assert clipped_of("password") is None


def test_issue_example_two_factor_authentication() -> None:
    """'enable two-factor authentication' and 'turn on 2FA' ask the same thing."""
    query = "How do I enable two-factor authentication on my account?"
    assert verify(query, "How can I turn on 2FA for my account?").ok
    assert verify("How can I turn on 2FA for my account?", query).ok


def test_other_initialisms_and_spelled_numbers_still_differ() -> None:
    """2FA is not MFA, and 'two factors' is a quantity, not the 2 of 2FA."""
    assert verify("How do I set up 2FA?", "How do I set up MFA?").reason == "entity"
    assert verify("How do I set up 2FA?", "How do I set up two factors?").reason == "number"
    assert verify("How do I turn on 2FA?", "How do I turn off two-factor authentication?").reason


def test_common_short_forms_stand_for_their_word() -> None:
    """Everyday clipped forms count as the word: "TV", "temp", "flu", "sync"."""
    for a, b in (
        ("How do I mount a TV on a brick wall?", "How do I mount a television on a brick wall?"),
        ("What temp should I bake bread at?", "What temperature should I bake bread at?"),
        ("Is the flu contagious before symptoms?", "Is influenza contagious before symptoms?"),
    ):
        assert verify(a, b).ok, (a, b)
    assert not verify("Where do I renew my ID?", "Where do I renew my passport?").ok


def test_a_numeronym_counts_the_letters_it_leaves_out() -> None:
    """k8s is Kubernetes and i18n internationalization; k9s or k8t is not."""
    assert numeronym_of("k8s", "kubernetes")
    assert numeronym_of("i18n", "internationalization")
    assert not numeronym_of("k9s", "kubernetes")
    assert not numeronym_of("k8t", "kubernetes")
    assert not numeronym_of("k1s", "kas")
    query = "How do I list all services in k8s?"
    assert verify(query, "How do I list all services in Kubernetes?").ok
    assert not verify(query, "How do I list all services in Kubeflow?").ok
