"""The error-bound mode on a replayed stream of the labelled sets (issue #12).

A stream of queries is drawn at random, with replacement, from scored pairs (query `a`,
cached entry `b`, label `same`). Each event is a new lookup: a pair the verifier rejects, or
below the threshold, is a miss; a verified candidate is served if `cache.error_bound`
certifies its score, else withheld and judged by its label, as the gateway judges a withheld
match against the fresh answer; a sampled share of would-be hits is audited the same way.
Every event's entry is new (as a new phrasing is), so nothing is learned per entry: only the
neighbourhood of the entry's segment (tenant and scope) certifies, which is the conservative
case. A stream is one segment (its prompts differ only in the last user message), except "all
mixed, a scope per set", where each set's pairs are their own (another system prompt, model or
output schema), so one set's evidence never serves another's.

    python -m bench.semantic_replay [--events 20000] [--seeds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench.semantic_quality import Evaluation, evaluate
from bench.semantic_scoring import Scored
from cache.error_bound import ErrorBound, match_score, wilson_upper
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD

DEFAULT_EVENTS = 20_000
DEFAULT_AUDIT_RATE = 0.05


def one_scope(scored: Scored) -> str:
    """Every pair in one segment."""
    return ""


def bound_score(scored: Scored) -> float:
    """What the gateway's error bound judges this pair's match by."""
    return match_score(scored.similarity, scored.slot_similarity)


@dataclass(frozen=True, slots=True)
class Replayed:
    """One replay: lookups, verified candidates, hits served (and wrong ones), paraphrase
    lookups and those served, over the whole stream and its second half (after learning)."""

    events: int
    candidates: int
    served: int
    wrong: int
    paraphrases: int
    paraphrases_served: int
    late_paraphrases: int
    late_paraphrases_served: int
    candidates_wrong: int

    @property
    def wrong_rate(self) -> float:
        """Wrong answers among the hits served."""
        return self.wrong / self.served if self.served else 0.0

    @property
    def wrong_upper(self) -> float:
        return wilson_upper(self.wrong, self.served)

    @property
    def unbounded_wrong_rate(self) -> float:
        """Wrong answers among verified candidates: what `on` without a bound would serve."""
        return self.candidates_wrong / self.candidates if self.candidates else 0.0

    @property
    def late_hit_rate(self) -> float:
        """Paraphrases served in the second half of the stream."""
        late = self.late_paraphrases
        return self.late_paraphrases_served / late if late else 0.0


def replay(
    scored: Sequence[Scored],
    max_error_rate: float,
    *,
    events: int = DEFAULT_EVENTS,
    audit_rate: float = DEFAULT_AUDIT_RATE,
    seed: int = 0,
    threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    scope_of: Callable[[Scored], str] = one_scope,
) -> Replayed:
    """Replays `events` lookups drawn from `scored` through a fresh error bound, each in the
    segment `scope_of` gives it."""
    rng = random.Random(seed)
    bound = ErrorBound(max_error_rate, audit_rate=audit_rate, random_source=rng.random)
    candidates = served = wrong = candidates_wrong = 0
    paraphrases = paraphrases_served = late = late_served = 0
    for event in range(events):
        s = rng.choice(scored)
        same, second_half = s.pair.same, event >= events // 2
        paraphrases += same
        late += same and second_half
        if not s.hit(threshold):
            continue
        candidates += 1
        candidates_wrong += not same
        entry, score, scope = f"{event}", bound_score(s), scope_of(s)
        if bound.allows("t", scope, entry, score) and not bound.audit():
            served += 1
            wrong += not same
            paraphrases_served += same
            late_served += same and second_half
        else:
            bound.observe("t", scope, entry, score, same)
    return Replayed(
        events, candidates, served, wrong, paraphrases, paraphrases_served, late, late_served,
        candidates_wrong,
    )  # fmt: skip


def table(
    streams: Mapping[str, Sequence[Scored]],
    rates: Sequence[float],
    seeds: int,
    scopes: Mapping[str, Callable[[Scored], str]] | None = None,
) -> str:
    """The replay of every stream at every rate; `scopes` gives a stream's pairs their
    segments (one for all where it names none)."""
    lines = [
        "| stream | bound | served wrong (of hits served) | 95% upper | hits, 2nd half "
        "| without the bound: wrong |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, scored in streams.items():
        for rate in rates:
            scope_of = (scopes or {}).get(name, one_scope)
            runs = [replay(scored, rate, seed=seed, scope_of=scope_of) for seed in range(seeds)]
            served, wrong = sum(r.served for r in runs), sum(r.wrong for r in runs)
            late = sum(r.late_paraphrases for r in runs)
            late_served = sum(r.late_paraphrases_served for r in runs)
            candidates = sum(r.candidates for r in runs)
            unbounded = sum(r.candidates_wrong for r in runs) / candidates if candidates else 0.0
            lines.append(
                f"| {name} | {rate:.0%} | {wrong}/{served} ({wrong / max(served, 1):.2%}) "
                f"| {wilson_upper(wrong, served):.2%} | {late_served / max(late, 1):.0%} "
                f"| {unbounded:.2%} |"
            )
    return "\n".join(lines)


MIXED_BY_SET = "all mixed, a scope per set"


def held_out(sets: Evaluation) -> dict[str, list[Scored]]:
    """The streams reported: each set's held-out part, and all of them mixed."""
    streams = {
        "short (holdout)": _test_half(sets.short),
        "templated (test half)": _test_half(sets.templated),
        "templated (independent holdout)": list(sets.holdout),
        "templated (fresh)": list(sets.fresh),
        "near-identical (holdout)": _test_half(sets.additions),
        "small edits (holdout)": _test_half(sets.edits),
        "templated (blind holdout)": _test_half(sets.blind),
    }
    streams = {name: stream for name, stream in streams.items() if stream}
    streams["all mixed"] = [s for stream in streams.values() for s in stream]
    return streams


def set_scopes(sets: Mapping[str, Sequence[Scored]]) -> Callable[[Scored], str]:
    """Each pair's scope: the name of the set it comes from."""
    names = {id(s): name for name, stream in sets.items() for s in stream}
    return lambda scored: names[id(scored)]


def _test_half(scored: Sequence[Scored]) -> list[Scored]:
    return [s for s in scored if s.pair.half == "test"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    sets = asyncio.run(evaluate())
    streams = held_out(sets)
    scopes = {MIXED_BY_SET: set_scopes({n: s for n, s in streams.items() if n != "all mixed"})}
    streams[MIXED_BY_SET] = streams["all mixed"]
    print(
        f"{DEFAULT_EVENTS} lookups per stream and seed, {args.seeds} seeds, audit "
        f"{DEFAULT_AUDIT_RATE:.0%}, threshold {DEFAULT_SIMILARITY_THRESHOLD}:\n"
    )
    print(table(streams, (0.01, 0.02, 0.05), args.seeds, scopes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
