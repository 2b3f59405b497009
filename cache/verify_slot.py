"""The slot judgement for templated prompts: decide on the parts that differ, not the whole.

Two prompts that share a long template (a support persona, a RAG context, a translation
instruction) embed alike whatever their slots say, so the whole-text similarity that made
them candidates means nothing. Here they are aligned word by word (`cache.slot`) and every
changed place, widened to its clause, is judged on its own:

- the same words up to stems, synonyms, phrases, irregular forms, abbreviations ("2FA" /
  "two-factor authentication") or filler (`cache.verify_words`): the same meaning, accepted
  without the model;
- a passage moved elsewhere (retrieved chunks in another order): accepted;
- opposite antonym poles or a negating prefix inside the place ("import" / "export", "paid" /
  "unpaid"), or two words trading places ("too small, I need the large size"): rejected;
- content added or dropped on one side only ("Can I cancel my order after it shipped?"), or a
  few content words swapped inside an otherwise shared clause ("track" / "return my order"):
  rejected. An embedding scores such pairs near 1 whatever the change means, and a real
  synonym would have been recognized above. A swap left over once the lexicon explained the
  rest of a reworded clause goes to the model at no less than `SWAP_SIMILARITY` (stricter
  than the plain model's clause bar; the clause judge's is higher still);
- anything larger, a rewritten clause, is left to the model: the two clauses are embedded
  and must be at least `SLOT_SIMILARITY` alike (`cache.verify_confirm`).

The changed places are also where `cache.verify` looks for entities and quoted text of
templated prompts (a template's tags and quotes would confuse the whole-text checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from cache.slot import Region, SpanPair, Words, align, into_slot, spans, templated, words_of
from cache.verify_abbrev import expands_to
from cache.verify_features import stem
from cache.verify_frames import framed
from cache.verify_numbers import counts, one_of
from cache.verify_roles import rearranged, same_clauses
from cache.verify_swaps import traded
from cache.verify_transform import rewords_text
from cache.verify_words import interchangeable, is_content, opposite, phrase_covered

MAX_PLACES = 8
"""More changed places than this is a different prompt, not a reworded one."""
MAX_SLOT_PLACES = 1
"""Up to this many changed places are slots, judged by the rules below; more places means the
template itself was reworded, and all changed clauses are compared together by the model
(tuned on the train half: 1 and 2 tried)."""
MAX_SWAP_WORDS = 2
"""A change of at most this many unmatched content words a side, inside a clause that keeps
at least as many content words, is a swapped slot value."""
SWAP_SIMILARITY = 0.85
"""A reworded clause whose only unexplained change is a swap of a few words ("Can I return
boots I've worn outside" / "Is it possible to send back boots that I already wore outdoors":
worn / wore) goes to the model at this stricter clause similarity: a swapped slot value in a
long kept clause can embed above 0.9 (train half: such paraphrases scored 0.85-0.94, the one
such different question 0.61, all with the plain model; the clause judge's bar is higher)."""
MIN_MOVE_WORDS = 6
MAX_LEXICAL_WORDS = 24


@dataclass(frozen=True, slots=True)
class SlotJudgement:
    """The decision on a templated pair; `pending` lists clause pairs left to the model."""

    ok: bool
    reason: str | None = None
    pending: tuple[tuple[str, str], ...] = ()
    words: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    """For each pending pair, its content words with no lexical counterpart on each side."""
    min_similarity: float = 0.0
    """The pending pairs must reach at least this similarity (and the verifier's own)."""
    clauses: tuple[str, str] = ("", "")
    """Every changed place in context, joined (query side, candidate side): where the fact
    checks that the shared template would confuse (entities, quoted text, direction) look."""
    alone: tuple[str, str] | None = None
    """On a "slot" rejection of a single changed place that is a whole sentence or line on
    both sides (a question in a support template): the two sentences, which may still be
    judged as two short prompts are (`cache.verify.verify`)."""


def _without_moves(a: Words, b: Words, regions: tuple[Region, ...]) -> tuple[Region, ...]:
    """Drops a deleted run that reappears as an inserted run elsewhere (a moved passage)."""
    deleted = {a.words[r.i1 : r.i2]: r for r in regions if r.j1 == r.j2}
    inserted = {b.words[r.j1 : r.j2]: r for r in regions if r.i1 == r.i2}
    moved: set[Region] = set()
    for run, region in deleted.items():
        if len(run) >= MIN_MOVE_WORDS and run in inserted:
            moved |= {region, inserted[run]}
    return tuple(r for r in regions if r not in moved)


def _without_frames(a: Words, b: Words, regions: tuple[Region, ...]) -> tuple[Region, ...]:
    """The regions less the words that only frame a request at either edge ("I was
    wondering,", "Any help appreciated.", `cache.verify_frames`); a region left empty goes."""
    frame_a, frame_b = framed(a.words, a.breaks), framed(b.words, b.breaks)
    if not frame_a and not frame_b:
        return regions
    kept = []
    for r in regions:
        i1, i2 = _trimmed(r.i1, r.i2, frame_a)
        j1, j2 = _trimmed(r.j1, r.j2, frame_b)
        if i1 < i2 or j1 < j2:
            kept.append(Region(i1, i2, j1, j2))
    return tuple(kept)


def _trimmed(start: int, stop: int, frame: frozenset[int]) -> tuple[int, int]:
    while start < stop and start in frame:
        start += 1
    while stop > start and stop - 1 in frame:
        stop -= 1
    return start, stop


def _uncovered(changed: Sequence[str], own: Words, other: Words) -> list[str]:
    """The content words of `changed` (words of `own`) with no counterpart in the `other`
    clause. Abbreviations count as counterparts both ways: "2FA" in one clause and "two factor
    authentication" in the other."""
    stems = {stem(w) for w in other.words}
    units = _counted(own.words)
    content = [w for w in changed if is_content(w) and stem(w) not in stems and w not in units]
    if len(content) > MAX_LEXICAL_WORDS:
        return content  # a rewritten passage: the lexical checks below would not rescue it
    expanded = phrase_covered(own, other)
    for short in other.initialisms:
        span = expands_to(short, own.words)
        if span is not None:
            expanded.update(own.words[span[0] : span[1]])
    return [
        word
        for word in content
        if word not in expanded
        and not (word in own.initialisms and expands_to(word, other.words) is not None)
        and not interchangeable((word,), other.words)
    ]


def _counted(words: Sequence[str]) -> set[str]:
    """The units of the clause that follow a number, and a "one" before a unit ("ten
    percent", "1,200 dollars", "one hour"): the number check compares them ("10%", "1 hr")."""
    counted = set()
    for i, (before, unit) in enumerate(pairwise(words)):
        if counts(before, unit):
            counted |= {before, unit} if before == "one" else {unit}
        elif one_of(words, i) is not None:
            counted.add(unit)  # "an hour"
    return counted


def _reworded(changed: Sequence[str], other: Words) -> int:
    """How many changed content words have no identical word (up to stem) in `other`."""
    stems = {stem(w) for w in other.words}
    return sum(is_content(w) and stem(w) not in stems for w in changed)


@dataclass(frozen=True, slots=True)
class _Change:
    """A changed place whose words are not all matched on the other side."""

    place: SpanPair
    left: list[str]
    right: list[str]
    kept: int
    rewritten: bool
    """Words were changed on both sides that the lexicon accounts for (synonyms, phrases,
    abbreviations): a reworded clause rather than a slot value swapped in a fixed clause."""


def _changes(places: list[SpanPair]) -> list[_Change] | SlotJudgement:
    """The places that change content, or a rejection when one flips an antonym pole."""
    changes = []
    for place in places:
        clause_a, clause_b = words_of(place.a), words_of(place.b)
        if opposite(clause_a.words, clause_b.words):
            return SlotJudgement(ok=False, reason="antonym")
        if _transposed(place.a_words, place.b_words) and not same_clauses(place.a, place.b):
            return SlotJudgement(ok=False, reason="order")
        if rearranged(place.a, place.b) or traded(words_of(place.a).words, words_of(place.b).words):
            return SlotJudgement(ok=False, reason="roles")
        left = _uncovered(place.a_words, clause_a, clause_b)
        right = _uncovered(place.b_words, clause_b, clause_a)
        if left or right:
            kept = sum(is_content(w) for w in clause_a.words) - len(left)
            rewritten = _reworded(place.a_words, clause_b) > len(left) and _reworded(
                place.b_words, clause_a
            ) > len(right)
            changes.append(_Change(place, left, right, kept, rewritten))
    return changes


def _transposed(a: Sequence[str], b: Sequence[str]) -> bool:
    """The same content words with two of them trading places: "too small, I need the large
    size" / "too large, I need the small size", "ship X and drop Y" / "drop X and ship Y"."""
    ca, cb = [w for w in a if is_content(w)], [w for w in b if is_content(w)]
    if ca == cb or sorted(ca) != sorted(cb):
        return False
    moved = [i for i, (x, y) in enumerate(zip(ca, cb, strict=True)) if x != y]
    if len(moved) != 2:
        return False
    # Two neighbours trading places reorder a name ("Traditional Chinese" / "Chinese
    # (Traditional)"); words apart trade roles.
    first, second = a.index(ca[moved[0]]), a.index(ca[moved[1]])
    return abs(second - first) > 1


def _few_swapped(change: _Change) -> bool:
    most = max(len(change.left), len(change.right))
    return most <= MAX_SWAP_WORDS and change.kept >= most


def _swapped(change: _Change) -> bool:
    """Content added or dropped, or a few words swapped inside a clause that stays (unless the
    rest of the change was reworded: then the clauses are compared by meaning, at
    `SWAP_SIMILARITY`)."""
    if not change.left or not change.right:
        return True
    return not change.rewritten and _few_swapped(change)


def judge(query: str, candidate: str, siblings: Sequence[str] = ()) -> SlotJudgement | None:
    """The slot judgement of a pair sharing a template; None when they share none.

    A single changed place must be a rewrite (not a swap, an addition or a deletion), and is
    compared by meaning. More places means the template itself was reworded: all changed
    clauses are then compared together, as one text, unless a change reaches into the
    candidate's slot, which `siblings` (other stored prompts) may show (`into_slot`).
    """
    a, b = words_of(query), words_of(candidate)
    alignment = align(a.words, b.words)
    if not templated(alignment):
        return None
    places = spans(a, b, _without_frames(a, b, _without_moves(a, b, alignment.regions)))
    if len(places) > MAX_PLACES:
        return SlotJudgement(ok=False, reason="slot")
    clauses = ("\n".join(p.a for p in places), "\n".join(p.b for p in places))
    if len(places) <= MAX_SLOT_PLACES and rewords_text(a, b, places):
        return SlotJudgement(ok=False, reason="quoted", clauses=clauses)
    changes = _changes(places)
    if isinstance(changes, SlotJudgement):
        return replace(changes, clauses=clauses)
    if not changes:
        return SlotJudgement(ok=True, clauses=clauses)
    if len(changes) <= MAX_SLOT_PLACES:
        if any(_swapped(change) for change in changes):
            alone = (changes[0].place.a, changes[0].place.b) if changes[0].place.whole else None
            return SlotJudgement(ok=False, reason="slot", clauses=clauses, alone=alone)
        return SlotJudgement(
            ok=True,
            pending=tuple((c.place.a, c.place.b) for c in changes),
            words=tuple((tuple(c.left), tuple(c.right)) for c in changes),
            min_similarity=SWAP_SIMILARITY if any(map(_few_swapped, changes)) else 0.0,
            clauses=clauses,
        )
    if into_slot(b, siblings, [c.place.b_range for c in changes]):
        # A new version of the template with another slot value: the joined comparison
        # cannot tell it from a rewording that kept the slot (both embed alike), the slot can.
        return SlotJudgement(ok=False, reason="slot", clauses=clauses)
    joined = (" … ".join(c.place.a for c in changes), " … ".join(c.place.b for c in changes))
    left = tuple(w for c in changes for w in c.left)
    right = tuple(w for c in changes for w in c.right)
    if len(changes) == 2 and len(left) == len(right) == 2 and left == right[::-1] != right:
        # Two words trading places: "a parent claimed by their child" / "a child claimed by
        # their parent".
        return SlotJudgement(ok=False, reason="roles", clauses=clauses)
    return SlotJudgement(ok=True, pending=(joined,), words=((left, right),), clauses=clauses)
