"""The candidate verifier: a near match from the vector index is served only if the query and
the stored prompt agree on everything an embedding glosses over.

all-MiniLM-L6-v2 scores "refund policy for orders over 30 days old" against "... under 30 days
old" at ~0.99 cosine, so no threshold alone is safe. Each check below compares one kind of fact
(numbers, negations, antonyms, entities, direction, a swapped template slot, ...) and names the
reason when they differ. The checks are pure Python over features extracted once per text
(`cache.verify_features`, cached): ~0.03-0.2 ms per pair on a busy 2-core box, no model.

Prompts sharing a long template are judged on the places where they differ
(`cache.verify_slot`); a rewritten slot is left `pending` for the model
(`cache.verify_confirm.ModelVerifier`, what the semantic cache uses).

The checks err towards rejecting: a rejected paraphrase costs one backend call, a wrongly
accepted candidate serves a wrong answer. `python -m bench.semantic_quality` measures both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from cache.verify_abbrev import expands_to
from cache.verify_entities import entities_found, same_entities
from cache.verify_features import Features, extract
from cache.verify_lexicon import FILLER
from cache.verify_numbers import NUMBER_VALUES, NUMBER_WORDS, counts, is_quantity
from cache.verify_roles import same_roles
from cache.verify_slot import SWAP_SIMILARITY, judge
from cache.verify_words import interchangeable, is_content

_MAX_DIFF_WORDS = 400
_RESTRICTORS = frozenset(
    "for from at in on with without by during after before under over per via since until "
    "within if when unless while whether".split()
)  # a phrase added after one of these restricts the question
_RELATIONS = frozenset(
    "after before above below than onto within between across along around behind beyond "
    "near per since".split()
)  # not nouns a qualifier narrows: "an [item] after 30 days"

REASONS = (
    "language",
    "quoted",
    "number",
    "negation",
    "antonym",
    "entity",
    "order",
    "roles",
    "slot",
    "length",
    "meaning",
)


ALONE_SIMILARITY = SWAP_SIMILARITY
"""The least similarity of a whole sentence rewritten inside a shared template, where the
per-place rules saw words swapped or added (see `verify`): the bar of a swap. Different
questions that pass the short-prompt checks scored 0.71-0.75 on the train half
("How long does expedited shipping take" / "How much does expedited shipping cost"), the
rewordings gained 0.86-0.90."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a candidate may answer the query; `reason` names the first failed check.

    `pending` lists clause pairs (query side, candidate side) whose meanings decide: a
    rejection that `cache.verify_confirm` overturns when the model scores every pair alike.
    """

    ok: bool
    reason: str | None = None
    pending: tuple[tuple[str, str], ...] = ()
    words: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    """For each pending pair, its changed content words with no lexical counterpart on each
    side (query, candidate)."""
    min_similarity: float = 0.0
    """The pending pairs must be at least this alike (besides the model verifier's threshold)."""
    clause_similarity: float | None = None
    """Set on an acceptance the model confirmed: the lowest similarity of the pending pairs."""


ACCEPT = Verdict(ok=True)


@dataclass(frozen=True, slots=True)
class Check:
    """One named comparison: `agrees(query, candidate)` is False when they must differ."""

    name: str
    agrees: Callable[[Features, Features], bool]


def _same_language(a: Features, b: Features) -> bool:
    if a.script != b.script:
        return False
    return not a.languages or not b.languages or not a.languages.isdisjoint(b.languages)


def _same_quoted(a: Features, b: Features) -> bool:
    return a.quoted == b.quoted


def _same_numbers(a: Features, b: Features) -> bool:
    if a.numbers == b.numbers:
        return True
    return _spelled_out(a, b) == _spelled_out(b, a)


def _spelled_out(a: Features, b: Features) -> list[tuple[str, str]]:
    """`a`'s numbers less the number words inside an expansion of one of `b`'s initialisms
    (the "two" of "two-factor authentication" is the 2 of "2FA", not a quantity)."""
    numbers = list(a.numbers)
    for entity in b.entities:
        span = expands_to(entity, a.seq) if any(c.isdigit() for c in entity) else None
        if span is not None:
            for word in a.seq[span[0] : span[1]]:
                value = (str(NUMBER_VALUES[word]), "") if word in NUMBER_VALUES else None
                if value in numbers:
                    numbers.remove(value)
    return numbers


def _same_negations(a: Features, b: Features) -> bool:
    return a.negations == b.negations


def _no_opposite_poles(a: Features, b: Features) -> bool:
    """On every axis both texts touch (on/off, before/after, ...) they pick the same poles."""
    if not a.poles or not b.poles:
        return True
    shared = {axis for axis, _ in a.poles} & {axis for axis, _ in b.poles}
    return all(
        {p for x, p in a.poles if x == axis} == {p for x, p in b.poles if x == axis}
        for axis in shared
    )


def _same_direction(a: Features, b: Features) -> bool:
    """No pair reversed: "from Paris to London" vs "from London to Paris".

    A pair that one text holds both ways ("terms from 6 to 60 months ... 60 to 6 weeks" in a
    shared template) says nothing about the other text's direction.
    """
    return not any(
        (y, x, rel) in b.directed - a.directed and (x, y, rel) not in b.directed
        for x, y, rel in a.directed
    )


def _same_roles(a: Features, b: Features) -> bool:
    """No words moved to other clauses (`same_roles`), and no two trading places in a frame
    that stays: "Divide 10 by 2" / "Divide 2 by 10", "substitute butter for oil" / "oil for
    butter"."""
    return same_roles(a, b) and not _traded(a.seq, b.seq)


def _traded(a: Sequence[str], b: Sequence[str]) -> bool:
    """Two content words or numbers, apart in the text, trade places and every other word
    stays ("Divide 10 by 2" / "Divide 2 by 10"); when the words around them move too, a
    phrase moved ("from the airport to the hotel" / "to the hotel from the airport"), and
    neighbours trading places reorder a name ("Traditional Chinese" / "Chinese Traditional")."""
    if len(a) != len(b):
        return False
    moved = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(moved) != 2:
        return False
    i, j = moved
    x, y = a[i], a[j]
    return (
        (b[i], b[j]) == (y, x) and j - i > 1 and all(w.isdigit() or is_content(w) for w in (x, y))
    )


def _filler(seq: Sequence[str], i: int) -> bool:
    # Quantities and their units were compared by the number check already.
    word = seq[i]
    if word in FILLER or word.isdigit() or word in NUMBER_WORDS:
        return True
    if i > 0 and counts(seq[i - 1], word):
        return True
    return is_quantity(word)


def _no_swapped_slot(a: Features, b: Features) -> bool:
    """Not the same template with one slot filled differently ("implement a stack / a queue"),
    nor the same text narrowed ("list the files / the hidden files / the files in /tmp").

    Fires only when the texts are identical apart from one run of at most four words on each
    side, or words on one side that narrow the other (`_narrows`; edits touching only filler
    such as "how do I"/"what's the way to" are ignored), and the two runs are not synonyms,
    inflections or the same antonym pole. Other changes are a rewording, left to the model.
    """
    if max(len(a.seq), len(b.seq)) > _MAX_DIFF_WORDS:
        return _no_swapped_words(a, b)  # diffing is quadratic at worst
    changes = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a.seq, b.seq, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        has_left = not all(_filler(a.seq, i) for i in range(i1, i2))
        has_right = not all(_filler(b.seq, j) for j in range(j1, j2))
        if has_left or has_right:
            changes.append((i1, i2, j1, j2, has_left and has_right))
    if len(changes) != 1:
        return True  # the same, or changed in several places: a rewording
    i1, i2, j1, j2, both = changes[0]
    if not both:
        # "the [hidden] files": one text narrows what the other asks; other additions reword.
        return not (_narrows(a.seq, i1, i2) or _narrows(b.seq, j1, j2))
    left, right = a.seq[i1:i2], b.seq[j1:j2]
    if max(len(left), len(right)) > 4:
        return True
    return interchangeable(left, right)


def _narrows(seq: Sequence[str], start: int, stop: int) -> bool:
    """Words [start, stop) of `seq`, added to a text otherwise the same, narrow what it asks:
    a phrase that restricts ("[for trucks]", "[if I lost my phone]", "[in descending
    order]"), or one or two words right before the content word they qualify ("[nonstop]
    flights", "my [recurring] order")."""
    for i in range(start, stop):
        if seq[i] in _RESTRICTORS and any(is_content(w) for w in seq[i + 1 : stop]):
            return True
    first = next((i for i in range(start, stop) if is_content(seq[i])), stop)
    if not 0 < stop - first <= 2 or stop >= len(seq):
        return False
    narrowed = seq[stop]
    return is_content(narrowed) and narrowed not in _RELATIONS


def _no_swapped_words(a: Features, b: Features) -> bool:
    """The order-free slot check for long prompts: compares word counts instead of a diff."""
    only_a, only_b = Counter(a.seq), Counter(b.seq)
    only_a, only_b = only_a - only_b, only_b - only_a
    left = sorted(w for w in only_a if w not in FILLER and not is_quantity(w))
    right = sorted(w for w in only_b if w not in FILLER and not is_quantity(w))
    if not left or not right or max(len(left), len(right)) > 4:
        return True
    return interchangeable(left, right)


def _similar_length(a: Features, b: Features) -> bool:
    """One prompt is not the other plus a long list of extra requirements."""
    short, long = sorted((a.n_words, b.n_words))
    return long - short <= max(8, short * 2)


DEFAULT_CHECKS: tuple[Check, ...] = (
    Check("language", _same_language),
    Check("quoted", _same_quoted),
    Check("number", _same_numbers),
    Check("negation", _same_negations),
    Check("antonym", _no_opposite_poles),
    Check("entity", same_entities),
    Check("order", _same_direction),
    Check("roles", _same_roles),
    Check("slot", _no_swapped_slot),
    Check("length", _similar_length),
)


# Replaced, for prompts sharing a template, by the per-place versions in `cache.verify_slot`
# (a pole word in the slot must not be compared with the template's words).
_SLOT_CHECKS = frozenset({"antonym", "slot", "roles"})
# Run, for prompts sharing a template, on the changed places: a quoted slot is the slot, not a
# quotation to keep verbatim, and a capitalized word after a template's "[USER]" tag is not a
# name (entities are taken from the changed places, and looked for in the whole other text).
_CLAUSE_CHECKS = frozenset({"quoted", "entity"})


def _clause_agrees(check: Check, a: Features, b: Features, ca: Features, cb: Features) -> bool:
    """`check` on the changed places `ca`, `cb` of templated prompts `a`, `b`."""
    if check.name == "entity":
        return entities_found(ca, a, b) and entities_found(cb, b, a)
    return check.agrees(ca, cb)


def verify(query: str, candidate: str, checks: Sequence[Check] = DEFAULT_CHECKS) -> Verdict:
    """Whether `candidate` (a stored prompt) may answer `query`; the first failed check wins.

    Prompts sharing a template are judged on the places where they differ; a rewritten slot
    comes back rejected with the clauses to compare by meaning in `pending`.
    """
    if " ".join(query.split()) == " ".join(candidate.split()):
        return ACCEPT
    a, b = extract(query), extract(candidate)
    slots = judge(query, candidate)
    clause_a, clause_b = (extract(t) for t in slots.clauses) if slots is not None else (a, b)
    for check in checks:
        if slots is not None and check.name in _SLOT_CHECKS:
            continue
        if slots is not None and check.name in _CLAUSE_CHECKS:
            if not _clause_agrees(check, a, b, clause_a, clause_b):
                return Verdict(ok=False, reason=check.name)
        elif not check.agrees(a, b):
            return Verdict(ok=False, reason=check.name)
    if slots is None or (slots.ok and not slots.pending):
        return ACCEPT
    if not slots.ok:
        alone = slots.alone
        if alone is not None and _alone_agrees(alone, query, candidate, checks):
            # A whole sentence rewritten inside the template: judged as two short prompts
            # are, by the checks and then by meaning, at the short-prompt bar or above.
            return Verdict(
                ok=False, reason="meaning", pending=(alone,), min_similarity=ALONE_SIMILARITY
            )
        return Verdict(ok=False, reason=slots.reason)
    return Verdict(
        ok=False,
        reason="meaning",
        pending=slots.pending,
        words=slots.words,
        min_similarity=slots.min_similarity,
    )


def _alone_agrees(
    alone: tuple[str, str], query: str, candidate: str, checks: Sequence[Check]
) -> bool:
    """The sentences a templated pair differs in pass the checks as two short prompts (never
    the pair itself again: a prompt that is one sentence has no shorter one to judge)."""
    if len(alone[0]) + len(alone[1]) >= len(query) + len(candidate):
        return False
    return verify(*alone, checks).ok


@dataclass(slots=True)
class VerifierStats:
    """Counts for metrics: pairs checked, passed, and rejected per reason."""

    checked: int = 0
    passed: int = 0
    rejected: Counter[str] = field(default_factory=Counter)

    def record(self, verdict: Verdict) -> None:
        self.checked += 1
        if verdict.ok:
            self.passed += 1
        else:
            self.rejected[verdict.reason or "unknown"] += 1

    def snapshot(self) -> dict[str, int]:
        """Flat counters: checked, passed, and rejected_<reason> for every known reason."""
        out = {"checked": self.checked, "passed": self.passed}
        for reason in (*REASONS, *sorted(set(self.rejected) - set(REASONS))):
            out[f"rejected_{reason}"] = self.rejected[reason]
        return out


class Verifier:
    """`verify` with counters, without the model: pending verdicts stay rejections."""

    def __init__(self, checks: Sequence[Check] = DEFAULT_CHECKS) -> None:
        self.checks = tuple(checks)
        self.stats = VerifierStats()

    def verify(self, query: str, candidate: str) -> Verdict:
        verdict = verify(query, candidate, self.checks)
        self.stats.record(verdict)
        return verdict
