"""When a replica's server started, told from the uptime `GetServerInfo` reports: a later
start on the same address is a restart, perhaps with another model or configuration, whose
model and tokenizer must be learned again before it takes requests."""

from __future__ import annotations

# How far apart two readings of one start may fall: each is the gateway's clock less the
# uptime the server reported, so they differ by the time the answer took to arrive.
_SLACK_S = 1.0


class ServerStart:
    """The start instant of the server last seen, on the gateway's monotonic clock."""

    def __init__(self) -> None:
        self._started: float | None = None

    def forget(self) -> None:
        """The server is gone (or was never seen): its next reading is a first one."""
        self._started = None

    def restarted(self, uptime_s: float, now: float, answer_s: float = 0.0) -> bool:
        """Record the server's start from its `uptime_s` read at `now`; True when it started
        later than the one seen before (by more than the `answer_s` the reading took). A server
        that reports no uptime (0) is never said to have restarted."""
        if uptime_s <= 0:
            return False
        started = now - uptime_s
        known = self._started
        if known is not None and started <= known + answer_s + _SLACK_S:
            return False
        self._started = started
        return known is not None
