"""Semantic-cache quality on the labelled sets (see `bench.semantic_sets`): short free-form
questions, and prompts built from long shared templates whose slots differ.

A pair is served (a hit) when the cosine similarity of the embedded prompts reaches the
threshold and the verifier agrees; for templated prompts the verifier decides on the changed
clauses, the rewritten ones by the clause judge's embeddings (`SLOT_SIMILARITY`). Defaults are
chosen on the train halves only: `DEFAULT_SIMILARITY_THRESHOLD`, the lowest threshold whose
false-hit rate with the verifier is at most 1% on the short set's dev half; `SLOT_SIMILARITY`,
the lowest clause similarity with no false hit on the templated set's train half and the
blind set's dev half (198 different-answer pairs). Reported per family at those defaults: the
test halves, the independent sets never tuned on (`load_holdout`, `load_fresh`), the blind
set's holdout half, the near-identical pairs (`load_additions`, `load_edits`; dev halves
looked at, holdout halves not), across reworded templates, and the clause judge on held-out
triplets.

    python -m bench.semantic_quality [--max-false-hit 0.01] [--precision fp32|int8]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.clause_ranking import Ranking, rank_triplets, ranking_section
from bench.clause_training import SHIPPED_DATA, load_triplets
from bench.semantic_scoring import (
    GRID,
    SLOT_GRID,
    Scored,
    choose_slot_threshold,
    choose_threshold,
    score,
)
from bench.semantic_sets import (
    Pair,
    load_additions,
    load_blind,
    load_edits,
    load_fresh,
    load_holdout,
    load_near_blind,
    load_nearby,
    load_pairs,
    load_probed,
    load_reworded,
    load_spellings,
    load_symbols,
    load_templated,
)
from bench.semantic_tables import family_table, rates_table, served_table, slot_table
from bench.verifier_cost import verifier_cost
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD, MAX_SEMANTIC_CHARS
from cache.semantic_factory import load_clause_embedder, load_embedding_model
from cache.settings import EMBEDDING_PRECISIONS, CacheSettings, EmbeddingPrecision
from cache.verify_confirm import SLOT_SIMILARITY


def _held_out(sets: Evaluation) -> list[tuple[str, Sequence[Scored]]]:
    def half(scored: Sequence[Scored], name: str = "test") -> list[Scored]:
        return [s for s in scored if s.pair.half == name]

    return [
        ("short (test)", half(sets.short)),
        ("templated (test)", half(sets.templated)),
        ("templated holdout", sets.holdout),
        ("templated fresh", sets.fresh),
        ("templated blind (holdout)", half(sets.blind)),
        ("near-identical (holdout)", half(sets.additions)),
        ("small edits (holdout)", half(sets.edits)),
        ("probed (holdout)", half(sets.probed)),
    ]


def report(sets: Evaluation, max_false_hit: float) -> str:
    short, templated, additions, edits = sets.short, sets.templated, sets.additions, sets.edits
    train = [s for s in short if s.pair.half == "train"]
    chosen = choose_threshold(train, max_false_hit=max_false_hit)
    shown = sorted({*GRID[::5], DEFAULT_SIMILARITY_THRESHOLD, *([chosen] if chosen else [])})
    templated_train = [s for s in templated if s.pair.half == "train"]
    tuned_on = templated_train + [s for s in sets.blind if s.pair.half == "train"]
    slot = choose_slot_threshold(tuned_on)
    return "\n\n".join(
        [
            f"Defaults: threshold {DEFAULT_SIMILARITY_THRESHOLD:.2f}, "
            f"slot similarity {SLOT_SIMILARITY:.2f} (clauses embedded by the clause judge: "
            "all-MiniLM-L6-v2 with the trained adapter). Hits: paraphrases served; false "
            "hits: different-answer pairs served.",
            "## What the running gateway serves, on the held-out sets",
            f"The gateway looks up no prompt over {MAX_SEMANTIC_CHARS} characters "
            "(`cache.semantic_defaults.looked_up`); the tables after this one count the "
            "verifier's verdicts on every pair, as if it did.",
            served_table(_held_out(sets)),
            f"## Short pairs ({len(short)}), by kind",
            family_table(short, by_kind=True),
            "Threshold grid on the train (dev) half:",
            rates_table(train, shown),
            f"Lowest threshold with false-hit rate + verifier <= {max_false_hit:.0%} on it: "
            + (f"**{chosen:.2f}**" if chosen is not None else "none"),
            f"## Templated pairs ({len(templated)}), by family",
            family_table(templated),
            "Slot similarity grid on the train halves (this set's and the blind set's dev half):",
            slot_table(tuned_on, SLOT_GRID[16:36:2]),
            "Lowest slot similarity with no false hit on them: "
            + (f"**{slot:.2f}**" if slot is not None else "none")
            + f" (the default: {SLOT_SIMILARITY:.2f}, `cache.verify_confirm.SLOT_SIMILARITY`)",
            *_section(
                "Templated holdout",
                sets.holdout,
                "holdout",
                "An independent set over other templates, written before tuning and not tuned "
                "on (tests/data/semantic_templated_holdout.jsonl); its misses were looked at "
                "twice, after tuning (see its non-regression test).",
            ),
            *_section(
                "Templated fresh set",
                sets.fresh,
                "fresh",
                "Written after tuning by someone who had seen neither the verifier nor the "
                "other sets (tests/data/semantic_templated_fresh.jsonl): new domains, heavier "
                "rewording. Never tuned on.",
            ),
            *(
                [
                    f"## Templated blind set ({len(sets.blind)}), by family",
                    "Written by someone who had seen neither the verifier nor the other sets "
                    "(tests/data/semantic_templated_blind.jsonl): 16 new templates and 7 "
                    "reworded versions, heavy paraphrases, near-identical negatives. Train is "
                    "its dev half, looked at once (false hits and misses) and tuned on; test "
                    "its holdout half, not looked at.",
                    family_table(sets.blind),
                ]
                if sets.blind
                else []
            ),
            *_split_section(
                f"Near-identical short pairs ({len(additions)}), by kind",
                "One prompt is the other with a few words added, dropped or changed "
                "(tests/data/semantic_additions.jsonl, written by someone who had not seen "
                "the verifier): train is its dev half, looked at once; test its holdout "
                "half, not looked at.",
                additions,
                by_kind=True,
            ),
            *_split_section(
                f"Near-identical pairs by edit ({len(edits)})",
                "Twelve kinds of small edit, five keeping the answer (synonym, "
                "abbreviation, filler, question frame, spelling) and seven changing it "
                "(tests/data/semantic_edits.jsonl, written by someone who had not seen the "
                "verifier or the other sets): train is its dev half, looked at once; test "
                "its holdout half, not looked at.",
                edits,
            ),
            *_split_section(
                f"One quantity or name written two ways ({len(sets.spellings)})",
                'Short pairs (tests/data/semantic_spellings.jsonl): quantities ("half an '
                'hour" / "30 minutes", "1st" / "first") and names ("Node.js" / '
                '"NodeJS") written two ways, beside hard negatives; train is its dev half, '
                "tuned on; test its holdout half, written before the rules it measures.",
                sets.spellings,
            ),
            *_split_section(
                f"Operators, symbols and letter case ({len(sets.symbols)})",
                "Short pairs (tests/data/semantic_symbols.jsonl) that differ in an operator "
                '("7 + 5" / "7 - 5"), a symbol (a 👍 / 👎 review) or a letter\'s case ("ls -a" / '
                '"ls -A", "5 mA" / "5 MA"), beside paraphrases that write them otherwise '
                '("9+3" / "9 + 3", "45 / 9" / "45 divided by 9"); train is its dev half, '
                "tuned on; test its holdout half, written before the rules it measures.",
                sets.symbols,
            ),
            *_split_section(
                f"Near-identical pairs, blind ({len(sets.nearby)})",
                "One prompt is the other with a word or two added, dropped or swapped, a "
                "number, polarity, order, quantifier or modal changed, or reworded by a "
                "synonym, filler, reordering, spelling or frame "
                "(tests/data/semantic_nearby.jsonl, written by someone who had seen neither "
                "the verifier nor the other sets): train is its dev half, tuned on; test its "
                "holdout half, not looked at.",
                sets.nearby,
            ),
            *_split_section(
                f"Near-identical pairs, second blind set ({len(sets.near_blind)})",
                "Eight kinds of answer-changing edit (a qualifier added or dropped, a word "
                "swapped, a number or unit, a time, place or person, polarity, direction, a "
                "quantifier or modal) and eight kinds of rewording (synonym, abbreviation, "
                "filler, reordered clause, question frame, spelling, light and heavy "
                "rewording) (tests/data/semantic_near_blind.jsonl, written by someone who had "
                "seen neither the verifier nor the other sets): train is its dev half, tuned "
                "on; test its holdout half, not looked at.",
                sets.near_blind,
            ),
            *_split_section(
                f"Pairs a probe of the running gateway asked ({len(sets.probed)})",
                "Asked of a running gateway by someone probing it for wrong answers, who had "
                "seen neither the verifier nor the other sets (tests/data/semantic_probed.jsonl): "
                "other languages and scripts, questions turned round, opposites, word forms, "
                "output constraints, code, quantities, templated prompts; train is its dev half, "
                "tuned on; test its holdout half, measured before and after that tuning only.",
                sets.probed,
            ),
            *_reworded_section(sets.reworded, sets.reworded_alone),
            *ranking_section(sets.ranked),
        ]
    )


def _split_section(
    title: str, about: str, scored: Sequence[Scored], *, by_kind: bool = False
) -> list[str]:
    """A short set with a dev and a holdout half (nothing when the set is empty)."""
    return [f"## {title}", about, family_table(scored, by_kind=by_kind)] if scored else []


def _reworded_section(reworded: Sequence[Scored], alone: Sequence[Scored]) -> list[str]:
    """The pairs across two versions of a template, with and without a sibling stored."""
    if not reworded:
        return []
    return [
        f"## Across a reworded template ({len(reworded)}), by family",
        "The query in a reworded version of the template, the stored prompt in the first, "
        "their slots those of a templated-set row (its label and half; `load_reworded`), and "
        "another stored prompt of the first version beside the candidate, from which the "
        "verifier reads where its slot is:",
        family_table(reworded),
        "The same pairs with nothing else stored (the slot unknown):",
        family_table(alone),
    ]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Every labelled set, scored."""

    short: list[Scored]
    templated: list[Scored]
    holdout: list[Scored]
    fresh: list[Scored]
    additions: list[Scored] = field(default_factory=list)
    edits: list[Scored] = field(default_factory=list)
    spellings: list[Scored] = field(default_factory=list)
    blind: list[Scored] = field(default_factory=list)
    reworded: list[Scored] = field(default_factory=list)
    """The reworded-template pairs, each with a sibling of its candidate stored."""
    reworded_alone: list[Scored] = field(default_factory=list)
    """The same pairs with nothing else stored."""
    symbols: list[Scored] = field(default_factory=list)
    nearby: list[Scored] = field(default_factory=list)
    near_blind: list[Scored] = field(default_factory=list)
    probed: list[Scored] = field(default_factory=list)
    ranked: tuple[Ranking, ...] = ()
    """How often each model ranks a held-out triplet's rewording above its hard negative."""


def _section(title: str, scored: Sequence[Scored], label: str, about: str) -> list[str]:
    """A held-out set's report by family (nothing when the set is empty)."""
    if not scored:
        return []
    table = family_table(scored, halves=("test",)).replace("test:", f"{label}:")
    return [f"## {title} ({len(scored)}), by family", about, table]


async def evaluate(precision: EmbeddingPrecision = "fp32") -> Evaluation:
    """Loads the models as the gateway does at `precision` (in threads: the embedding model,
    and the clause judge's), scores every set, closes the models."""
    settings = replace(CacheSettings(), embedding_precision=precision)
    held_out = [t for path in SHIPPED_DATA for t in load_triplets(path, split="holdout")]
    embedder = await asyncio.to_thread(load_embedding_model, settings)
    try:
        clauses = await asyncio.to_thread(load_clause_embedder, settings)
    except BaseException:
        await embedder.aclose()
        raise

    async def scored(pairs: Sequence[Pair]) -> list[Scored]:
        return await score(pairs, embedder, clauses=clauses)

    try:
        return Evaluation(
            await scored(load_pairs()),
            await scored(load_templated()),
            await scored(load_holdout()),
            await scored(load_fresh()),
            await scored(load_additions()),
            await scored(load_edits()),
            await scored(load_spellings()),
            await scored(load_blind()),
            await scored(load_reworded()),
            await scored(load_reworded(siblings=False)),
            symbols=await scored(load_symbols()),
            nearby=await scored(load_nearby()),
            near_blind=await scored(load_near_blind()),
            probed=await scored(load_probed()),
            ranked=(
                await rank_triplets("plain model", embedder, held_out),
                await rank_triplets("clause judge", clauses, held_out),
            ),
        )
    finally:
        await embedder.aclose()
        await clauses.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--max-false-hit", type=float, default=0.01)
    parser.add_argument(
        "--precision",
        choices=EMBEDDING_PRECISIONS,
        default=CacheSettings().embedding_precision,
        help="the embedding model's (GATEWAY_EMBEDDING_PRECISION); the clause judge is fp32",
    )
    args = parser.parse_args(argv)
    sets = asyncio.run(evaluate(args.precision))
    print(report(sets, args.max_false_hit))
    templated = [*load_templated(), *load_holdout(), *load_fresh(), *load_blind()]
    print("\n## What the verifier costs, templated pairs\n")
    print(verifier_cost(templated, warm_up=load_pairs()[:100]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
