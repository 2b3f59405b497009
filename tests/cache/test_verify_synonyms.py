"""The interchangeable-word tables: synonym groups with inflections, phrases, irregular forms."""

from __future__ import annotations

from cache.verify import verify
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


def test_the_word_list_adds_everyday_synonyms_and_spellings() -> None:
    """Groups read from synonyms.txt count as the built-in ones: "colour" / "color"."""
    assert SYNONYMS["colour"] & SYNONYMS["color"]
    assert SYNONYMS["purchasing"] & SYNONYMS["buy"]
    assert not SYNONYMS["colour"] & SYNONYMS["buy"]


def test_a_listed_synonym_swapped_in_a_question_is_the_same_question() -> None:
    """A one-word swap the list explains passes the slot check; one it does not, fails."""
    assert verify("Where can I buy a cheap couch?", "Where can I buy a cheap sofa?").ok
    assert not verify("Where can I buy a cheap couch?", "Where can I buy a cheap table?").ok


def test_a_language_named_in_its_own_tongue_is_that_language() -> None:
    """ "into French" / "into français" is one target; "into Dutch" / "into Deutsch" is not."""
    template = (
        "Translate the product string below into {}. Keep placeholders such as {{name}} "
        "unchanged and keep it short enough for a mobile button.\n\nString: Save changes"
    )
    assert verify(template.format("French"), template.format("français")).ok
    assert verify(template.format("Dutch"), template.format("Nederlands")).ok
    assert not verify(template.format("Dutch"), template.format("Deutsch")).ok


def test_an_agent_noun_of_a_synonym_is_no_synonym() -> None:
    """A group's word takes its plurals and tenses, not its agent noun ("charger" is no fee)."""
    assert not SYNONYMS.get("charger", frozenset()) & SYNONYMS["fee"]
    assert SYNONYMS["charges"] & SYNONYMS["fees"]
    assert not verify("Why is my laptop charger so hot?", "Why is my laptop charge so hot?").ok
