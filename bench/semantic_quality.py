"""Semantic-cache quality on the labelled prompt pairs in tests/data/semantic_pairs.jsonl.

For a grid of cosine-similarity thresholds: the hit rate (paraphrases accepted) and the
false-hit rate (pairs with different answers accepted), by threshold alone and with the
candidate verifier. The default threshold is the lowest one whose false-hit rate with the
verifier stays at or below 1% on the "dev" split; the "holdout" split (written after the
verifier was tuned) checks it.

    python -m bench.semantic_quality [--split dev|holdout|all] [--max-false-hit 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cache.embedder import SentenceEmbedder
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD
from cache.types import Vector
from cache.verify import Verdict, verify

PAIRS_PATH = Path(__file__).resolve().parent.parent / "tests" / "data" / "semantic_pairs.jsonl"
GRID = tuple(round(0.5 + 0.01 * i, 2) for i in range(50))


@dataclass(frozen=True, slots=True)
class Pair:
    """Two prompts and whether one's cached answer may serve the other."""

    a: str
    b: str
    same: bool
    kind: str
    split: str


@dataclass(frozen=True, slots=True)
class Scored:
    pair: Pair
    similarity: float
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class Rates:
    """Acceptance rates at one threshold; `*_verified` also require the verifier's consent."""

    threshold: float
    hit: float
    false_hit: float
    hit_verified: float
    false_hit_verified: float
    same: int
    different: int


def load_pairs(path: Path = PAIRS_PATH, split: str = "all") -> list[Pair]:
    """The labelled pairs of one split ("dev", "holdout") or all of them."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pair = Pair(row["a"], row["b"], row["same"], row["kind"], row.get("split", "dev"))
            if split in ("all", pair.split):
                pairs.append(pair)
    return pairs


async def score(pairs: Sequence[Pair], embedder: SentenceEmbedder) -> list[Scored]:
    """Cosine similarity and verdict of every pair; texts are embedded 256 at a time."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors: dict[str, Vector] = {}
    for start in range(0, len(texts), 256):
        chunk = texts[start : start + 256]
        vectors.update(zip(chunk, await asyncio.gather(*map(embedder.embed, chunk)), strict=True))
    return [Scored(p, float(np.dot(vectors[p.a], vectors[p.b])), verify(p.a, p.b)) for p in pairs]


def rates(scored: Sequence[Scored], threshold: float) -> Rates:
    """Hit and false-hit rates at `threshold` (similarity >= threshold is a hit)."""
    same = [s for s in scored if s.pair.same]
    different = [s for s in scored if not s.pair.same]

    def share(group: Sequence[Scored], verified: bool) -> float:
        accepted = [s for s in group if s.similarity >= threshold]
        if verified:
            accepted = [s for s in accepted if s.verdict.ok]
        return len(accepted) / len(group) if group else 0.0

    return Rates(
        threshold,
        hit=share(same, False),
        false_hit=share(different, False),
        hit_verified=share(same, True),
        false_hit_verified=share(different, True),
        same=len(same),
        different=len(different),
    )


def choose_threshold(
    scored: Sequence[Scored], grid: Iterable[float] = GRID, max_false_hit: float = 0.01
) -> float | None:
    """The lowest threshold whose false-hit rate with the verifier is <= `max_false_hit`."""
    for threshold in sorted(grid):
        if rates(scored, threshold).false_hit_verified <= max_false_hit:
            return threshold
    return None


def rates_table(scored: Sequence[Scored], thresholds: Iterable[float]) -> str:
    lines = [
        "| threshold | hit rate | false-hit rate | hit rate + verifier "
        "| false-hit rate + verifier |",
        "|---:|---:|---:|---:|---:|",
    ]
    for t in thresholds:
        r = rates(scored, t)
        lines.append(
            f"| {t:.2f} | {r.hit:.1%} | {r.false_hit:.1%} | "
            f"{r.hit_verified:.1%} | {r.false_hit_verified:.1%} |"
        )
    return "\n".join(lines)


def breakdown_table(scored: Sequence[Scored], threshold: float) -> str:
    """Per kind at `threshold`: pairs, accepted by similarity, accepted after the verifier."""
    lines = [
        "| kind | pairs | accepted (similarity) | accepted (+ verifier) | verifier reasons |",
        "|---|---:|---:|---:|---|",
    ]
    for kind in sorted({s.pair.kind for s in scored}):
        group = [s for s in scored if s.pair.kind == kind]
        above = [s for s in group if s.similarity >= threshold]
        verified = [s for s in above if s.verdict.ok]
        reasons = Counter(s.verdict.reason for s in group if s.verdict.reason)
        named = ", ".join(f"{r} {n}" for r, n in reasons.most_common())
        lines.append(f"| {kind} | {len(group)} | {len(above)} | {len(verified)} | {named} |")
    return "\n".join(lines)


def report(scored: Sequence[Scored], max_false_hit: float, title: str) -> str:
    chosen = choose_threshold(scored, max_false_hit=max_false_hit)
    shown = sorted({*GRID[::5], DEFAULT_SIMILARITY_THRESHOLD, *([chosen] if chosen else [])})
    at = DEFAULT_SIMILARITY_THRESHOLD
    r = rates(scored, at)
    return "\n\n".join(
        [
            f"## {title}: {r.same} same-answer pairs, {r.different} different-answer pairs",
            rates_table(scored, shown),
            f"Lowest threshold with false-hit rate + verifier <= {max_false_hit:.0%}: "
            + (f"**{chosen:.2f}**" if chosen is not None else "none"),
            f"At DEFAULT_SIMILARITY_THRESHOLD = {at:.2f}: hit rate {r.hit_verified:.1%}, "
            f"false-hit rate {r.false_hit_verified:.1%} with the verifier "
            f"({r.hit:.1%} / {r.false_hit:.1%} by similarity alone).",
            breakdown_table(scored, at),
        ]
    )


async def evaluate(split: str = "all", path: Path = PAIRS_PATH) -> list[Scored]:
    """Loads the model (in a thread), scores the pairs of `split`, closes the model."""
    embedder = await asyncio.to_thread(SentenceEmbedder.load)
    try:
        return await score(load_pairs(path, split), embedder)
    finally:
        await embedder.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="all", choices=("dev", "holdout", "all", "each"))
    parser.add_argument("--max-false-hit", type=float, default=0.01)
    parser.add_argument("--pairs", type=Path, default=PAIRS_PATH)
    args = parser.parse_args(argv)
    scored = asyncio.run(evaluate("all", args.pairs))
    splits = ("dev", "holdout", "all") if args.split == "each" else (args.split,)
    for split in splits:
        chosen = [s for s in scored if split in ("all", s.pair.split)]
        print(report(chosen, args.max_false_hit, f"Split {split}"), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
