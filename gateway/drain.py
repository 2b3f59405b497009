"""Graceful shutdown on SIGTERM: /readyz turns unready at once while requests are still
served for the preStop window (`GATEWAY_DRAIN_DELAY_S`); then uvicorn's own shutdown stops
accepting and gives in-flight requests `GATEWAY_SHUTDOWN_GRACE_S` (streams still running
then end with an error event), and the lifespan closes: write-back queue drained, backends'
connections closed. Works in each uvicorn worker: with several, the supervisor
(`gateway.supervisor`) forwards SIGTERM to them (a second one too), stops listening itself so
that new connections are refused once the workers stop accepting, and exits when they have."""

from __future__ import annotations

import asyncio
import math
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from cache.embedder import JOIN_TIMEOUT_S
from core.env import HOUR_S, env_float
from core.errors import GatewayError
from obs.access_log import CLOSE_TIMEOUT_S as ACCESS_LOG_CLOSE_S
from obs.logs import CLOSE_TIMEOUT_S as LOG_CLOSE_S
from obs.tracing import SHUTDOWN_TIMEOUT_S as TRACING_CLOSE_S

WRITEBACK_DRAIN_S = 5.0
"""How long the lifespan's close waits for writes in flight: stored responses, then the
cache's write-back queue (each)."""

CLOSE_STAGES_S: tuple[tuple[str, float], ...] = (
    ("access log lines", ACCESS_LOG_CLOSE_S),
    ("last spans' export", TRACING_CLOSE_S),
    ("stored responses' writes", WRITEBACK_DRAIN_S),
    ("cache write-back queue", WRITEBACK_DRAIN_S),
    ("semantic cache's encoders (the model's, the clause judge's)", 2 * JOIN_TIMEOUT_S),
    ("log lines, as the worker exits", LOG_CLOSE_S),
)
"""What a worker does after the shutdown grace, one stage after another, each bounded: the
longest it can take is their sum (in-flight requests were cut at the grace; closing the
backends' and Redis' connections waits for nothing)."""

CLOSE_BOUND_S = sum(seconds for _, seconds in CLOSE_STAGES_S)

STRAGGLER_MARGIN_S = CLOSE_BOUND_S + 5.0
"""How long past the drain delay and the grace the supervisor lets a worker take before it
kills it: every closing stage, and a little slack."""


def stop_bound_s(drain: DrainSettings) -> float:
    """The longest a gateway takes to stop after SIGTERM: the drain delay, the grace (whole
    seconds), the supervisor's wait for its workers, and its own log lines. What Kubernetes'
    terminationGracePeriodSeconds and compose's stop_grace_period must cover."""
    return drain.delay_s + drain.grace_whole_s + STRAGGLER_MARGIN_S + LOG_CLOSE_S


class ShuttingDown(GatewayError):
    """The gateway is stopping: unready, or a stream cut at the end of the shutdown grace."""

    status = 503
    type = "service_unavailable"
    code = "shutting_down"


class DrainState:
    """Whether this process is draining: set by SIGTERM, read by /readyz and streams."""

    def __init__(self) -> None:
        self.draining = False


DRAIN = DrainState()
"""The process's drain state (one gateway per process)."""


@dataclass(frozen=True, slots=True)
class DrainSettings:
    """SIGTERM: unready at once, still serving for `delay_s` (0: stop accepting at once, for
    local runs; Kubernetes sets it), then in-flight requests get `grace_s` to finish."""

    delay_s: float = 0.0
    grace_s: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DrainSettings:
        defaults = cls()
        return cls(
            delay_s=env_float(env, "GATEWAY_DRAIN_DELAY_S", defaults.delay_s, low=0.0, high=HOUR_S),
            grace_s=env_float(
                env, "GATEWAY_SHUTDOWN_GRACE_S", defaults.grace_s, low=0.0, high=HOUR_S
            ),
        )

    @property
    def grace_whole_s(self) -> int:
        """The grace as uvicorn takes it (whole seconds, rounded up)."""
        return math.ceil(self.grace_s)


Handler = Callable[[int, FrameType | None], Any]


def intercept_sigterm(delay_s: float, state: DrainState = DRAIN) -> Callable[[], None]:
    """Put a drain in front of the server's SIGTERM handler: the first SIGTERM marks `state`
    draining and hands the signal on `delay_s` later; a second one hands it on at once.
    Returns the undo. A no-op off the main thread or without a server's handler."""
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        return lambda: None
    forward: Handler = previous
    loop = asyncio.get_running_loop()
    state.draining = False

    def handler(sig: int, frame: FrameType | None) -> None:
        if state.draining:
            forward(sig, frame)
            return
        state.draining = True
        # A signal handler may interrupt the loop anywhere: schedule through the safe door.
        loop.call_soon_threadsafe(loop.call_later, delay_s, forward, sig, None)

    signal.signal(signal.SIGTERM, handler)

    def undo() -> None:
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, forward)

    return undo
