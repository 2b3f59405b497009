"""The stand-in's mutable state: live config, admission, live requests and what tests observe."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from smg_grpc_proto.generated import common_pb2

from standin.vllm.admission import Admission, Ticket
from standin.vllm.config import SimConfig
from standin.vllm.kv_events import Cleared, KvEventHub
from standin.vllm.prefix_cache import BLOCK_SIZE, PrefixCache

log = logging.getLogger(__name__)

# How many aborted / cancelled request ids Stats remembers.
HISTORY = 10_000


@dataclass(slots=True)
class Counters:
    """Generate calls by outcome, and the tokens the finished ones carried."""

    generate_calls: int = 0
    completed: int = 0
    aborted: int = 0
    cancelled: int = 0
    invalid: int = 0
    rejected: int = 0
    injected_errors: int = 0
    injected_hangs: int = 0
    died: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embed_calls: int = 0
    embeds_cancelled: int = 0
    embeds_peak: int = 0  # the most Embed calls running at once


class SimState:
    """Shared by the RPC handlers of one server; lives on its event loop (no locking)."""

    def __init__(self, config: SimConfig) -> None:
        self.initial_config = config
        self.config = config
        self.admission = Admission(config.max_concurrency, config.max_waiting)
        self.kv_events = KvEventHub(self.load_record, lambda: self.config.kv_events_delay_ms / 1e3)
        self.prefix_cache = self._new_prefix_cache(config)
        self.started_monotonic = time.monotonic()
        self.started_wall = time.time()
        self.last_receive_wall = 0.0
        self.shutting_down = False
        self.used_tokens = 0
        self.counters = Counters()
        self.aborted_request_ids: deque[str] = deque(maxlen=HISTORY)
        self.cancelled_request_ids: deque[str] = deque(maxlen=HISTORY)
        self.last_metadata: Iterable[tuple[str, str | bytes]] = ()
        self.embeds_running = 0
        self._live: dict[str, list[Ticket]] = {}

    def _new_prefix_cache(self, config: SimConfig) -> PrefixCache | None:
        if not config.prefix_cache:
            return None
        return PrefixCache(config.kv_cache_tokens // BLOCK_SIZE, self.kv_events.publish)

    def load_record(self) -> Any:
        """The `EngineLoad` each KV event batch carries: GetLoads' numbers."""
        return common_pb2.EngineLoad(
            running_requests=self.admission.running,
            waiting_requests=self.admission.waiting,
            token_usage=self.token_usage,
            max_running_requests=self.config.max_concurrency,
        )

    def begin_call(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> int:
        """Count a Generate call; returns its 0-based number (the fault draws use it)."""
        number = self.counters.generate_calls
        self.counters.generate_calls = number + 1
        self.last_metadata = metadata or ()
        self.last_receive_wall = time.time()
        return number

    def register(self, request_id: str) -> Ticket:
        ticket = Ticket(request_id)
        self._live.setdefault(request_id, []).append(ticket)
        return ticket

    def unregister(self, ticket: Ticket) -> None:
        tickets = self._live.get(ticket.request_id)
        if tickets is None:
            return
        tickets.remove(ticket)
        if not tickets:
            del self._live[ticket.request_id]

    def abort(self, request_ids: Iterable[str]) -> None:
        """Abort every live request under these ids (vLLM allows repeated ids); unknown ids
        are recorded and otherwise ignored."""
        for request_id in request_ids:
            self.aborted_request_ids.append(request_id)
            for ticket in self._live.get(request_id, ()):
                ticket.abort()

    def record_cancelled(self, request_id: str) -> None:
        self.counters.cancelled += 1
        self.cancelled_request_ids.append(request_id)

    @property
    def active_requests(self) -> int:
        return self.admission.running + self.admission.waiting

    @property
    def token_usage(self) -> float:
        return min(1.0, self.used_tokens / self.config.kv_cache_tokens)

    def ready(self) -> bool:
        """Readiness: not shutting down and past the configured not-ready period."""
        if self.shutting_down:
            return False
        elapsed_ms = (time.monotonic() - self.started_monotonic) * 1000.0
        return elapsed_ms >= self.config.not_ready_ms

    def configure(self, changes: Mapping[str, Any]) -> SimConfig:
        """Apply runtime changes (ValueError for unknown or startup-only fields)."""
        self._apply(self.config.updated(changes, startup=False))
        log.info("sim reconfigured: %s", dict(changes))
        return self.config

    def reset(self) -> SimConfig:
        """Forget counters, history and the prefix cache; restore the startup config."""
        self.counters = Counters()
        self.aborted_request_ids.clear()
        self.cancelled_request_ids.clear()
        self.last_metadata = ()
        self._apply(self.initial_config)
        if self.prefix_cache is not None:
            self.prefix_cache.clear()
        return self.config

    def _apply(self, config: SimConfig) -> None:
        previous = self.config
        self.config = config
        self.admission.resize(config.max_concurrency, config.max_waiting)
        if (config.prefix_cache, config.kv_cache_tokens) != (
            previous.prefix_cache,
            previous.kv_cache_tokens,
        ):
            self.prefix_cache = self._new_prefix_cache(config)
            self.kv_events.publish([Cleared()])

    def stats(self) -> dict[str, Any]:
        """The Control/Stats document."""
        return {
            **asdict(self.counters),
            "running": self.admission.running,
            "embeds_running": self.embeds_running,
            "waiting": self.admission.waiting,
            "used_tokens": self.used_tokens,
            "aborted_request_ids": list(self.aborted_request_ids),
            "cancelled_request_ids": list(self.cancelled_request_ids),
            "live_request_ids": sorted(self._live),
            "last_metadata": _metadata_dict(self.last_metadata),
            "ready": self.ready(),
            "config": self.config.to_dict(),
        }


def _metadata_dict(metadata: Iterable[tuple[str, str | bytes]]) -> dict[str, str]:
    result: dict[str, str] = {}
    for key, value in metadata:
        result[key] = value.decode("latin-1") if isinstance(value, bytes) else value
    return result
