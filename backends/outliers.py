"""Passive outlier detection, as Envoy's consecutive-5xx ejection: a replica whose calls keep
failing (before or after their first token) is taken out of routing for a while, longer each
time it fails again, even though its health probe still passes (a replica that breaks every
stream mid-way, or accepts requests and never answers them, looks healthy to a probe)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from backends.replica import Replica
from core.backend_errors import BackendError, BackendOverloaded, BackendUnavailable
from core.errors import DeadlineExceeded
from core.stages import StageName

log = logging.getLogger("gateway.fleet")

# Budgets whose overrun is the replica's doing; an overrun of the total may be the caller's
# own tight deadline, and says nothing about the replica.
_REPLICA_STAGES = frozenset({StageName.TTFT.value, StageName.STALL.value})

EjectionReason = Literal["failures", "hung", "unreachable"]
"""Why a call's end took a replica out of routing: too many failures in a row, found hung by
a probe (`backends.hang_watch`), or not reachable (until its health probe passes)."""


@dataclass(frozen=True, slots=True)
class OutlierPolicy:
    """When a replica is ejected and for how long; `consecutive_failures` 0 turns it off."""

    consecutive_failures: int = 5
    ejection_s: float = 30.0  # the first ejection; each further one adds as much
    max_ejection_s: float = 300.0

    def ejection_for(self, ejections: int) -> float:
        return min(self.ejection_s * ejections, self.max_ejection_s)


def is_replica_failure(exc: BaseException) -> bool:
    """Whether a call's failure counts against the replica that served it: the backend failed
    or broke the connection, or gave no first token (or no next one) within its budget. A
    request the backend rejected as invalid or refused for lack of room (a full engine is a
    busy one, not a broken one), or one that ran out of its total, does not."""
    if isinstance(exc, BackendError):
        return not isinstance(exc, BackendOverloaded)
    return isinstance(exc, DeadlineExceeded) and exc.stage in _REPLICA_STAGES


class Outliers:
    """Hears how each call ended and ejects the replicas that keep failing. A failure counts
    until the replica's next success, so a replica back from an ejection that fails again is
    ejected again at once, for longer. The last replica of a model still in routing is never
    ejected: a failing replica is still better than none."""

    __slots__ = ("_clock", "_policy", "_replicas", "ejected")

    def __init__(
        self,
        policy: OutlierPolicy,
        replicas: Callable[[str], Sequence[Replica]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._policy = policy
        self._replicas = replicas
        self._clock = clock
        # Ejections so far by (model, reason): the metrics' counter follows these totals.
        self.ejected: dict[tuple[str, str], int] = {}

    def succeeded(self, replica: Replica) -> None:
        replica.failures = 0
        replica.ejections = 0

    def failed(self, replica: Replica, exc: BaseException) -> None:
        """A call on `replica` ended with `exc`: an unreachable replica is ejected until its
        probe passes, unless no other replica of its model passes its own (routing falls
        back to one out as an outlier: reachable beats unreachable, and an unreachable last
        one is left to its probe); one that failed too many times in a row is ejected for a
        while, unless it is the last of its model in routing; one that refused for lack of
        room rests for its Retry-After (`ReplicaChoice` prefers others)."""
        if isinstance(exc, BackendUnavailable) and self._others_healthy(replica):
            if replica.healthy:
                self._count(replica, "unreachable")
            replica.eject(str(exc))
        if isinstance(exc, BackendOverloaded):
            rest = min(exc.retry_after_s, self._policy.max_ejection_s)
            replica.resting_until = max(replica.resting_until, self._clock() + rest)
        if not is_replica_failure(exc):
            return
        replica.failures += 1
        threshold = self._policy.consecutive_failures
        if threshold <= 0 or replica.failures < threshold:
            return
        self._eject(replica, "failures", f"after {replica.failures} failures in a row: {exc}")

    def hung(self, replica: Replica, reason: str) -> None:
        """A probe found `replica` hung (`backends.hang_watch`): it leaves routing now, as
        after too many failures in a row, whatever `consecutive_failures` says."""
        self._eject(replica, "hung", f"as hung: {reason}")

    def _eject(self, replica: Replica, reason: EjectionReason, why: str) -> None:
        now = self._clock()
        if replica.ejected_until > now or not self._others_serve(replica, now):
            return
        self._count(replica, reason)
        replica.ejections += 1
        seconds = self._policy.ejection_for(replica.ejections)
        replica.ejected_until = now + seconds
        # Back from the ejection it ramps up again (slow start), as after a failed probe.
        replica.healthy_since = max(replica.healthy_since, replica.ejected_until)
        log.warning(
            "replica %s of %s ejected for %.0f s %s", replica.url, replica.model, seconds, why
        )

    def _count(self, replica: Replica, reason: EjectionReason) -> None:
        key = (replica.model, reason)
        self.ejected[key] = self.ejected.get(key, 0) + 1

    def _others_serve(self, replica: Replica, now: float) -> bool:
        return any(r is not replica and r.routable(now) for r in self._replicas(replica.model))

    def _others_healthy(self, replica: Replica) -> bool:
        return any(r is not replica and r.healthy for r in self._replicas(replica.model))
