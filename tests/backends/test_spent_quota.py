"""What the client is told when a replica's upstream quota is spent: another replica is
tried, and the quota's 429 promises no recovery only when no replica was left untried."""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.outliers import is_replica_failure
from backends.replica import Replica
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.backend_errors import BackendOverloaded, BackendQuotaExhausted
from core.errors import GatewayError
from core.protocol import CompletionRequest
from core.request_parsing import parse_request
from tests.support.fake_backend import FakeBackend


def _replica(url: str, fail_with: GatewayError | None = None) -> Replica:
    """A replica whose every call fails with `fail_with` (none: it answers)."""
    return Replica("m", FakeBackend(url=url, fail_with=fail_with), healthy=True)


async def _ask(
    stream: bool, replicas: Sequence[Replica], busy: Sequence[Replica] = (), retries: int = 1
) -> None:
    """One request through a fleet of `replicas` (one retry unless `retries` says); each of
    `busy` holds a request already, so the idle ones are tried first."""
    fleet = Fleet(list(replicas), retry_attempts=retries, health_interval_s=60, health_timeout_s=1)
    for replica in busy:
        await replica.admission.acquire("interactive", Deadline.after(60))
    raw = orjson.dumps({"model": "m", "prompt": "hi", "stream": stream})
    request = GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "r1")
    budgets = ClassBudgets(total_s=30, ttft_s=30, admission_s=30, stall_s=30)
    budget = RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())
    if stream:
        opened = await fleet.open_stream(request, budget)
        await opened.close()
    else:
        await fleet.complete(request, budget)


def _spent() -> BackendQuotaExhausted:
    return BackendQuotaExhausted("insufficient_quota: You exceeded your current quota")


@pytest.mark.parametrize("stream", [False, True])
async def test_another_replica_answers_for_a_spent_one(stream: bool) -> None:
    """A spent replica's request is tried on another, which may bill another account."""
    spent, good = _replica("a", _spent()), _replica("b")
    await _ask(stream, [spent, good], busy=[good])
    assert isinstance(spent.backend, FakeBackend) and spent.backend.calls == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_when_every_replica_is_spent_retrying_is_in_vain(stream: bool) -> None:
    """Every replica tried is spent: 429 `insufficient_quota` with no Retry-After, and
    `x-should-retry: false` for the official SDKs, which retry every other 429."""
    with pytest.raises(BackendQuotaExhausted) as info:
        await _ask(stream, [_replica("a", _spent()), _replica("b", _spent())])
    assert info.value.headers() == {"x-should-retry": "false"}


async def test_an_untried_replica_leaves_the_client_its_own_retry() -> None:
    """The retries spent on two spent replicas, a third was never tried: still no Retry-After,
    but no `x-should-retry: false` either (the client's own backoff may reach the third)."""
    good = _replica("c")
    with pytest.raises(BackendQuotaExhausted) as info:
        await _ask(False, [_replica("a", _spent()), _replica("b", _spent()), good], busy=[good])
    assert info.value.headers() == {}


async def test_an_earlier_overload_is_told_rather_than_a_later_spent_quota() -> None:
    """A replica that was only full will take the request once its Retry-After passes: the
    client hears that, not the spent quota of the replica tried after it."""
    full = BackendOverloaded("full", retry_after_s=3.0)
    spent = _replica("b", _spent())
    with pytest.raises(BackendOverloaded) as info:
        await _ask(False, [_replica("a", full), spent], busy=[spent])
    assert info.value.headers()["retry-after"] == "3"


@pytest.mark.parametrize("stream", [False, True])
async def test_an_overload_is_remembered_past_several_spent_quotas(stream: bool) -> None:
    """Full, then spent, then spent again (two retries): the full replica's Retry-After is
    still what the client hears, not the last spent quota's "do not retry"."""
    full = BackendOverloaded("full", retry_after_s=3.0)
    spent = [_replica("b", _spent()), _replica("c", _spent())]
    with pytest.raises(BackendOverloaded) as info:
        await _ask(stream, [_replica("a", full), *spent], busy=spent, retries=2)
    assert info.value.headers()["retry-after"] == "3"
    assert all(isinstance(r.backend, FakeBackend) and r.backend.calls == 1 for r in spent)


def test_a_spent_replica_counts_towards_its_ejection() -> None:
    """Unlike a full one, a spent replica will not recover soon: its failures count, so a
    replica that keeps answering with a spent quota leaves routing for a while."""
    assert is_replica_failure(_spent())
