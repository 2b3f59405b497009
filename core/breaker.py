"""A circuit breaker that turns a dead, slow or flapping dependency (Redis, for the caches and
the shared rate limits) into a fast `DependencyUnavailable`."""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

log = logging.getLogger("gateway.breaker")
T = TypeVar("T")


class DependencyUnavailable(Exception):
    """A dependency failed, timed out, or its circuit breaker is open."""


class BreakerState(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


StateListener = Callable[[BreakerState, BreakerState], None]
Timer = Callable[[float], AbstractAsyncContextManager[object]]


def default_failure_types() -> tuple[type[BaseException], ...]:
    """Timeouts, socket errors and, when redis-py is installed, every `RedisError`."""
    # ConnectionError and TimeoutError are OSError subclasses; listed for the reader.
    types: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError, OSError)
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - redis is a dependency of the Redis stores only
        return types
    return (*types, RedisError)


class CircuitBreaker:
    """Closed -> open after `failure_threshold` consecutive failures -> half-open after
    `cooldown_s` (one probe at a time) -> closed on success, open again on failure.

    The open -> half-open step happens on the first call after the cool-down, so `state`
    reads "open" until something tries; `available` says whether a call would be let
    through now.
    """

    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        cooldown_s: float = 5.0,
        failure_types: tuple[type[BaseException], ...] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_state_change: StateListener | None = None,
        name: str = "redis",
        unavailable: type[DependencyUnavailable] = DependencyUnavailable,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if cooldown_s < 0:
            raise ValueError("cooldown_s must not be negative")
        self.name = name
        self._unavailable = unavailable
        self._threshold = failure_threshold
        self._cooldown_s = cooldown_s
        self._failure_types = failure_types or default_failure_types()
        self._clock = clock
        self._on_state_change = on_state_change
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._probing = False
        self._consecutive = 0
        self.failures = 0
        self.rejections = 0
        self.opened_count = 0

    @property
    def state(self) -> BreakerState:
        return self._state

    @property
    def available(self) -> bool:
        """Whether a call now would be let through: closed, open past its cool-down (the call
        would be the half-open probe), or half-open with no probe in flight. Reading it
        changes nothing, so a caller that skips work while this is false still lets its next
        call probe once the cool-down has passed."""
        if self._state is BreakerState.CLOSED:
            return True
        if self._state is BreakerState.OPEN:
            return self._clock() - self._opened_at >= self._cooldown_s
        return not self._probing

    @property
    def consecutive_failures(self) -> int:
        return self._consecutive

    async def call(
        self,
        operation: Callable[[], Awaitable[T]],
        timeout: float,
        dependency_timeout: float | None = None,
        timer: Timer = asyncio.timeout,
    ) -> T:
        """`operation()` bounded by `timeout` seconds; dependency failures become the breaker's
        `DependencyUnavailable` class, and so does an open circuit, without calling at all.

        `dependency_timeout` is the deadline the dependency itself is held to: a `timeout`
        shorter than it is the caller's own budget, and running out of that is not the
        dependency's failure (on a loaded machine it would open the circuit for everyone).
        Other exceptions (bugs, cancellation) pass through unchanged and count for nothing.
        `timer` bounds the call (`core.loop_timeout.loop_timeout` to forgive the loop's lag).
        """
        probe = self._admit(timeout)
        try:
            async with timer(timeout):
                result = await operation()
        except self._failure_types as exc:
            if isinstance(exc, TimeoutError) and timeout < (dependency_timeout or timeout):
                self.rejections += 1
                if probe:
                    self._probing = False
            else:
                self._record_failure(probe)
            raise self._unavailable(f"{self.name}: {_describe(exc)}") from exc
        except BaseException:
            if probe:
                self._probing = False  # let the next caller probe instead
            raise
        self._record_success(probe)
        return result

    def _admit(self, timeout: float) -> bool:
        """Whether this call is the half-open probe; raise if it may not run at all."""
        if timeout <= 0:
            # The caller's own budget is spent: not the dependency's fault, so not a failure.
            self.rejections += 1
            raise self._unavailable(f"{self.name}: no time left for the call")
        if self._state is BreakerState.CLOSED:
            return False
        if self._state is BreakerState.OPEN:
            if self._clock() - self._opened_at < self._cooldown_s:
                self.rejections += 1
                raise self._unavailable(f"{self.name}: circuit open")
            self._transition(BreakerState.HALF_OPEN)
        if self._probing:
            self.rejections += 1
            raise self._unavailable(f"{self.name}: circuit half-open, probe in flight")
        self._probing = True
        return True

    def _record_success(self, probe: bool) -> None:
        if probe:
            self._probing = False
            self._consecutive = 0
            self._transition(BreakerState.CLOSED)
        elif self._state is BreakerState.CLOSED:
            self._consecutive = 0
        # A success that started before the circuit opened is stale evidence: ignore it.

    def _record_failure(self, probe: bool) -> None:
        self.failures += 1
        if probe:
            self._probing = False
            self._open()
        elif self._state is BreakerState.CLOSED:
            self._consecutive += 1
            if self._consecutive >= self._threshold:
                self._open()

    def _open(self) -> None:
        self._opened_at = self._clock()
        self.opened_count += 1
        self._transition(BreakerState.OPEN)

    def _transition(self, new: BreakerState) -> None:
        old, self._state = self._state, new
        if old is new:
            return
        level = logging.WARNING if new is BreakerState.OPEN else logging.INFO
        log.log(level, "circuit breaker %s: %s -> %s", self.name, old.value, new.value)
        if self._on_state_change is not None:
            try:
                self._on_state_change(old, new)
            except Exception:  # a metrics hook must not break the request path
                log.exception("circuit breaker %s: state listener failed", self.name)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError) and not str(exc):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
