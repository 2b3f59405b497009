"""One backend replica's routing state: health, in-flight requests, reported load, how long
it has recently taken to serve requests, and how much of their prompts its cache served."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

from backends.base import Backend
from backends.prefix.index import PrefixIndex
from backends.silence import Silence
from budgets.admission import AdmissionQueue
from budgets.service_estimate import ServiceEstimate
from core.answers import BackendHealth

DEFAULT_LIMIT = 256
# How fast what routing saw of a replica's speed fades when it sees nothing new.
ROUTING_EVIDENCE_HALF_LIFE_S = 5.0
# The weight of each answer in a replica's recent cached share: a half-life of 64 answers,
# the service estimate's.
CACHED_SHARE_ALPHA = 1.0 - 0.5 ** (1.0 / 64)


def unlimited_admission() -> AdmissionQueue:
    """Counts in-flight requests and never queues: for replicas built outside a fleet."""
    return AdmissionQueue(limit=DEFAULT_LIMIT, max_queue=0, batch_share=1.0, enabled=False)


def routing_estimate() -> ServiceEstimate:
    """A replica's service estimate: its observations fade with time as well as count."""
    return ServiceEstimate(evidence_half_life_s=ROUTING_EVIDENCE_HALF_LIFE_S)


log = logging.getLogger("gateway.fleet")


@dataclass(slots=True, eq=False)
class Replica:
    """A backend plus what routing knows about it."""

    model: str
    backend: Backend
    healthy: bool = False
    admission: AdmissionQueue = field(default_factory=unlimited_admission)
    # Its service time over the prompt tokens its prefix cache did not serve, fading with
    # time: what routing compares replicas by and admission judges a request by. A line over
    # whole prompts would also measure how many of its prompts a replica happened to hold:
    # routing would send a prompt away from the one holding it because that one had lately
    # been sent prompts it did not, and admission would charge a cached prompt its prefill.
    uncached_estimate: ServiceEstimate = field(default_factory=routing_estimate)
    # The share of prompt tokens its cache recently served (None: no answer yet): what a
    # prompt is expected to find cached there when its KV events are not followed.
    recent_cached_share: float | None = None
    auto_limit: bool = True
    reported_running: int = 0
    reported_waiting: int = 0
    reported_capacity: int = 0  # what the engine runs at once, by its own report (0: unknown)
    kv_usage: float = 0.0
    last_detail: str = field(default="not probed yet")
    # When a probe last found it serving after it was not (-inf: warm from the start).
    healthy_since: float = -math.inf
    # The KV-cache blocks its event stream reports (not `live`: it reports none).
    prefix: PrefixIndex = field(default_factory=PrefixIndex)
    # Passive outlier detection (`backends.outliers`): calls failed in a row, ejections since
    # the last success, and until when it is out of routing though its probe passes.
    failures: int = 0
    ejections: int = 0
    ejected_until: float = -math.inf
    # Health probes missed in a row (no answer within their deadline) while it is healthy.
    missed_probes: int = 0
    # Until when it asked for no more work (refused one for lack of room): others go first.
    resting_until: float = -math.inf
    # The whole answers it holds and when it last answered anything (`backends.hang_watch`).
    silence: Silence = field(default_factory=Silence)

    @property
    def url(self) -> str:
        return self.backend.url

    @property
    def inflight(self) -> int:
        return self.admission.inflight

    def heard_cached(self, share: float) -> None:
        """An answer's prompt found this `share` of its tokens in the replica's cache."""
        recent = self.recent_cached_share
        self.recent_cached_share = (
            share if recent is None else recent + CACHED_SHARE_ALPHA * (share - recent)
        )

    def engine_has_room(self) -> bool:
        """Whether a request admitted now starts at once in the engine: it reported nothing
        waiting, and our requests in flight (this one included) fit the requests it runs at
        once (its report, else our admission limit)."""
        slots = self.reported_capacity or self.admission.limit
        return self.reported_waiting == 0 and self.admission.inflight <= slots

    def engine_backlog(self) -> float:
        """How many engine-fulls of requests a request admitted now would wait behind in the
        engine's own queue (0: it starts at once): what the engine holds beyond what it runs
        at once, over what it runs at once."""
        slots = self.reported_capacity or self.admission.limit
        return max(0, self.admission.occupied() + 1 - slots) / slots

    def routable(self, now: float) -> bool:
        """Healthy and not ejected as an outlier at `now`."""
        return self.healthy and self.ejected_until <= now

    def load_score(self) -> float:
        """Lower is less loaded: our own requests, in flight and queued in the gateway for a
        slot, plus the server's own queue."""
        admission = self.admission
        return admission.inflight + admission.queued() + self.reported_waiting + self.kv_usage

    def warmth(self, now: float, slow_start_s: float) -> float:
        """How far into its slow start the replica is: from 0 when it turned healthy to 1
        after `slow_start_s`."""
        if slow_start_s <= 0:
            return 1.0
        return min(1.0, max(0.0, (now - self.healthy_since) / slow_start_s))

    def observe(
        self, health: BackendHealth, now: float | None = None, failure_threshold: int = 1
    ) -> None:
        """Apply a health probe (taken at `now`, monotonic); logs transitions. A replica that
        turns healthy starts its slow start; one not serving (loading, draining) or not
        reachable is out at once, one whose probes went unanswered after `failure_threshold`
        misses in a row (a busy replica may miss one)."""
        if health.missed and self.healthy:
            self.missed_probes += 1
            if self.missed_probes < failure_threshold:
                log.info(
                    "replica %s of %s missed health probe %d of %d: %s",
                    self.url,
                    self.model,
                    self.missed_probes,
                    failure_threshold,
                    health.detail,
                )
                return
        self.missed_probes = 0
        if health.healthy != self.healthy:
            # Turning healthy is routine (every start); only losing a replica is a warning.
            state, level = (
                ("admitted", logging.INFO) if health.healthy else ("ejected", logging.WARNING)
            )
            log.log(level, "replica %s of %s %s: %s", self.url, self.model, state, health.detail)
            if health.healthy:
                self.healthy_since = time.monotonic() if now is None else now
        self.healthy = health.healthy
        self.last_detail = health.detail
        if health.healthy:
            self.reported_running = health.running
            self.reported_waiting = health.waiting
            self.kv_usage = health.kv_usage
            self.reported_capacity = health.capacity
            self.admission.observe_backend(health.running, health.waiting)
            if self.auto_limit and health.capacity > 0 and health.capacity != self.admission.limit:
                self.admission.resize(health.capacity)

    def eject(self, reason: str) -> None:
        """Take the replica out of rotation until a health probe re-admits it."""
        if self.healthy:
            log.warning("replica %s of %s ejected: %s", self.url, self.model, reason)
        self.healthy = False
        self.last_detail = reason
