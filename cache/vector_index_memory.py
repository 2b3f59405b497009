"""A bounded in-process `VectorIndex`: per-(tenant, scope) buckets searched with one numpy
matrix-vector product, entries evicted oldest-first, TTL checked on read.

For tests, single-process deployments, and as the reference the Redis index is compared with.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cache.types import Vector, VectorHit

_Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Entry:
    vector: Vector
    text: str
    payload: bytes
    created_at: float
    expires_at: float


@dataclass(slots=True)
class _Bucket:
    entries: dict[str, _Entry] = field(default_factory=dict)
    matrix: npt.NDArray[np.float32] | None = None  # rows in `entries` order; None when stale
    order: list[_Entry] = field(default_factory=list)


class InMemoryVectorIndex:
    """`VectorIndex` in memory. `clock` (monotonic seconds) decides expiry; inject one in tests.

    The same text added twice under one tenant and scope replaces the earlier entry, as in
    the Redis index.
    """

    def __init__(
        self,
        *,
        dimensions: int,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.dimensions = dimensions
        self._max_entries = max_entries
        self._clock = clock
        self._buckets: dict[_Key, _Bucket] = {}
        self._fifo: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._fifo)

    async def search(self, vector: Vector, *, tenant: str, scope: str, k: int) -> list[VectorHit]:
        bucket = self._buckets.get((tenant, scope))
        if bucket is None or k <= 0:
            return []
        self._purge_expired(tenant, scope, bucket)
        if not bucket.entries:
            return []
        if bucket.matrix is None:
            bucket.order = list(bucket.entries.values())
            bucket.matrix = np.stack([e.vector for e in bucket.order])
        scores = bucket.matrix @ np.asarray(vector, dtype=np.float32)
        hits = []
        for i in np.argsort(-scores, kind="stable")[:k]:
            entry = bucket.order[i]
            hits.append(VectorHit(float(scores[i]), entry.text, entry.payload, entry.created_at))
        return hits

    async def add(
        self,
        vector: Vector,
        *,
        tenant: str,
        scope: str,
        text: str,
        payload: bytes,
        created_at: float,
        ttl_s: int,
    ) -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        if vector.shape != (self.dimensions,):
            raise ValueError(f"expected a vector of {self.dimensions} dimensions")
        stored = np.array(vector, dtype=np.float32)  # a private copy
        entry = _Entry(stored, text, payload, created_at, self._clock() + ttl_s)
        bucket = self._buckets.setdefault((tenant, scope), _Bucket())
        bucket.entries[text] = entry
        bucket.matrix = None
        fifo_key = (tenant, scope, text)
        self._fifo[fifo_key] = None
        self._fifo.move_to_end(fifo_key)
        while len(self._fifo) > self._max_entries:
            (old_tenant, old_scope, old_text), _ = self._fifo.popitem(last=False)
            self._remove(old_tenant, old_scope, old_text)

    async def aclose(self) -> None:
        self._buckets.clear()
        self._fifo.clear()

    def _remove(self, tenant: str, scope: str, text: str) -> None:
        bucket = self._buckets.get((tenant, scope))
        if bucket is None or bucket.entries.pop(text, None) is None:
            return
        bucket.matrix = None
        if not bucket.entries:
            del self._buckets[(tenant, scope)]

    def _purge_expired(self, tenant: str, scope: str, bucket: _Bucket) -> None:
        now = self._clock()
        expired = [text for text, e in bucket.entries.items() if e.expires_at <= now]
        for text in expired:
            self._fifo.pop((tenant, scope, text), None)
            self._remove(tenant, scope, text)
