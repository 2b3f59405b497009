"""Replicas of one model whose contexts differ (`--max-model-len`): a request one refuses as
too long for its context goes to a replica of a larger one, and the client hears the 400 only
when none is left that could hold it."""

from __future__ import annotations

from collections.abc import Sequence

from backends.replica import Replica
from backends.served import served_by


def context_of(replica: Replica) -> int:
    """The context `replica` reports (0: not known)."""
    served = served_by(replica.backend)
    return 0 if served is None else served.context


def wider_context(refused: Replica, replicas: Sequence[Replica]) -> int:
    """The least context a request `refused` turned away as too long needs (one more token
    than it has), when a healthy replica of `replicas` has that much; else 0."""
    known = context_of(refused)
    if not known:
        return 0
    needed = known + 1
    return needed if any(r.healthy and context_of(r) >= needed for r in replicas) else 0


def fitting(replicas: Sequence[Replica], needed: int) -> Sequence[Replica]:
    """The replicas with at least `needed` tokens of context (all of them for 0)."""
    if not needed:
        return replicas
    return [r for r in replicas if context_of(r) >= needed]
