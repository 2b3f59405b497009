"""The recent output lengths of one model's requests that set no cap: what such a request is
predicted to produce, and when one that prediction would refuse goes through anyway.

Only answers teach it, so a prediction that refuses every uncapped request would never change:
after a run of long answers, short-deadline requests would be refused for good even once the
workload's answers have grown short. `probe()` lets one refused request through when no
uncapped answer has been heard for `probe_interval_s` (once per interval), as
`ServiceEstimate.probe` does for service times; the service estimate alone cannot, since capped
requests keep it fresh while the lengths go stale.
"""

from __future__ import annotations

import time

from budgets.deadline import Clock
from budgets.recent import RecentQuantile
from budgets.refresh_probe import RefreshProbe


class OutputLengths:
    """The q-quantile of the last `window` uncapped output lengths, and its probe."""

    __slots__ = ("_clock", "_lengths", "_probe")

    def __init__(
        self,
        q: float,
        clock: Clock = time.monotonic,
        *,
        window: int = 256,
        probe_interval_s: float = 1.0,
    ) -> None:
        self._lengths = RecentQuantile(q, window)
        self._clock = clock
        self._probe = RefreshProbe(probe_interval_s)

    def add(self, tokens: int) -> None:
        """An uncapped request's answer had `tokens` output tokens per choice."""
        self._lengths.add(tokens)
        self._probe.heard(self._clock())

    def value(self) -> float | None:
        """The quantile, or None before the first answer."""
        return self._lengths.value()

    def probe(self) -> bool:
        """Whether an uncapped request this prediction would refuse goes through anyway: true
        once per `probe_interval_s` while no uncapped answer has been heard for that long."""
        return self._probe.take(self._clock())
