"""Per-key limits: requests and tokens, reservations settled by real usage, shared through a
real Redis across limiters, and a local fallback when Redis is gone."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import cast

import pytest

from access.caller import Caller, KeyLimits
from access.gcra import Decision, Limit, state_after
from access.limiter import UNLIMITED, RateLimiter
from access.reservation import Reservation
from access.shared_limiter import SharedLimiter
from bench.harness.probes import free_port
from core.breaker import CircuitBreaker, DependencyUnavailable
from core.errors import RateLimited, RequestTooLarge, TokensRateLimited
from core.redis_client import redis_client


def _caller(**limits: int) -> Caller:
    return Caller(
        "acme", key_id=uuid.uuid4().hex[:12], name="acme-test", limits=KeyLimits(**limits)
    )


def _shared(url: str, timeout_s: float = 0.5) -> SharedLimiter:
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=30.0, name="redis-limits")
    return SharedLimiter(redis_client(url, timeout_s), breaker, timeout_s)


@pytest.fixture
async def shared(redis_url: str) -> AsyncIterator[RateLimiter]:
    limiter = RateLimiter(_shared(redis_url))
    yield limiter
    await limiter.aclose()


async def test_a_caller_without_limits_is_not_counted() -> None:
    """No limits (or access control off): nothing is charged and no headers are added."""
    limiter = RateLimiter(None)
    assert await limiter.admit(Caller("anon"), lambda: 10**9) is UNLIMITED
    assert await limiter.admit(_caller(), lambda: 10**9) is UNLIMITED
    assert UNLIMITED.headers() == {}


async def test_requests_per_minute_then_429_with_openai_headers() -> None:
    """Within the limit every answer says what is left; beyond it a 429 says when to retry."""
    limiter, caller = RateLimiter(None), _caller(requests_per_minute=3)
    admissions = [await limiter.admit(caller, lambda: 10) for _ in range(3)]
    assert admissions[-1].headers()["x-ratelimit-limit-requests"] == "3"
    assert [a.headers()["x-ratelimit-remaining-requests"] for a in admissions] == ["2", "1", "0"]
    with pytest.raises(RateLimited) as info:
        await limiter.admit(caller, lambda: 10)
    error = info.value
    assert error.status == 429 and error.code == "rate_limit_exceeded" and error.type == "requests"
    headers = error.headers()
    assert headers["retry-after"] == "20" and 19_000 < int(headers["retry-after-ms"]) <= 20_000
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert "acme-test" in error.message and limiter.refused["requests"] == 1


async def test_unused_tokens_are_given_back() -> None:
    """A reservation settled with less usage frees the difference at once."""
    limiter, caller = RateLimiter(None), _caller(tokens_per_minute=1000)
    first = await limiter.admit(caller, lambda: 900)
    with pytest.raises(TokensRateLimited):
        await limiter.admit(caller, lambda: 200)
    limiter.settle(first, 100)
    second = await limiter.admit(caller, lambda: 800)
    assert second.headers()["x-ratelimit-remaining-tokens"] == "100"


async def test_the_headers_of_an_answer_count_its_usage_not_its_reservation() -> None:
    """A request that reserved the whole of a 1000-a-minute limit and used 30: its headers,
    written once it is settled, say 970 are left, as the next admission finds."""
    limiter = RateLimiter(None, clock=lambda: 100.0)
    caller = _caller(tokens_per_minute=1000)
    admission = await limiter.admit(caller, lambda: Reservation(10, 990, 1))
    assert admission.headers()["x-ratelimit-remaining-tokens"] == "0"
    limiter.settle(admission, 30)
    settled = admission.headers(used_tokens=30)
    assert settled["x-ratelimit-remaining-tokens"] == "970"
    assert settled["x-ratelimit-reset-tokens"] == "2s"  # 30 tokens rest in 1.8 s
    following = await limiter.admit(caller, lambda: 0)
    assert following.headers()["x-ratelimit-remaining-tokens"] == "970"
    assert admission.headers(used_tokens=1200)["x-ratelimit-remaining-tokens"] == "0"


async def test_daily_tokens_refuse_as_tokens() -> None:
    """The daily token limit refuses with type tokens and says which limit; its headers
    describe the day's limit, which has less left than the minute's."""
    limiter, caller = RateLimiter(None), _caller(tokens_per_day=100, tokens_per_minute=1000)
    await limiter.admit(caller, lambda: 100)
    with pytest.raises(TokensRateLimited, match="tokens per day") as refused:
        await limiter.admit(caller, lambda: 1)
    headers = refused.value.headers()
    assert headers["x-ratelimit-limit-tokens"] == "100"
    assert headers["x-ratelimit-remaining-tokens"] == "0"
    assert (
        headers["x-ratelimit-reset-tokens"].endswith("s")
        and "h" in headers["x-ratelimit-reset-tokens"]
    )


async def test_a_request_larger_than_a_whole_limit_is_a_400() -> None:
    """A reservation no full bucket could hold is a 400 naming max_tokens, with a full bucket
    too: a 429's Retry-After could never be honoured. One that fits still passes."""
    limiter, caller = RateLimiter(None), _caller(tokens_per_minute=300)
    with pytest.raises(RequestTooLarge, match="limit 300, requested 301") as raised:
        await limiter.admit(caller, lambda: 301)
    assert raised.value.param == "max_tokens" and raised.value.status == 400
    assert (await limiter.admit(caller, lambda: 300)).reserved_tokens == 300


async def test_choices_within_the_limit_but_beyond_what_is_left_are_a_429() -> None:
    """n choices that fit the whole limit but not what is left now wait: a 429 that says when."""
    limiter, caller = RateLimiter(None), _caller(tokens_per_minute=300)
    asked = Reservation(prompt=2, per_choice=50, choices=5, n=5)
    assert (await limiter.admit(caller, lambda: asked)).reserved_tokens == 252
    with pytest.raises(TokensRateLimited) as raised:
        await limiter.admit(caller, lambda: asked)
    assert int(raised.value.headers()["retry-after"]) > 0


async def test_two_limiters_share_one_keys_limit(redis_url: str) -> None:
    """Two limiters (two gateway replicas) over one Redis admit a key's limit, not twice it."""
    first, second = RateLimiter(_shared(redis_url)), RateLimiter(_shared(redis_url))
    caller = _caller(requests_per_minute=20)
    try:
        outcomes = await asyncio.gather(
            *(lim.admit(caller, lambda: 1) for lim in (first, second) * 20), return_exceptions=True
        )
    finally:
        await first.aclose()
        await second.aclose()
    admitted = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, RateLimited)]
    assert len(admitted) == len(refused) == 20
    assert first.local_decisions == second.local_decisions == 0
    assert all(a.shared for a in admitted)


async def test_shared_refund_frees_tokens(shared: RateLimiter) -> None:
    """Settling in Redis gives back unused tokens for the next request on any replica."""
    caller = _caller(tokens_per_minute=1000)
    first = await shared.admit(caller, lambda: 1000)
    shared.settle(first, 0)
    await shared.flush()  # refunds are gathered and sent off the request path
    assert (await shared.admit(caller, lambda: 1000)).shared


async def test_an_excess_is_charged_in_redis_at_once(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer that used far more than it reserved is charged without waiting for the
    gathered refunds (patched here to be sent 30 s later): another replica refuses the
    caller's next request (before, an immediate second request got in)."""
    monkeypatch.setattr("access.limiter.REFUND_INTERVAL_S", 30.0)
    first, second = RateLimiter(_shared(redis_url)), RateLimiter(_shared(redis_url))
    caller = _caller(tokens_per_minute=300)
    try:
        admission = await first.admit(caller, lambda: 100)
        first.settle(admission, 3625)
        await first.charged()
        with pytest.raises(TokensRateLimited):
            await second.admit(caller, lambda: 1)
    finally:
        await first.aclose()
        await second.aclose()


async def test_shared_and_local_agree_on_a_burst(shared: RateLimiter) -> None:
    """The Lua script and the Python GCRA admit the same burst of mixed costs."""
    costs = [300, 200, 400, 150, 50, 10]
    results = []
    for limiter in (shared, RateLimiter(None)):
        caller = _caller(tokens_per_minute=1000)
        allowed = []
        for cost in costs:
            try:
                await limiter.admit(caller, functools.partial(int, cost))
                allowed.append(True)
            except TokensRateLimited:
                allowed.append(False)
        results.append(allowed)
    assert results[0] == results[1] == [True, True, True, False, True, True]


async def test_unreachable_redis_falls_back_to_a_local_share() -> None:
    """Redis gone from the start: decisions are taken locally, never as errors, on this
    replica's share of a key Redis never reported, started half spent (it may have been spent
    through other processes): 2 of the 5 of half of 10."""
    dead = _shared(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.05)
    limiter = RateLimiter(dead, replicas=2)
    caller = _caller(requests_per_minute=10)
    try:
        admitted = 0
        for _ in range(8):
            try:
                admission = await limiter.admit(caller, lambda: 1)
                admitted += 1
                assert not admission.shared
            except RateLimited:
                pass
    finally:
        await limiter.aclose()
    assert admitted == 2 and limiter.local_decisions == 8


class _ScriptTimesOut(SharedLimiter):
    """Redis whose limit script times out once (decided locally), refunds still reaching it."""

    def __init__(self, url: str) -> None:
        breaker = CircuitBreaker(failure_threshold=2, cooldown_s=30.0, name="redis-limits")
        super().__init__(redis_client(url, 0.5), breaker, 0.5)
        self.timeouts = 1

    async def admit(self, limits: Sequence[Limit], costs: Sequence[int]) -> Decision:
        if self.timeouts:
            self.timeouts -= 1
            raise DependencyUnavailable("the limit script timed out")
        return await super().admit(limits, costs)


async def test_the_excess_of_a_local_decision_is_charged_in_redis(redis_url: str) -> None:
    """A request this replica admitted alone that used more than it reserved is charged the
    excess in Redis too, so the next request, decided there again, cannot spend it twice."""
    limiter, caller = RateLimiter(_ScriptTimesOut(redis_url)), _caller(tokens_per_minute=300)
    try:
        first = await limiter.admit(caller, lambda: 55)
        assert not first.shared and limiter.local_decisions == 1
        limiter.settle(first, 1509)
        await limiter.flush()
        with pytest.raises(TokensRateLimited) as raised:
            await limiter.admit(caller, lambda: 10)
        assert int(raised.value.headers()["retry-after"]) > 60
    finally:
        await limiter.aclose()


class _Switchable(SharedLimiter):
    """Redis that can be made unreachable (every call fails fast, as with its circuit open)
    and brought back, its state intact."""

    def __init__(self, url: str) -> None:
        breaker = CircuitBreaker(failure_threshold=1000, cooldown_s=30.0, name="redis-limits")
        super().__init__(redis_client(url, 0.5), breaker, 0.5)
        self.down = False

    async def admit(self, limits: Sequence[Limit], costs: Sequence[int]) -> Decision:
        if self.down:
            raise DependencyUnavailable("redis-limits: circuit open")
        return await super().admit(limits, costs)

    async def refund(self, refunds: Sequence[tuple[Limit, int]]) -> None:
        if self.down:
            raise DependencyUnavailable("redis-limits: circuit open")
        await super().refund(refunds)


async def _admitted(limiter: RateLimiter, caller: Caller, attempts: int, tokens: int = 1) -> int:
    admitted = 0
    for _ in range(attempts):
        try:
            await limiter.admit(caller, lambda: tokens)
            admitted += 1
        except RateLimited:
            pass
    return admitted


@pytest.mark.parametrize(("replicas", "alone"), [(1, 4), (2, 2)])
async def test_deciding_alone_starts_from_what_redis_last_said(
    redis_url: str, replicas: int, alone: int
) -> None:
    """A key spent 6 of its 10 through Redis, then Redis goes away: this replica decides alone
    on its share of the 4 left (4 alone, 2 of 2 replicas), not on a fresh bucket."""
    shared = _Switchable(redis_url)
    limiter, caller = RateLimiter(shared, replicas=replicas), _caller(requests_per_minute=10)
    try:
        assert await _admitted(limiter, caller, 6) == 6
        shared.down = True
        assert await _admitted(limiter, caller, 10) == alone
    finally:
        await limiter.aclose()
    assert limiter.local_decisions == 10


async def test_what_was_admitted_alone_is_charged_in_redis_when_it_answers_again(
    redis_url: str,
) -> None:
    """3 of 10 through Redis, 7 alone while it is gone: when it is back, the 7 are charged there
    before its next decision, so that one is a 429, for this replica and for another one."""
    shared = _Switchable(redis_url)
    limiter, caller = RateLimiter(shared), _caller(requests_per_minute=10)
    other = RateLimiter(_shared(redis_url))
    try:
        assert await _admitted(limiter, caller, 3) == 3
        shared.down = True
        assert await _admitted(limiter, caller, 10) == 7
        shared.down = False
        with pytest.raises(RateLimited):
            await limiter.admit(caller, lambda: 1)
        with pytest.raises(RateLimited):
            await other.admit(caller, lambda: 1)
    finally:
        await limiter.aclose()
        await other.aclose()


async def test_what_redis_is_owed_is_the_answers_real_usage(redis_url: str) -> None:
    """An answer admitted alone reserved 500 tokens and used 100: Redis is charged 100, not
    the reservation, so 700 more fit in the 1000 a minute (100 + 100 + 700) and 200 do not."""
    shared = _Switchable(redis_url)
    limiter, caller = RateLimiter(shared), _caller(tokens_per_minute=1000)
    try:
        limiter.settle(await limiter.admit(caller, lambda: 100), 100)
        shared.down = True
        alone = await limiter.admit(caller, lambda: 500)
        assert not alone.shared
        limiter.settle(alone, 100)
        shared.down = False
        assert (await limiter.admit(caller, lambda: 700)).shared
        with pytest.raises(TokensRateLimited):
            await limiter.admit(caller, lambda: 200)
    finally:
        await limiter.aclose()


async def test_a_request_beyond_a_replicas_share_passes_once_the_share_has_rested() -> None:
    """Deciding alone on half of 300 tokens a minute, n choices reserving 252 (within the whole
    limit) pass from a rested share, and the next waits as long as its 429 says, not forever."""
    now = [1000.0]
    limiter, caller = (
        RateLimiter(None, replicas=2, clock=lambda: now[0]),
        _caller(tokens_per_minute=300),
    )
    asked = Reservation(prompt=2, per_choice=50, choices=5, n=5)
    assert not (await limiter.admit(caller, lambda: asked)).shared
    with pytest.raises(TokensRateLimited) as raised:
        await limiter.admit(caller, lambda: asked)
    now[0] += int(raised.value.headers()["retry-after"])
    assert (await limiter.admit(caller, lambda: asked)).reserved_tokens == 252


def test_limit_shares_round_down_but_never_to_zero() -> None:
    """A share is at least one unit."""
    assert Limit("r", "requests", 3, 60.0).shared_by(2).amount == 1


async def test_keys_of_one_tenant_share_its_limit() -> None:
    """Two keys of a tenant limited to 3 requests a minute get 3 between them; the 429 names
    the tenant, and a key with room of its own is still refused."""
    limiter = RateLimiter(None)
    shared = KeyLimits(requests_per_minute=3)
    first, second = (
        Caller("acme", key_id=uuid.uuid4().hex[:12], limits=KeyLimits(requests_per_minute=100),
               tenant_limits=shared)
        for _ in range(2)
    )  # fmt: skip
    admissions = [await limiter.admit(caller, lambda: 1) for caller in (first, second, first)]
    with pytest.raises(RateLimited, match="tenant acme"):
        await limiter.admit(second, lambda: 1)
    # The binding limit (the tenant's) is the one the headers describe.
    assert admissions[-1].headers()["x-ratelimit-limit-requests"] == "3"
    assert admissions[-1].headers()["x-ratelimit-remaining-requests"] == "0"


async def test_tenant_limits_are_shared_through_redis(shared: RateLimiter) -> None:
    """In Redis the tenant's limit is one counter for all its keys, across limiters."""
    tenant = uuid.uuid4().hex[:8]
    callers = [
        Caller(tenant, key_id=uuid.uuid4().hex[:12], tenant_limits=KeyLimits(tokens_per_minute=100))
        for _ in range(2)
    ]
    await shared.admit(callers[0], lambda: 60)
    with pytest.raises(TokensRateLimited, match=f"tenant {tenant}"):
        await shared.admit(callers[1], lambda: 60)


@pytest.mark.parametrize("through_redis", [False, True])
async def test_the_headers_of_a_request_never_admitted_charge_nothing(
    through_redis: bool, request: pytest.FixtureRequest
) -> None:
    """A caller's headers as its limits stand (for an answer refused before admission) say
    what is left, without Retry-After, and charge nothing, locally or in Redis; a caller
    without limits has none."""
    limiter = RateLimiter(_shared(request.getfixturevalue("redis_url")) if through_redis else None)
    caller = _caller(requests_per_minute=3, tokens_per_minute=100)
    try:
        await limiter.admit(caller, lambda: 40)
        for _ in range(3):
            headers = await limiter.headers(caller)
            assert headers["x-ratelimit-remaining-requests"] == "2"
            assert headers["x-ratelimit-remaining-tokens"] == "60"
            assert "retry-after" not in headers
        assert await limiter.headers(_caller()) == {}
        assert await limiter.headers(Caller("anon")) == {}
    finally:
        await limiter.aclose()


async def test_deciding_on_a_share_tells_the_client_the_keys_limit() -> None:
    """Deciding alone on half of 10 a minute: the headers and the 429's message state the key's
    limit, 10, and what is left of this process's share (documented), not a limit of 5."""
    limiter, caller = RateLimiter(None, replicas=2), _caller(requests_per_minute=10)
    admission = await limiter.admit(caller, lambda: 1)
    assert admission.headers()["x-ratelimit-limit-requests"] == "10"
    assert admission.headers()["x-ratelimit-remaining-requests"] == "4"
    for _ in range(4):
        await limiter.admit(caller, lambda: 1)
    with pytest.raises(RateLimited, match="limit 10, remaining 0") as raised:
        await limiter.admit(caller, lambda: 1)
    assert raised.value.headers()["x-ratelimit-limit-requests"] == "10"
    assert (await limiter.headers(caller))["x-ratelimit-limit-requests"] == "10"


async def test_a_burst_s_answers_read_out_of_order_leave_redis_s_last_state(
    redis_url: str,
) -> None:
    """Two replicas spend a key's 10 in a concurrent burst (answers read in any order), then
    Redis goes away: each starts alone from the state Redis decided last, nothing left, not
    from an early answer read late."""
    shared = [_Switchable(redis_url) for _ in range(2)]
    limiters, caller = [RateLimiter(s, replicas=2) for s in shared], _caller(requests_per_minute=10)
    try:
        outcomes = await asyncio.gather(
            *(limiters[i % 2].admit(caller, lambda: 1) for i in range(30)), return_exceptions=True
        )
        assert sum(not isinstance(o, BaseException) for o in outcomes) == 10
        for one in shared:
            one.down = True
        assert [await _admitted(limiter, caller, 5) for limiter in limiters] == [0, 0]
    finally:
        for limiter in limiters:
            await limiter.aclose()


async def test_a_debt_of_a_key_whose_tenant_has_limits_is_paid_under_the_tenants_tag(
    redis_url: str,
) -> None:
    """Redis down from the start (nothing learnt from it): 500 tokens admitted alone on a key
    whose tenant has limits are charged, when it is back, where the key's state lives (under
    the tenant's hash tag), so the next answer has about 500 left, not the whole 1000."""
    shared = _Switchable(redis_url)
    shared.down = True
    limiter = RateLimiter(shared)
    caller = Caller(
        uuid.uuid4().hex[:8],
        key_id=uuid.uuid4().hex[:12],
        limits=KeyLimits(requests_per_minute=100, tokens_per_minute=1000),
        tenant_limits=KeyLimits(requests_per_minute=100),
    )
    try:
        assert await _admitted(limiter, caller, 5, tokens=100) == 5
        shared.down = False
        admission = await limiter.admit(caller, lambda: 1)
        assert admission.shared
        assert int(admission.headers()["x-ratelimit-remaining-tokens"]) < 600
    finally:
        await limiter.aclose()


class _Unpaid:
    """Redis that is down, then back: its payment of a debt waits for `release` while down,
    then fails."""

    def __init__(self) -> None:
        self.down = True
        self.paying, self.release, self.failed = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def admit(self, limits: Sequence[Limit], costs: Sequence[int]) -> Decision:
        if self.down:
            raise DependencyUnavailable("down")
        return Decision(True, tuple(state_after(limit, 0.0) for limit in limits), at=1.0)

    async def refund(self, refunds: Sequence[tuple[Limit, int]]) -> None:
        if self.down:
            self.paying.set()
            await self.release.wait()
            self.failed.set()  # the payment has failed by the time a waiter runs
            raise DependencyUnavailable("still down")

    async def aclose(self) -> None:
        pass


async def test_a_failed_payment_awaited_by_a_cancelled_request_is_not_handed_on() -> None:
    """The request waiting for a debt's payment goes away and the payment then fails: once
    Redis is back, the next request starts a new payment and is decided there, not told the
    old failure (the debt is kept and paid)."""
    unpaid = _Unpaid()
    limiter = RateLimiter(cast(SharedLimiter, unpaid))
    caller = _caller(requests_per_minute=100)
    await limiter.admit(caller, lambda: 0)  # alone: owed
    waiting = asyncio.create_task(limiter.admit(caller, lambda: 0))
    await unpaid.paying.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    unpaid.release.set()
    await unpaid.failed.wait()
    unpaid.down = False
    assert (await limiter.admit(caller, lambda: 0)).shared
    assert limiter.local_decisions == 1


async def test_what_is_owed_is_paid_at_shutdown(redis_url: str) -> None:
    """5 of 10 admitted alone, Redis back but asked nothing more before the replica shuts down:
    closing pays the 5, so another replica gets the 5 left, not 10."""
    shared = _Switchable(redis_url)
    shared.down = True
    limiter, caller = RateLimiter(shared), _caller(requests_per_minute=10)
    other = RateLimiter(_shared(redis_url))
    try:
        assert await _admitted(limiter, caller, 5) == 5
        shared.down = False
        await limiter.aclose()
        assert await _admitted(other, caller, 10) == 5
    finally:
        await other.aclose()


class _PaymentBreaks(_Unpaid):
    """Redis back, whose first payment of a debt fails with an unexpected error; the charges
    of the later ones are kept."""

    def __init__(self) -> None:
        super().__init__()
        self.down, self.breaks, self.charged = False, 1, list[tuple[Limit, int]]()

    async def refund(self, refunds: Sequence[tuple[Limit, int]]) -> None:
        if self.breaks:
            self.breaks -= 1
            raise RuntimeError("a bug")
        self.charged += refunds


async def test_a_debt_is_kept_whatever_its_payment_failed_with() -> None:
    """A payment that fails with something other than an unreachable Redis keeps the debt: the
    next request pays it."""
    redis = _PaymentBreaks()
    limiter = RateLimiter(cast(SharedLimiter, redis))
    caller = _caller(requests_per_minute=100)
    redis.down = True
    await limiter.admit(caller, lambda: 0)  # alone: owed
    redis.down = False
    with pytest.raises(RuntimeError):
        await limiter.admit(caller, lambda: 0)
    assert (await limiter.admit(caller, lambda: 0)).shared
    assert [units for _, units in redis.charged] == [-1]
