"""How wrong a prediction has recently been: the exponentially weighted mean and spread of its
errors, so that a decision can use the prediction plus a margin that the errors justify.

What the errors justify fades with their age as well as their count. A margin is learned only
from the decisions it lets through: after a transient slowdown, queue waits had run 0.85 s
over their predictions, so every request that would queue at all was refused (about 20% of
them, for over three minutes after the replica had recovered), and none queued to show that
the waits were short again. With `half_life_s`, the margin of errors that old halves every
`half_life_s` seconds, and the next errors outweigh them, so requests queue again and teach
it what the waits are now.
"""

from __future__ import annotations

import math


class ErrorBand:
    """Exponentially weighted mean and mean square of `actual - predicted`.

    Each new error weighs 1 and every older one decays by `0.5 ** (1 / half_life)`, and by
    half every `half_life_s` seconds, so the band follows a change in the errors within about
    `half_life` samples, and one whose errors stopped coming fades away.
    """

    __slots__ = ("_at", "_decay", "_half_life_s", "_mean", "_square", "_weight")

    def __init__(self, half_life: float = 64.0, half_life_s: float = math.inf) -> None:
        if half_life <= 0 or half_life_s <= 0:
            raise ValueError("half_life and half_life_s must be > 0")
        self._decay = 0.5 ** (1.0 / half_life)
        self._half_life_s = half_life_s
        self._weight = 0.0
        self._mean = 0.0
        self._square = 0.0
        self._at = 0.0  # when the last error was added

    def add(self, error: float, now: float = 0.0) -> None:
        weight = self._weight * self._decay * self._faded(now) + 1.0
        share = 1.0 / weight
        self._mean += share * (error - self._mean)
        self._square += share * (error * error - self._square)
        self._weight = weight
        self._at = now

    def _faded(self, now: float) -> float:
        """What is left at `now` of the weight of the errors so far (their age)."""
        if not self._weight:
            return 1.0
        return math.exp2(-max(0.0, now - self._at) / self._half_life_s)

    @property
    def count(self) -> float:
        """The errors' total weight (0 before the first)."""
        return self._weight

    def mean(self) -> float:
        return self._mean

    def spread(self) -> float:
        """The weighted standard deviation of the errors around their mean."""
        return math.sqrt(max(0.0, self._square - self._mean * self._mean))

    def margin(self, z: float = 2.0, now: float = 0.0) -> float:
        """What to add to a prediction so that it is rarely short: mean + z spreads (negative
        when predictions have been running long), faded by the errors' age at `now`."""
        return (self._mean + z * self.spread()) * self._faded(now)
