"""Numbered lists: their markers are not quantities, counts after labels are."""

from __future__ import annotations

from cache.verify import verify
from cache.verify_lists import without_list_markers


def test_the_numbers_of_a_numbered_list_are_not_quantities() -> None:
    """Markers 1, 2, ... opening lines, or opening items of 3 words or more after a sentence,
    go; a lone "3." after a colon, or numbers out of order, stay."""
    assert without_list_markers("Rules: 1. Keep it brief. 2. Cite the source.") == (
        "Rules:  Keep it brief.  Cite the source."
    )
    assert without_list_markers("Steps:\n1) open\n2) close") == "Steps:\n open\n close"
    assert without_list_markers("Total: 3. Next") == "Total: 3. Next"
    assert without_list_markers("I need 2. Then 3. Go") == "I need 2. Then 3. Go"


def test_a_template_reworded_into_a_numbered_list_keeps_its_numbers() -> None:
    """A rule list numbered on one side only is the same prompt; another limit is not."""
    prose = "Never diagnose an animal. Keep answers under 150 words. Grapes?"
    listed = "Rules: 1. Never diagnose an animal. 2. Keep answers under 150 words. Grapes?"
    assert verify(prose, listed).reason != "number"
    assert verify(prose, listed.replace("150", "100")).reason == "number"


def test_counts_after_labels_are_not_a_list() -> None:
    """ "Children: 1. Adults: 2." counts people: its numbers stay, and trading them is caught."""
    text = "Children: 1. Adults: 2. How much are the tickets?"
    assert without_list_markers(text) == text
    assert not verify(text, "Adults: 1. Children: 2. How much are the tickets?").ok
