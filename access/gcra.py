"""Rate limits as GCRA (the generic cell rate algorithm), and an in-process limiter.

A limit of `amount` units per `period` lets one unit through every `period / amount` on
average, with bursts of up to `amount`. Its whole state is one instant per limit, the
theoretical arrival time (TAT): the moment the limit would be fully rested if nothing else
came. A request of cost `c` moves it to `max(TAT, now) + c * interval` and is allowed when
that lies at most one `period` ahead of now. It is a token bucket that holds one period's
worth: over any span W a caller gets at most `amount + W / interval` units (a rested caller
may burst the whole amount, then one unit per interval), so the long-run rate is exactly the
limit and no window edge doubles it as a fixed window would. Against a sliding log it keeps
one number per limit instead of one entry per request, so the shared version is one small
atomic Redis script.

A request costing more than a whole bucket (a replica deciding alone on its share of a limit
the request fits) passes when the limit has rested, and moves the TAT as far as it costs, so a
429 before it says when it would pass, and the long-run rate is still the limit.

Refunds (a reservation larger than what was used) move the TAT back, never before now; an
answer that used more than it reserved moves it on, from now once the limit has rested.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Limit:
    """`amount` units (`unit`: requests or tokens) per `period_s` for `owner` (an API key or a
    tenant, e.g. `key:0123456789ab`); `name` says which of the owner's limits it is."""

    name: str
    unit: str
    amount: int
    period_s: float
    owner: str = ""
    whole: int = 0  # for a replica's share: the key's configured amount (0: this is it)
    tag: str = ""  # the owner whose hash tag files its shared state (empty: its own)

    @property
    def interval_s(self) -> float:
        return self.period_s / self.amount

    @property
    def key(self) -> str:
        """Where its state lives: one TAT per owner and limit."""
        return f"{self.owner}:{self.name}"

    @property
    def hash_tag(self) -> str:
        """The owner whose Redis hash tag its shared state is filed under: its tenant's when
        the key's tenant has limits too (one request's keys share a slot), else its own."""
        return self.tag or self.owner

    @property
    def configured(self) -> int:
        """The amount the key set gives (a share's whole limit): what clients are told."""
        return self.whole or self.amount

    def shared_by(self, replicas: int) -> Limit:
        """This replica's share when it cannot coordinate with the others."""
        amount = max(1, self.amount // replicas)
        return Limit(
            self.name, self.unit, amount, self.period_s, self.owner, self.configured, self.tag
        )


# NamedTuples, not frozen dataclasses: several are made per request on the hot path, and a
# frozen dataclass's __init__ costs about four times as much.
class LimitState(NamedTuple):
    """A limit after a decision: how many units are left now, and when it is fully rested."""

    limit: Limit
    remaining: int
    reset_s: float


class Decision(NamedTuple):
    """Whether a request may go, and every limit's state; `limited_by` names the limit that
    refused it, `retry_after_s` when it would fit."""

    allowed: bool
    states: tuple[LimitState, ...]
    retry_after_s: float = 0.0
    limited_by: Limit | None = None
    at: float = 0.0  # the shared store's clock when it decided (orders its answers)


SWEEP_S = 60.0  # how often a local limiter forgets the limits rested a whole period

SLACK_S = 1e-6
"""How far past a full period a request may land and still fit: `(now + period) - now` can
round above `period`, which refused a rested caller's whole burst at some clock values."""


def decide(
    limits: Sequence[Limit], costs: Sequence[int], tats: Sequence[float], now: float
) -> tuple[Decision, list[float]]:
    """All limits at once: the request is charged to every limit or to none. Returns the
    decision and the TATs to store (unchanged when refused)."""
    candidates = []
    retry_after, limited_by = 0.0, None
    for limit, cost, tat in zip(limits, costs, tats, strict=True):
        spend = cost * limit.interval_s
        candidate = (tat if tat > now else now) + spend
        candidates.append(candidate)
        # A cost beyond the whole bucket passes once the bucket has rested (only a replica's
        # share sees one: a request over a whole limit is refused before it is decided).
        over = candidate - now - (spend if spend > limit.period_s else limit.period_s)
        if over > retry_after and over > SLACK_S:
            retry_after, limited_by = over, limit
    allowed = limited_by is None
    stored = candidates if allowed else [tat if tat > now else now for tat in tats]
    states = tuple([state_after(lim, tat - now) for lim, tat in zip(limits, stored, strict=True)])
    return Decision(allowed, states, retry_after, limited_by), stored


def refund(limit: Limit, tat: float, units: int, now: float) -> float:
    """The TAT after giving back `units` (negative: charging more than was reserved, from now
    where the limit has rested since, as an admission would)."""
    return max((tat if tat > now else now) - units * limit.interval_s, now)


def settled(state: LimitState, units: int) -> LimitState:
    """`state` as it would read had `units` been given back when it was decided (negative:
    charged more), as `refund` moves the TAT."""
    return state_after(state.limit, state.reset_s - units * state.limit.interval_s)


def state_after(limit: Limit, used_s: float) -> LimitState:
    """A limit whose TAT lies `used_s` ahead of now."""
    used_s = max(used_s, 0.0)
    remaining = math.floor((limit.period_s - used_s) / limit.interval_s + 1e-9)
    return LimitState(limit, max(remaining, 0), used_s)


class LocalLimiter:
    """GCRA in this process: the fallback when the shared store is unreachable.

    `unseen_used` is how much of a period a limit this process knows nothing of starts spent
    (0: a full bucket); `observe` tells it what the shared store last said of a limit. A limit
    rested for a whole period is forgotten (swept every `SWEEP_S`): what was known of it then
    says nothing of what other processes spent since, so it is unseen again, and the limits of
    keys a reload removed do not stay in memory."""

    def __init__(self, clock: Callable[[], float], unseen_used: float = 0.0) -> None:
        self._clock = clock
        self._unseen_used = unseen_used
        self._tats: dict[str, float] = {}
        self._periods: dict[str, float] = {}  # how long after its TAT a limit is forgotten
        self._seen_at: dict[str, float] = {}  # the shared store's clock at the last observed
        self._sweep_at = clock() + SWEEP_S

    def __len__(self) -> int:
        """How many limits it keeps a state for."""
        return len(self._tats)

    def _tat(self, limit: Limit, now: float) -> float:
        return self._tats.get(limit.key, now + self._unseen_used * limit.period_s)

    def _store(self, limit: Limit, tat: float, now: float) -> None:
        key = limit.key
        self._tats[key] = tat
        self._periods[key] = limit.period_s
        if now >= self._sweep_at:
            self._sweep(now)

    def _sweep(self, now: float) -> None:
        self._sweep_at = now + SWEEP_S
        periods = self._periods
        for key in [key for key, tat in self._tats.items() if tat + periods[key] <= now]:
            del self._tats[key], periods[key]
            self._seen_at.pop(key, None)

    def admit(self, limits: Sequence[Limit], costs: Sequence[int]) -> Decision:
        now = self._clock()
        tats = [self._tat(limit, now) for limit in limits]
        decision, stored = decide(limits, costs, tats, now)
        if decision.allowed:
            for limit, tat in zip(limits, stored, strict=True):
                self._store(limit, tat, now)
        return decision

    def peek(self, limits: Sequence[Limit]) -> Decision:
        """Every limit as it stands, charging nothing."""
        now = self._clock()
        tats = [self._tat(limit, now) for limit in limits]
        return decide(limits, [0] * len(limits), tats, now)[0]

    def observe(self, limit: Limit, used_s: float, at: float, keep_more: bool = False) -> None:
        """The shared store says `limit` is `used_s` of its period spent, as of `at` on its own
        clock (concurrent calls' answers are read in any order: an older state read after a
        newer one is ignored): a share of a limit is spent as large a part of its period, so
        it holds its share of what is left. `keep_more` keeps this process's own state where
        it is more spent (charges the store has not been told of yet)."""
        key = limit.key
        if at < self._seen_at.get(key, at):
            return
        self._seen_at[key] = at
        now = self._clock()
        tat = now + used_s
        if keep_more:
            tat = max(tat, self._tats.get(key, tat))
        self._store(limit, tat, now)

    def refund(self, limit: Limit, units: int) -> None:
        now = self._clock()
        # A rested limit is kept (at now) until the sweep: forgotten, it would be unseen again.
        self._store(limit, refund(limit, self._tat(limit, now), units, now), now)
