"""Names for the candidate verifier: every entity of one text (names, acronyms, identifiers,
URLs, versions) must be in the other, as written, stemmed, spelled out ("2FA" /
"two-factor authentication", "New York City" / "NYC"), or as its clipped or synonymous word
("temp" / "temperature", "TV" / "television")."""

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
    return not entity.isalnum() and entity in other.lowered


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
