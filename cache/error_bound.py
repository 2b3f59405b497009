"""An operator-set bound on the semantic cache's wrong-hit rate, learned from judgements.

Each judged match (its cached answer against the fresh one) is an observation (score,
correct?). The score is the match's similarity, or, for prompts sharing a template, the
similarity of their changed clauses when lower: the whole-prompt similarity of two templated
prompts says little about their difference.

A set of observations certifies the lowest score s such that, among its observations scoring
>= s, the 95% Wilson upper bound of the wrong rate is at most the operator's bound. Two sets
are kept (after vCache's per-prompt thresholds, with a neighbourhood to fall back on):

- per entry (tenant, scope, entry text): its own certified score, if it has one;
- per segment (tenant and scope: model, revision, prompt version, sampling, system prompt,
  earlier turns), the neighbourhood of its entries: its last `max_pool_observations`
  judgements. Agreement seen in one segment says nothing of another (a one-value JSON schema
  or a classification agrees on every paraphrase; free text does not), so evidence certifies
  only where it was observed.

An entry is served at its own certified score; else at its segment's, and then never at or
below a score at which the entry itself was judged wrong; else not at all. With no evidence
nothing is served: evidence comes from shadow mode, from the candidates the bound withholds in
`on` mode (their requests are answered by the backend anyway), and from a sampled share of
would-be hits answered fresh instead (`audit_rate`).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, insort
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95% normal quantile
NEVER = math.inf
_POOL_REFRESH = 16  # recertify a segment's pool every this many correct judgements


def match_score(similarity: float, clause_similarity: float | None) -> float:
    """What the bound judges a match by: its similarity, or its changed clauses' similarity
    (prompts sharing a template) when lower."""
    if clause_similarity is None:
        return similarity
    return min(similarity, clause_similarity)


def wilson_upper(wrong: int, total: int, z: float = Z_95) -> float:
    """The Wilson score upper bound of a rate from `wrong` of `total`; 1.0 without data."""
    if total <= 0:
        return 1.0
    p = wrong / total
    z2 = z * z
    centre = p + z2 / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    return min(1.0, (centre + spread) / (1 + z2 / total))


def certify(descending: Sequence[tuple[float, bool]], max_error_rate: float) -> float | None:
    """The lowest score whose tail (observations scoring at or above it) has a wrong-rate
    upper bound within `max_error_rate`; None if none has. `descending` is sorted by score,
    highest first. Vectorized: a few thousand observations take tens of microseconds."""
    if not descending:
        return None
    scores = np.fromiter((score for score, _ in descending), dtype=np.float64)
    wrong = np.cumsum(np.fromiter((not ok for _, ok in descending), dtype=np.float64))
    total = np.arange(1, len(scores) + 1, dtype=np.float64)
    z2 = Z_95 * Z_95
    p = wrong / total
    centre = p + z2 / (2 * total)
    spread = Z_95 * np.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    upper = (centre + spread) / (1 + z2 / total)
    # A tail includes every observation at its score: only a group's last index counts.
    last_of_score = np.append(scores[1:] != scores[:-1], True)
    qualifying = np.flatnonzero(last_of_score & (upper <= max_error_rate))
    return float(scores[qualifying[-1]]) if qualifying.size else None


@dataclass(frozen=True, slots=True)
class BoundEstimate:
    """All judgements so far: counts, the observed wrong rate and its 95% upper bound."""

    correct: int
    wrong: int
    rate: float
    upper: float

    @classmethod
    def of(cls, correct: int, wrong: int) -> BoundEstimate:
        """The estimate from these counts (no data: rate 0, upper bound 1)."""
        total = correct + wrong
        return cls(correct, wrong, wrong / total if total else 0.0, wilson_upper(wrong, total))


@dataclass(slots=True)
class _Entry:
    seen: list[tuple[float, bool]]
    certified: float | None
    wrong_floor: float  # just above the highest score judged wrong; -inf if none


class _Pool:
    """A segment's last judgements, kept sorted by score (negated, so highest first)."""

    __slots__ = ("certified", "pending", "recent", "sorted")

    def __init__(self) -> None:
        self.recent: deque[tuple[float, bool]] = deque()
        self.sorted: list[tuple[float, bool]] = []
        self.certified: float | None = None
        self.pending = 0

    def add(self, score: float, correct: bool, limit: int) -> int:
        """Adds a judgement, forgetting the oldest past `limit`; how many more are held."""
        self.recent.append((score, correct))
        insort(self.sorted, (-score, correct))
        self.pending += 1
        if len(self.recent) <= limit:
            return 1
        old_score, old_correct = self.recent.popleft()
        del self.sorted[bisect_left(self.sorted, (-old_score, old_correct))]
        return 0

    def recertify(self, max_error_rate: float) -> None:
        self.certified = certify([(-s, c) for s, c in self.sorted], max_error_rate)
        self.pending = 0


class ErrorBound:
    """Judgements per entry and per segment (bounded LRUs), and the scores they certify under
    `max_error_rate`. Segments are forgotten least recently used first past `max_segments`,
    or past `max_pooled_observations` judgements held over all of them, so a flood of
    distinct scopes cannot grow memory without limit."""

    def __init__(
        self,
        max_error_rate: float,
        *,
        audit_rate: float = 0.0,
        max_entries: int = 10_000,
        max_observations: int = 1024,
        max_pool_observations: int = 4096,
        max_segments: int = 1024,
        max_pooled_observations: int = 65_536,
        random_source: Callable[[], float] = random.random,
    ) -> None:
        if not 0.0 < max_error_rate < 1.0:
            raise ValueError(f"max_error_rate must be in (0, 1), got {max_error_rate!r}")
        if not 0.0 <= audit_rate < 1.0:
            raise ValueError(f"audit_rate must be in [0, 1), got {audit_rate!r}")
        self.max_error_rate = max_error_rate
        self.audit_rate = audit_rate
        self._max_entries = max_entries
        self._max_observations = max_observations
        self._max_pool = max_pool_observations
        self._max_segments = max_segments
        self._max_pooled = max_pooled_observations
        self._random = random_source
        self._entries: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()
        self._pools: OrderedDict[tuple[str, str], _Pool] = OrderedDict()
        self._pooled = 0
        self._correct = 0
        self._wrong = 0

    def observe(self, tenant: str, scope: str, entry: str, score: float, correct: bool) -> None:
        """Record one judgement of `entry` (in `scope`) matched at `score` (off the request
        path)."""
        key = (tenant, scope, entry)
        known = self._entries.pop(key, None)
        seen = known.seen if known is not None else []
        seen.append((score, correct))
        del seen[: -self._max_observations]
        certified = certify(sorted(seen, reverse=True), self.max_error_rate)
        floor = max((s for s, ok in seen if not ok), default=-NEVER)
        self._entries[key] = _Entry(seen, certified, math.nextafter(floor, NEVER))
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
        pool = self._pool(tenant, scope)
        self._pooled += pool.add(score, correct, self._max_pool)
        self._forget_segments()
        # A wrong judgement tightens at once; correct ones may loosen, in batches.
        if not correct or pool.pending >= _POOL_REFRESH or pool.certified is None:
            pool.recertify(self.max_error_rate)
        if correct:
            self._correct += 1
        else:
            self._wrong += 1

    def _pool(self, tenant: str, scope: str) -> _Pool:
        key = (tenant, scope)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool()
        else:
            self._pools.move_to_end(key)
        return pool

    def _forget_segments(self) -> None:
        """Drops the least recently used segments past either cap (never the last one)."""
        pools = self._pools
        while len(pools) > 1 and (
            len(pools) > self._max_segments or self._pooled > self._max_pooled
        ):
            self._pooled -= len(pools.popitem(last=False)[1].recent)

    def threshold(self, tenant: str, scope: str, entry: str) -> float:
        """The lowest score at which `entry` may be served in `scope` (`NEVER` without
        evidence from that scope)."""
        key = (tenant, scope, entry)
        known = self._entries.get(key)
        if known is not None:
            self._entries.move_to_end(key)
            if known.certified is not None:
                return known.certified
        pool = self._pools.get((tenant, scope))
        if pool is None:
            return NEVER
        self._pools.move_to_end((tenant, scope))
        if pool.certified is None:
            return NEVER
        return max(pool.certified, known.wrong_floor if known is not None else -NEVER)

    def allows(self, tenant: str, scope: str, entry: str, score: float) -> bool:
        return score >= self.threshold(tenant, scope, entry)

    @property
    def segments(self) -> int:
        """Segments holding judgements now."""
        return len(self._pools)

    def audit(self) -> bool:
        """Whether to answer this would-be hit fresh and judge it (a sampled share)."""
        return self.audit_rate > 0.0 and self._random() < self.audit_rate

    def estimate(self) -> BoundEstimate:
        return BoundEstimate.of(self._correct, self._wrong)
