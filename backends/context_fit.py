"""Replicas of one model whose contexts differ (`--max-model-len`): a request one refuses as
too long for its context goes to a replica of a larger one not tried yet, and the client hears
the 400 only when none is left that could hold it (or, where a larger one already failed, that
failure)."""

from __future__ import annotations

from collections.abc import Sequence

from backends.replica import Replica
from backends.served import served_by
from core.backend_errors import BackendError
from core.errors import ContextLengthExceeded, GatewayError


def context_of(replica: Replica) -> int:
    """The context `replica` reports (0: not known)."""
    served = served_by(replica.backend)
    return 0 if served is None else served.context


def wider_context(
    refused: Replica, replicas: Sequence[Replica], tried: Sequence[Replica] = ()
) -> int:
    """The least context a request `refused` turned away as too long needs (one more token
    than it has), when a healthy replica of `replicas` not `tried` yet has that much; else 0."""
    known = context_of(refused)
    if not known:
        return 0
    needed = known + 1
    wider = (r for r in replicas if r.healthy and r not in tried and context_of(r) >= needed)
    return needed if any(wider) else 0


def refusal(
    refused: ContextLengthExceeded, by: Replica, earlier: tuple[Replica, BackendError] | None
) -> GatewayError:
    """What the client hears when no replica is left to take a request `by` refused as too
    long: the `earlier` failure of a replica whose context could have held it (a retry later
    may find it able to), else the refusal."""
    known = context_of(by)
    if earlier is not None and known and context_of(earlier[0]) > known:
        return earlier[1]
    return refused


def fitting(replicas: Sequence[Replica], needed: int) -> Sequence[Replica]:
    """The replicas with at least `needed` tokens of context (all of them for 0)."""
    if not needed:
        return replicas
    return [r for r in replicas if context_of(r) >= needed]
