"""Entities for the verifier: the same name written another way is found, another name not."""

from __future__ import annotations

import pytest

from cache.verify_entities import same_entities
from cache.verify_features import extract


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Sort the users by lastName ascending.", "Sort the users by last name, A to Z.", True),
        ("Return the user_id column", "Return the user id column", True),
        ("Sort the users by lastName ascending.", "Sort the users by first name.", False),
        ("Translate it into Brazilian Portuguese.", "Translate it into Portuguese (Brazil).", True),
        ("Is a visa needed for Italian citizens?", "Do citizens of Italy need a visa?", True),
        (
            "Translate it into Brazilian Portuguese.",
            "Translate it into European Portuguese.",
            False,
        ),
        ("Is a visa needed for French citizens?", "Do citizens of Italy need a visa?", False),
    ],
)
def test_a_name_is_found_written_apart_or_as_its_people(a: str, b: str, same: bool) -> None:
    """Joined identifiers match their words apart, and demonyms their places, both ways."""
    assert same_entities(extract(a), extract(b)) is same
    assert same_entities(extract(b), extract(a)) is same
