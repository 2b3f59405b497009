"""When a prediction that refuses requests lets one through anyway, to be refreshed: a refusal
teaches a prediction nothing, so one that refuses everything would never change."""

from __future__ import annotations


class RefreshProbe:
    """One request per `interval_s` while nothing has been `heard` for that long."""

    __slots__ = ("_heard", "_interval_s", "_probed")

    def __init__(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._heard = float("-inf")
        self._probed = float("-inf")

    def heard(self, now: float) -> None:
        """The prediction learned something at `now`."""
        self._heard = now

    def take(self, now: float) -> bool:
        """Whether a request it would refuse at `now` goes through (and is counted) instead."""
        if now - max(self._heard, self._probed) < self._interval_s:
            return False
        self._probed = now
        return True
