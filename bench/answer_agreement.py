"""Could the error bound judge answers by meaning? On labelled answer pairs
(tests/data/answer_pairs.jsonl: two resampled answers to one prompt, or two alike answers
differing in a fact; split train/test) it compares the gateway's judge (the same text up to
whitespace and case, `cache.answer_agreement`) with a judge by meaning: the verifier's fact
checks agree and the embeddings are at least a similarity alike.

The similarity would be the lowest at which at most `--max-false-agree` of the train half's
misleading pairs are judged to agree (a wrong "agree" loosens the bound); the test half is
reported at it. With all-MiniLM-L6-v2 none is safe enough, which is why the gateway's judge
stays textual.

    python -m bench.answer_agreement [--max-false-agree 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.semantic_sets import DATA
from cache.answer_agreement import same_text
from cache.embedder import SentenceEmbedder
from cache.keys import embedded_text
from cache.verify import DEFAULT_CHECKS
from cache.verify_features import extract

ANSWER_PAIRS_PATH = DATA / "answer_pairs.jsonl"
GRID = tuple(round(0.70 + 0.01 * i, 2) for i in range(30))
FACT_CHECKS = tuple(
    check
    for check in DEFAULT_CHECKS
    if check.name in ("language", "quoted", "number", "negation", "antonym", "entity")
)


@dataclass(frozen=True, slots=True)
class AnswerPair:
    """Two answers to one prompt and whether either may stand for the other."""

    prompt: str
    a: str
    b: str
    agree: bool
    kind: str
    domain: str
    split: str


@dataclass(frozen=True, slots=True)
class Judged:
    """A pair with what the judge sees: same text, facts agreeing, embedding similarity."""

    pair: AnswerPair
    same: bool
    facts: bool
    similarity: float

    def agrees(self, threshold: float) -> bool:
        """The judge by meaning at `threshold` (the same text always agrees)."""
        return self.same or (self.facts and self.similarity >= threshold)


def facts_agree(a: str, b: str) -> bool:
    """No fact check of the verifier tells the two answers apart."""
    fa, fb = extract(a), extract(b)
    return all(check.agrees(fa, fb) for check in FACT_CHECKS)


def load_answer_pairs(path: Path = ANSWER_PAIRS_PATH) -> list[AnswerPair]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return [
        AnswerPair(r["prompt"], r["a"], r["b"], r["agree"], r["kind"], r["domain"], r["split"])
        for r in rows
    ]


async def judge_all(pairs: Sequence[AnswerPair], embedder: SentenceEmbedder) -> list[Judged]:
    """Every pair as the gateway judges it (answers embedded as `SemanticCache.embed` does)."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    embedded = await asyncio.gather(*(embedder.embed(embedded_text(t)) for t in texts))
    vectors = dict(zip(texts, embedded, strict=True))
    return [
        Judged(
            p,
            same_text([p.a], [p.b]),
            facts_agree(p.a, p.b),
            float(np.dot(vectors[p.a], vectors[p.b])),
        )
        for p in pairs
    ]


@dataclass(frozen=True, slots=True)
class AgreementRates:
    """Interchangeable pairs judged to agree, and misleading pairs judged to agree."""

    agreed: float
    false_agreed: float
    interchangeable: int
    misleading: int


def rates(judged: Sequence[Judged], threshold: float) -> AgreementRates:
    good = [j for j in judged if j.pair.agree]
    bad = [j for j in judged if not j.pair.agree]
    return AgreementRates(
        sum(j.agrees(threshold) for j in good) / max(len(good), 1),
        sum(j.agrees(threshold) for j in bad) / max(len(bad), 1),
        len(good),
        len(bad),
    )


def choose_threshold(
    judged: Sequence[Judged], max_false_agree: float, grid: Iterable[float] = GRID
) -> float | None:
    """The lowest similarity whose false-agreement rate is at most `max_false_agree`."""
    for threshold in sorted(grid):
        if rates(judged, threshold).false_agreed <= max_false_agree:
            return threshold
    return None


def report(judged: Sequence[Judged], max_false_agree: float) -> str:
    train = [j for j in judged if j.pair.split == "train"]
    test = [j for j in judged if j.pair.split == "test"]
    chosen = choose_threshold(train, max_false_agree)
    lines = [
        f"Answer pairs: {len(judged)} ({len(train)} train, {len(test)} test). Agreed: "
        "interchangeable pairs judged to agree; false: misleading pairs judged to agree.",
        "",
        "| judge | half | agreed | false |",
        "|---|---|---:|---:|",
    ]
    for name, group in (("train", train), ("test", test)):
        good = [j for j in group if j.pair.agree]
        bad = [j for j in group if not j.pair.agree]
        lines.append(
            f"| same text (the gateway's) | {name} | {_share(good, (j.same for j in good))} "
            f"| {_share(bad, (j.same for j in bad))} |"
        )
    lines += [
        "",
        "Judge by meaning (facts agree, similarity at least):",
        "",
        "| similarity | train agreed | train false | test agreed | test false |",
        "|---:|---:|---:|---:|---:|",
    ]
    for threshold in GRID[::3]:
        r, t = rates(train, threshold), rates(test, threshold)
        lines.append(
            f"| {threshold:.2f} | {r.agreed:.1%} | {r.false_agreed:.1%} "
            f"| {t.agreed:.1%} | {t.false_agreed:.1%} |"
        )
    lines.append("")
    lines.append(
        f"Lowest similarity with at most {max_false_agree:.0%} false agreement on the train "
        f"half: **{chosen:.2f}**"
        if chosen is not None
        else f"No similarity keeps false agreement at or under {max_false_agree:.0%} on the "
        "train half."
    )
    shown = chosen if chosen is not None else GRID[-1]
    by_kind: dict[str, list[Judged]] = {}
    for j in test:
        by_kind.setdefault(j.pair.kind, []).append(j)
    lines += [
        "",
        f"| test half, kind | pairs | agree by meaning at {shown:.2f} |",
        "|---|---:|---:|",
    ]
    for kind, group in sorted(by_kind.items()):
        lines.append(f"| {kind} | {len(group)} | {sum(j.agrees(shown) for j in group)} |")
    return "\n".join(lines)


def _share(group: Sequence[Judged], hits: Iterable[bool]) -> str:
    return f"{sum(hits) / max(len(group), 1):.1%}"


async def evaluate() -> list[Judged]:
    embedder = await asyncio.to_thread(SentenceEmbedder.load)
    try:
        return await judge_all(load_answer_pairs(), embedder)
    finally:
        await embedder.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--max-false-agree", type=float, default=0.01)
    args = parser.parse_args(argv)
    print(report(asyncio.run(evaluate()), args.max_false_agree))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
