"""Quantifiers for the candidate verifier: "all" against "any", "always" against "ever", and
"only" said on one side.

"Are all of the rooms non-smoking?" and "Are any of the rooms non-smoking?", or "Is it ever
okay ...?" and "Is it always okay ...?", differ in one word that the embedding barely sees;
"Does the warranty cover only parts?" asks something "Does the warranty cover parts?" does not.
A universal left implicit ("Are the rooms non-smoking?") is not a difference.
"""

from __future__ import annotations

from cache.verify_numbers import NUMBER_WORDS

_UNIVERSAL = frozenset({"all", "every", "each", "always", "everyone", "everything", "everywhere"})
_EXISTENTIAL = frozenset({"any", "ever", "some", "sometimes", "anyone", "anything", "anywhere"})
_EXCLUSIVE = frozenset({"only"})


def scope(words: frozenset[str], seq: tuple[str, ...] = ()) -> frozenset[str]:
    """The kinds of quantifier among `words` (`seq`, in order): "all", "some", "only" (not
    before a number: "with only ten days' notice" is "with ten days' notice")."""
    found = set()
    if not _UNIVERSAL.isdisjoint(words):
        found.add("all")
    if not _EXISTENTIAL.isdisjoint(words):
        found.add("some")
    if not _EXCLUSIVE.isdisjoint(words) and not all(
        _before_number(seq, i) for i, word in enumerate(seq) if word in _EXCLUSIVE
    ):
        found.add("only")
    return frozenset(found)


def _before_number(seq: tuple[str, ...], i: int) -> bool:
    following = seq[i + 1] if i + 1 < len(seq) else ""
    return following[:1].isdigit() or following in NUMBER_WORDS or following in ("a", "one")


def same_scope(a: frozenset[str], b: frozenset[str]) -> bool:
    """Not "all" on one side against "some" on the other, and "only" on both or neither."""
    if ("only" in a) != ("only" in b):
        return False
    return ("all" in a) == ("all" in b) or ("some" in a) == ("some" in b)
