"""The fleet's membership: each model's replicas, their health polling and KV-event following,
replicas joining a started fleet and leaving it while they finish their requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from backends.admission_config import AdmissionConfig
from backends.pool_agreement import PoolAgreement
from backends.prefix.source import PrefixSource
from backends.prefix.subscriber import follow, readmitted
from backends.replica import Replica
from core.errors import ModelNotFound

log = logging.getLogger("gateway.fleet")


class Members:
    """Every configured model's replicas, kept healthy-or-not by a poller each."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        *,
        health_interval_s: float,
        health_timeout_s: float,
        health_failures: int = 1,
        admission: AdmissionConfig | None = None,
        follow_prefixes: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._health_interval_s = health_interval_s
        self._health_timeout_s = health_timeout_s
        self._health_failures = health_failures
        self._admission = admission
        self._follow_prefixes = follow_prefixes
        self._clock = clock
        self._by_model: dict[str, list[Replica]] = {}
        self._pollers: dict[Replica, list[asyncio.Task[None]]] = {}
        self.draining: set[asyncio.Task[None]] = set()
        """The tasks of retired replicas finishing their requests."""
        # Retired replicas still finishing their requests (their backends not closed yet).
        self._leaving: list[Replica] = []
        self.agreement = PoolAgreement()
        """What each model's replicas disagree on (served name, tokenizer, context)."""
        for replica in replicas:
            self._enlist(replica)

    def declare(self, model: str) -> None:
        """Serve `model` even while it has no replica."""
        self._by_model.setdefault(model, [])

    def _enlist(self, replica: Replica) -> None:
        self.declare(replica.model)
        if self._admission is not None:
            replica.admission = self._admission.queue()
            replica.auto_limit = self._admission.max_inflight == 0
        self._by_model[replica.model].append(replica)

    @property
    def by_model(self) -> dict[str, list[Replica]]:
        return self._by_model

    def replicas(self, model: str) -> list[Replica]:
        try:
            return self._by_model[model]
        except KeyError:
            raise ModelNotFound(model) from None

    def holding(self) -> list[Replica]:
        """Every replica that may hold requests: the models' and those still leaving."""
        return [r for rs in self._by_model.values() for r in rs] + self._leaving

    def retiring(self) -> list[Replica]:
        """Replicas taken out still finishing their requests; each leaves this list once its
        backend is closed."""
        return list(self._leaving)

    def ready(self) -> bool:
        """Some model has a healthy replica: this gateway can serve. Not "every model": with a
        readiness probe on it, one model's lost pool would take every gateway out of the
        Service, and the healthy models with them (that model's requests get a quick 503)."""
        return any(r.healthy for rs in self._by_model.values() for r in rs)

    async def start(self) -> None:
        everyone = [r for rs in self._by_model.values() for r in rs]
        await asyncio.gather(*(r.backend.start() for r in everyone))
        await asyncio.gather(*(self.probe(r) for r in everyone))
        for replica in everyone:
            self._watch(replica)

    def _watch(self, replica: Replica) -> None:
        """Poll the replica's health, and follow its KV events when routing by prefix."""
        tasks = [asyncio.create_task(self._poll(replica))]
        if self._follow_prefixes and isinstance(replica.backend, PrefixSource):
            backend = replica.backend
            following = follow(
                replica.prefix,
                backend.kv_events,
                replica.url,
                block_size=backend.block_size,
                unimplemented_wait=lambda: readmitted(
                    lambda: replica.healthy_since, self._health_interval_s
                ),
            )
            tasks.append(asyncio.create_task(following))
        self._pollers[replica] = tasks

    async def add(self, replica: Replica) -> None:
        """A replica joins a started fleet: it takes requests once a health probe finds it
        serving (and then ramps up over the fleet's slow start)."""
        replica.healthy = False
        await replica.backend.start()
        self._enlist(replica)
        try:
            await self.probe(replica)
        except Exception:  # the poller tries again
            log.exception("first health probe of %s failed", replica.url)
        self._watch(replica)
        log.info("replica %s of %s joined", replica.url, replica.model)

    def retire(self, replica: Replica) -> asyncio.Task[None]:
        """Take a replica out: no new requests from now on, while those it is serving
        finish; then its backend is closed. The returned task ends then."""
        with contextlib.suppress(ValueError):
            self._by_model[replica.model].remove(replica)
        for task in self._pollers.pop(replica, []):
            task.cancel()
        log.info(
            "replica %s of %s retired: %d in flight", replica.url, replica.model, replica.inflight
        )
        self._leaving.append(replica)
        task = asyncio.create_task(self._drain(replica))
        self.draining.add(task)
        task.add_done_callback(self.draining.discard)
        return task

    async def _drain(self, replica: Replica) -> None:
        try:
            # The admission queue offers no idle event; a look twice a second is cheap.
            while replica.inflight > 0 or replica.admission.queued() > 0:  # noqa: ASYNC110
                await asyncio.sleep(min(self._health_interval_s, 0.5))
        finally:
            try:
                await replica.backend.aclose()
            finally:
                with contextlib.suppress(ValueError):
                    self._leaving.remove(replica)

    async def probe(self, replica: Replica) -> None:
        """Ask the replica's backend for its health once, and record the answer; compare
        what it serves with its model's other replicas."""
        health = await replica.backend.health(self._health_timeout_s)
        replica.observe(health, self._clock(), self._health_failures)
        self.agreement.check(replica.model, self._by_model.get(replica.model, ()))

    async def _poll(self, replica: Replica) -> None:
        while True:
            await asyncio.sleep(self._health_interval_s)
            try:
                await self.probe(replica)
            except Exception:  # a poller must never die
                log.exception("health probe of %s failed", replica.url)

    async def aclose(self) -> None:
        tasks = [t for ts in self._pollers.values() for t in ts] + list(self.draining)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for replicas in self._by_model.values():
            for replica in replicas:
                await replica.backend.aclose()
