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
With three scores, clearing the denominators turns the equation for ``λ`` into a quadratic,
solved in closed form (:func:`constrained_mle` solves any number of scores iteratively).

**Decision.** Two stopping rules (:class:`Bounds`), both with Wald's bounds
``A = log(beta / (1 - alpha))`` and ``B = log((1 - beta) / alpha)`` as their starting point.

- ``wald``: accept H0 once ``LLR <= A``, H1 once ``LLR >= B``. The LLR jumps at every pair
  and so lands *beyond* a bound when it stops: for a plain SPRT, Wald's inequalities bound
  its error rates by ``alpha / (1 - beta)`` and ``beta / (1 - alpha)`` and the overshoot
  keeps them below ``alpha`` and ``beta``, at the cost of more pairs than it needs (with the
  generalised LLR, ``benchmarks/sprt.py`` measures them at or a little below nominal).
- ``dynamic`` (the default, fishtest's ``update_SPRT`` in ``stats/stat_util.py``): the bounds
  move inward by an estimate of that overshoot, and the comparisons are strict: accept H0
  once ``LLR < A + o0``, H1 once ``LLR > B - o1``. The estimate is Siegmund's (*Sequential
  Analysis*, 1985, corollary 8.33): the expected overshoot of a random walk over a far bound
  is ``E[H²] / (2 E[H])``, ``H`` a ladder height, the amount by which the walk exceeds its
  running maximum (minimum, for the lower bound) when it sets a new one. :class:`Overshoot`
  keeps the sums of those heights and of their squares along the LLR's own path, so
  ``o1 = Σ H² / (2 Σ H)`` is measured, not assumed. The discrete test then behaves like the
  continuous one that Wald's bounds are exact for: error rates close to ``alpha`` and
  ``beta``, fewer pairs (``benchmarks/sprt.py`` measures both rules).

**Elo estimate.** The fixed-sample one, printed while the test runs: the mean pair score
``m = Σ p_i a_i`` with the standard error ``sqrt(Σ p_i (a_i - m)² / N)``, the interval
``m ± z·se`` (``z`` = 1.96 for 95 %) mapped to Elo through the logistic curve; counts
regularised as above and the score kept within [0.001, 0.999] (fishtest's ``get_elo``), so
that the figures stay finite. Once the test stops this estimate is biased (a test stops
soonest when its pairs ran ahead of the truth towards its verdict);
:mod:`tournaments.stats.sprt_elo` gives the one to print at the end.
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
    "SCORE_LIMIT",
    "ZERO_COUNT",
    "Decision",
    "EloEstimate",
    "Overshoot",
    "PairCounts",
    "PairOutcome",
    "SprtStatus",
    "SprtTest",
    "StoppingRule",
    "constrained_mle",
    "elo_estimate",
    "elo_to_score",
    "log_likelihood_ratio",
    "regularised_counts",
    "run_sprt",
    "score_to_elo",
    "sprt_bounds",
]

#: The score of a pair for the new bot, indexed by the matches it won in the pair (0, 1, 2).
PAIR_SCORES = (0.0, 0.5, 1.0)
#: What an empty count weighs in the likelihood ratio (fishtest's regularisation).
ZERO_COUNT = 1e-3
#: How close to 0 or 1 an estimated score may come (fishtest's ``elo``): ±1200 Elo at most.
SCORE_LIMIT = 1e-3
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
        if outcome == PairOutcome.WON_BOTH:
            return PairCounts(self.lost_both, self.split, self.won_both + 1)
        if outcome == PairOutcome.SPLIT:
            return PairCounts(self.lost_both, self.split + 1, self.won_both)
        return PairCounts(self.lost_both + 1, self.split, self.won_both)

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


def regularised_counts(counts: PairCounts) -> tuple[float, float, float]:
    """The counts with every zero replaced by :data:`ZERO_COUNT` (fishtest's ``regularize``)."""
    lost_both, split, won_both = counts.as_tuple()
    return (
        float(lost_both) if lost_both else ZERO_COUNT,
        float(split) if split else ZERO_COUNT,
        float(won_both) if won_both else ZERO_COUNT,
    )


def _pair_multiplier(frequencies: tuple[float, float, float], mean: float) -> float:
    """``λ`` of :func:`constrained_mle` for the three pair scores, in closed form.

    With ``d_i = a_i - mean``, multiplying ``Σ p_i d_i / (1 + λ d_i) = 0`` by the three
    denominators leaves ``c2 λ² + c1 λ + c0 = 0`` with ``c0 = Σ p_i d_i``,
    ``c1 = c0 Σ d_j - Σ p_i d_i²`` and ``c2 = d_0 d_1 d_2`` (as ``Σ p_i = 1``). Of its two
    roots the one inside the bracket where every ``1 + λ d_i > 0`` is taken; ``c2`` is 0 at
    ``mean = 1/2`` (Elo 0), where the equation is linear, which the form ``c0 / q`` of the
    root handles without dividing by ``c2``.
    """
    low, middle, high = -mean, 0.5 - mean, 1.0 - mean
    p_low, p_middle, p_high = frequencies
    c0 = p_low * low + p_middle * middle + p_high * high
    c1 = c0 * (low + middle + high) - (
        p_low * low * low + p_middle * middle * middle + p_high * high * high
    )
    c2 = low * middle * high
    root = math.sqrt(max(c1 * c1 - 4 * c2 * c0, 0.0))
    q = (root - c1) / 2 if c1 < 0 else -(c1 + root) / 2
    left, right = -1 / high, -1 / low
    for candidate in (c0 / q if q else 0.0, q / c2 if c2 else math.nan):
        if left < candidate < right:
            return candidate
    # Rounding put both roots outside the bracket (counts far from the mean): iterate.
    fitted = constrained_mle(frequencies, PAIR_SCORES, mean)
    return (p_low / fitted[0] - 1) / low


def log_likelihood_ratio(counts: PairCounts, elo0: float, elo1: float) -> float:
    """The generalised log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) for the
    pair counts (fishtest's ``LLR_logistic`` applied to pairs; see the module docstring)."""
    if not counts.pairs:
        return 0.0
    weights = regularised_counts(counts)
    lost, split, won = weights
    total = lost + split + won
    frequencies = (lost / total, split / total, won / total)
    log = math.log
    llr = 0.0
    # Σ n_i log q_i(s1) - Σ n_i log q_i(s0), with log q_i(s) = log p_i - log(1 + λ (a_i - s)).
    for elo, sign in ((elo0, 1.0), (elo1, -1.0)):
        mean = elo_to_score(elo)
        multiplier = _pair_multiplier(frequencies, mean)
        llr += sign * (
            lost * log(1 - multiplier * mean)
            + split * log(1 + multiplier * (0.5 - mean))
            + won * log(1 + multiplier * (1 - mean))
        )
    return llr


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """An Elo difference with a confidence interval."""

    elo: float
    lower: float
    upper: float
    confidence: float

    @property
    def margin(self) -> float:
        """Half the interval's width: the ``±`` of ``elo ± margin``."""
        return (self.upper - self.lower) / 2

    def text(self) -> str:
        """``"+35.2 ± 20.1"``."""
        return f"{signed(self.elo)} ± {self.margin:.1f}"


def signed(value: float) -> str:
    """An Elo figure with its sign and one decimal: ``"+5.1"``, ``"-0.0"`` for -0.01."""
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    # Rounding noise around 0 prints as 0.0; a value just below 0 keeps its "-0.0" (a lower
    # bound of -0.01 says the interval reaches below 0, as fishtest shows it).
    return f"{0.0 if abs(value) < 1e-9 else value:+.1f}"


def _bounded_elo(score: float) -> float:
    return score_to_elo(min(max(score, SCORE_LIMIT), 1 - SCORE_LIMIT))


def elo_estimate(counts: PairCounts, confidence: float = 0.95) -> EloEstimate:
    """The Elo difference of the new bot from its mean pair score, with a normal-approximation
    interval from the spread of the pair scores (the duplicate design's own variance).

    As fishtest's ``get_elo``: the counts are regularised (:func:`regularised_counts`) and
    the scores kept within :data:`SCORE_LIMIT` of 0 and 1, so the figures are finite even
    when every pair went one way or there are next to no pairs.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    weights = regularised_counts(counts)
    total = sum(weights)
    mean = sum(weight * score for weight, score in zip(weights, PAIR_SCORES, strict=True)) / total
    variance = (
        sum(
            weight * (score - mean) ** 2 for weight, score in zip(weights, PAIR_SCORES, strict=True)
        )
        / total
    )
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    margin = z * math.sqrt(variance / total)
    return EloEstimate(
        _bounded_elo(mean), _bounded_elo(mean - margin), _bounded_elo(mean + margin), confidence
    )


class Decision(enum.Enum):
    """Where the test stands."""

    CONTINUE = "continue"
    ACCEPT_H0 = "H0"
    ACCEPT_H1 = "H1"


class StoppingRule(enum.StrEnum):
    """Where the LLR must get to for the test to decide (see the module docstring)."""

    #: Wald's bounds moved inward by the measured overshoot, strict comparisons (fishtest).
    DYNAMIC = "dynamic"
    #: Wald's bounds as they are.
    WALD = "wald"


@dataclass(frozen=True, slots=True)
class Overshoot:
    """The ladder heights of an LLR path so far, from which the overshoot of each bound is
    estimated (fishtest's ``overshoot`` record in ``update_SPRT``).

    ``low`` and ``high`` are the running minimum and maximum of the path, which starts at 0,
    the LLR of no pairs. Each new minimum (maximum) adds its distance from the previous one,
    a ladder height, to ``low_sum`` (``high_sum``) and its square to ``low_squares``
    (``high_squares``).
    """

    low: float = 0.0
    low_sum: float = 0.0
    low_squares: float = 0.0
    high: float = 0.0
    high_sum: float = 0.0
    high_squares: float = 0.0

    def after(self, llr: float) -> Overshoot:
        """These statistics once the path has moved on to ``llr`` (one more pair)."""
        # Built field by field: this runs once per pair, in simulations millions of times.
        if llr < self.low:
            height = self.low - llr
            return Overshoot(
                llr,
                self.low_sum + height,
                self.low_squares + height * height,
                self.high,
                self.high_sum,
                self.high_squares,
            )
        if llr > self.high:
            height = llr - self.high
            return Overshoot(
                self.low,
                self.low_sum,
                self.low_squares,
                llr,
                self.high_sum + height,
                self.high_squares + height * height,
            )
        return self

    @property
    def lower(self) -> float:
        """The expected overshoot of the lower bound, ``Σ H² / (2 Σ H)`` (0 with no height)."""
        return self.low_squares / (2 * self.low_sum) if self.low_sum else 0.0

    @property
    def upper(self) -> float:
        """The expected overshoot of the upper bound, ``Σ H² / (2 Σ H)`` (0 with no height)."""
        return self.high_squares / (2 * self.high_sum) if self.high_sum else 0.0


@dataclass(frozen=True, slots=True)
class SprtStatus:
    """The test after some pairs: the counts, the LLR against its bounds, the decision."""

    counts: PairCounts
    llr: float
    #: The bounds in force: Wald's, less the overshoot estimates under the dynamic rule.
    lower: float
    upper: float
    decision: Decision
    #: Pairs with a void match, skipped.
    void_pairs: int = 0
    #: Void pairs since the last counted one.
    void_in_a_row: int = 0
    #: The ladder statistics of the LLR's path up to here.
    overshoot: Overshoot = Overshoot()

    @property
    def estimate(self) -> EloEstimate:
        """The fixed-sample Elo estimate of the counts (95 %); see :func:`elo_estimate`."""
        return elo_estimate(self.counts)


@dataclass(frozen=True, slots=True)
class SprtTest:
    """An SPRT of H0 ``elo = elo0`` against H1 ``elo = elo1`` with error rates alpha, beta."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    rule: StoppingRule = StoppingRule.DYNAMIC
    _wald: tuple[float, float] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"need elo0 < elo1, got {self.elo0} and {self.elo1}")
        # Raises on bad error rates; kept, as the bounds are wanted at every pair.
        object.__setattr__(self, "_wald", sprt_bounds(self.alpha, self.beta))

    @property
    def bounds(self) -> tuple[float, float]:
        """Wald's LLR bounds (lower: accept H0, upper: accept H1)."""
        return self._wald

    def bounds_in_force(self, overshoot: Overshoot) -> tuple[float, float]:
        """The LLR bounds after a path with these ladder statistics: Wald's under the
        ``wald`` rule, moved inward by the overshoot estimates under the ``dynamic`` one."""
        lower, upper = self.bounds
        if self.rule is StoppingRule.WALD:
            return lower, upper
        return lower + overshoot.lower, upper - overshoot.upper

    def decide(self, llr: float, lower: float, upper: float) -> Decision:
        """The decision at ``llr`` with these bounds in force."""
        if self.rule is StoppingRule.WALD:
            if llr >= upper:
                return Decision.ACCEPT_H1
            if llr <= lower:
                return Decision.ACCEPT_H0
            return Decision.CONTINUE
        # Strict, and the lower bound first, as update_SPRT (they cross only when the
        # overshoot estimates exceed the distance between Wald's bounds).
        if llr < lower:
            return Decision.ACCEPT_H0
        if llr > upper:
            return Decision.ACCEPT_H1
        return Decision.CONTINUE

    def status(
        self, counts: PairCounts, void_pairs: int = 0, overshoot: Overshoot | None = None
    ) -> SprtStatus:
        """The test's status after ``counts``; ``overshoot``: the ladder statistics of the
        path that led there, this LLR included. Without them (a first look at counts whose
        path is unknown) there is no correction yet and the path's extremes start at this
        LLR, as ``update_SPRT`` does after a gap in its updates."""
        llr = log_likelihood_ratio(counts, self.elo0, self.elo1)
        if overshoot is None:
            overshoot = Overshoot(low=llr, high=llr)
        lower, upper = self.bounds_in_force(overshoot)
        decision = self.decide(llr, lower, upper)
        return SprtStatus(counts, llr, lower, upper, decision, void_pairs, 0, overshoot)

    def start(self) -> SprtStatus:
        """The status before the first pair."""
        return self.status(PairCounts(), overshoot=Overshoot())

    def advance(self, status: SprtStatus, outcome: PairOutcome | None) -> SprtStatus:
        """The status after one more pair; None, a void pair, is skipped but counted."""
        if outcome is None:
            return dataclasses.replace(
                status, void_pairs=status.void_pairs + 1, void_in_a_row=status.void_in_a_row + 1
            )
        counts = status.counts.add(outcome)
        llr = log_likelihood_ratio(counts, self.elo0, self.elo1)
        overshoot = status.overshoot.after(llr)
        lower, upper = self.bounds_in_force(overshoot)
        decision = self.decide(llr, lower, upper)
        return SprtStatus(counts, llr, lower, upper, decision, status.void_pairs, 0, overshoot)


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
    status = test.start()
    number = 0
    while max_pairs is None or number < max_pairs:
        number += 1
        outcome = play_pair(number)
        status = test.advance(status, outcome)
        if on_pair is not None:
            on_pair(number, outcome, status)
        if status.decision is not Decision.CONTINUE:
            break
        if max_void_in_a_row is not None and status.void_in_a_row >= max_void_in_a_row:
            break
    return status
