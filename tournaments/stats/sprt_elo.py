"""The Elo of a sequential test: an estimate and interval that know how the test stopped.

A test that stops as soon as the evidence is strong enough stops soonest when its pairs ran
ahead of the truth towards its verdict, so the mean pair score of a stopped test leans that
way: too high after H1, too low after H0 (the fixed-sample
:func:`tournaments.stats.sprt.elo_estimate` is biased, and its interval does not hold its 95 %).
This module computes what fishtest shows for a stopped SPRT (``SPRT_elo`` in its
``stats/stat_util.py``, ``sprt.analytics`` in ``stats/sprt.py``, the exit laws in
``stats/brownian.py``): a *median-unbiased* estimate and the interval of the Elo values for
which the test's actual outcome is not extreme.

**The walk.** The LLR of the test is approximated by a Brownian motion with drift ``μ`` and
variance ``σ²`` per pair, absorbed at the bounds ``a < 0 < b``. For pairs whose expected
score is ``s`` (fishtest's ``LLR_drift_variance_alt2``, from the quadratic approximation of
the generalised LLR)::

    μ(s) = (s - (s0 + s1) / 2) (s1 - s0) / v̂,    σ² = (s1 - s0)² / v̂

``s0``, ``s1`` the scores of H0 and H1, ``ŝ`` and ``v̂`` the mean and the variance of the
observed pair scores (regularised counts, :func:`tournaments.stats.sprt.regularised_counts`). The
variance is the observed one whatever ``s``: its most likely value given ``s``,
``v̂ + (s - ŝ)²``, changes nothing near the hypotheses and makes ``F`` below fail to be
monotone far from them (fishtest moved to the unconditional variance for that reason).

**The outcome.** After ``N`` pairs the walk is at ``y = N μ(ŝ)``, the approximate LLR. Had
the walk gone past a bound, the test would have stopped where its straight line from the
origin met that bound: ``y`` is put on the bound, at the time ``T = bound / μ(ŝ)`` (else
``T = N``). The bounds are Wald's, whichever the stopping rule: the dynamic rule stops the
discrete walk about where the continuous one would stop at them; for the ``wald`` rule,
whose walk stops past them, widening them by the measured overshoot (Siegmund's corrected
diffusion) moved the median by less than its noise in simulations of (0, 50) to (0, 200)
tests and made the interval narrower than its 95 % at times, so they stay as they are.
The outcomes are ordered from worst to best: H0 accepted early, H0 accepted late, still
running low, still running high, H1 accepted late, H1 accepted early. For an Elo value the
chance of an outcome worse than the observed one is

    F(T, y) = P(H0 accepted before T) + P(still running at T, below y),

computed by :func:`worse_outcome_probability`; it falls as the Elo rises.

**The figures.** The estimate is the Elo where ``F = 1/2``: the test's outcome is as likely
to be better as worse, a median-unbiased estimate. The interval with confidence ``c`` runs
from the Elo where ``F = (1 + c) / 2`` to the one where ``F = (1 - c) / 2``. The LOS (the
likelihood of superiority) is ``F`` at Elo 0: were the new bot no better, the chance of an
outcome worse than the one observed. The Elo values are searched within ±:data:`ELO_SEARCH_LIMIT`,
as fishtest does; a bound at the limit says the value lies beyond it. As fishtest warns, the
approximation is meant for small Elo differences; far from the hypotheses the figures are
qualitative, and so they are when the approximate LLR lies well past a bound, which
:attr:`SequentialEstimate.clamped` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tournaments.stats.sprt import (
    PAIR_SCORES,
    PairCounts,
    SprtTest,
    elo_to_score,
    regularised_counts,
    signed,
)

__all__ = [
    "CLAMPED",
    "ELO_SEARCH_LIMIT",
    "SequentialEstimate",
    "sequential_estimate",
    "worse_outcome_probability",
]

#: How far from zero the estimate and its interval are searched, in Elo (fishtest's 1000).
ELO_SEARCH_LIMIT = 1000.0
# Below this many "diffusion times" (variance·T / (b - a)²), or above this strength of the
# drift (|drift·(b - a) / variance|), the eigenfunction series converges slowly and
# Siegmund's approximation is used instead (fishtest's thresholds).
#: How far past a bound the approximate LLR may lie before the figures are called rough.
CLAMPED = 1.03
_SHORT_TIME = 1e-2
_STRONG_DRIFT = 15.0
_SERIES_TOLERANCE = 1e-12
_SERIES_TERMS = 10_000
_ROOT_STEPS = 200
_ROOT_TOLERANCE = 1e-10


@dataclass(frozen=True, slots=True)
class SequentialEstimate:
    """The Elo of a sequential test, median-unbiased, with its interval and the LOS."""

    elo: float
    lower: float
    upper: float
    confidence: float
    #: The likelihood of superiority: see the module docstring.
    los: float
    #: The walk's approximate LLR lay more than 3 % past a bound (fishtest's ``clamped``):
    #: the quadratic approximation is poor there (very few pairs, or next to no spread in
    #: the pair scores), and the figures are rough.
    clamped: bool = False

    def text(self) -> str:
        """``"+5.1 [-0.0, +10.1]"``."""
        return f"{signed(self.elo)} [{signed(self.lower)}, {signed(self.upper)}]"


def _log_normal_cdf(z: float) -> float:
    """``log Φ(z)``, finite far into the lower tail (where Φ itself underflows)."""
    if z > -37:
        return math.log(math.erfc(-z / math.sqrt(2)) / 2)
    # Φ(z) = φ(z) / |z| (1 - 1/z² + 3/z⁴ - 15/z⁶ + …) as z → -∞.
    inverse = 1 / (z * z)
    series = 1 - inverse + 3 * inverse**2 - 15 * inverse**3
    return -z * z / 2 - math.log(-z) - math.log(2 * math.pi) / 2 + math.log(series)


def _scaled_normal_cdf(log_factor: float, z: float) -> float:
    """``exp(log_factor) Φ(z)`` without overflow in either factor."""
    return math.exp(min(log_factor + _log_normal_cdf(z), 700.0))


def worse_outcome_probability(
    lower: float, upper: float, drift: float, variance: float, time: float, position: float
) -> float:
    """``F(T, y)``: the chance that a Brownian motion from 0 with this drift and variance per
    unit time, absorbed at ``lower < 0 < upper``, is absorbed at ``lower`` before ``time``
    or is still running at ``time`` below ``position`` (``lower <= position <= upper``).

    Measure positions from the lower bound, so that the walk starts at ``x = -lower`` in the
    strip ``(0, A)``, ``A = upper - lower``, and write ``g = drift / variance``. ``F`` is the
    chance ``h(x)`` of ever being absorbed at 0, less that of being absorbed there only after
    ``time``, plus that of still running below ``z = position - lower``. Expanding the density
    of the running walk in the eigenfunctions ``sin(nπ·/A)`` of the strip, with eigenvalues
    ``λ_n = (nπ/A)² variance / 2 + g drift / 2``, both corrections fold into one series
    (``∫ sin(nπu/A) e^{gu} h(u) du`` has a closed form that cancels the lower limit of
    ``∫_0^z``)::

        F = h(x) + e^{g(z - x)} Σ_n e^{-λ_n T} sin(nπx/A) U_n(z),
        U_n(z) = 2 (Ag sin(nπz/A) - nπ cos(nπz/A)) / (A²g² + n²π²),
        h(x) = (1 - e^{2g(A - x)}) / (1 - e^{2gA})

    (fishtest's ``outcome_cdf_alt1``). For short times, where the series converges slowly,
    and for strong drift, Siegmund's approximation, the method of images with one reflection
    in each bound (``outcome_cdf_alt2``)::

        F ≈ Φ(z0) + e^{2g·lower} Φ(z_lower) - e^{2g·upper} Φ(z_upper),
        z0 = (y - drift T) / sd,  z_lower = (2 lower - y + drift T) / sd,
        z_upper = (y - drift T - 2 upper) / sd,   sd = sqrt(variance T).
    """
    if not lower < 0 < upper:
        raise ValueError(f"need lower < 0 < upper, got {lower} and {upper}")
    if variance <= 0 or time <= 0:
        raise ValueError(f"need a positive variance and time, got {variance} and {time}")
    position = min(max(position, lower), upper)
    width = upper - lower
    gamma = drift / variance
    if variance * time / width**2 < _SHORT_TIME or abs(gamma * width) > _STRONG_DRIFT:
        spread = math.sqrt(variance * time)
        shift = drift * time
        value = (
            math.erfc(-(position - shift) / spread / math.sqrt(2)) / 2
            + _scaled_normal_cdf(2 * gamma * lower, (2 * lower - position + shift) / spread)
            - _scaled_normal_cdf(2 * gamma * upper, (position - shift - 2 * upper) / spread)
        )
        return min(max(value, 0.0), 1.0)
    start = -lower
    level = position - lower
    if abs(gamma * width) < 1e-8:
        eventual = (width - start) / width
    else:
        eventual = (1 - math.exp(2 * gamma * (width - start))) / (1 - math.exp(2 * gamma * width))
    total = 0.0
    for n in range(1, _SERIES_TERMS + 1):
        frequency = n * math.pi / width
        decay = frequency**2 * variance / 2 + drift * gamma / 2
        weight = math.exp(-decay * time + gamma * (level - start)) * (
            2
            * (
                width * gamma * math.sin(frequency * level)
                - n * math.pi * math.cos(frequency * level)
            )
            / ((width * gamma) ** 2 + (n * math.pi) ** 2)
        )
        total += weight * math.sin(frequency * start)
        # The weights shrink for good once e^{-λ_n T} does; sin(nπx/A) alone may be ~0.
        if abs(weight) <= _SERIES_TOLERANCE:
            break
    return min(max(eventual + total, 0.0), 1.0)


def _solve_decreasing(
    function: Callable[[float], float], target: float, centre: float, step: float
) -> float:
    """The ``x`` in ±:data:`ELO_SEARCH_LIMIT` where ``function(x) = target``, for a falling
    ``function``: a bracket grown from ``centre ± 30 step`` (fishtest's ``lower_cb``), then
    regula falsi with the Illinois modification. Without a crossing within the limits, the
    limit beyond which the crossing lies."""
    reach = 30.0
    while True:
        left = max(centre - reach * step, -ELO_SEARCH_LIMIT)
        right = min(centre + reach * step, ELO_SEARCH_LIMIT)
        left_value, right_value = function(left) - target, function(right) - target
        if left_value * right_value <= 0:
            break
        if left > -ELO_SEARCH_LIMIT or right < ELO_SEARCH_LIMIT:
            reach *= 2
            continue
        return right if left_value > 0 else left
    if left_value == 0:
        return left
    for _ in range(_ROOT_STEPS):
        if right_value == 0 or abs(right - left) <= _ROOT_TOLERANCE * max(1.0, abs(right)):
            return right
        middle = right - right_value * (right - left) / (right_value - left_value)
        if not min(left, right) < middle < max(left, right):
            middle = (left + right) / 2
        middle_value = function(middle) - target
        if middle_value * right_value < 0:
            left, left_value = right, right_value
        else:
            left_value /= 2
        right, right_value = middle, middle_value
    return right


def sequential_estimate(
    test: SprtTest, counts: PairCounts, confidence: float = 0.95
) -> SequentialEstimate:
    """The Elo of the test ``test`` after ``counts`` (decided or not), its interval with
    ``confidence`` and the LOS: see the module docstring."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    weights = regularised_counts(counts)
    pairs = sum(weights)
    frequencies = [weight / pairs for weight in weights]
    mean = sum(p * score for p, score in zip(frequencies, PAIR_SCORES, strict=True))
    spread = sum(p * (score - mean) ** 2 for p, score in zip(frequencies, PAIR_SCORES, strict=True))
    score0, score1 = elo_to_score(test.elo0), elo_to_score(test.elo1)
    middle, gap = (score0 + score1) / 2, score1 - score0
    lower, upper = test.bounds
    slope = (mean - middle) * gap / spread
    position, time = pairs * slope, pairs
    clamped = position > CLAMPED * upper or position < CLAMPED * lower
    if position < lower:
        position, time = lower, lower / slope
    elif position > upper:
        position, time = upper, upper / slope

    def worse(elo: float) -> float:
        drift = (elo_to_score(elo) - middle) * gap / spread
        return worse_outcome_probability(lower, upper, drift, gap * gap / spread, time, position)

    centre, step = (test.elo0 + test.elo1) / 2, test.elo1 - test.elo0
    tail = (1 - confidence) / 2
    return SequentialEstimate(
        elo=_solve_decreasing(worse, 0.5, centre, step),
        lower=_solve_decreasing(worse, 1 - tail, centre, step),
        upper=_solve_decreasing(worse, tail, centre, step),
        confidence=confidence,
        los=worse(0.0),
        clamped=clamped,
    )
