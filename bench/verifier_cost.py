"""What the semantic verifier's text checks cost, in CPU per candidate, by prompt length:
the figure `GATEWAY_SEMANTIC_MAX_CHARS` trades (printed by `bench.semantic_quality`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench.semantic_sets import Pair
from cache.verify import verify

_LENGTHS = ((0, 1000), (1000, 2000), (2000, 4000))


def verifier_cost(pairs: Sequence[Pair], warm_up: Sequence[Pair]) -> str:
    """CPU time of the verifier's text checks per candidate, by the longer prompt's length:
    each pair judged once, as a new query is (after `warm_up`, other pairs, has loaded the
    lexicons); the figure `GATEWAY_SEMANTIC_MAX_CHARS` trades."""
    for pair in warm_up:
        verify(pair.a, pair.b, siblings=pair.siblings)
    lines = [
        "| longer prompt (characters) | pairs | CPU p50 | CPU p90 | CPU max |",
        "|---|---:|---:|---:|---:|",
    ]
    for low, high in _LENGTHS:
        costs = []
        for pair in pairs:
            if low < max(len(pair.a), len(pair.b)) <= high:
                started = time.thread_time()
                verify(pair.a, pair.b, siblings=pair.siblings)
                costs.append((time.thread_time() - started) * 1e3)
        if costs:
            costs.sort()
            p50, p90 = costs[len(costs) // 2], costs[int(len(costs) * 0.9)]
            cells = f"{p50:.1f} ms | {p90:.1f} ms | {costs[-1]:.1f} ms"
            lines.append(f"| {low}-{high} | {len(costs)} | {cells} |")
    return "\n".join(lines)
