"""The recent output lengths of one model's requests that set no cap: what such a request is
predicted to produce, and when one that prediction would refuse goes through anyway.

Only answers teach it, so a prediction that refuses every uncapped request would never change:
after a run of long answers, short-deadline requests would be refused for good even once the
workload's answers have grown short. `probe()` lets one refused request through when no
uncapped answer has been heard for `probe_interval_s` (once per interval), as
`ServiceEstimate.probe` does for service times; the service estimate alone cannot, since capped
requests keep it fresh while the lengths go stale.

Probes alone would move a quantile of 256 answers slowly: after 100 long answers, a probe a
second took five minutes to bring it down once answers had grown short, and refused the rest
as too short meanwhile. So probe answers, which come only while the lengths refuse, are
judged as a change: `_SHIFT_RUN` of them in a row shorter than `_SHORTER` of the quantile, in
tokens or in time, mean the answers have changed, and what came before them is forgotten.
"""

from __future__ import annotations

import time

from budgets.deadline import Clock
from budgets.recent import RecentQuantile
from budgets.refresh_probe import RefreshProbe

_SHIFT_RUN = 3
_SHORTER = 0.5
_RAN_OUT_MORE = 1.25


class OutputLengths:
    """The q-quantile of the last `window` uncapped output lengths, and of the times those
    requests took (a floor under what a length predicts: see `time`), and their probe."""

    __slots__ = ("_clock", "_lengths", "_probe", "_probing", "_run", "_times")

    def __init__(
        self,
        q: float,
        clock: Clock = time.monotonic,
        *,
        window: int = 256,
        probe_interval_s: float = 1.0,
    ) -> None:
        self._lengths = RecentQuantile(q, window)
        self._times = RecentQuantile(q, window)
        self._clock = clock
        self._probe = RefreshProbe(probe_interval_s)
        self._probing = False  # a probe went through, and no answer was heard since
        # Probe answers in a row much shorter than the quantile, with their times.
        self._run: list[tuple[int, float | None]] = []

    def add(self, tokens: int, seconds: float | None = None) -> None:
        """An uncapped request's answer had `tokens` output tokens per choice (and took
        `seconds` from admission, when it started at once in the engine)."""
        if self._probing and self._much_shorter(tokens, seconds):
            self._run.append((tokens, seconds))
        else:
            self._run = []
        self._probing = False
        if len(self._run) >= _SHIFT_RUN:
            self._lengths.reset()
            self._times.reset()
            for length, took in self._run[:-1]:
                self._lengths.add(length)
                if took is not None:
                    self._times.add(took)
            self._run = []
        self._lengths.add(tokens)
        if seconds is not None:
            self._times.add(seconds)
        self._probe.heard(self._clock())

    def _much_shorter(self, tokens: int, seconds: float | None) -> bool:
        """Whether an answer is much shorter than the quantile, in tokens or in time (a
        replica that sped up answers as long, sooner)."""
        value, took = self._lengths.value(), self._times.value()
        if value is not None and tokens < _SHORTER * value:
            return True
        return seconds is not None and took is not None and seconds < _SHORTER * took

    def ran_out(self, seconds: float) -> None:
        """An uncapped request that started at once in the engine had no answer `seconds`
        after admission: it needed longer, by how much unknown, so it counts as a quarter
        longer (counted as just `seconds`, it predicted as much time as the next request with
        the same deadline had left, and that request was sent to run out in turn)."""
        self._times.add(seconds * _RAN_OUT_MORE)

    def time(self) -> float | None:
        """The quantile of the times uncapped requests took (None before the first). A
        replica's line predicts from a length, and over answers of one length it knows no cost
        per token: answers that grew longer than a deadline allows were admitted, and each ran
        out at it, while this floor says they take that long."""
        return self._times.value()

    def value(self) -> float | None:
        """The quantile, or None before the first answer."""
        return self._lengths.value()

    def probe(self) -> bool:
        """Whether an uncapped request this prediction would refuse goes through anyway: true
        once per `probe_interval_s` while no uncapped answer has been heard for that long."""
        if not self._probe.take(self._clock()):
            return False
        self._probing = True
        return True
