"""The circuit breaker's state machine, timeouts and half-open probing, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest
import redis.exceptions

from core.breaker import BreakerState, CircuitBreaker, DependencyUnavailable, StateListener


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Dependency:
    """An operation that succeeds or raises on demand and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.error: BaseException | None = None

    async def __call__(self) -> str:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return "ok"


def make(clock: FakeClock, on_state_change: StateListener | None = None) -> CircuitBreaker:
    return CircuitBreaker(
        failure_threshold=3, cooldown_s=10.0, clock=clock, on_state_change=on_state_change
    )


def state(breaker: CircuitBreaker) -> BreakerState:
    # A function call, so mypy does not narrow the property across awaits.
    return breaker.state


async def fail_times(breaker: CircuitBreaker, dep: Dependency, n: int) -> None:
    dep.error = ConnectionError("refused")
    for _ in range(n):
        with pytest.raises(DependencyUnavailable):
            await breaker.call(dep, timeout=1.0)
    dep.error = None


async def test_closed_breaker_passes_results_through() -> None:
    """A healthy dependency's result comes back unchanged and nothing is counted."""
    breaker, dep = make(FakeClock()), Dependency()
    assert await breaker.call(dep, timeout=1.0) == "ok"
    assert state(breaker) is BreakerState.CLOSED
    assert (breaker.failures, breaker.rejections, breaker.opened_count) == (0, 0, 0)


async def test_opens_after_consecutive_failures_and_rejects_without_calling() -> None:
    """The threshold-th consecutive failure opens the circuit; then calls fail fast."""
    breaker, dep = make(FakeClock()), Dependency()
    await fail_times(breaker, dep, 2)
    assert state(breaker) is BreakerState.CLOSED
    await fail_times(breaker, dep, 1)
    assert state(breaker) is BreakerState.OPEN and breaker.opened_count == 1
    with pytest.raises(DependencyUnavailable, match="circuit open"):
        await breaker.call(dep, timeout=1.0)
    assert dep.calls == 3 and breaker.failures == 3 and breaker.rejections == 1


async def test_success_resets_the_consecutive_count() -> None:
    """Failures separated by a success never reach the threshold."""
    breaker, dep = make(FakeClock()), Dependency()
    for _ in range(3):
        await fail_times(breaker, dep, 2)
        await breaker.call(dep, timeout=1.0)
    assert state(breaker) is BreakerState.CLOSED and breaker.failures == 6


async def test_probe_after_cooldown_closes_on_success() -> None:
    """After the cool-down one call goes through, and its success closes the circuit."""
    clock = FakeClock()
    breaker, dep = make(clock), Dependency()
    await fail_times(breaker, dep, 3)
    clock.now += 9.999
    with pytest.raises(DependencyUnavailable):
        await breaker.call(dep, timeout=1.0)
    clock.now += 0.001
    assert await breaker.call(dep, timeout=1.0) == "ok"
    assert state(breaker) is BreakerState.CLOSED and breaker.consecutive_failures == 0


async def test_failed_probe_reopens_for_a_full_cooldown() -> None:
    """A failing probe opens the circuit again, timed from the probe's failure."""
    clock = FakeClock()
    breaker, dep = make(clock), Dependency()
    await fail_times(breaker, dep, 3)
    clock.now += 10
    await fail_times(breaker, dep, 1)
    assert state(breaker) is BreakerState.OPEN and breaker.opened_count == 2
    clock.now += 5
    with pytest.raises(DependencyUnavailable, match="circuit open"):
        await breaker.call(dep, timeout=1.0)
    assert dep.calls == 4


async def test_available_says_whether_a_call_would_run_and_changes_nothing() -> None:
    """`available` is false while the circuit is open and true once its cool-down lets a
    probe through (the state still reads open until something calls), false again while
    that probe is in flight."""
    clock = FakeClock()
    breaker, dep = make(clock), Dependency()
    assert breaker.available
    await fail_times(breaker, dep, 3)
    assert not breaker.available
    clock.now += 10
    assert breaker.available and state(breaker) is BreakerState.OPEN
    release = asyncio.Event()

    async def slow_ok() -> str:
        await release.wait()
        return "ok"

    probe = asyncio.create_task(breaker.call(slow_ok, timeout=30.0))
    await asyncio.sleep(0)
    assert state(breaker) is BreakerState.HALF_OPEN and not breaker.available
    release.set()
    await probe
    assert breaker.available and breaker.rejections == 0


async def test_timeout_counts_as_failure() -> None:
    """An operation that never answers is cut at the timeout and counted as a failure."""
    breaker = make(FakeClock())
    never = asyncio.Event()

    async def hang() -> None:
        await never.wait()

    with pytest.raises(DependencyUnavailable, match="timed out") as info:
        await breaker.call(hang, timeout=0.01)
    assert isinstance(info.value.__cause__, TimeoutError)
    assert breaker.failures == 1 and breaker.consecutive_failures == 1


async def test_running_out_of_the_callers_shorter_budget_is_not_a_failure() -> None:
    """Cut by the caller's budget before the dependency's own deadline: unavailable to this
    caller, but no failure counted, so a loaded caller never opens the circuit for others."""
    breaker = make(FakeClock())
    never = asyncio.Event()

    async def hang() -> None:
        await never.wait()

    for _ in range(5):
        with pytest.raises(DependencyUnavailable, match="timed out"):
            await breaker.call(hang, timeout=0.01, dependency_timeout=1.0)
    assert breaker.failures == 0 and state(breaker) is BreakerState.CLOSED
    with pytest.raises(DependencyUnavailable):
        await breaker.call(hang, timeout=0.01, dependency_timeout=0.01)
    assert breaker.failures == 1


@pytest.mark.parametrize(
    "error",
    [
        OSError("network unreachable"),
        ConnectionResetError("reset"),
        redis.exceptions.ConnectionError("gone"),
        redis.exceptions.TimeoutError("slow"),
        redis.exceptions.ResponseError("LOADING"),
    ],
)
async def test_dependency_errors_become_cache_unavailable(error: Exception) -> None:
    """Socket and Redis errors are re-raised as DependencyUnavailable chained to the original."""
    breaker, dep = make(FakeClock()), Dependency()
    dep.error = error
    with pytest.raises(DependencyUnavailable) as info:
        await breaker.call(dep, timeout=1.0)
    assert info.value.__cause__ is error and breaker.failures == 1


async def test_other_errors_pass_through_uncounted() -> None:
    """A bug in the caller's operation is not the dependency's failure."""
    breaker, dep = make(FakeClock()), Dependency()
    dep.error = ValueError("bad payload")
    with pytest.raises(ValueError, match="bad payload"):
        await breaker.call(dep, timeout=1.0)
    assert breaker.failures == 0 and breaker.consecutive_failures == 0


async def test_custom_failure_types() -> None:
    """The constructor's exception types replace the defaults."""
    breaker = CircuitBreaker(failure_types=(KeyError,), clock=FakeClock())
    dep = Dependency()
    dep.error = KeyError("k")
    with pytest.raises(DependencyUnavailable):
        await breaker.call(dep, timeout=1.0)
    dep.error = OSError("not listed")
    with pytest.raises(OSError, match="not listed"):
        await breaker.call(dep, timeout=1.0)
    assert breaker.failures == 1


async def test_no_time_left_is_rejected_without_calling_or_counting() -> None:
    """A spent budget is the caller's problem: no call, no failure, one rejection."""
    breaker, dep = make(FakeClock()), Dependency()
    with pytest.raises(DependencyUnavailable, match="no time left"):
        await breaker.call(dep, timeout=0.0)
    assert dep.calls == 0 and breaker.failures == 0 and breaker.rejections == 1


async def test_half_open_lets_exactly_one_probe_through_concurrently() -> None:
    """While a probe is in flight, every other caller is rejected fast."""
    clock = FakeClock()
    breaker = make(clock)
    await fail_times(breaker, Dependency(), 3)
    clock.now += 10
    release = asyncio.Event()
    entered = asyncio.Event()
    calls = 0

    async def slow_ok() -> str:
        nonlocal calls
        calls += 1
        entered.set()
        await release.wait()
        return "recovered"

    probe = asyncio.create_task(breaker.call(slow_ok, timeout=30.0))
    await entered.wait()
    assert state(breaker) is BreakerState.HALF_OPEN
    others = await asyncio.gather(
        *(breaker.call(slow_ok, timeout=30.0) for _ in range(20)), return_exceptions=True
    )
    assert all(isinstance(o, DependencyUnavailable) for o in others)
    assert calls == 1 and breaker.rejections == 20
    release.set()
    assert await probe == "recovered"
    assert state(breaker) is BreakerState.CLOSED


async def test_cancelled_probe_frees_the_slot() -> None:
    """A probe cancelled by its caller proves nothing: the next caller probes instead."""
    clock = FakeClock()
    breaker, dep = make(clock), Dependency()
    await fail_times(breaker, dep, 3)
    clock.now += 10
    entered = asyncio.Event()

    async def hang() -> str:
        entered.set()
        await asyncio.Event().wait()
        return "never"

    probe = asyncio.create_task(breaker.call(hang, timeout=30.0))
    await entered.wait()
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert state(breaker) is BreakerState.HALF_OPEN and breaker.failures == 3
    assert await breaker.call(dep, timeout=1.0) == "ok"
    assert state(breaker) is BreakerState.CLOSED


async def test_stale_success_does_not_close_an_open_circuit() -> None:
    """A call that started before the circuit opened cannot close it by succeeding late."""
    breaker, dep = make(FakeClock()), Dependency()
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow_ok() -> str:
        entered.set()
        await release.wait()
        return "late"

    slow = asyncio.create_task(breaker.call(slow_ok, timeout=30.0))
    await entered.wait()
    await fail_times(breaker, dep, 3)
    release.set()
    assert await slow == "late"
    assert state(breaker) is BreakerState.OPEN


async def test_state_listener_sees_every_transition_and_cannot_break_calls() -> None:
    """The listener gets (old, new) per transition; one that raises is only logged."""
    clock = FakeClock()
    seen: list[tuple[BreakerState, BreakerState]] = []

    def listener(old: BreakerState, new: BreakerState) -> None:
        seen.append((old, new))
        raise RuntimeError("metrics backend down")

    breaker, dep = make(clock, on_state_change=listener), Dependency()
    await fail_times(breaker, dep, 3)
    clock.now += 10
    await breaker.call(dep, timeout=1.0)
    assert seen == [
        (BreakerState.CLOSED, BreakerState.OPEN),
        (BreakerState.OPEN, BreakerState.HALF_OPEN),
        (BreakerState.HALF_OPEN, BreakerState.CLOSED),
    ]


def test_rejects_nonsense_configuration() -> None:
    """A zero threshold or negative cool-down is refused at construction."""
    with pytest.raises(ValueError, match="failure_threshold"):
        CircuitBreaker(failure_threshold=0)
    with pytest.raises(ValueError, match="cooldown_s"):
        CircuitBreaker(cooldown_s=-1)
