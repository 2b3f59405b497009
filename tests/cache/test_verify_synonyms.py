"""The interchangeable-word tables: synonym groups with inflections, phrases, irregular forms."""

from __future__ import annotations

from cache.verify_synonyms import IRREGULAR, PHRASES_OF, SYNONYMS


def test_a_synonym_group_covers_inflected_forms() -> None:
    """ "purchased" and "buying" share a group through their base forms."""
    assert SYNONYMS["purchased"] & SYNONYMS["buying"]
    assert not SYNONYMS["purchased"] & SYNONYMS.get("cancel", frozenset())


def test_phrases_are_indexed_by_their_first_word() -> None:
    """Every phrase of a group is found from its first word, with its group."""
    (_words, group), *_ = (p for p in PHRASES_OF["ahead"] if p[0] == ("ahead", "of", "time"))
    assert ("in", "advance") in [w for w, g in PHRASES_OF["in"] if g == group]


def test_irregular_forms_map_to_their_base() -> None:
    """Past forms and participles lead back to the verb."""
    assert IRREGULAR["worn"] == IRREGULAR["wore"] == "wear"
