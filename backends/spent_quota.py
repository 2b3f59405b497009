"""What the client is told when the last replica tried had spent its upstream quota."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from backends.replica import Replica
from core.backend_errors import BackendError, BackendOverloaded, BackendQuotaExhausted


@dataclass(frozen=True, slots=True)
class Failures:
    """A request's attempts that failed and were retried, as far as its answer depends on
    them: the last (with its replica) and the first whose replica was only full."""

    last: tuple[Replica, BackendError] | None = None
    overloaded: BackendOverloaded | None = None

    def after(self, replica: Replica, failed: BackendError) -> Failures:
        full = failed if isinstance(failed, BackendOverloaded) else None
        return Failures((replica, failed), self.overloaded or full)


def reported(
    failed: BackendError,
    earlier: Failures,
    replicas: Sequence[Replica],
    tried: Sequence[Replica],
    now: float,
) -> BackendError:
    """`failed`, the failure no other replica is tried after, as the client hears it. A spent
    quota gives way to an `earlier` replica's overload, however many failures came between,
    which its Retry-After may cure; and
    it says that retrying is in vain only when every routable replica was tried (else the
    client's own backoff may reach one that was not). Any other failure is told as it is."""
    if not isinstance(failed, BackendQuotaExhausted):
        return failed
    if earlier.overloaded is not None:
        return earlier.overloaded
    if not any(r.routable(now) and r not in tried for r in replicas):
        return failed
    told = failed.twin()  # one error object may be raised again (a replica's every call)
    told.others_left = True
    return told


def give_up(
    failed: BackendError,
    earlier: Failures,
    replicas: Sequence[Replica],
    tried: Sequence[Replica],
    now: float,
) -> NoReturn:
    """Raise what the client hears of `failed` (`reported`), no other replica tried."""
    told = reported(failed, earlier, replicas, tried, now)
    if told is failed:
        raise failed
    raise told from failed
