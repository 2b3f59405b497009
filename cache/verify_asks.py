"""What kind of answer a question asks for, read from its opening words: a yes or no ("Can I
carry over unused days?"), an amount ("How many unused days can I carry over?"), a time, a
duration, a place, a person or a reason. Two questions that ask for different kinds are
different questions however alike their words; a question whose kind its opening does not
show ("What ...", "How do I ...", "Explain ...") is compatible with any.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.?!:\n])")  # "Question: Can I ...?"
_OPENING = re.compile(r"[a-z'’]+")
_YES_NO = frozenset(
    "can could do does did is are was were will would should shall may might must have has am "
    "isn't aren't wasn't weren't doesn't didn't can't couldn't won't wouldn't shouldn't "
    "haven't hasn't".split()
)  # (not "don't": "Don't reply in English" tells)
_NOT_ASKING = frozenset(("not", "you"))
"""After an auxiliary, a request ("Can you tell me how many ...", "Could you explain ...",
"Do you know where ...") or an order ("Do not reply in English"), not a yes-or-no question."""
_WH = {
    "when": "time",
    "where": "place",
    "who": "person",
    "whom": "person",
    "whose": "person",
    "why": "reason",
}
_HOW = {"many": "amount", "much": "amount", "long": "duration", "often": "frequency"}
_WHAT = {"time": "time", "day": "time", "date": "time", "year": "time", "month": "time"}
_ALIKE = frozenset(
    frozenset(pair.split())
    for pair in ("time duration", "duration amount", "frequency amount", "person yes_no")
)
"""Kinds a paraphrase may switch between: "How long does shipping take?" / "When will my
order arrive?" / "How many days does delivery take?", "How often" / "How many times a week",
"Who pays for shipping?" / "Do I have to pay for shipping?"."""


def asks(text: str) -> frozenset[tuple[str, str]]:
    """The questions of `text` (its "?" sentences, and its last sentence when that has no end
    mark) whose openings show the kind of answer they ask for, as (sentence, kind)."""
    found = set()
    sentences = [s.strip() for s in _SENTENCE_END.split(text)]
    sentences = [s for s in sentences if s]
    for i, sentence in enumerate(sentences):
        if sentence.endswith("?") or (i == len(sentences) - 1 and sentence[-1] not in ".!"):
            lowered = sentence.lower()
            kind = _kind(_OPENING.findall(lowered[:40])[:3])
            if kind is not None:
                found.add((lowered, kind))
    return frozenset(found)


def _kind(words: list[str]) -> str | None:
    if not words:
        return None
    first, second = words[0], words[1] if len(words) > 1 else ""
    if first in _WH:
        return _WH[first]
    if first == "how":
        if second == "much" and len(words) > 2 and words[2] == "time":
            return "duration"
        return _HOW.get(second)
    if first in ("what", "which"):
        return _WHAT.get(second)
    if first in _YES_NO and second not in _NOT_ASKING:
        return "yes_no"
    return None


def same_kind(a: frozenset[tuple[str, str]], b: frozenset[tuple[str, str]]) -> bool:
    """The questions only one text asks (a shared template's own are left out) ask for a
    kind of answer the other's ask for too, or either shows none."""
    kinds_a = {kind for question, kind in a - b}
    kinds_b = {kind for question, kind in b - a}
    if not kinds_a or not kinds_b or not kinds_a.isdisjoint(kinds_b):
        return True
    return any(frozenset({x, y}) in _ALIKE for x in kinds_a for y in kinds_b)
