"""Seams of the caching layer: stores, vector indexes, embedders, and the cached answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from core.breaker import DependencyUnavailable

Vector = npt.NDArray[np.float32]
CacheMode = Literal["on", "off", "read-only", "write-only"]


class CacheUnavailable(DependencyUnavailable):
    """A cache dependency failed, timed out, or its circuit breaker is open."""


class ExactStore(Protocol):
    """Bytes by (namespace, key) with a time to live."""

    async def get(self, namespace: str, key: str) -> bytes | None: ...

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A stored entry near the query: cosine similarity in [-1, 1], its text and payload."""

    similarity: float
    text: str
    payload: bytes
    created_at: float


class VectorIndex(Protocol):
    """Nearest neighbours by cosine similarity, restricted to exact `tenant` and `scope`.

    `scope` is a hash of everything that must match exactly for a near match to be valid
    (model, sampling parameters, system prompt, earlier turns, tools).
    """

    async def search(
        self, vector: Vector, *, tenant: str, scope: str, k: int
    ) -> list[VectorHit]: ...

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
    ) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class RefusableIndex(Protocol):
    """A vector index that can refuse what it finds in its store: `mismatch` says why (an
    index of another schema under its name), None while it is in use."""

    @property
    def mismatch(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class EncoderSample:
    """One encoder's cumulative counts and its queue now, for metrics: texts encoded, batches
    run, failed batches, texts dropped because their caller gave up, texts
    refused because the queue was full."""

    name: str
    texts: int
    batches: int
    failures: int
    cancelled: int
    refused: int
    queued: int


class EncoderProbe(Protocol):
    """An encoder whose counts the metrics sampler reads."""

    def sample(self) -> EncoderSample: ...


class Embedder(Protocol):
    """Sentence embeddings, L2-normalized, computed off the event loop."""

    dimensions: int

    async def embed(self, text: str) -> Vector: ...

    async def aclose(self) -> None: ...
