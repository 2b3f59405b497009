"""When a prediction that refuses requests lets one through anyway, to be refreshed: a refusal
teaches a prediction nothing, so one that refuses everything would never change.

A probe that only confirms the refusal (it ran out of time as predicted) spent the GPU on a
request nobody got: the next one waits twice as long, up to `longest_s`, until something
new is heard."""

from __future__ import annotations


class RefreshProbe:
    """One request per interval while nothing has been `heard` for that long; the interval is
    `interval_s`, doubled by each `confirmed` probe up to `longest_s`."""

    __slots__ = ("_heard", "_interval_s", "_longest_s", "_now_s", "_probed")

    def __init__(self, interval_s: float, longest_s: float | None = None) -> None:
        self._interval_s = self._now_s = interval_s
        self._longest_s = interval_s if longest_s is None else max(interval_s, longest_s)
        self._heard = float("-inf")
        self._probed = float("-inf")

    def heard(self, now: float) -> None:
        """The prediction learned something at `now`."""
        self._heard = now
        self._now_s = self._interval_s

    def confirmed(self, now: float) -> None:
        """A probe's request ended at `now` as the refusal predicted: the next waits longer."""
        self._heard = now
        self._now_s = min(self._longest_s, 2.0 * self._now_s)

    def take(self, now: float) -> bool:
        """Whether a request it would refuse at `now` goes through (and is counted) instead."""
        if now - max(self._heard, self._probed) < self._now_s:
            return False
        self._probed = now
        return True
