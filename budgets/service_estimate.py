"""How long one replica takes to serve a request once admitted, predicted from its recent
requests: to the first token (what a stream must reach within its first-token budget) and to
the last (what a non-streaming request must reach within its total).

The model is one line through every observation, the time from admission to the k-th output
token of a request with a prompt of p tokens:

    t(p, k) = base + per_prompt_token * p + per_output_token * (k - 1)

which is prefill plus decode: a stream's first token is an observation at k = 1, a finished
request with n output tokens one at k = n. The line is an exponentially weighted least-squares
fit (each new observation weighs 1, older ones decay with a half-life counted in observations),
so it follows a replica that speeds up or slows down within a few dozen requests. A slope the
observations cannot tell apart is left at 0 and its effect stays in `base`: every prompt the
same size, or sizes spread over less than a tenth of their mean, or a slope that does not
stand two standard errors clear of 0. Prompts a few tokens apart, whose times differ by noise
or by what drifted meanwhile (a burst's queue draining), would otherwise give a slope of any
size, and a prompt a few hundred tokens longer a prediction of minutes. Slopes are never
negative. Upper predictions add two standard deviations of the recent observations around the
fit (its weighted residuals), so a noisy replica is predicted more cautiously than a steady
one.

An estimate that has heard nothing of its replica for `max_age_s` is not trusted (None), like
one that has none: admission then falls back to what it did without predictions, and the next
requests refresh it. Calls that end untaught (`heard_of`: they waited in a full engine's queue)
count as heard of: a replica that is busy is not in a lull.
Nor is a flat line over requests of different sizes with no more evidence behind it than the
line has terms (`_LINE_TERMS`): the first few observations, or the first ones after a lull has
faded what came before. Its slopes were dropped for want of evidence, not for being noise, so
it is an average whose scatter is the sizes it could not fit: after a 30 s lull, one 2 s
answer of 100 tokens with faded millisecond answers of a few tokens made a line that predicted
3.2 s for the next 100-token answer (it took 2.0 s), and a 3 s deadline was refused as too
short. Over one size, the average is that size's time.

Routing reads it differently (`remembered`, `evidence`): the last line however old, and how
much recent evidence stands behind it. With `evidence_half_life_s` observations also fade with
time, so after a lull the next few outweigh what was seen before it (a replica measured under
a burst is not judged by the burst once it has passed).

A replica that changes speed (a transient slowdown ends, a neighbour starts sharing its GPU) is
followed at once rather than within dozens of requests: `_SHIFT_RUN` observations outside the
band the line from before them predicts (z spreads, and at least `_SHIFT_MIN` of the
prediction and `_SHIFT_MIN_S`), all on the same side, among `_SHIFT_WINDOW` in a row, mean
the line no longer describes the replica, and what came before them is forgotten (a remnant of
it, mixed with the new speed, would count as scatter and keep the margin wide). A request that
failed for lack of time is a censored observation (`observe(..., at_least=True)`): its tokens
came no sooner than it had, which teaches something only when that is later than the line
expects, and then counts like an observation at that time (a lower bound: the line moves
towards the truth, never past it).

A refusal on prediction teaches nothing, so an estimate that refuses everything would never
change: `probe()` lets one refused request through when the estimate has heard nothing for
`probe_interval_s` (once per interval), as the cache stages run one request a second.
"""

from __future__ import annotations

import math
import time

from budgets.deadline import Clock
from budgets.refresh_probe import RefreshProbe
from budgets.service_fit import ServiceFit, solve

_SHIFT_RUN = 3  # surprises on one side of the band that mean a change ...
_SHIFT_WINDOW = 2 * _SHIFT_RUN  # ... among this many observations
_SHIFT_MIN = 0.25  # of the prediction: a smaller miss is never a surprise, however steady
# Nor is one of less than this: the event loop's and the network's jitter, which is a large
# share of a millisecond answer (three 1 ms misses of 4 ms first tokens threw the history away).
_SHIFT_MIN_S = 0.01
_TERMS = 10
# A request this much shorter than the one output length a line has seen is not judged by it:
# steady 400-token answers predicted 2 s for a 16-token request served in 90 ms, which was
# refused as too short for as long as the long answers went on.
_SHORTER = 0.5
_LINE_TERMS = 3  # base, per prompt token, per output token


def _terms(p: float, k: float, y: float) -> tuple[float, ...]:
    return (1.0, p, k, y, p * p, k * k, p * k, p * y, k * y, y * y)


class ServiceEstimate:
    """One replica's recent service times, as a fitted line plus an error margin."""

    __slots__ = (
        "_busy",
        "_clock",
        "_decay",
        "_fade",
        "_fit",
        "_last",
        "_max_age_s",
        "_probe",
        "_run",
        "_run_fit",
        "_run_seen",
        "_run_sums",
        "_sums",
        "_z",
    )

    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        half_life: float = 64.0,
        max_age_s: float = 30.0,
        z: float = 2.0,
        evidence_half_life_s: float = math.inf,
        probe_interval_s: float = 1.0,
    ) -> None:
        if half_life <= 0 or max_age_s <= 0 or z < 0 or evidence_half_life_s <= 0:
            raise ValueError("need half_life > 0, max_age_s > 0, z >= 0, evidence_half_life_s > 0")
        self._clock = clock
        self._decay = 0.5 ** (1.0 / half_life)
        self._fade = 1.0 / evidence_half_life_s  # half-lives per second
        self._max_age_s = max_age_s
        self._z = z
        self._probe = RefreshProbe(probe_interval_s)  # hears of every call, taught or not
        # Weighted sums of 1, p, k, y, p*p, k*k, p*k, p*y, k*y, y*y (k: tokens after the first).
        self._sums = [0.0] * _TERMS
        # The same sums over the current run of surprises alone; `_run` counts them, signed
        # by their side (+: slower than the band).
        self._run_sums = [0.0] * _TERMS
        self._run = 0
        self._run_fit: ServiceFit | None = None  # the line before the run
        self._run_seen = 0  # observations since the run began
        self._fit: ServiceFit | None = None
        self._last = float("-inf")  # the last observation
        self._busy = float("-inf")  # the last call that ended untaught, the engine being full

    def observe(
        self, prompt_tokens: int, tokens: int, seconds: float, *, at_least: bool = False
    ) -> None:
        """The `tokens`-th output token of a request with this prompt came `seconds` after the
        request was admitted; with `at_least`, it had not come by then (the call failed for
        lack of time): only a time later than the line expects teaches anything."""
        if seconds < 0 or tokens < 1:
            return
        now = self._clock()
        self._probe.heard(now)
        p, k, y = float(prompt_tokens), float(tokens - 1), seconds
        fit = self._current()
        expected = None if fit is None else fit.at(prompt_tokens, tokens)
        if at_least and (expected is None or y <= expected):
            return
        # A run is judged against the line from before it: each surprise widens the current
        # line's band, and would hide the next.
        before = self._run_fit if self._run else fit
        side = 0 if before is None else self._side(before, prompt_tokens, tokens, y)
        if side and not self._run:
            self._run_fit = fit
        d = self._decay
        if self._fade and self._sums[0]:
            d *= 0.5 ** ((now - self._heard_last()) * self._fade)
        terms = _terms(p, k, y)
        s = self._sums
        for i, term in enumerate(terms):
            s[i] = s[i] * d + term
        self._note_run(side, terms, d)
        self._fit = None
        self._last = now

    def heard_of(self) -> None:
        """A call ended that teaches nothing, having waited in the engine's queue: the replica
        is busy, not idle, so the line neither goes stale nor fades meanwhile (under a
        sustained overload no call starts at once, and a line that went stale then stopped
        admission from refusing anything: it let every request into the engine's queue)."""
        now = self._clock()
        self._busy = now
        self._probe.heard(now)

    def probe(self) -> bool:
        """Whether a request the estimate would refuse goes through anyway, to refresh it: true
        once per `probe_interval_s` while no call has been heard of for that long."""
        return self._probe.take(self._clock())

    def _side(self, fit: ServiceFit, prompt_tokens: int, tokens: int, seconds: float) -> int:
        """Which side of the band around the line an observation falls (0: inside it)."""
        expected = fit.at(prompt_tokens, tokens)
        miss = seconds - expected
        if abs(miss) <= max(self._z * fit.spread_s, _SHIFT_MIN * expected, _SHIFT_MIN_S):
            return 0
        return 1 if miss > 0 else -1

    def _note_run(self, side: int, terms: tuple[float, ...], decay: float) -> None:
        """Count a run of surprises on one side, within `_SHIFT_WINDOW` observations (one
        inside the band says nothing either way: a size both speeds serve alike); at
        `_SHIFT_RUN` of them, keep only what the run saw."""
        run, r = self._run, self._run_sums
        if run and side * run >= 0 and self._run_seen < _SHIFT_WINDOW:
            for i, term in enumerate(terms):
                r[i] = r[i] * decay + term
            run += side
            self._run_seen += 1
        elif side:
            r[:] = terms
            run = side
            self._run_seen = 1
        else:
            run = 0
        if abs(run) < _SHIFT_RUN:
            self._run = run
            return
        self._sums[:] = r
        self._run = 0

    def evidence(self) -> float:
        """How many observations stand behind the line now, older ones (by count, and by time
        with `evidence_half_life_s`) counting less; 0 before the first."""
        weight = self._sums[0]
        if weight and self._fade:
            weight *= 0.5 ** ((self._clock() - self._heard_last()) * self._fade)
        return weight

    def _heard_last(self) -> float:
        """When the replica was last heard of serving: an observation, or a call that ended
        untaught."""
        return max(self._last, self._busy)

    def remembered(self, prompt_tokens: int, tokens: int) -> float | None:
        """`expected` from the last line however old it is (None before the first one)."""
        fit = self._current()
        return None if fit is None else fit.at(prompt_tokens, tokens)

    def fit(self) -> ServiceFit | None:
        """The current line; None before there is enough evidence for one (the module's
        docstring), or when it is stale."""
        if self._clock() - self._heard_last() > self._max_age_s:
            return None
        fit = self._current()
        if fit is not None and fit.sizes_unfitted and self.evidence() <= _LINE_TERMS:
            return None
        return fit

    def expected(self, prompt_tokens: int, tokens: int) -> float | None:
        """Expected seconds from admission to the `tokens`-th token (None: unknown)."""
        fit = self.fit()
        return None if fit is None else fit.at(prompt_tokens, tokens)

    def upper(self, prompt_tokens: int, tokens: int) -> float | None:
        """Seconds from admission to the `tokens`-th token that are rarely exceeded: the fit
        plus z spreads of the observations around it (None: unknown, or much shorter than
        the one output length the line has seen)."""
        fit = self.fit()
        if fit is None:
            return None
        size = fit.one_output_size
        if size is not None and tokens - 1 < _SHORTER * size:
            return None  # a flat line over one length: how much sooner is unknown
        return fit.at(prompt_tokens, tokens) + self._z * fit.spread_s

    def _current(self) -> ServiceFit | None:
        if self._fit is None and self._sums[0] > 0.0:
            self._fit = solve(self._sums)
        return self._fit
