"""Particles that point opposite ways: the same word followed by "in" in one text and by "out"
in the other ("zoom in" / "zoom out", "get in to the car" / "get out of the car"). An
embedding scores such pairs as near-identical; the antonym axes cannot list every verb, and
"in" alone is no pole (most are "in Paris")."""

from __future__ import annotations

from collections.abc import Sequence

from cache.verify_features import stem

_IN = frozenset(("in", "into"))
_SAME_EITHER_WAY = frozenset(("fill",))  # "fill in a form" / "fill out a form"


def _particles(words: Sequence[str]) -> set[tuple[str, bool]]:
    """(stem of the word before, whether "in") for each "in", "into" or "out" of `words`."""
    return {
        (stem(words[i - 1]), word != "out")
        for i, word in enumerate(words)
        if i > 0 and (word == "out" or word in _IN) and words[i - 1] not in _SAME_EITHER_WAY
    }


def opposite_particles(a: Sequence[str], b: Sequence[str]) -> bool:
    """The same word takes "in" in one text and "out" in the other, and neither text has
    both: "zoom in" / "zoom out", "get in to the car" / "get out of the car", "leave the dough
    in" / "leave the dough out". (Not every "in" is a pole: "in Paris" against a text with no
    "Paris out" is no opposite.)"""
    if "out" not in a and "out" not in b:
        return False
    ours, theirs = _particles(a), _particles(b)
    return any(
        (word, not inward) in theirs
        and (word, not inward) not in ours
        and (word, inward) not in theirs
        for word, inward in ours
    )
