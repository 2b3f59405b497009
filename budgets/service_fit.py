"""The line a replica's service times are fitted to, and the weighted least squares that fits it
(`budgets.service_estimate` keeps the weighted sums it is solved from)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

_MIN_VARIANCE = 0.1  # tokens^2: below this spread a slope cannot be told from noise
# Sizes whose standard deviation is less than this fraction of their mean span too little to
# measure a slope by: what drifted while they were observed (a burst's queue draining) is
# taken for their effect, and a size far from them is predicted from that.
_MIN_RELATIVE_SPREAD = 0.1
_MIN_INDEPENDENCE = 1e-3  # 1 - corr^2 below this: prompt and output sizes move together
_SIGNIFICANT = 2.0  # standard errors a slope must stand clear of 0 to be kept


@dataclass(frozen=True, slots=True)
class ServiceFit:
    """The fitted line and the spread of the observations around it; `at` is the expected
    time to the `tokens`-th token, never negative."""

    base_s: float
    per_prompt_token_s: float
    per_output_token_s: float
    spread_s: float = 0.0
    # A flat line over observations that differed in size: no slope could be told from noise,
    # so the spread counts the sizes' effect as scatter.
    sizes_unfitted: bool = False
    # The output length (tokens after the first) all the observations had, when they had about
    # one: the line says nothing of how much sooner a much shorter answer comes.
    one_output_size: float | None = None

    def at(self, prompt_tokens: int, tokens: int) -> float:
        decode = self.per_output_token_s * max(0, tokens - 1)
        return max(0.0, self.base_s + self.per_prompt_token_s * prompt_tokens + decode)


def solve(sums: list[float]) -> ServiceFit:
    """Weighted least squares of y on p and k, in centred form. A slope the data cannot
    identify, or tell from noise, is dropped (0); one that comes out negative is dropped and
    the other refitted alone. Observations of about one output length say so
    (`one_output_size`)."""
    fit = _solve(sums)
    w, sk, skk = sums[0], sums[2], sums[5]
    mk = sk / w
    return fit if _varies(skk / w - mk * mk, mk) else replace(fit, one_output_size=mk)


def _solve(sums: list[float]) -> ServiceFit:
    w, sp, sk, sy, spp, skk, spk, spy, sky, syy = sums
    mp, mk, my = sp / w, sk / w, sy / w
    moments = (
        spp / w - mp * mp,
        skk / w - mk * mk,
        spk / w - mp * mk,
        spy / w - mp * my,
        sky / w - mk * my,
        syy / w - my * my,
    )
    cpp, ckk, cpk, cpy, cky, _ = moments
    use_p, use_k = _varies(cpp, mp), _varies(ckk, mk)
    sized = use_p or use_k
    det = cpp * ckk - cpk * cpk
    if use_p and use_k and det > _MIN_INDEPENDENCE * cpp * ckk:
        b = (cpy * ckk - cky * cpk) / det
        c = (cky * cpp - cpy * cpk) / det
        if b >= 0.0 and c >= 0.0:
            fit = _fit(b, c, my - b * mp - c * mk, moments)
            # What each size varies by that the other does not explain (det / the other's).
            keep_p = _clear_of_noise(b, det / ckk, fit, w, 3)
            keep_k = _clear_of_noise(c, det / cpp, fit, w, 3)
            if keep_p and keep_k:
                return fit
            if keep_p != keep_k:  # the one that stood out, refitted alone
                use_p, use_k = keep_p, keep_k
        else:
            use_p, use_k = b >= 0.0, c >= 0.0
    # One slope at most; when both vary together, decode (the output's) usually dominates.
    singles: list[tuple[float, float, float]] = []
    if use_k:
        singles.append((0.0, max(0.0, cky / ckk), ckk))
    if use_p:
        singles.append((max(0.0, cpy / cpp), 0.0, cpp))
    for b, c, variance in singles:
        fit = _fit(b, c, my - b * mp - c * mk, moments)
        if _clear_of_noise(b + c, variance, fit, w, 2):
            return fit
    return replace(_fit(0.0, 0.0, my, moments), sizes_unfitted=sized)


def _varies(variance: float, mean: float) -> bool:
    """Whether a size varies enough to measure a slope by."""
    return variance > _MIN_VARIANCE and variance >= (_MIN_RELATIVE_SPREAD * mean) ** 2


def _clear_of_noise(
    slope: float, variance: float, fit: ServiceFit, w: float, parameters: int
) -> bool:
    """Whether `slope`, over a size of this (weighted) `variance`, stands `_SIGNIFICANT`
    standard errors clear of 0 in a line of `parameters` fitted with weight `w`. With no more
    weight than parameters nothing can be told from noise."""
    if w <= parameters:
        return False
    noise = fit.spread_s * fit.spread_s * w / (w - parameters)  # the unbiased residual variance
    return slope * slope * w * variance >= _SIGNIFICANT * _SIGNIFICANT * noise


def _fit(b: float, c: float, base: float, moments: tuple[float, ...]) -> ServiceFit:
    """The line with the weighted standard deviation of the observations around it."""
    cpp, ckk, cpk, cpy, cky, cyy = moments
    residual = cyy - 2 * (b * cpy + c * cky) + b * b * cpp + c * c * ckk + 2 * b * c * cpk
    return ServiceFit(base, b, c, math.sqrt(max(0.0, residual)))
