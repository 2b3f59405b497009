"""How one text's words stand against the other's: swapped slots, narrowing words, traded places."""

from __future__ import annotations

import pytest

from cache.verify_features import extract
from cache.verify_swaps import no_swapped_slot, same_roles_in_place


@pytest.mark.parametrize(
    ("a", "b", "agrees"),
    [
        ("Implement a stack", "Implement a queue", False),
        ("How do I delete my account?", "How do I remove my account?", True),
        ("List the files", "List the hidden files", False),
        ("Is there parking?", "Is there parking for buses?", False),
        ("What is Big O notation?", "Can you explain what Big O notation means?", True),
        ("How do I reset my password?", "What are the steps to reset my password?", True),
    ],
)
def test_a_slot_swapped_or_narrowed_disagrees(a: str, b: str, agrees: bool) -> None:
    """A slot filled with another word, or words added that narrow the text, disagree; a
    synonym, or additions that only reword, agree."""
    assert no_swapped_slot(extract(a), extract(b)) is agrees


@pytest.mark.parametrize(
    ("a", "b", "agrees"),
    [
        ("Is the museum open?", "Is the museum open today?", False),
        ("How do I cook rice?", "How do I cook rice quickly?", False),
        ("How do I install Python?", "How do I install Python offline?", False),
        ("Summarize the French revolution", "Summarize the French revolution briefly", False),
        ("Explain photosynthesis", "Explain photosynthesis to a child", False),
        ("How do I reset my router?", "How do I reset my router? Thanks!", True),
        ("How do I make pancakes?", "How do I make pancakes and waffles?", False),
        ("What is a Roth IRA?", "What is a Roth IRA and how does it work?", False),
        ("How do I take a screenshot?", "How do I take a screenshot of a whole page?", False),
        ("What is machine learning?", "What is machine learning used for?", False),
        ("What time zone is New York in?", "Which time zone does New York use?", True),
        ("How do I delete a file in Linux?", "How do I delete all files in Linux?", False),
        ("How many teaspoons in a tablespoon?", "How many tablespoons in a cup?", False),
        ("How do I fix a slow laptop?", "How can I repair a slow notebook computer?", True),
        ("What is the family plan?", "What is the family plan exactly?", True),
    ],
)
def test_how_when_where_added_is_another_request(a: str, b: str, agrees: bool) -> None:
    """An added word of manner, time or place ("quickly", "today", "offline"), an audience
    ("to a child"), a second request ("and waffles"), an "of" phrase or a stranded preposition
    ("used for") asks for another answer wherever it stands; closing thanks do not."""
    assert no_swapped_slot(extract(a), extract(b)) is agrees


@pytest.mark.parametrize(
    ("a", "b", "agrees"),
    [
        ("Convert 5 miles to km", "Convert 5 km to miles", False),
        ("Divide 10 by 2", "Divide 2 by 10", False),
        ("What is 3^4?", "What is 4^3?", False),
        ("How many ml in a cup?", "How many cups in a ml?", False),
        ("Is the meeting on Sunday?", "Is the meeting on Sundays?", True),
        ("Can I swap rice for quinoa?", "Can I swap quinoa for rice?", False),
        ("Translate to Traditional Chinese", "Translate to Chinese Traditional", True),
    ],
)
def test_two_words_trading_places_disagree(a: str, b: str, agrees: bool) -> None:
    """Two words apart trading places in a frame that stays swap roles; neighbours do not."""
    assert same_roles_in_place(extract(a), extract(b)) is agrees
