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
        "please",
        "kindly",
    )
)
_GO = frozenset(("go", "going"))
_AUXILIARIES = frozenset("do does did can could should would might must will shall may".split())


def framed(seq: Sequence[str], breaks: Collection[int] = ()) -> frozenset[int]:
    """The positions in `seq` (a text's lowercase words) that only frame the request: at the
    text's edges, and at the edges of its clauses when `breaks` (the indexes of the words
    that open a clause) are known ("[USER]: Hi team, ..." in a template)."""
    covered: set[int] = set()
    edges = sorted({0, len(seq), *breaks})
    for start, end in pairwise(edges):
        inner = _strip(seq, start, end, _LEADING, forward=True)
        covered.update(range(start, inner))
        outer = _strip(seq, end, inner, _TRAILING, forward=False)
        covered.update(range(outer, end))
        for i in range(inner, outer):
            word = seq[i]
            if word == "one" and i > 0 and seq[i - 1] in _AUXILIARIES:
                covered.add(i)  # "how should one clean"
            elif word in _GO and i + 2 < outer and seq[i + 1] == "about" and _ing(seq[i + 2]):
                covered.update((i, i + 1))  # "go about filing"
    return frozenset(covered)


def _ing(word: str) -> bool:
    return len(word) > 4 and word.endswith("ing")


def _strip(
    seq: Sequence[str],
    edge: int,
    limit: int,
    frames: tuple[tuple[str, ...], ...],
    *,
    forward: bool,
) -> int:
    """How far framing phrases reach from `edge` towards `limit`, one after another."""
    moved = True
    while moved:
        moved = False
        for frame in frames:
            n = len(frame)
            if forward and edge + n <= limit and tuple(seq[edge : edge + n]) == frame:
                edge, moved = edge + n, True
                break
            if not forward and edge - n >= limit and tuple(seq[edge - n : edge]) == frame:
                edge, moved = edge - n, True
                break
    return edge
