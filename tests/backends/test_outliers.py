"""Passive outlier detection: replicas whose calls keep failing leave routing for a while."""

from __future__ import annotations

import contextlib

import orjson

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.outliers import OutlierPolicy, Outliers, is_replica_failure
from backends.replica import Replica
from budgets.request_budget import ClassBudgets, RequestBudget
from core.backend_errors import (
    BackendCutOff,
    BackendError,
    BackendOverloaded,
    BackendRejected,
    BackendUnavailable,
)
from core.errors import DeadlineExceeded
from core.protocol import CompletionRequest
from core.request_parsing import parse_request
from core.stages import StageName
from tests.support.fake_backend import FakeBackend


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _replica(url: str, **faults: object) -> Replica:
    return Replica("m", FakeBackend(url=url, **faults), healthy=True)  # type: ignore[arg-type]


def _outliers(clock: Clock, *replicas: Replica, failures: int = 3) -> Outliers:
    policy = OutlierPolicy(consecutive_failures=failures, ejection_s=10.0, max_ejection_s=25.0)
    return Outliers(policy, lambda model: replicas, clock)


def test_which_failures_count_against_a_replica() -> None:
    """Backend failures and first-token or stall overruns count; a rejected request or a
    caller's total deadline does not."""
    assert is_replica_failure(BackendError("INTERNAL"))
    assert is_replica_failure(DeadlineExceeded(StageName.TTFT))
    assert is_replica_failure(DeadlineExceeded(StageName.STALL))
    assert not is_replica_failure(DeadlineExceeded(StageName.TOTAL))
    assert not is_replica_failure(BackendRejected("bad"))


def test_a_full_engine_is_never_ejected() -> None:
    """Refusals for lack of room (RESOURCE_EXHAUSTED, HTTP 429/503) neither count against a
    replica nor eject it: it is busy, not broken."""
    clock = Clock()
    busy, other = _replica("a"), _replica("b")
    outliers = _outliers(clock, busy, other)
    for _ in range(10):
        outliers.failed(busy, BackendOverloaded("queue full"))
    assert not is_replica_failure(BackendOverloaded("queue full"))
    assert busy.failures == 0 and busy.routable(clock.now) and busy.healthy


def test_consecutive_failures_eject_for_longer_each_time() -> None:
    """The third failure in a row ejects for 10 s; back, one more failure ejects for 20 s,
    then at most 25 s; a success starts the count over."""
    clock = Clock()
    bad, good = _replica("a"), _replica("b")
    outliers = _outliers(clock, bad, good)
    for _ in range(2):
        outliers.failed(bad, BackendError("x"))
    assert bad.routable(clock.now)
    outliers.failed(bad, BackendError("x"))
    assert not bad.routable(clock.now) and bad.healthy
    clock.now += 10.0
    assert bad.routable(clock.now)
    assert bad.warmth(clock.now, 5.0) == 0.0  # it ramps up again from here
    outliers.failed(bad, BackendError("x"))
    assert not bad.routable(clock.now + 19.9) and bad.routable(clock.now + 20.0)
    clock.now += 20.0
    outliers.failed(bad, BackendError("x"))
    assert bad.ejected_until == clock.now + 25.0
    clock.now += 25.0
    outliers.succeeded(bad)
    outliers.failed(bad, BackendError("x"))
    assert bad.routable(clock.now)


def test_the_last_routable_replica_is_never_ejected() -> None:
    """A model's only replica left in routing stays, however often it fails."""
    clock = Clock()
    bad, good = _replica("a"), _replica("b")
    good.healthy = False
    outliers = _outliers(clock, bad, good)
    for _ in range(10):
        outliers.failed(bad, BackendError("x"))
    assert bad.routable(clock.now)


def test_a_hung_replica_is_ejected_at_once_for_longer_each_time() -> None:
    """A replica found hung leaves routing without failures in a row, through the same
    ejection ladder; the model's last routable replica stays."""
    clock = Clock()
    hung, good = _replica("a"), _replica("b")
    outliers = _outliers(clock, hung, good, failures=0)
    outliers.hung(hung, "hung: no answer")
    assert hung.ejected_until == clock.now + 10.0 and hung.healthy
    clock.now += 10.0
    outliers.hung(hung, "hung: no answer")
    assert hung.ejected_until == clock.now + 20.0
    good.healthy = False
    clock.now += 20.0
    outliers.hung(hung, "hung: no answer")
    assert hung.routable(clock.now)


def test_unreachable_replica_is_ejected_until_its_probe_passes() -> None:
    """A replica that could not be reached leaves routing at once while another serves."""
    clock = Clock()
    bad, good = _replica("a"), _replica("b")
    _outliers(clock, bad, good).failed(bad, BackendUnavailable("reset"))
    assert not bad.healthy


def test_ejections_are_counted_by_model_and_reason() -> None:
    """Each ejection is counted once by why it happened; a failure while already out is not
    another ejection."""
    clock = Clock()
    broken, hung, gone, other = _replica("a"), _replica("b"), _replica("c"), _replica("d")
    outliers = _outliers(clock, broken, hung, gone, other)
    for _ in range(4):
        outliers.failed(broken, BackendError("INTERNAL"))
    outliers.hung(hung, "no answer to a probe")
    outliers.failed(gone, BackendUnavailable("refused"))
    outliers.failed(gone, BackendUnavailable("refused"))
    assert outliers.ejected == {("m", "failures"): 1, ("m", "hung"): 1, ("m", "unreachable"): 1}


def test_an_unreachable_last_replica_stays_in_routing() -> None:
    """The model's last healthy replica stays in routing even unreachable: each such call is
    one failure in a row, and only its health probe takes it out."""
    clock = Clock()
    bad, out = _replica("a"), _replica("b")
    out.healthy = False
    outliers = _outliers(clock, bad, out)
    for _ in range(10):
        outliers.failed(bad, BackendUnavailable("refused"))
    assert bad.routable(clock.now) and bad.failures == 10


def test_an_unreachable_replica_gives_way_to_an_outlier() -> None:
    """An unreachable replica leaves routing while another passes its probe, even one out as
    an outlier: routing falls back to that one, which at least answers."""
    clock = Clock()
    bad, outlier = _replica("a"), _replica("b")
    fleet = _fleet(clock, bad, outlier)
    for _ in range(3):
        fleet.outliers.failed(outlier, BackendError("INTERNAL"))
    assert not outlier.routable(clock.now) and outlier.healthy
    fleet.outliers.failed(bad, BackendUnavailable("refused"))
    assert not bad.healthy and fleet.pick("m") is outlier


def test_an_answer_cut_off_is_one_failure() -> None:
    """A replica that answered and broke off is not taken for unreachable: it stays until
    the failures in a row eject it."""
    clock = Clock()
    bad, good = _replica("a"), _replica("b")
    outliers = _outliers(clock, bad, good)
    for _ in range(2):
        outliers.failed(bad, BackendCutOff("stream ended before [DONE]"))
        assert bad.routable(clock.now) and bad.healthy
    outliers.failed(bad, BackendCutOff("stream ended before [DONE]"))
    assert not bad.routable(clock.now) and bad.healthy and bad.failures == 3


def _fleet(clock: Clock, *replicas: Replica) -> Fleet:
    return Fleet(
        list(replicas),
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        clock=clock,
        outliers=OutlierPolicy(consecutive_failures=3, ejection_s=30.0),
    )


def _request(stream: bool) -> GenerationRequest:
    raw = orjson.dumps({"model": "m", "prompt": "hi", "stream": stream})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r1")


def _budget(clock: Clock) -> RequestBudget:
    budgets = ClassBudgets(total_s=10.0, ttft_s=10.0, admission_s=10.0, stall_s=10.0)
    return RequestBudget.start("interactive", budgets, clock, clock.now)


async def test_a_replica_breaking_every_stream_midway_loses_its_share() -> None:
    """Streams that die after their first token (nothing can be retried then) eject their
    replica after three in a row: the healthy one serves the rest."""
    clock = Clock()
    broken = _replica("a", fail_with=BackendError("died"), fail_after=1)
    healthy = _replica("b")
    fleet = _fleet(clock, broken, healthy)
    for _ in range(20):
        opened = await fleet.open_stream(_request(stream=True), _budget(clock))
        with contextlib.suppress(BackendError):
            async for _chunk in opened.iterate():
                pass
    assert isinstance(broken.backend, FakeBackend) and isinstance(healthy.backend, FakeBackend)
    assert broken.backend.calls == 3 and healthy.backend.calls == 17


async def test_a_replica_failing_before_the_first_token_loses_its_share() -> None:
    """Calls failing at once are retried elsewhere, but the failing replica is soon skipped
    and no longer costs every other request a wasted hop."""
    clock = Clock()
    broken = _replica("a", fail_with=BackendError("INTERNAL"))
    healthy = _replica("b")
    fleet = _fleet(clock, broken, healthy)
    for _ in range(20):
        await fleet.complete(_request(stream=False), _budget(clock))
    assert isinstance(broken.backend, FakeBackend)
    assert broken.backend.calls == 3


async def test_an_overloaded_replica_rests_for_its_retry_after() -> None:
    """A replica that refused for lack of room gets no work while another can take it, until
    the Retry-After it sent has passed; then it is a candidate again."""
    clock = Clock()
    busy = _replica("a", fail_with=BackendOverloaded("full", retry_after_s=5.0))
    free = _replica("b")
    fleet = _fleet(clock, busy, free)
    for _ in range(10):
        await fleet.complete(_request(stream=False), _budget(clock))
    assert isinstance(busy.backend, FakeBackend) and isinstance(free.backend, FakeBackend)
    assert (busy.backend.calls, free.backend.calls) == (1, 10)
    clock.now += 5.0
    busy.backend.fail_with = None
    for _ in range(4):
        await fleet.complete(_request(stream=False), _budget(clock))
    assert busy.backend.calls > 1
