"""Aligning two prompts that share a template: which words differ, and the spans around them.

Production prompts are mostly templates: a long instruction, context or conversation with a
short slot (a question, a text to translate) that varies. Whole-text similarity says nothing
about such pairs (the template dominates), so the verifier decides on the parts that differ.
The alignment is a word diff: the common prefix and suffix are cut first (cheap, and usually
all that is needed: a template with one slot leaves a small middle), then difflib aligns the
rest. Regions are expanded to their clause so that a changed word is judged in its context.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from cache.verify_numbers import spelled

_WORD = re.compile(r"[A-Za-z](?:\+\+|#)(?![\w#+])|[^\W_]+(?:['’][^\W_]+)*")  # C++, C#
_INITIALISM = re.compile(r"[A-Z0-9]{2,6}s?")
_BREAK = re.compile(r"[.!?;:]+(?=\s|$)|\n|[()\[\]\"“”]")
MAX_ALIGN_WORDS = 600
"""A middle longer than this (after cutting the common prefix and suffix) is not diffed: it
is one big change, which no slot comparison would accept anyway."""
MIN_TEMPLATE_WORDS = 8
"""Two prompts share a template when at least this many words line up... (16 until a short
frame with different word lists, "Run X asks for a short note that mentions" + 8 nouns, was
read as a rewording by the whole-text checks and served; 8 costs 2 of 193 short train-half
paraphrases, 6 would cost 9)"""
MIN_TEMPLATE_SHARE = 0.5
"""... and those are at least this share of the longer prompt's words."""
MAX_CONTEXT_WORDS = 3
"""Words of shared text kept on each side of a change, at most (within its clause): enough to
say what a changed word is about, too few for the template to dominate the comparison (tuned
on the train half of tests/data/semantic_templated.jsonl: 2 to 12 tried)."""


@dataclass(frozen=True, slots=True)
class Words:
    """A text's lowercase words and their character offsets."""

    text: str
    words: tuple[str, ...]
    initialisms: frozenset[str]
    """Lowercase forms of the tokens written as initialisms: "2FA", "PTO", "H100"."""
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    breaks: frozenset[int]
    """Indexes of words that open a clause (after . ! ? ; : a newline or a bracket)."""


_CONTRACTIONS = {"ve": "have", "ll": "will", "re": "are", "m": "am", "d": "would", "s": "s"}


def _split(token: str) -> tuple[str, ...]:
    """A lowercase token with its contraction spelled out: "don't" -> do not, "I've" -> i have
    (so that "I've" and "I have" align); "let's" -> let us; possessives keep a bare "s"."""
    left, _, right = token.casefold().replace("’", "'").partition("'")
    if not right:
        return (left,)
    if right == "t" and left.endswith("n"):
        base = {"won": "will", "can": "can", "ca": "can", "shan": "shall"}.get(left, left[:-1])
        return base, "not"
    if left == "let" and right == "s":
        return "let", "us"
    return left, _CONTRACTIONS.get(right, right)


@functools.lru_cache(maxsize=2048)
def words_of(text: str) -> Words:
    """Tokenized once per text (cached: stored candidates recur across lookups)."""
    cuts = [m.end() for m in _BREAK.finditer(text)]
    words: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    breaks: set[int] = set()
    initialisms: set[str] = set()
    cut = 0
    for match in _WORD.finditer(text):
        while cut < len(cuts) and cuts[cut] <= match.start():
            breaks.add(len(words))
            cut += 1
        token = match.group()
        if _INITIALISM.fullmatch(token) and not token.isdigit():
            initialisms.add(token.casefold())
        parts = _split(token)
        if len(parts) == 1:
            parts = (spelled(parts[0], text, match.start()),)  # "1st" as "first"
        for part in parts:
            words.append(part)
            starts.append(match.start())
            ends.append(match.end())
    return Words(
        text, tuple(words), frozenset(initialisms), tuple(starts), tuple(ends), frozenset(breaks)
    )


@dataclass(frozen=True, slots=True)
class Region:
    """Words [i1, i2) of the first text stand where words [j1, j2) of the second do."""

    i1: int
    i2: int
    j1: int
    j2: int


@dataclass(frozen=True, slots=True)
class Alignment:
    """How two word sequences line up: words in common, and the regions that differ."""

    shared: int
    regions: tuple[Region, ...]
    length_a: int
    length_b: int

    @property
    def shared_ratio(self) -> float:
        """Shared words over the longer text's words (1.0 for two empty texts)."""
        longest = max(self.length_a, self.length_b)
        return self.shared / longest if longest else 1.0


def align(a: tuple[str, ...], b: tuple[str, ...]) -> Alignment:
    """The differing regions of `a` and `b`, in order."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    end_a, end_b = len(a) - tail, len(b) - tail
    shared = head + tail
    if head == end_a and head == end_b:
        return Alignment(shared, (), len(a), len(b))
    if head in (end_a, end_b) or max(end_a - head, end_b - head) > MAX_ALIGN_WORDS:
        return Alignment(shared, (Region(head, end_a, head, end_b),), len(a), len(b))
    matcher = SequenceMatcher(None, a[head:end_a], b[head:end_b], autojunk=False)
    regions = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            shared += i2 - i1
        else:
            regions.append(Region(head + i1, head + i2, head + j1, head + j2))
    return Alignment(shared, tuple(regions), len(a), len(b))


def templated(alignment: Alignment) -> bool:
    """Whether two prompts share a template (then their slots decide, see
    `cache.verify_slot.judge`)."""
    return alignment.shared >= MIN_TEMPLATE_WORDS and alignment.shared_ratio >= MIN_TEMPLATE_SHARE


def slot_range(text: Words, siblings: Sequence[str]) -> tuple[int, int] | None:
    """Where `text`'s slot is, in its words [start, stop): the narrowest non-empty span over
    which it differs from one of `siblings` (other stored prompts) that shares its template;
    None when none does. The text itself, or a sibling that only adds words ("...,
    please"), shows no slot and is skipped. A sibling in another version of the template
    widens the span (a rewording that kept the slot may then be rejected: a backend call,
    never a wrong answer); a sibling with the same slot and one template word changed shows
    that word instead of the slot.
    """
    narrowest: tuple[int, int] | None = None
    for sibling in siblings:
        alignment = align(text.words, words_of(sibling).words)
        if not alignment.regions or not templated(alignment):
            continue
        span = alignment.regions[0].i1, alignment.regions[-1].i2
        if span[0] == span[1]:
            continue
        if narrowest is None or span[1] - span[0] < narrowest[1] - narrowest[0]:
            narrowest = span
    return narrowest


def into_slot(text: Words, siblings: Sequence[str], changed: Iterable[tuple[int, int]]) -> bool:
    """Whether a changed range [start, stop) of `text`'s words falls inside its slot, as
    `siblings` show it (`slot_range`); words inserted at the slot's edge count."""
    slot = slot_range(text, siblings) if siblings else None
    if slot is None:
        return False
    start, stop = slot
    return any(
        (low < stop and start < high) or (low == high and start <= low <= stop)
        for low, high in changed
    )


@dataclass(frozen=True, slots=True)
class SpanPair:
    """One changed place in context: the clause around it in each text, and the bare words."""

    a: str
    b: str
    a_words: tuple[str, ...]
    b_words: tuple[str, ...]
    whole: bool = False
    """Both clauses are whole sentences or lines (their context reached a break each side)."""
    b_range: tuple[int, int] = (0, 0)
    """The changed words' range [start, stop) in the second text (its words, not its clause)."""


def _clause(words: Words, start: int, stop: int) -> tuple[int, int]:
    """Word range [start, stop) widened to its clause, by at most MAX_CONTEXT_WORDS a side."""
    low = start
    while low > 0 and start - low < MAX_CONTEXT_WORDS and low not in words.breaks:
        low -= 1
    high = stop
    while high < len(words.words) and high - stop < MAX_CONTEXT_WORDS and high not in words.breaks:
        high += 1
    return low, high


def _cut(words: Words, low: int, high: int) -> str:
    if low >= high:
        return ""
    return words.text[words.starts[low] : words.ends[high - 1]]


def spans(a: Words, b: Words, regions: tuple[Region, ...]) -> list[SpanPair]:
    """The changed places of two aligned texts, each widened to its clause in both texts;
    regions whose clauses overlap are merged into one place."""
    merged: list[tuple[int, int, int, int, int, int, int, int]] = []
    for region in regions:
        a_low, a_high = _clause(a, region.i1, region.i2)
        b_low, b_high = _clause(b, region.j1, region.j2)
        if merged and (a_low < merged[-1][1] or b_low < merged[-1][3]):
            last = merged.pop()
            a_low, b_low = last[0], last[2]
            a_high, b_high = max(a_high, last[1]), max(b_high, last[3])
            region = Region(last[4], region.i2, last[6], region.j2)
        merged.append((a_low, a_high, b_low, b_high, region.i1, region.i2, region.j1, region.j2))
    return [
        SpanPair(
            _cut(a, al, ah),
            _cut(b, bl, bh),
            a.words[i1:i2],
            b.words[j1:j2],
            _bounded(a, al, ah) and _bounded(b, bl, bh),
            (j1, j2),
        )
        for al, ah, bl, bh, i1, i2, j1, j2 in merged
    ]


def _bounded(words: Words, low: int, high: int) -> bool:
    """Words [low, high) are a whole clause: a break (or the text's edge) on each side."""
    opens = low == 0 or low in words.breaks
    closes = high == len(words.words) or high in words.breaks
    return low < high and opens and closes
