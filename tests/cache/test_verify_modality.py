"""Tests for cache.verify_modality: what may, should or must be done, now or in the past."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_modality import modality, same_modality


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Can I cancel my gym membership early?", "Should I cancel my gym membership early?"),
        ("Should I report the side income?", "Must I report the side income?"),
        ("Do I need to renew my passport?", "May I renew my passport?"),
        ("What should I have packed for the trip?", "What should I pack for the trip?"),
        ("Could I have claimed the deduction?", "Can I claim the deduction?"),
        ("Which employees must be paid overtime?", "Which employees may be paid overtime?"),
        ("How much can I withdraw per day?", "How much must I withdraw per day?"),
        ("What documents can I bring?", "What documents must I bring?"),
    ],
)
def test_another_modal_is_another_question(a: str, b: str) -> None:
    """Permission, advice, obligation and the past are different questions."""
    assert not same_modality(modality(a), modality(b))
    assert verify(a, b).reason == "modality"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How can I speed up my laptop?", "How should I speed up my laptop?"),
        ("Do I need to book the ferry ahead?", "Should I book the ferry ahead?"),
        ("Can I bring a pet?", "Am I allowed to bring a pet?"),
        ("Should I have a backup plan?", "Should I keep a backup plan?"),
        ("Can I pay in cash?", "Is paying in cash accepted?"),
    ],
)
def test_frames_synonyms_and_one_sided_modals_agree(a: str, b: str) -> None:
    """A how-to frame, modals of one kind, "have" as a verb and a modal on one side only."""
    assert same_modality(modality(a), modality(b))
