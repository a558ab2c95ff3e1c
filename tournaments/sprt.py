"""The sequential probability ratio test over duplicate pairs of matches: pure functions.

Matches come in duplicate pairs (the same deals, seats swapped), and the **pair** is the
statistical unit, as fishtest does with game pairs: a pair ends 2-0, 1-1 or 0-2 for the new
bot, a pair score of 1, 1/2 or 0. Counting the two matches of a pair as independent would
ignore that they share their cards; the pair scores carry the variance the duplicate design
really has (a deterministic bot against itself splits every pair, variance zero).

**Model.** The pair scores are a trinomial sample. The hypotheses are on the expected score
``s`` (the mean match score of the new bot), on the logistic Elo scale
``s = 1 / (1 + 10 ** (-elo / 400))``: H0 ``elo = elo0`` against H1 ``elo = elo1``.

**Log-likelihood ratio.** The generalised SPRT of fishtest (``LLR_logistic`` in its
``stats/LLRcalc.py``, where the multiplier below solves its "secular equation"): the unknown
trinomial is replaced by its maximum-likelihood estimate under each hypothesis. With counts
``n_i`` of pair scores ``a_i``, ``N = Σ n_i`` and frequencies ``p_i = n_i / N``, the most
likely distribution with mean ``s`` is

    q_i(s) = p_i / (1 + λ (a_i - s)),   λ the root of  Σ p_i (a_i - s) / (1 + λ (a_i - s)) = 0

(the Lagrange condition of maximising ``Σ n_i log q_i`` subject to ``Σ q_i = 1`` and
``Σ q_i a_i = s``), and

    LLR = Σ n_i log(q_i(s1) / q_i(s0))
        = N Σ p_i [log(1 + λ0 (a_i - s0)) - log(1 + λ1 (a_i - s1))].

A count of zero is replaced by :data:`ZERO_COUNT` (fishtest's ``regularize``), so that every
pair score has some weight and the constrained maximum exists for every ``s`` in (0, 1).

**Decision.** Wald's bounds: accept H0 once ``LLR <= log(beta / (1 - alpha))``, accept H1
once ``LLR >= log((1 - beta) / alpha)``, otherwise play another pair.

**Elo estimate.** The mean pair score ``m = Σ p_i a_i`` with the standard error
``sqrt(Σ p_i (a_i - m)² / N)``; the interval ``m ± z·se`` (``z`` = 1.96 for 95 %) mapped to
Elo through the logistic curve, unregularised counts.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "PAIR_SCORES",
    "ZERO_COUNT",
    "Decision",
    "EloEstimate",
    "PairCounts",
    "PairOutcome",
    "SprtStatus",
    "SprtTest",
    "constrained_mle",
    "elo_estimate",
    "elo_to_score",
    "log_likelihood_ratio",
    "run_sprt",
    "score_to_elo",
    "sprt_bounds",
]

#: The score of a pair for the new bot, indexed by the matches it won in the pair (0, 1, 2).
PAIR_SCORES = (0.0, 0.5, 1.0)
#: What an empty count weighs in the likelihood ratio (fishtest's regularisation).
ZERO_COUNT = 1e-3
_SOLVER_STEPS = 200
_SOLVER_TOLERANCE = 1e-13


class PairOutcome(enum.IntEnum):
    """A duplicate pair from the new bot's side: the number of its two matches it won."""

    LOST_BOTH = 0  # 0-2
    SPLIT = 1  # 1-1
    WON_BOTH = 2  # 2-0

    @property
    def score(self) -> float:
        """The pair score: 0, 0.5 or 1."""
        return PAIR_SCORES[self]

    @property
    def label(self) -> str:
        """``"2-0"``, ``"1-1"`` or ``"0-2"``, the new bot's matches first."""
        return f"{int(self)}-{2 - int(self)}"


@dataclass(frozen=True, slots=True)
class PairCounts:
    """How many pairs the new bot lost (0-2), split (1-1) and won (2-0)."""

    lost_both: int = 0
    split: int = 0
    won_both: int = 0

    def __post_init__(self) -> None:
        if min(self.lost_both, self.split, self.won_both) < 0:
            raise ValueError(f"pair counts cannot be negative: {self}")

    def add(self, outcome: PairOutcome) -> PairCounts:
        """These counts and one more pair."""
        counts = list(self.as_tuple())
        counts[outcome] += 1
        return PairCounts(*counts)

    def as_tuple(self) -> tuple[int, int, int]:
        """``(0-2, 1-1, 2-0)`` counts, in the order of :data:`PAIR_SCORES`."""
        return (self.lost_both, self.split, self.won_both)

    @property
    def pairs(self) -> int:
        """Pairs counted."""
        return self.lost_both + self.split + self.won_both

    @property
    def mean_score(self) -> float:
        """The new bot's mean match score (0.5 when nothing is counted)."""
        if not self.pairs:
            return 0.5
        return (0.5 * self.split + self.won_both) / self.pairs

    def text(self) -> str:
        """``"2-0: 5, 1-1: 7, 0-2: 2"``."""
        return f"2-0: {self.won_both}, 1-1: {self.split}, 0-2: {self.lost_both}"


def elo_to_score(elo: float) -> float:
    """The expected score at an Elo difference (logistic): ``1 / (1 + 10^(-elo/400))``."""
    return 1 / (1 + 10 ** (-elo / 400))


def score_to_elo(score: float) -> float:
    """The Elo difference of an expected score; ±inf at 1 and 0."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return -400 * math.log10(1 / score - 1)


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds on the LLR: ``(log(beta / (1 - alpha)), log((1 - beta) / alpha))``."""
    if not (0 < alpha < 1 and 0 < beta < 1 and alpha + beta < 1):
        raise ValueError(f"need 0 < alpha, beta and alpha + beta < 1, got {alpha}, {beta}")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def constrained_mle(
    frequencies: Sequence[float], scores: Sequence[float], mean: float
) -> tuple[float, ...]:
    """The distribution over ``scores`` with expected score ``mean`` that is most likely for
    the observed ``frequencies``: ``q_i = p_i / (1 + λ (a_i - mean))``.

    ``frequencies`` must be positive and sum to 1, and ``mean`` must lie strictly between the
    smallest and the largest score. ``λ`` is found by Newton's method kept inside its bracket
    by bisection: the constraint is strictly decreasing in ``λ`` on the interval where every
    ``1 + λ (a_i - mean)`` is positive, from +∞ to -∞, so the root exists and is unique.
    """
    if len(frequencies) != len(scores) or not frequencies:
        raise ValueError("need one frequency per score")
    if min(frequencies) <= 0:
        raise ValueError(f"frequencies must be positive, got {list(frequencies)}")
    deviations = [score - mean for score in scores]
    high, low = max(deviations), min(deviations)
    if not low < 0 < high:
        raise ValueError(f"the mean {mean} must lie strictly inside the scores {list(scores)}")
    # The bracket: every 1 + λ d_i > 0 strictly inside it.
    left, right = -1 / high, -1 / low
    terms = list(zip(frequencies, deviations, strict=True))
    multiplier = 0.0
    for _ in range(_SOLVER_STEPS):
        value = slope = 0.0
        for frequency, deviation in terms:
            ratio = deviation / (1 + multiplier * deviation)
            value += frequency * ratio
            slope -= frequency * ratio * ratio
        if value > 0:
            left = multiplier
        else:
            right = multiplier
        step = multiplier - value / slope if slope < 0 else math.nan
        if not left < step < right:
            step = (left + right) / 2
        if abs(step - multiplier) <= _SOLVER_TOLERANCE * max(1.0, abs(multiplier)):
            multiplier = step
            break
        multiplier = step
    return tuple(frequency / (1 + multiplier * deviation) for frequency, deviation in terms)


def _regularised(counts: PairCounts) -> tuple[float, ...]:
    return tuple(float(count) if count else ZERO_COUNT for count in counts.as_tuple())


def log_likelihood_ratio(counts: PairCounts, elo0: float, elo1: float) -> float:
    """The generalised log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) for the
    pair counts (fishtest's ``LLR_logistic`` applied to pairs; see the module docstring)."""
    if not counts.pairs:
        return 0.0
    weights = _regularised(counts)
    total = sum(weights)
    frequencies = [weight / total for weight in weights]
    under_h0 = constrained_mle(frequencies, PAIR_SCORES, elo_to_score(elo0))
    under_h1 = constrained_mle(frequencies, PAIR_SCORES, elo_to_score(elo1))
    return sum(
        weight * (math.log(one) - math.log(zero))
        for weight, zero, one in zip(weights, under_h0, under_h1, strict=True)
    )


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """An Elo difference with a confidence interval (bounds may be infinite)."""

    elo: float
    lower: float
    upper: float
    confidence: float

    @property
    def margin(self) -> float:
        """Half the interval's width: the ``±`` of ``elo ± margin``."""
        return (self.upper - self.lower) / 2

    def text(self) -> str:
        """``"+35.2 ± 20.1"`` (``"+inf"`` when the new bot won every pair)."""
        if not math.isfinite(self.margin):
            return f"{_signed(self.elo)} [{_signed(self.lower)}, {_signed(self.upper)}]"
        return f"{_signed(self.elo)} ± {self.margin:.1f}"


def _signed(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value + 0.0:+.1f}"  # + 0.0 turns -0.0 into 0.0


def elo_estimate(counts: PairCounts, confidence: float = 0.95) -> EloEstimate:
    """The Elo difference of the new bot from its mean pair score, with a normal-approximation
    interval from the spread of the pair scores (the duplicate design's own variance)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    pairs = counts.pairs
    if not pairs:
        return EloEstimate(0.0, -math.inf, math.inf, confidence)
    mean = counts.mean_score
    variance = (
        sum(
            count * (score - mean) ** 2
            for count, score in zip(counts.as_tuple(), PAIR_SCORES, strict=True)
        )
        / pairs
    )
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    margin = z * math.sqrt(variance / pairs)
    return EloEstimate(
        score_to_elo(mean), score_to_elo(mean - margin), score_to_elo(mean + margin), confidence
    )


class Decision(enum.Enum):
    """Where the test stands."""

    CONTINUE = "continue"
    ACCEPT_H0 = "H0"
    ACCEPT_H1 = "H1"


@dataclass(frozen=True, slots=True)
class SprtStatus:
    """The test after some pairs: the counts, the LLR against its bounds, the decision."""

    counts: PairCounts
    llr: float
    lower: float
    upper: float
    decision: Decision
    estimate: EloEstimate
    #: Pairs with a void match, skipped.
    void_pairs: int = 0
    #: Void pairs since the last counted one.
    void_in_a_row: int = 0


@dataclass(frozen=True, slots=True)
class SprtTest:
    """An SPRT of H0 ``elo = elo0`` against H1 ``elo = elo1`` with error rates alpha, beta."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"need elo0 < elo1, got {self.elo0} and {self.elo1}")
        sprt_bounds(self.alpha, self.beta)  # raises on bad error rates

    @property
    def bounds(self) -> tuple[float, float]:
        """The LLR bounds (lower: accept H0, upper: accept H1)."""
        return sprt_bounds(self.alpha, self.beta)

    def status(self, counts: PairCounts, void_pairs: int = 0) -> SprtStatus:
        """The test's status after ``counts``."""
        llr = log_likelihood_ratio(counts, self.elo0, self.elo1)
        lower, upper = self.bounds
        decision = Decision.CONTINUE
        if llr >= upper:
            decision = Decision.ACCEPT_H1
        elif llr <= lower:
            decision = Decision.ACCEPT_H0
        return SprtStatus(counts, llr, lower, upper, decision, elo_estimate(counts), void_pairs)


def run_sprt(
    test: SprtTest,
    play_pair: Callable[[int], PairOutcome | None],
    *,
    max_pairs: int | None = None,
    on_pair: Callable[[int, PairOutcome | None, SprtStatus], None] | None = None,
    max_void_in_a_row: int | None = None,
) -> SprtStatus:
    """Play pairs ``play_pair(1)``, ``play_pair(2)``, … until the test decides.

    ``play_pair`` returns the pair's outcome, or None for a void pair, which is skipped.
    Stops undecided after ``max_pairs`` pairs (void ones included), or after
    ``max_void_in_a_row`` void pairs in a row. ``on_pair`` sees every pair and the status.
    """
    counts = PairCounts()
    void = void_in_a_row = 0
    status = test.status(counts)
    number = 0
    while max_pairs is None or number < max_pairs:
        number += 1
        outcome = play_pair(number)
        if outcome is None:
            void += 1
            void_in_a_row += 1
        else:
            void_in_a_row = 0
            counts = counts.add(outcome)
        status = dataclasses.replace(test.status(counts, void), void_in_a_row=void_in_a_row)
        if on_pair is not None:
            on_pair(number, outcome, status)
        if status.decision is not Decision.CONTINUE:
            break
        if max_void_in_a_row is not None and void_in_a_row >= max_void_in_a_row:
            break
    return status
