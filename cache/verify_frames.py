"""Words that frame a request without changing it: pleasantries at its start or end ("Hi,",
"I was wondering,", "Kindly", "Thanks in advance!"), the generic "one" ("How should one ..."),
and "go about" before a verb ("How do I go about filing ..."). The slot check reads them as
filler, but only in those positions: "thank you" inside "write a thank you note" is the task.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import pairwise

_LEADING = tuple(
    tuple(p.split())
    for p in (
        "hi",
        "hello",
        "hey",
        "kindly",
        "quick question",
        "i was wondering",
        "i am wondering",
        "i m wondering",
        "i was just wondering",
        "just wondering",
        "i wonder",
        "i am curious",
        "i m curious",
        "i d like to know",
        "i would like to know",
        "i want to know",
        "do you know",
        "could you tell me",
        "can you tell me",
        "would you tell me",
        "just curious",
        "curious",
        "honest question",
        "genuine question",
        "random question",
        "serious question",
        "dumb question",
        "stupid question",
        "silly question",
        "sorry if this is dumb but",
        "sorry if this is stupid but",
        "sorry if this is a dumb question but",
        "sorry if this is a stupid question but",
        "sorry if this is a silly question but",
        "this might be a dumb question but",
        "this may be a dumb question but",
    )
)
_TRAILING = tuple(
    tuple(p.split())
    for p in (
        "thanks",
        "thank you",
        "thanks in advance",
        "thank you in advance",
        "many thanks",
        "much appreciated",
        "any help appreciated",
        "any help is appreciated",
        "any help would be appreciated",
        "help appreciated",
        "kindly",
    )
)
_GO = frozenset(("go", "going"))
_INWARD = _GO | {"one"}
_AUXILIARIES = frozenset("do does did can could should would might must will shall may".split())


def _by_edge(
    frames: tuple[tuple[str, ...], ...], at: int
) -> dict[str, tuple[tuple[str, ...], ...]]:
    index: dict[str, tuple[tuple[str, ...], ...]] = {}
    for frame in frames:
        index[frame[at]] = (*index.get(frame[at], ()), frame)
    return index


_LEADING_BY_FIRST = _by_edge(_LEADING, 0)
_TRAILING_BY_LAST = _by_edge(_TRAILING, -1)


def framed(seq: Sequence[str], breaks: Collection[int] = ()) -> frozenset[int]:
    """The positions in `seq` (a text's lowercase words) that only frame the request: at the
    text's edges, and at the edges of its clauses when `breaks` (the indexes of the words
    that open a clause) are known ("[USER]: Hi team, ..." in a template)."""
    covered: set[int] = set()
    edges = sorted({0, len(seq), *breaks})
    inward = [i for i, word in enumerate(seq) if word in _INWARD]
    for start, end in pairwise(edges):
        inner = _lead(seq, start, end)
        covered.update(range(start, inner))
        outer = _trail(seq, end, inner)
        covered.update(range(outer, end))
        for i in inward:
            if inner <= i < outer:
                covered.update(_inside(seq, i, outer))
    return frozenset(covered)


def _inside(seq: Sequence[str], i: int, stop: int) -> tuple[int, ...]:
    """The framing words that start at `i`, a generic "one" or a "go about" before a verb."""
    word = seq[i]
    if word == "one" and i > 0 and seq[i - 1] in _AUXILIARIES:
        return (i,)  # "how should one clean"
    if word in _GO and i + 2 < stop and seq[i + 1] == "about" and _ing(seq[i + 2]):
        return (i, i + 1)  # "go about filing"
    return ()


def _ing(word: str) -> bool:
    return len(word) > 4 and word.endswith("ing")


def _lead(seq: Sequence[str], edge: int, limit: int) -> int:
    """How far leading frames reach from `edge` towards `limit`, one after another."""
    while edge < limit:
        for frame in _LEADING_BY_FIRST.get(seq[edge], ()):
            n = len(frame)
            if edge + n <= limit and tuple(seq[edge : edge + n]) == frame:
                edge += n
                break
        else:
            return edge
    return edge


def _trail(seq: Sequence[str], edge: int, limit: int) -> int:
    """How far trailing frames reach back from `edge` towards `limit`, one after another."""
    while edge > limit:
        for frame in _TRAILING_BY_LAST.get(seq[edge - 1], ()):
            n = len(frame)
            if edge - n >= limit and tuple(seq[edge - n : edge]) == frame:
                edge -= n
                break
        else:
            return edge
    return edge
