"""Replica sets named in DNS (`grpc+dns://name:port`): the names are re-resolved
periodically; a new address joins the fleet, a vanished one is retired and drains.

What a lookup that finds nothing does (as Envoy's STRICT_DNS clusters: a resolver hiccup never
empties a cluster):
- a failed lookup (timeout, SERVFAIL, no resolver: `EAI_AGAIN`, `EAI_FAIL`, ...) keeps the
  last known replicas, however long it lasts: it says nothing about the replicas, and their
  health probes still take a dead one out of rotation;
- an empty answer (no addresses, NXDOMAIN or NODATA: a headless Service whose pods are all
  unready, or scaled to zero) keeps them too, until it has repeated on `empty_to_retire`
  consecutive refreshes: then the set is really empty and its replicas are retired (drained,
  then closed), so a fleet scaled to zero is not probed forever. One answer with addresses
  resets the count.
Both log a warning and are counted (`stats`), for the metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from backends.base import Backend
from backends.fleet import Fleet
from backends.replica import Replica
from backends.replica_urls import DnsTarget, split_dns_url

log = logging.getLogger("gateway.discovery")

Resolver = Callable[[str, int], Awaitable[Sequence[tuple[str, int]]]]
"""(host, port) -> the (address, port) pairs serving it; tests hand out ports as well."""

BuildBackend = Callable[[str, str, str | None], Backend]  # model, URL, API key
"""(model, replica URL) -> its backend."""

EMPTY_TO_RETIRE = 3
"""Consecutive empty answers after which a set's replicas are retired (3 refreshes: 15 s
with the default GATEWAY_DNS_REFRESH_S)."""

# getaddrinfo's "the name has no address" (NXDOMAIN, NODATA): an answer, not a failure.
_EMPTY_ERRORS = frozenset(
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name)
)


@dataclass(slots=True)
class SetStats:
    """What the lookups of one replica set found, for the metrics (cumulative counts)."""

    resolved: int = 0
    empty: int = 0
    failed: int = 0
    # Consecutive empty answers or failures now: > 0 means the set serves its last known
    # replicas though the last lookup found none.
    stale_for: int = 0
    addresses: int = 0


async def resolve_dns(host: str, port: int) -> list[tuple[str, int]]:
    """Every address of `host`, via the loop's resolver (a thread: never blocks the loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({(str(info[4][0]), int(info[4][1])) for info in infos})


@dataclass(frozen=True, slots=True)
class ReplicaSet:
    """A model's replicas named by one `+dns` URL."""

    model: str
    url: str  # without credentials
    api_key: str | None = field(default=None, repr=False, compare=False)

    @property
    def target(self) -> DnsTarget:
        return split_dns_url(self.url)


class Discovery:
    """Keeps the fleet's DNS-named replicas in step with what the names resolve to."""

    def __init__(
        self,
        fleet: Fleet,
        sets: Sequence[ReplicaSet],
        build: BuildBackend,
        *,
        refresh_s: float,
        resolver: Resolver = resolve_dns,
        empty_to_retire: int = EMPTY_TO_RETIRE,
    ) -> None:
        if empty_to_retire < 1:
            raise ValueError(f"empty_to_retire must be at least 1, got {empty_to_retire}")
        self._fleet = fleet
        self._sets = list(sets)
        self._build = build
        self._refresh_s = refresh_s
        self._resolver = resolver
        self._empty_to_retire = empty_to_retire
        self._known: dict[ReplicaSet, dict[str, Replica]] = {s: {} for s in self._sets}
        self._empty_runs: dict[ReplicaSet, int] = dict.fromkeys(self._sets, 0)
        self.stats: dict[ReplicaSet, SetStats] = {s: SetStats() for s in self._sets}
        self._task: asyncio.Task[None] | None = None
        for replica_set in self._sets:
            fleet.declare(replica_set.model)

    def urls(self, replica_set: ReplicaSet) -> list[str]:
        """The replica URLs the set holds now."""
        return sorted(self._known[replica_set])

    async def start(self) -> None:
        """Resolve every name once (its replicas probed), then keep re-resolving."""
        await self.refresh()
        self._task = asyncio.create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_s)
            try:
                await self.refresh()
            except Exception:  # the refresher must never die
                log.exception("refreshing DNS replica sets failed")

    async def refresh(self) -> None:
        """Resolve every set once and apply what changed."""
        await asyncio.gather(*(self._refresh(s) for s in self._sets))

    async def _lookup(self, replica_set: ReplicaSet) -> list[tuple[str, int]] | None:
        """The set's addresses ([]: an empty answer); None (logged, counted): it failed."""
        target = replica_set.target
        stats = self.stats[replica_set]
        try:
            found = list(await self._resolver(target.host, target.port))
        except socket.gaierror as exc:
            if exc.errno not in _EMPTY_ERRORS:
                self._failed(replica_set, exc)
                return None
            found = []
        except OSError as exc:  # a timeout, a resolver down
            self._failed(replica_set, exc)
            return None
        if found:
            stats.resolved += 1
        else:
            stats.empty += 1
        return found

    def _failed(self, replica_set: ReplicaSet, exc: OSError) -> None:
        stats = self.stats[replica_set]
        stats.failed += 1
        stats.stale_for += 1
        log.warning(
            "resolving %s failed, keeping its %d replicas: %s",
            replica_set.url,
            len(self._known[replica_set]),
            exc,
        )

    async def _refresh(self, replica_set: ReplicaSet) -> None:
        target = replica_set.target
        stats = self.stats[replica_set]
        found = await self._lookup(replica_set)
        if found is None:
            return
        if not found and self._known[replica_set]:
            runs = self._empty_runs[replica_set] = self._empty_runs[replica_set] + 1
            if runs < self._empty_to_retire:
                stats.stale_for += 1
                log.warning(
                    "%s resolved to no address (%d of %d in a row), keeping its %d replicas",
                    replica_set.url,
                    runs,
                    self._empty_to_retire,
                    len(self._known[replica_set]),
                )
                return
            log.warning(
                "%s resolved to no address %d times in a row: retiring its replicas",
                replica_set.url,
                runs,
            )
        self._empty_runs[replica_set] = 0
        stats.stale_for = 0
        wanted = {target.replica_url(address, port) for address, port in found}
        known = self._known[replica_set]
        model = replica_set.model
        joining = {
            url: Replica(model, self._build(model, url, replica_set.api_key))
            for url in sorted(wanted - known.keys())
        }
        known.update(joining)
        # Newcomers are probed before the vanished leave, so a replaced pod leaves no gap.
        added = await asyncio.gather(
            *(self._fleet.add(r) for r in joining.values()), return_exceptions=True
        )
        for url, outcome in zip(joining, added, strict=True):
            if isinstance(outcome, Exception):  # not in the fleet: the next refresh tries again
                log.warning("replica %s of %s could not join: %s", url, model, outcome)
                del known[url]
        for url in sorted(known.keys() - wanted):
            self._fleet.retire(known.pop(url))
        stats.addresses = len(known)
