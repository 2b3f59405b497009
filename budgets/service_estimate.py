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

An estimate with no observation for `max_age_s` is not trusted (None), like one that has none:
admission then falls back to what it did without predictions, and the next requests refresh it.

Routing reads it differently (`remembered`, `evidence`): the last line however old, and how
much recent evidence stands behind it. With `evidence_half_life_s` observations also fade with
time, so after a lull the next few outweigh what was seen before it (a replica measured under
a burst is not judged by the burst once it has passed).
"""

from __future__ import annotations

import math
import time

from budgets.deadline import Clock
from budgets.service_fit import ServiceFit, solve


class ServiceEstimate:
    """One replica's recent service times, as a fitted line plus an error margin."""

    __slots__ = ("_clock", "_decay", "_fade", "_fit", "_last", "_max_age_s", "_sums", "_z")

    def __init__(
        self,
        clock: Clock = time.monotonic,
        *,
        half_life: float = 64.0,
        max_age_s: float = 30.0,
        z: float = 2.0,
        evidence_half_life_s: float = math.inf,
    ) -> None:
        if half_life <= 0 or max_age_s <= 0 or z < 0 or evidence_half_life_s <= 0:
            raise ValueError("need half_life > 0, max_age_s > 0, z >= 0, evidence_half_life_s > 0")
        self._clock = clock
        self._decay = 0.5 ** (1.0 / half_life)
        self._fade = 1.0 / evidence_half_life_s  # half-lives per second
        self._max_age_s = max_age_s
        self._z = z
        # Weighted sums of 1, p, k, y, p*p, k*k, p*k, p*y, k*y, y*y (k: tokens after the first).
        self._sums = [0.0] * 10
        self._fit: ServiceFit | None = None
        self._last = float("-inf")

    def observe(self, prompt_tokens: int, tokens: int, seconds: float) -> None:
        """The `tokens`-th output token of a request with this prompt came `seconds` after the
        request was admitted."""
        if seconds < 0 or tokens < 1:
            return
        p, k, y = float(prompt_tokens), float(tokens - 1), seconds
        now = self._clock()
        d = self._decay
        if self._fade and self._sums[0]:
            d *= 0.5 ** ((now - self._last) * self._fade)
        s = self._sums
        for i, term in enumerate((1.0, p, k, y, p * p, k * k, p * k, p * y, k * y, y * y)):
            s[i] = s[i] * d + term
        self._fit = None
        self._last = now

    def evidence(self) -> float:
        """How many observations stand behind the line now, older ones (by count, and by time
        with `evidence_half_life_s`) counting less; 0 before the first."""
        weight = self._sums[0]
        if weight and self._fade:
            weight *= 0.5 ** ((self._clock() - self._last) * self._fade)
        return weight

    def remembered(self, prompt_tokens: int, tokens: int) -> float | None:
        """`expected` from the last line however old it is (None before the first one)."""
        fit = self._current()
        return None if fit is None else fit.at(prompt_tokens, tokens)

    def fit(self) -> ServiceFit | None:
        """The current line; None before the first observation or when it is stale."""
        if self._clock() - self._last > self._max_age_s:
            return None
        return self._current()

    def expected(self, prompt_tokens: int, tokens: int) -> float | None:
        """Expected seconds from admission to the `tokens`-th token (None: unknown)."""
        fit = self.fit()
        return None if fit is None else fit.at(prompt_tokens, tokens)

    def upper(self, prompt_tokens: int, tokens: int) -> float | None:
        """Seconds from admission to the `tokens`-th token that are rarely exceeded: the fit
        plus z spreads of the observations around it (None: unknown)."""
        fit = self.fit()
        if fit is None:
            return None
        return fit.at(prompt_tokens, tokens) + self._z * fit.spread_s

    def _current(self) -> ServiceFit | None:
        if self._fit is None and self._sums[0] > 0.0:
            self._fit = solve(self._sums)
        return self._fit
