"""The rate-limit headers of OpenAI's API, which the official SDKs read: on every answer, and
on a 429 with `Retry-After` (seconds) and `retry-after-ms`."""

from __future__ import annotations

import math

from access.gcra import Decision, LimitState, settled

# OpenAI's headers describe its per-minute limits; a daily token limit is described instead
# when it has less left (a 429 for the day's tokens said 99,094 tokens remained, in 544 ms).
_HEADED = {
    "requests_per_minute": "requests",
    "tokens_per_minute": "tokens",
    "tokens_per_day": "tokens",
}


def limit_headers(decision: Decision, refunded: int = 0) -> dict[str, str]:
    """Per unit, the limit with the least left (per minute or per day, the key's or its
    tenant's): its
    configured amount, and what is left of it, or, deciding alone, of this process's share;
    with `refunded` tokens of the reservation given back (an answer settled)."""
    binding: dict[str, LimitState] = {}
    for state in decision.states:
        unit = _HEADED.get(state.limit.name)
        if refunded and unit == "tokens":
            state = settled(state, refunded)
        if unit is not None and (unit not in binding or state.remaining < binding[unit].remaining):
            binding[unit] = state
    headers: dict[str, str] = {}
    for unit, state in binding.items():
        headers[f"x-ratelimit-limit-{unit}"] = str(state.limit.configured)
        headers[f"x-ratelimit-remaining-{unit}"] = str(state.remaining)
        headers[f"x-ratelimit-reset-{unit}"] = duration(state.reset_s)
    if not decision.allowed:
        headers["retry-after"] = str(max(1, math.ceil(decision.retry_after_s)))
        headers["retry-after-ms"] = str(max(1, math.ceil(decision.retry_after_s * 1000)))
    return headers


def duration(seconds: float) -> str:
    """OpenAI's format: `20ms`, `1s`, `6m0s`, `1h2m3s`."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    whole = math.ceil(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
