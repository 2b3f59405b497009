"""A caller's limits as GCRA `Limit` values: its key's, then its tenant's."""

from __future__ import annotations

import functools

from access.caller import Caller, KeyLimits
from access.gcra import Limit

MINUTE_S, DAY_S = 60.0, 86_400.0


@functools.lru_cache(maxsize=4096)
def caller_limits(caller: Caller) -> tuple[Limit, ...]:
    """The key's limits, then its tenant's (shared by every key of the tenant); built once per
    key set entry (a caller is an immutable value). Every one carries the hash tag its Redis
    state is filed under (the tenant's when the tenant has limits), so a debt or a refund owed
    to a limit finds its Redis key from the limit alone."""
    tenant = _limits(caller.tenant_limits, f"tenant:{caller.tenant}", "")
    tag = f"tenant:{caller.tenant}" if tenant else ""
    return (*_limits(caller.limits, f"key:{caller.key_id}", tag), *tenant)


def whose(caller: Caller, limit: Limit) -> str:
    """Who `limit` belongs to, as an error message names it."""
    if limit.owner.startswith("tenant:"):
        return f"tenant {caller.tenant}"
    return f"API key {caller.name or caller.key_id}"


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
