"""Words written as one or as two: "workout" / "work out", "everyday" / "every day",
"cannot" / "can not". Before the checks compare two texts, a pair of words that the other
text writes as one word is joined, so the spelling is not read as a changed slot.
"""

from __future__ import annotations

import re
from itertools import pairwise

_WORD = re.compile(r"[^\W\d_]+")
MIN_JOINED = 6
"""Shorter compounds are left alone: "apart" is not "a part"."""


def may_join(words_a: frozenset[str], words_b: frozenset[str]) -> bool:
    """Whether a word of one set, absent from the other, splits into two words of the other:
    the cheap test before `joined` (set lookups on the texts' cached words)."""
    return _splits(words_b - words_a, words_a) or _splits(words_a - words_b, words_b)


def _splits(new: frozenset[str], words: frozenset[str]) -> bool:
    return any(
        w[:k] in words and w[k:] in words
        for w in new
        if len(w) >= MIN_JOINED
        for k in range(1, len(w))
    )


def joined(a: str, b: str) -> tuple[str, str]:
    """`a` and `b` with every two adjacent words of one written as the other's single word."""
    words_a, words_b = _words(a), _words(b)
    return _join(a, words_a, words_b), _join(b, words_b, words_a)


def _words(text: str) -> list[re.Match[str]]:
    return list(_WORD.finditer(text))


def _join(text: str, own: list[re.Match[str]], other: list[re.Match[str]]) -> str:
    # An identifier's camel case joins on purpose: "firstName" is not "first name".
    singles = {m.group().casefold() for m in other if not any(c.isupper() for c in m.group()[1:])}
    own_singles = {m.group().casefold() for m in own}
    spans = []
    for x, y in pairwise(own):
        word = (x.group() + y.group()).casefold()
        if (
            len(word) >= MIN_JOINED
            and word in singles
            and word not in own_singles
            and text[x.end() : y.start()] in (" ", "-")
        ):
            spans.append((x.end(), y.start()))
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return text
