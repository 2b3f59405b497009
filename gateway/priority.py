"""Which priority class a request belongs to, and how much time its client allows."""

from __future__ import annotations

from collections.abc import Mapping

from access.caller import Caller
from budgets.priority import PRIORITIES, Priority
from budgets.settings import BudgetSettings
from core.errors import InvalidRequest
from gateway.request_headers import as_sent

PRIORITY_HEADER = "x-priority"
TIMEOUT_HEADER = "x-request-timeout-ms"


def request_priority(
    headers: Mapping[str, str], settings: BudgetSettings, caller: Caller
) -> Priority:
    """The class asked for by `X-Priority`, never above what the caller's API key allows.

    A key's `priority` is its ceiling; without access control, a tenant mapped to `batch` by
    GATEWAY_PRIORITY_BY_TENANT stays batch whatever it asks.
    """
    ceiling: Priority | None = caller.priority
    if ceiling is None and settings.priority_by_tenant:
        ceiling = settings.priority_by_tenant.get(caller.tenant)
    asked = headers.get(PRIORITY_HEADER)
    if asked is None:
        return ceiling or settings.default_priority
    sent, asked = asked, asked.strip().lower()
    if asked not in PRIORITIES:
        raise InvalidRequest(
            f"X-Priority must be one of {', '.join(PRIORITIES)}, got {as_sent(sent)!r}.",
            param="X-Priority",
        )
    if ceiling == "batch":
        return "batch"
    return asked


def client_timeout_s(headers: Mapping[str, str]) -> float | None:
    """`X-Request-Timeout-Ms` in seconds; it can only tighten the configured total."""
    raw = headers.get(TIMEOUT_HEADER)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise InvalidRequest(
            "X-Request-Timeout-Ms must be a positive number of milliseconds,"
            f" got {as_sent(raw)!r}.",
            param="X-Request-Timeout-Ms",
        )
    return value / 1000
