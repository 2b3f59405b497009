"""Names for the candidate verifier: every entity of one text (names, acronyms, identifiers,
URLs, versions) must be in the other, as written, stemmed, spelled out ("2FA" /
"two-factor authentication", "New York City" / "NYC"), as its clipped or synonymous word
("temp" / "temperature", "TV" / "television"), written apart ("lastName" / "last name"), or
as the place its people are named after ("Brazilian" / "Brazil")."""

from __future__ import annotations

from cache.verify_abbrev import clipped_of, expands_to
from cache.verify_features import Features, stem
from cache.verify_synonyms import SYNONYMS


def _present(entity: str, other: Features) -> bool:
    if entity in other.entities or entity in other.words or stem(entity) in other.stems:
        return True
    if expands_to(entity, other.seq) is not None:
        return True  # 2FA / two-factor authentication
    if clipped_of(entity) in other.words or _synonym_in(entity, other):
        return True  # temp / temperature, TV / television
    if _written_apart(entity, other.seq) or _demonym_of(entity, other.words):
        return True
    return not entity.isalnum() and entity in other.lowered


def _written_apart(entity: str, seq: tuple[str, ...]) -> bool:
    """An identifier joined in one text, its words apart in the other: "lastName",
    "last_name" / "last name"."""
    joined = entity.replace("_", "").replace("-", "")
    if len(joined) < 6 or not joined.isalpha():
        return False
    for start, word in enumerate(seq):
        if not joined.startswith(word) or word == joined:
            continue
        run = word
        for following in seq[start + 1 : start + 4]:
            run += following
            if run == joined:
                return True
            if not joined.startswith(run):
                break
    return False


_DEMONYM_ENDINGS = ("n", "an", "ian", "ese", "i")


def _demonym_of(entity: str, words: frozenset[str]) -> bool:
    """`entity` and a word of the other text are a place and its people or language:
    "Brazilian" / "Brazil", "Italian" / "Italy", "Texan" / "Texas", "Chinese" / "China"."""
    return any(
        len(word) >= 4
        and word[:3] == entity[:3]
        and (_names_people(entity, word) or _names_people(word, entity))
        for word in words
    )


def _names_people(word: str, place: str) -> bool:
    return any(word in (place + end, place[:-1] + end) for end in _DEMONYM_ENDINGS) or (
        place.endswith("y") and word == place[:-1]  # Germany / German
    )


def _synonym_in(entity: str, other: Features) -> bool:
    groups = SYNONYMS.get(entity)
    return groups is not None and any(
        not groups.isdisjoint(SYNONYMS.get(w, ())) for w in other.words
    )


def same_entities(a: Features, b: Features) -> bool:
    """Names, acronyms, identifiers, URLs, versions of each text appear in the other, or
    spell out one of its initialisms ("New York City" / "NYC")."""
    return entities_found(a, a, b) and entities_found(b, b, a)


def entities_found(place: Features, own: Features, other: Features) -> bool:
    """Every entity of `place` (a text, or a changed place of the text `own`) is in `other`,
    or is a word of an initialism of `other` spelled out in `place`."""
    missing = [e for e in place.entities if not _present(e, other)]
    if not missing:
        return True
    spelled: set[str] = set()
    for short in other.entities - own.entities:
        span = expands_to(short, place.seq)
        if span is not None:
            spelled.update(place.seq[span[0] : span[1]])
    return all(e in spelled for e in missing)
