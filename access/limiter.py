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
import functools
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from access.caller import Caller, KeyLimits
from access.gcra import Decision, Limit, LocalLimiter
from access.limit_headers import duration, limit_headers
from access.shared_limiter import SharedLimiter
from core.breaker import DependencyUnavailable
from core.errors import RateLimited, RequestTooLarge, TokensRateLimited

log = logging.getLogger("gateway.limits")

MINUTE_S, DAY_S = 60.0, 86_400.0
REFUND_INTERVAL_S = 0.05
UNSEEN_USED = 0.5  # how spent a limit Redis never reported to this process starts locally


class Reservation(NamedTuple):
    """The tokens a request reserves: its prompt (estimated) and up to `per_choice` for each
    of its `choices` (`n` for each prompt), with the fields the client sent for each, so a
    request too large for a whole limit can name the one to lower."""

    prompt: int
    per_choice: int = 0
    choices: int = 0
    n: int = 1
    prompt_param: str = "prompt"
    output_param: str = "max_tokens"

    @property
    def tokens(self) -> int:
        return self.prompt + self.per_choice * self.choices


@dataclass(frozen=True, slots=True)
class Admission:
    """A request let through its caller's limits: what it reserved, on which limits, where."""

    limited: bool = False  # False when the caller has no limits
    token_limits: tuple[Limit, ...] = ()  # whole limits, as Redis keeps them (not a share)
    reserved_tokens: int = 0
    decision: Decision | None = None
    shared: bool = False  # decided in Redis rather than by this replica alone

    def headers(self) -> dict[str, str]:
        return {} if self.decision is None else limit_headers(self.decision)


UNLIMITED = Admission()


@functools.lru_cache(maxsize=4096)
def caller_limits(caller: Caller) -> tuple[Limit, ...]:
    """The key's limits, then its tenant's (shared by every key of the tenant); built once per
    key set entry (a caller is an immutable value). Every one carries the hash tag its Redis
    state is filed under (the tenant's when the tenant has limits), so a debt or a refund owed
    to a limit finds its Redis key from the limit alone."""
    tenant = _limits(caller.tenant_limits, f"tenant:{caller.tenant}", "")
    tag = f"tenant:{caller.tenant}" if tenant else ""
    return (*_limits(caller.limits, f"key:{caller.key_id}", tag), *tenant)


def _limits(limits: KeyLimits, owner: str, tag: str) -> list[Limit]:
    found = []
    if limits.requests_per_minute:
        found.append(
            Limit(
                "requests_per_minute", "requests", limits.requests_per_minute, MINUTE_S, owner,
                tag=tag,
            )
        )  # fmt: skip
    if limits.tokens_per_minute:
        found.append(
            Limit("tokens_per_minute", "tokens", limits.tokens_per_minute, MINUTE_S, owner, tag=tag)
        )
    if limits.tokens_per_day:
        found.append(
            Limit("tokens_per_day", "tokens", limits.tokens_per_day, DAY_S, owner, tag=tag)
        )
    return found


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
        self._owed: dict[Limit, float] = {}  # whole limit -> TAT of what was admitted alone
        self._paying: asyncio.Task[None] | None = None
        self._flusher: asyncio.Task[None] | None = None
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
            _check_fits(caller, limits, reservation)
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
            if self._shared is None:
                return
            # Still owed to Redis: what it is owed is the real usage, not the reservation.
            # Already paid (Redis answered again before this answer ended), or never owed: the
            # rest is settled in Redis like any reservation, excess included (the next request
            # may be decided there).
            owed = tuple(limit for limit in to_redis if limit in self._owed)
            self._owe(owed, [-unused] * len(owed))
            to_redis = tuple(limit for limit in to_redis if limit not in owed)
        # Refunds to Redis are gathered and sent together every REFUND_INTERVAL_S, so a
        # request costs one Redis round trip (its admission), not two.
        for limit in to_redis:
            self._refunds[limit] = self._refunds.get(limit, 0) + unused
        if to_redis and (self._flusher is None or self._flusher.done()):
            self._flusher = asyncio.get_running_loop().create_task(self._flush_refunds())

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
        await self.flush()
        if self._shared is None:
            return
        if self._owed or (self._paying is not None and not self._paying.done()):
            try:
                await self._pay_owed()
            except DependencyUnavailable as exc:
                log.warning("%d limits' debts to Redis lost at shutdown: %s", len(self._owed), exc)
        await self._shared.aclose()

    async def _flush_refunds(self) -> None:
        await asyncio.sleep(REFUND_INTERVAL_S)
        await self.flush()

    async def _decide(self, limits: tuple[Limit, ...], costs: list[int]) -> tuple[Decision, bool]:
        if self._shared is not None:
            try:
                if self._owed or (self._paying is not None and not self._paying.done()):
                    await self._pay_owed()
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
                owed = self._owed
                for state in decision.states:
                    more = bool(owed) and state.limit in owed
                    self._local.observe(state.limit, state.reset_s, decision.at, more)
                return decision, True
        decision = self._local.admit(_shares(limits, self._replicas), costs)
        if decision.allowed and self._shared is not None:
            self._owe(limits, costs)
        return decision, False

    def _owe(self, limits: Sequence[Limit], costs: Sequence[int]) -> None:
        """Charges Redis has not seen, kept as a TAT per whole limit so what rests meanwhile
        is not charged when they are paid."""
        now = self._clock()
        for limit, cost in zip(limits, costs, strict=True):
            tat = max(self._owed.get(limit, now), now) + cost * limit.interval_s
            if tat > now:
                self._owed[limit] = tat
            else:
                self._owed.pop(limit, None)

    async def _pay_owed(self) -> None:
        """Charge Redis what was admitted alone and has not rested yet, before the first
        decision taken there again; concurrent requests wait for the one payment. Raises
        `DependencyUnavailable` when Redis is still gone (the debt is kept, and charged twice
        at worst if the call timed out after all). A payment that has ended is never awaited
        again (its failure was told to those who waited): a new one starts."""
        paying = self._paying
        if paying is None or paying.done():
            paying = self._paying = asyncio.get_running_loop().create_task(self._send_owed())
            paying.add_done_callback(self._paid)
        await asyncio.shield(paying)

    def _paid(self, paying: asyncio.Task[None]) -> None:
        if self._paying is paying:
            self._paying = None
        if not paying.cancelled():
            paying.exception()  # retrieved: whoever waited was told, or went away

    async def _send_owed(self) -> None:
        assert self._shared is not None
        now, owed, self._owed = self._clock(), self._owed, {}
        charges = [
            (limit, math.ceil((tat - now) / limit.interval_s - 1e-9)) for limit, tat in owed.items()
        ]
        charges = [(limit, units) for limit, units in charges if units > 0]
        if not charges:
            return
        try:
            await self._shared.refund([(limit, -units) for limit, units in charges])
        except BaseException:  # unreachable, a bug, or cancelled: the debt is kept either way
            for limit, units in charges:
                self._owe((limit,), (units,))
            raise
        log.info("charged Redis for %d limits' requests admitted alone", len(charges))

    def _refusal(self, caller: Caller, decision: Decision, costs: list[int]) -> RateLimited:
        limit = decision.limited_by
        assert limit is not None
        self.refused[limit.unit] += 1
        position = next(i for i, s in enumerate(decision.states) if s.limit.key == limit.key)
        state, requested = decision.states[position], costs[position]
        message = (
            f"Rate limit reached for {limit.name.replace('_', ' ')} for {_whose(caller, limit)}: "
            f"limit {limit.configured}, remaining "
            f"{state.remaining}, requested {requested}. Please try again in "
            f"{duration(decision.retry_after_s)}."
        )
        error = TokensRateLimited if limit.unit == "tokens" else RateLimited
        return error(message, headers=limit_headers(decision))


def _check_fits(caller: Caller, limits: tuple[Limit, ...], reservation: Reservation) -> None:
    """A reservation no full bucket of a token limit could hold is a 400, since waiting could
    never let it through: naming `n` where a single choice for each prompt would fit, else the
    output field where a token for each choice would, else the prompt's field."""
    tokens = reservation.tokens
    for limit in limits:
        if limit.unit == "tokens" and tokens > limit.amount:
            raise _too_large(caller, limit, reservation)


def _too_large(caller: Caller, limit: Limit, reservation: Reservation) -> RequestTooLarge:
    prompt, per_choice, choices, n = reservation[:4]
    room = limit.amount - prompt  # what the limit leaves beside the prompt
    per_n = per_choice * (choices // n) if n else 0  # the tokens one more n adds
    if n > 1 and 0 < per_n <= room:
        param = "n"
        advice = f"Lower n to at most {room // per_n}, or {reservation.output_param}."
    elif choices and choices <= room:
        param = reservation.output_param
        each = f" for each of {choices} choices" if choices > 1 else ""
        advice = f"Lower {param} to at most {room // choices}{each}."
    else:
        param = reservation.prompt_param
        advice = f"Shorten {param}."
    if not choices:
        parts = f"about {prompt} for the input"
    elif choices == 1:
        parts = f"about {prompt} for the prompt and {per_choice} for the answer"
    else:
        parts = f"about {prompt} for the prompt and {per_choice} for each of {choices} choices"
    return RequestTooLarge(
        f"Request too large for {limit.name.replace('_', ' ')} of {_whose(caller, limit)}: "
        f"limit {limit.amount}, requested {reservation.tokens} ({parts}). {advice}",
        param=param,
    )


def _whose(caller: Caller, limit: Limit) -> str:
    if limit.owner.startswith("tenant:"):
        return f"tenant {caller.tenant}"
    return f"API key {caller.name or caller.key_id}"


def _shares(limits: tuple[Limit, ...], replicas: int) -> tuple[Limit, ...]:
    return limits if replicas == 1 else tuple(limit.shared_by(replicas) for limit in limits)
