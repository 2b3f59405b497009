"""Each API key's limits on requests and tokens, shared by every gateway replica.

A request reserves its tokens when it is admitted (its prompt, estimated, plus the most it may
generate), and the reservation is settled with the real usage when the answer ends: an early
stop gives tokens back, and a long answer cannot take more than it reserved before it is
charged. Decisions go to Redis (one atomic script); when Redis is unreachable, each replica
decides alone on its share of every limit, after one bounded timeout and without ever
turning a limit into an error.

Deciding alone starts from what Redis last said of each limit (this process's share of what
was left then), and a limit Redis never reported to this process from half its share (it may
have been spent through other processes): never from a fresh bucket. What a replica admits
alone is owed to Redis and charged there (less what has rested since) once Redis answers
again, settled with the answers' real usage like any reservation, since the next request may
be decided there; a failed payment keeps the debt, and closing tries once to pay it. A script
that timed out may have run in Redis all the same: the request it carried is decided and
charged locally, and owed, erring against the key (charged twice at worst), never past its
limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from access.caller import Caller
from access.gcra import Decision, Limit, LocalLimiter
from access.key_limits import caller_limits, whose
from access.limit_headers import duration, limit_headers
from access.redis_debts import RedisDebts
from access.reservation import Reservation, check_fits
from access.shared_limiter import SharedLimiter
from core.breaker import DependencyUnavailable
from core.errors import RateLimited, TokensRateLimited

log = logging.getLogger("gateway.limits")

REFUND_INTERVAL_S = 0.05
UNSEEN_USED = 0.5  # how spent a limit Redis never reported to this process starts locally


@dataclass(frozen=True, slots=True)
class Admission:
    """A request let through its caller's limits: what it reserved, on which limits, where."""

    limited: bool = False  # False when the caller has no limits
    token_limits: tuple[Limit, ...] = ()  # whole limits, as Redis keeps them (not a share)
    reserved_tokens: int = 0
    decision: Decision | None = None
    shared: bool = False  # decided in Redis rather than by this replica alone

    def headers(self, used_tokens: int | None = None) -> dict[str, str]:
        """The rate-limit headers as the admission left the limits (its whole reservation
        held), or, given what the answer used, as settling it leaves them."""
        if self.decision is None:
            return {}
        unused = 0 if used_tokens is None else self.reserved_tokens - used_tokens
        return limit_headers(self.decision, unused)


UNLIMITED = Admission()


class RateLimiter:
    """Admits requests within their key's limits; `shared` is None without Redis."""

    def __init__(
        self,
        shared: SharedLimiter | None,
        replicas: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._shared = shared
        self._replicas = replicas
        self._clock = clock
        self._local = LocalLimiter(clock, UNSEEN_USED if shared is not None else 0.0)
        self._refunds: dict[Limit, int] = {}
        self._debts = RedisDebts(shared, clock) if shared is not None else None
        self._flusher: asyncio.Task[None] | None = None
        self._charging: set[asyncio.Task[None]] = set()  # excesses on their way to Redis
        self.local_decisions = 0  # taken by this replica alone while Redis was unreachable
        self._deciding_locally = False
        self.refused: dict[str, int] = {"requests": 0, "tokens": 0}

    @property
    def shared(self) -> SharedLimiter | None:
        return self._shared

    async def admit(self, caller: Caller, tokens_of: Callable[[], Reservation | int]) -> Admission:
        """Charge one request and the tokens `tokens_of()` reserves (asked only when the
        caller's key has a token limit; a bare count stands for output tokens) to the caller's
        limits, or raise `RateLimited` (`RequestTooLarge` when no full limit could hold it)."""
        if caller.key_id is None:
            return UNLIMITED
        limits = caller_limits(caller)
        if not limits:
            return UNLIMITED
        tokens = 0
        if any(limit.unit == "tokens" for limit in limits):
            reservation = tokens_of()
            if isinstance(reservation, int):
                reservation = Reservation(0, reservation, 1)
            tokens = reservation.tokens
            check_fits(caller, limits, reservation)
        costs = [1 if limit.unit == "requests" else tokens for limit in limits]
        decision, shared = await self._decide(limits, costs)
        if not decision.allowed:
            raise self._refusal(caller, decision, costs)
        token_limits = tuple(limit for limit in limits if limit.unit == "tokens")
        return Admission(True, token_limits, tokens, decision, shared)

    async def headers(self, caller: Caller) -> dict[str, str]:
        """The caller's rate-limit headers as its limits stand, charging nothing: for the
        answer to a request refused before admission. Asked only on that error path (in Redis
        a zero-cost admission, one round trip; this replica's share while Redis is gone)."""
        limits = caller_limits(caller) if caller.key_id is not None else ()
        if not limits:
            return {}
        decision = None
        if self._shared is not None:
            with contextlib.suppress(DependencyUnavailable):
                decision = await self._shared.admit(limits, [0] * len(limits))
        if decision is None:
            decision = self._local.peek(_shares(limits, self._replicas))
        return limit_headers(decision._replace(allowed=True))  # nothing was refused

    def settle(self, admission: Admission, used_tokens: int) -> None:
        """The answer used `used_tokens`: give back the rest of the reservation (or charge
        the excess). Never blocks the caller; a failure is logged, not raised."""
        unused = admission.reserved_tokens - used_tokens
        if not admission.limited or unused == 0 or not admission.token_limits:
            return
        to_redis = admission.token_limits
        if not admission.shared:
            for limit in _shares(admission.token_limits, self._replicas):
                self._local.refund(limit, unused)
            if self._debts is None:
                return
            # Still owed to Redis: what it is owed is the real usage, not the reservation.
            # Already paid (Redis answered again before this answer ended), or never owed: the
            # rest is settled in Redis like any reservation, excess included (the next request
            # may be decided there).
            owed = tuple(limit for limit in to_redis if limit in self._debts)
            self._debts.add(owed, [-unused] * len(owed))
            to_redis = tuple(limit for limit in to_redis if limit not in owed)
        # Refunds to Redis are gathered and sent together every REFUND_INTERVAL_S, so a
        # request costs one Redis round trip (its admission), not two. An excess is sent at
        # once: gathered, it let the caller's next request in before it was charged (a
        # 300-a-minute key's second request of 3,625 tokens, 3 times of 3).
        for limit in to_redis:
            self._refunds[limit] = self._refunds.get(limit, 0) + unused
        if to_redis and unused < 0:
            charge = asyncio.get_running_loop().create_task(self.flush())
            self._charging.add(charge)
            charge.add_done_callback(self._charging.discard)
        elif to_redis and (self._flusher is None or self._flusher.done()):
            self._flusher = asyncio.get_running_loop().create_task(self._flush_refunds())

    async def charged(self) -> None:
        """Wait until the excesses settled so far have been sent to Redis."""
        for charge in list(self._charging):
            await charge

    async def flush(self) -> None:
        """Send the refunds gathered so far (the flusher does this on its own)."""
        refunds, self._refunds = self._refunds, {}
        if refunds and self._shared is not None:
            try:
                await self._shared.refund([(limit, u) for limit, u in refunds.items() if u])
            except DependencyUnavailable as exc:
                log.info("could not give back %d reserved token counts: %s", len(refunds), exc)

    async def aclose(self) -> None:
        """Send the refunds gathered, and try once (within the limits' timeout) to pay Redis
        what was admitted alone: what it is still owed then is lost with this process."""
        if self._flusher is not None:
            await self._flusher
        await self.charged()
        await self.flush()
        if self._shared is None or self._debts is None:
            return
        if self._debts.pending:
            try:
                await self._debts.pay()
            except DependencyUnavailable as exc:
                log.warning("%d limits' debts to Redis lost at shutdown: %s", len(self._debts), exc)
        await self._shared.aclose()

    async def _flush_refunds(self) -> None:
        await asyncio.sleep(REFUND_INTERVAL_S)
        await self.flush()

    async def _decide(self, limits: tuple[Limit, ...], costs: list[int]) -> tuple[Decision, bool]:
        if self._shared is not None and self._debts is not None:
            try:
                if self._debts.pending:
                    await self._debts.pay()
                decision = await self._shared.admit(limits, costs)
            except DependencyUnavailable as exc:
                self.local_decisions += 1
                if not self._deciding_locally:
                    self._deciding_locally = True
                    log.warning("rate limits decided by this replica alone: %s", exc)
            else:
                if self._deciding_locally:
                    self._deciding_locally = False
                    log.info("rate limits shared through Redis again")
                for state in decision.states:
                    more = state.limit in self._debts
                    self._local.observe(state.limit, state.reset_s, decision.at, more)
                return decision, True
        decision = self._local.admit(_shares(limits, self._replicas), costs)
        if decision.allowed and self._debts is not None:
            self._debts.add(limits, costs)
        return decision, False

    def _refusal(self, caller: Caller, decision: Decision, costs: list[int]) -> RateLimited:
        limit = decision.limited_by
        assert limit is not None
        self.refused[limit.unit] += 1
        position = next(i for i, s in enumerate(decision.states) if s.limit.key == limit.key)
        state, requested = decision.states[position], costs[position]
        message = (
            f"Rate limit reached for {limit.name.replace('_', ' ')} for {whose(caller, limit)}: "
            f"limit {limit.configured}, remaining "
            f"{state.remaining}, requested {requested}. Please try again in "
            f"{duration(decision.retry_after_s)}."
        )
        error = TokensRateLimited if limit.unit == "tokens" else RateLimited
        return error(message, headers=limit_headers(decision))


def _shares(limits: tuple[Limit, ...], replicas: int) -> tuple[Limit, ...]:
    return limits if replicas == 1 else tuple(limit.shared_by(replicas) for limit in limits)
