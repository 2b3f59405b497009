"""What a replica reports it serves, for the fleet to route by and to compare a model's
replicas by: the served model name, its tokenizer and chat template, and its context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Served:
    """One replica's model as it last reported it."""

    name: str  # the server's served model name
    tokenizer: str  # a digest of its tokenizer and chat templates
    context: int  # the most tokens of prompt and completion together


@runtime_checkable
class DescribesServed(Protocol):
    """A backend that learns what its server serves (the vLLM gRPC one)."""

    def served(self) -> Served | None:
        """What the server serves, or None while that is not known."""
        ...


def served_by(backend: object) -> Served | None:
    """What `backend` reports it serves, or None (not known, or not told by its protocol)."""
    return backend.served() if isinstance(backend, DescribesServed) else None
