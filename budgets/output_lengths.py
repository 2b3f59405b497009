"""The recent output lengths of one model's requests that set no cap: what such a request is
predicted to produce, and when one that prediction would refuse goes through anyway.

Only answers teach it, so a prediction that refuses every uncapped request would never change:
after a run of long answers, short-deadline requests would be refused for good even once the
workload's answers have grown short. `probe()` lets one refused request through when no
uncapped answer has been heard for `probe_interval_s` (once per interval), as
`ServiceEstimate.probe` does for service times; the service estimate alone cannot, since capped
requests keep it fresh while the lengths go stale.

Requests that ran out of time teach a lower bound (`at_least`): the answer had not ended by
the token after the last one that came. When answers grow longer than the deadlines allow,
those are all the lengths there are to hear, and a probe that runs out so is a request
nobody got: the next probe waits twice as long, up to 8 intervals (`RefreshProbe.confirmed`).

Probes alone would move a quantile of 256 answers slowly: after 100 long answers, a probe a
second took five minutes to bring it down once answers had grown short, and refused the rest
as too short meanwhile. So probe answers, which come only while the lengths refuse, are
judged as a change: `_SHIFT_RUN` of them in a row shorter than `_SHORTER` of the quantile
mean the answers have changed, and what came before them is forgotten.
"""

from __future__ import annotations

import time

from budgets.deadline import Clock
from budgets.recent import RecentQuantile
from budgets.refresh_probe import RefreshProbe

_SHIFT_RUN = 3
_SHORTER = 0.5
# Probes that ran out as their length predicted back off to one every 8 intervals (answers
# that grew past the deadlines had one uncapped request a second run to a 504).
_LONGEST_PROBE_INTERVALS = 8


class OutputLengths:
    """The q-quantile of the last `window` uncapped output lengths, and its probe."""

    __slots__ = ("_clock", "_doubt_s", "_doubted", "_lengths", "_probe", "_probing", "_run")

    def __init__(
        self,
        q: float,
        clock: Clock = time.monotonic,
        *,
        window: int = 256,
        probe_interval_s: float = 1.0,
        doubt_s: float = 30.0,
    ) -> None:
        self._lengths = RecentQuantile(q, window)
        self._clock = clock
        self._probe = RefreshProbe(probe_interval_s, _LONGEST_PROBE_INTERVALS * probe_interval_s)
        self._probing = False  # a probe went through, and no answer was heard since
        self._run: list[int] = []  # probe answers in a row much shorter than the quantile
        self._doubt_s = doubt_s
        self._doubted = float("-inf")  # the last run-out whose tokens were not counted

    def add(self, tokens: int) -> None:
        """An uncapped request's answer had `tokens` output tokens per choice."""
        value = self._lengths.value()
        if self._probing and value is not None and tokens < _SHORTER * value:
            self._run.append(tokens)
        else:
            self._run = []
        self._probing = False
        if len(self._run) >= _SHIFT_RUN:
            self._lengths.reset()
            for length in self._run[:-1]:
                self._lengths.add(length)
            self._run = []
        self._lengths.add(tokens)
        self._probe.heard(self._clock())

    def at_least(self, tokens: int) -> None:
        """An uncapped request ran out of time before its `tokens`-th output token (per
        choice): its answer was at least that long. That teaches only when it is no shorter
        than the quantile (a shorter one says nothing of how long the answer was), and then
        counts as an answer of that length: the quantile moves towards the truth, never past
        it. Either way, or when it was a probe, answers are as long as the refusals assumed:
        the next probe waits longer (`RefreshProbe.confirmed`)."""
        probing, self._probing = self._probing, False
        value = self._lengths.value()
        longer = value is None or tokens >= value
        if longer:
            self._run = []
            self._lengths.add(tokens)
        if longer or probing:  # answers are as long as the refusals assumed
            self._probe.confirmed(self._clock())

    def uncounted(self) -> None:
        """An uncapped request ran out of time with no count of the tokens that came (a whole
        answer not watched token by token): whether it was longer than the quantile is
        unknown, so for `doubt_s` the lengths are `in_doubt`. A probe that ran out so
        confirms the refusal it was let past."""
        self._doubted = now = self._clock()
        if self._probing:
            self._probing = False
            self._probe.confirmed(now)

    def in_doubt(self) -> bool:
        """Whether uncapped whole answers should be counted token by token where they can be,
        to teach `at_least` when they run out (the stream on the wire costs CPU per token)."""
        return self._clock() - self._doubted < self._doubt_s

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
