"""The SPRT's figures recomputed from the published formulas, by other routes than
``tournaments.stats.sprt`` and ``tournaments.stats.sprt_elo`` take: the tests compare the two.

- the LLR with the multipliers of the iterative solver (the module solves a quadratic);
- the bounds in force from the ladder heights of the LLR path, as fishtest's
  ``update_SPRT`` keeps them;
- the chance ``F`` of an outcome worse than the observed one by the method of images (an
  infinite sum of reflected Gaussians, integrated numerically), where the module sums the
  eigenfunction series or takes Siegmund's single reflection.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from tournaments.stats.sprt import (
    PAIR_SCORES,
    ZERO_COUNT,
    PairCounts,
    PairOutcome,
    constrained_mle,
    elo_to_score,
)

WALD = (math.log(0.05 / 0.95), math.log(0.95 / 0.05))


def iterative_llr(counts: PairCounts, elo0: float, elo1: float) -> float:
    """The LLR with the multipliers found by :func:`constrained_mle`'s iteration."""
    weights = [float(n) if n else ZERO_COUNT for n in counts.as_tuple()]
    frequencies = [w / sum(weights) for w in weights]
    fitted0, fitted1 = (
        constrained_mle(frequencies, PAIR_SCORES, elo_to_score(elo)) for elo in (elo0, elo1)
    )
    return sum(
        w * (math.log(one) - math.log(zero))
        for w, zero, one in zip(weights, fitted0, fitted1, strict=True)
    )


def recomputed_path(
    elo0: float, elo1: float, outcomes: Iterable[PairOutcome], *, dynamic: bool = True
) -> list[tuple[float, float, float]]:
    """``(LLR, lower bound in force, upper bound in force)`` after each pair (alpha = beta =
    0.05): the LLR by :func:`iterative_llr`, the overshoot estimates ``Σ H² / (2 Σ H)`` from
    the ladder heights of that LLR path."""
    counts = PairCounts()
    low = high = 0.0
    low_heights: list[float] = []
    high_heights: list[float] = []
    path = []
    for outcome in outcomes:
        counts = counts.add(outcome)
        llr = iterative_llr(counts, elo0, elo1)
        if llr < low:
            low_heights.append(low - llr)
            low = llr
        if llr > high:
            high_heights.append(llr - high)
            high = llr
        o0 = sum(h * h for h in low_heights) / 2 / sum(low_heights) if low_heights else 0.0
        o1 = sum(h * h for h in high_heights) / 2 / sum(high_heights) if high_heights else 0.0
        if not dynamic:
            o0 = o1 = 0.0
        path.append((llr, WALD[0] + o0, WALD[1] - o1))
    return path


def _simpson(function: Callable[[float], float], left: float, right: float, steps: int) -> float:
    width = (right - left) / steps
    total = function(left) + function(right)
    for k in range(1, steps):
        total += (4 if k % 2 else 2) * function(left + k * width)
    return total * width / 3


def images_probability(
    lower: float,
    upper: float,
    drift: float,
    variance: float,
    time: float,
    position: float,
    *,
    steps: int = 400,
) -> float:
    """``F`` by the method of images: the density at ``time`` of the walk not yet absorbed,
    ``e^{(drift z - drift² T / 2) / variance} Σ_k [n(z + 2kA) - n(z - 2 lower + 2kA)]``
    with ``n`` the centred normal density of variance ``variance·T`` and ``A`` the strip's
    width; ``F = h(0) - ∫ p h + ∫_lower^position p``, ``h`` the chance of ever being
    absorbed at ``lower``."""
    width = upper - lower
    spread = variance * time
    gamma = drift / variance

    def normal(u: float) -> float:
        return math.exp(-u * u / (2 * spread)) / math.sqrt(2 * math.pi * spread)

    # Images further than 2kA > 10 standard deviations weigh less than e^-50.
    reach = 2 + math.ceil(5 * math.sqrt(spread) / width)

    def density(z: float) -> float:
        images = sum(normal(z + 2 * k * width) - normal(z - 2 * lower + 2 * k * width)
                     for k in range(-reach, reach + 1))  # fmt: skip
        return math.exp((drift * z - drift * drift * time / 2) / variance) * images

    def absorbed_low(z: float) -> float:
        if abs(gamma * width) < 1e-12:
            return (upper - z) / width
        return (math.exp(-2 * gamma * (z - lower)) - math.exp(-2 * gamma * width)) / (
            1 - math.exp(-2 * gamma * width)
        )

    later = _simpson(lambda z: density(z) * absorbed_low(z), lower, upper, steps)
    below = _simpson(density, lower, position, steps) if position > lower else 0.0
    return absorbed_low(0.0) - later + below


def walk_of(
    counts: PairCounts, elo0: float, elo1: float
) -> tuple[Callable[[float], float], float, float, float]:
    """The Brownian walk of the sequential estimate for these counts: the drift as a
    function of the Elo, the variance, the time and the position (the bounds Wald's at
    alpha = beta = 0.05)."""
    weights = [float(n) if n else ZERO_COUNT for n in counts.as_tuple()]
    total = sum(weights)
    mean = sum(w * a for w, a in zip(weights, PAIR_SCORES, strict=True)) / total
    spread = sum(w * (a - mean) ** 2 for w, a in zip(weights, PAIR_SCORES, strict=True)) / total
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)

    def drift(elo: float) -> float:
        return (elo_to_score(elo) - (s0 + s1) / 2) * (s1 - s0) / spread

    slope = drift_at_mean = (mean - (s0 + s1) / 2) * (s1 - s0) / spread
    position, time = total * drift_at_mean, total
    for bound in WALD:
        if (position - bound) * bound > 0:  # beyond the bound, on its side
            position, time = bound, bound / slope
    return drift, (s1 - s0) ** 2 / spread, time, position
