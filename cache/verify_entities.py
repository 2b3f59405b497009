"""Names for the candidate verifier: every entity of one text (names, acronyms, identifiers,
URLs, versions) must be in the other, as written, stemmed, spelled out ("2FA" /
"two-factor authentication", "New York City" / "NYC"), or as its clipped or synonymous word
("temp" / "temperature", "TV" / "television")."""

from __future__ import annotations

from cache.verify_abbrev import clipped_of, expands_to, numeronym_of
from cache.verify_features import Features, stem
from cache.verify_synonyms import SYNONYMS


def _present(entity: str, other: Features) -> bool:
    if entity in other.entities or entity in other.words or stem(entity) in other.stems:
        return True
    if expands_to(entity, other.seq) is not None:
        return True  # 2FA / two-factor authentication
    if clipped_of(entity) in other.words or _synonym_in(entity, other):
        return True  # temp / temperature, TV / television
    if any(numeronym_of(entity, w) or numeronym_of(w, entity) for w in other.words):
        return True  # k8s / Kubernetes
    return not entity.isalnum() and entity in other.lowered


def _synonym_in(entity: str, other: Features) -> bool:
    groups = SYNONYMS.get(entity)
    return groups is not None and any(
        not groups.isdisjoint(SYNONYMS.get(w, ())) for w in other.words
    )


_SEPARATORS = str.maketrans("", "", ".-_ ")
_LONGEST_RUN = 3


def _squashed(text: str) -> str:
    """`text` without the dots, hyphens, underscores and spaces a name may be written with or
    without ("Node.js" / "NodeJS", "Wi-Fi" / "WiFi", "Mac OS" / "macOS"; not "C++" / "C")."""
    return text.translate(_SEPARATORS)


def _runs(text: Features, containing: str | None = None) -> set[str]:
    """Squashed runs of up to three words of `text` that write one name: a word, or words that
    are each a name ("Mac OS", "Pay Pal") or are joined by a hyphen or a dot ("wi-fi", "node.js";
    not "first name", which is not "firstName"). Only runs holding `containing`, if given."""
    seq, runs = text.seq, set()
    for i in range(len(seq)):
        for j in range(i + 1, min(i + _LONGEST_RUN, len(seq)) + 1):
            run = seq[i:j]
            if containing is not None and containing not in run:
                continue
            if j - i == 1 or text.entities.issuperset(run) or _joined(run, text.lowered):
                runs.add(_squashed("".join(run)))
    return runs


def _joined(run: tuple[str, ...], lowered: str) -> bool:
    return "-".join(run) in lowered or ".".join(run) in lowered


def _written_apart(entity: str, place: Features, other: Features) -> bool:
    """`entity` is a name `other` writes with other separators: the same letters as a run of
    `other`'s words, or as one of its names ("node.js" / "NodeJS"), or a part of a run of
    `place`'s words that `other` writes as one ("wi" of "Wi-Fi" / "WiFi")."""
    whole = {_squashed(e) for e in other.entities} | _runs(other)
    if _squashed(entity) in whole:
        return True
    return entity in place.seq and not whole.isdisjoint(_runs(place, containing=entity))


def same_entities(a: Features, b: Features) -> bool:
    """Names, acronyms, identifiers, URLs, versions of each text appear in the other, or
    spell out one of its initialisms ("New York City" / "NYC")."""
    return entities_found(a, a, b) and entities_found(b, b, a)


def entities_found(place: Features, own: Features, other: Features) -> bool:
    """Every entity of `place` (a text, or a changed place of the text `own`) is in `other`,
    or is a word of an initialism of `other` spelled out in `place`."""
    missing = [e for e in place.entities if not _present(e, other)]
    if missing:
        missing = [e for e in missing if not _written_apart(e, place, other)]
    if not missing:
        return True
    spelled: set[str] = set()
    for short in other.entities - own.entities:
        span = expands_to(short, place.seq)
        if span is not None:
            spelled.update(place.seq[span[0] : span[1]])
    return all(e in spelled for e in missing)
