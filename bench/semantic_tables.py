"""Markdown tables of scored labelled pairs, for `bench.semantic_quality`: rates over a
threshold grid, per family and half, and what the running gateway serves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bench.semantic_scoring import Scored, rates
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD


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


def slot_table(scored: Sequence[Scored], slots: Iterable[float]) -> str:
    lines = ["| slot similarity | hit rate | false-hit rate |", "|---:|---:|---:|"]
    for slot in slots:
        r = rates(scored, DEFAULT_SIMILARITY_THRESHOLD, slot)
        lines.append(f"| {slot:.2f} | {r.hit_verified:.1%} | {r.false_hit_verified:.1%} |")
    return "\n".join(lines)


def _count(group: Sequence[Scored], accepted: Iterable[bool]) -> str:
    hits = sum(accepted)
    return f"{hits}/{len(group)} ({hits / len(group):.1%})" if group else "-"


def served_table(sets: Sequence[tuple[str, Sequence[Scored]]]) -> str:
    """Per set, at the defaults: what the verifier accepts over every pair, and what the running
    gateway serves, which looks up no prompt over `MAX_SEMANTIC_CHARS`."""
    lines = [
        "| set | pairs with a prompt too long | hits (verifier) | hits served "
        "| false hits (verifier) | false hits served |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    t = DEFAULT_SIMILARITY_THRESHOLD
    for name, scored in sets:
        same = [s for s in scored if s.pair.same]
        different = [s for s in scored if not s.pair.same]
        cells = (
            _count(scored, (not s.reachable for s in scored)),
            _count(same, (s.hit(t) for s in same)),
            _count(same, (s.served(t) for s in same)),
            _count(different, (s.hit(t) for s in different)),
            _count(different, (s.served(t) for s in different)),
        )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(group: Sequence[Scored], same: bool) -> str:
    chosen = [s for s in group if s.pair.same is same]
    hits = sum(s.hit(DEFAULT_SIMILARITY_THRESHOLD) for s in chosen)
    return f"{hits}/{len(chosen)} ({hits / len(chosen):.0%})" if chosen else "-"


def family_table(
    scored: Sequence[Scored], by_kind: bool = False, halves: Sequence[str] = ("train", "test")
) -> str:
    """Per family (or kind) and half, at the defaults: paraphrases served, wrong answers served."""
    header = "".join(f" {half}: hits | {half}: false hits |" for half in halves)
    lines = [
        f"| {'kind' if by_kind else 'family'} |{header}",
        "|---|" + "---:|---:|" * len(halves),
    ]

    def group(s: Scored) -> str:
        return s.pair.kind if by_kind else s.pair.family

    for name in [*sorted({group(s) for s in scored}), "all"]:
        chosen = [s for s in scored if name in ("all", group(s))]
        cells = [
            _cell([s for s in chosen if s.pair.half == half], same)
            for half in halves
            for same in (True, False)
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
