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

from cache.verify_asks import same_kind
from cache.verify_case import same_case
from cache.verify_compounds import joined, may_join
from cache.verify_entities import entities_found, same_entities
from cache.verify_features import Features, extract, typed_out
from cache.verify_layout import same_layout
from cache.verify_modality import same_modality
from cache.verify_particles import opposite_particles
from cache.verify_quantities import same_numbers
from cache.verify_rewrite import toward
from cache.verify_scope import same_scope
from cache.verify_slot import SWAP_SIMILARITY, judge
from cache.verify_swaps import no_swapped_slot, same_roles_in_place

REASONS = (
    "layout",
    "language",
    "asks",
    "quoted",
    "symbol",
    "case",
    "number",
    "negation",
    "modality",
    "scope",
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
rewordings gained 0.86-0.90 (all with the plain model: the clause judge's own bar,
`SLOT_SIMILARITY`, is higher)."""


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


def _same_kind_of_answer(a: Features, b: Features) -> bool:
    """Both ask for the same kind of answer: not a yes or no against an amount, a time against
    a place ("Can I carry over unused days?" / "How many unused days can I carry over?")."""
    return same_kind(a.asks, b.asks)


def _same_quoted(a: Features, b: Features) -> bool:
    return a.quoted == b.quoted


def _same_symbols(a: Features, b: Features) -> bool:
    return a.symbols == b.symbols


def _same_case(a: Features, b: Features) -> bool:
    return same_case(a.case, b.case)


def _same_negations(a: Features, b: Features) -> bool:
    return a.negations == b.negations


def _same_modality(a: Features, b: Features) -> bool:
    return same_modality(a.modality, b.modality)


def _same_scope(a: Features, b: Features) -> bool:
    return same_scope(a.scope, b.scope)


def _no_opposite_poles(a: Features, b: Features) -> bool:
    """On every axis both texts touch (on/off, before/after, ...) they pick the same poles,
    and no word takes "in" in one and "out" in the other ("zoom in" / "zoom out")."""
    if opposite_particles(a.seq, b.seq):
        return False
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


def _similar_length(a: Features, b: Features) -> bool:
    """One prompt is not the other plus a long list of extra requirements."""
    short, long = sorted((a.n_words, b.n_words))
    return long - short <= max(8, short * 2)


DEFAULT_CHECKS: tuple[Check, ...] = (
    Check("language", _same_language),
    Check("asks", _same_kind_of_answer),
    Check("quoted", _same_quoted),
    Check("symbol", _same_symbols),
    Check("case", _same_case),
    Check("number", same_numbers),
    Check("negation", _same_negations),
    Check("modality", _same_modality),
    Check("scope", _same_scope),
    Check("antonym", _no_opposite_poles),
    Check("entity", same_entities),
    Check("order", _same_direction),
    Check("roles", same_roles_in_place),
    Check("slot", no_swapped_slot),
    Check("length", _similar_length),
)


# Replaced, for prompts sharing a template, by the per-place versions in `cache.verify_slot`
# (a pole word in the slot must not be compared with the template's words).
_SLOT_CHECKS = frozenset({"antonym", "slot", "roles"})
# Run, for prompts sharing a template, on the changed places: a quoted slot is the slot, not a
# quotation to keep verbatim, and a capitalized word after a template's "[USER]" tag is not a
# name (entities are taken from the changed places, and looked for in the whole other text).
_CLAUSE_CHECKS = frozenset({"quoted", "entity"})


# Compared, for prompts sharing a template, on the one changed place only: when the template
# itself was reworded, its own "only" or "must" ("Return only the code" / "Reply with just
# the code") would decide.
_ONE_PLACE_CHECKS = frozenset({"modality", "scope"})


def _clause_agrees(check: Check, a: Features, b: Features, ca: Features, cb: Features) -> bool:
    """`check` on the changed places `ca`, `cb` of templated prompts `a`, `b`."""
    if check.name == "entity":
        return entities_found(ca, a, b) and entities_found(cb, b, a)
    return check.agrees(ca, cb)


def verify(
    query: str,
    candidate: str,
    checks: Sequence[Check] = DEFAULT_CHECKS,
    siblings: Sequence[str] = (),
) -> Verdict:
    """Whether `candidate` (a stored prompt) may answer `query`; the first failed check wins.

    Prompts sharing a template are judged on the places where they differ; a rewritten slot
    comes back rejected with the clauses to compare by meaning in `pending`. `siblings`,
    other stored prompts near the query, may show where the candidate's slot is.
    """
    query, candidate = typed_out(query), typed_out(candidate)
    if " ".join(query.split()) == " ".join(candidate.split()):
        return ACCEPT if same_layout(query, candidate) else Verdict(ok=False, reason="layout")
    a, b = extract(query), extract(candidate)
    if may_join(a.words, b.words):
        query, candidate = joined(query, candidate)
        a, b = extract(query), extract(candidate)
    slots = judge(query, candidate, siblings)
    clause_a, clause_b = (extract(t) for t in slots.clauses) if slots is not None else (a, b)
    one_place = slots is not None and "\n" not in slots.clauses[0] + slots.clauses[1]
    for check in checks:
        if slots is not None and check.name in _SLOT_CHECKS:
            continue
        if slots is not None and check.name in _ONE_PLACE_CHECKS:
            if one_place and not check.agrees(clause_a, clause_b):
                return Verdict(ok=False, reason=check.name)
        elif slots is not None and check.name in _CLAUSE_CHECKS:
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
                ok=False,
                reason="meaning",
                pending=_in_candidate_words((alone,)),
                min_similarity=ALONE_SIMILARITY,
            )
        return Verdict(ok=False, reason=slots.reason)
    return Verdict(
        ok=False,
        reason="meaning",
        pending=_in_candidate_words(slots.pending),
        words=slots.words,
        min_similarity=slots.min_similarity,
    )


def _in_candidate_words(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The clause pairs for the model, each query clause in its candidate's words where the
    lexicon pairs them (`cache.verify_rewrite`)."""
    return tuple((toward(query, candidate), candidate) for query, candidate in pairs)


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

    def verify(self, query: str, candidate: str, siblings: Sequence[str] = ()) -> Verdict:
        verdict = verify(query, candidate, self.checks, siblings)
        self.stats.record(verdict)
        return verdict
