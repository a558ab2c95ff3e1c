"""Elo by maximum likelihood, checked against exact answers and an independent computation
(plain gradient ascent on the Elo scale, and a finite-difference Hessian for the errors)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np
import pytest

from tournaments.stats.ratings import (
    ELO_PER_NATURAL_UNIT,
    MATCH_UNIT,
    PAIR_UNIT,
    RatingFit,
    _inverse,
    expected_score,
    fit_elo,
)
from tournaments.stats.sprt import PAIR_SCORES, PairCounts, elo_estimate

# A small tournament with uneven schedules and no perfect record.
NAMES = ("a", "b", "c", "d")
WINS = {
    ("a", "b"): 7,
    ("b", "a"): 3,
    ("a", "c"): 8,
    ("c", "a"): 2,
    ("b", "c"): 5,
    ("c", "b"): 5,
    ("b", "d"): 6,
    ("d", "b"): 1,
    ("c", "d"): 4,
    ("d", "c"): 4,
    ("d", "a"): 1,
    ("a", "d"): 2,
}


def log_likelihood(
    ratings: Mapping[str, float], wins: Mapping[tuple[str, str], float], virtual: float
) -> float:
    """The objective written directly on the Elo scale, prior included, independently."""
    total = 0.0
    met = {frozenset(pair) for pair, count in wins.items() if count > 0}
    counts = dict(wins)
    for pair in met:
        first, second = sorted(pair)
        counts[(first, second)] = counts.get((first, second), 0) + virtual / 2
        counts[(second, first)] = counts.get((second, first), 0) + virtual / 2
    for (winner, loser), count in counts.items():
        total += count * math.log(expected_score(ratings[winner] - ratings[loser]))
    return total


def gradient_ascent(
    names: Sequence[str], wins: Mapping[tuple[str, str], float], virtual: float
) -> dict[str, float]:
    """Maximise the likelihood by plain gradient ascent with numerical gradients, mean 1500."""
    ratings = dict.fromkeys(names, 1500.0)
    step = 2000.0
    current = log_likelihood(ratings, wins, virtual)
    for _ in range(20000):
        gradient = {}
        for name in names:
            moved = dict(ratings)
            moved[name] += 1e-4
            gradient[name] = (log_likelihood(moved, wins, virtual) - current) / 1e-4
        candidate = {name: ratings[name] + step * gradient[name] for name in names}
        value = log_likelihood(candidate, wins, virtual)
        if value > current:
            ratings, current = candidate, value
            step *= 1.2
        else:
            step /= 2
        if step < 1e-9:
            break
    mean = sum(ratings.values()) / len(ratings)
    return {name: value - mean + 1500 for name, value in ratings.items()}


def test_agrees_with_gradient_ascent() -> None:
    fit = fit_elo(NAMES, WINS)
    independent = gradient_ascent(NAMES, WINS, virtual=1.0)
    for name in NAMES:
        assert fit.ratings[name].elo == pytest.approx(independent[name], abs=0.05)
    assert sum(fit.ratings[name].elo or 0 for name in NAMES) / 4 == pytest.approx(1500)


def test_agrees_with_gradient_ascent_without_prior() -> None:
    fit = fit_elo(NAMES, WINS, virtual_draws=0)
    independent = gradient_ascent(NAMES, WINS, virtual=0.0)
    for name in NAMES:
        assert fit.ratings[name].elo == pytest.approx(independent[name], abs=0.05)


def test_errors_agree_with_a_finite_difference_hessian() -> None:
    """With bot a anchored, the covariance of the others is the inverse of the negative
    Hessian of the log-likelihood (Elo scale) in the other three ratings."""
    fit = fit_elo(NAMES, WINS, anchor="a")
    best = {name: fit.ratings[name].elo or 0.0 for name in NAMES}
    free = ["b", "c", "d"]
    h = 0.5

    def value(shift: Mapping[str, float]) -> float:
        moved = {name: best[name] + shift.get(name, 0.0) for name in NAMES}
        return log_likelihood(moved, WINS, 1.0)

    hessian = [[0.0] * 3 for _ in range(3)]
    for i, first in enumerate(free):
        for j, second in enumerate(free):
            if i == j:
                corners = [value({first: 2 * h}), value({}), value({}), value({first: -2 * h})]
            else:
                corners = [
                    value({first: sign_first * h, second: sign_second * h})
                    for sign_first, sign_second in ((1, 1), (1, -1), (-1, 1), (-1, -1))
                ]
            hessian[i][j] = (corners[0] - corners[1] - corners[2] + corners[3]) / (4 * h * h)
    # Invert the 3x3 negative Hessian by cofactors.
    m = [[-value for value in row] for row in hessian]
    det = (
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    )
    diagonal = [
        (m[1][1] * m[2][2] - m[1][2] * m[2][1]) / det,
        (m[0][0] * m[2][2] - m[0][2] * m[2][0]) / det,
        (m[0][0] * m[1][1] - m[0][1] * m[1][0]) / det,
    ]
    for name, variance in zip(free, diagonal, strict=True):
        assert fit.ratings[name].stderr == pytest.approx(math.sqrt(variance), rel=1e-3)
    anchor = fit.ratings["a"]
    assert (anchor.elo, anchor.stderr, anchor.low, anchor.high) == (1500, 0, 1500, 1500)


def test_two_bots_exact() -> None:
    fit = fit_elo(["x", "y"], {("x", "y"): 3, ("y", "x"): 1}, virtual_draws=0)
    half = 200 * math.log10(3)  # p = 3/4: a difference of 400 log10 3, split around 1500
    x, y = fit.ratings["x"], fit.ratings["y"]
    assert x.elo == pytest.approx(1500 + half)
    assert y.elo == pytest.approx(1500 - half)
    # var(θx - θy) = 1 / (n p (1 - p)); each rating carries a quarter of it.
    stderr = math.sqrt(1 / (4 * 0.75 * 0.25) / 4) * 400 / math.log(10)
    assert x.stderr == pytest.approx(stderr)
    assert x.elo is not None
    assert x.high == pytest.approx(x.elo + 1.959964 * stderr, rel=1e-6)
    assert x.low == pytest.approx(x.elo - 1.959964 * stderr, rel=1e-6)
    difference = math.log(3) / math.sqrt(1 / (4 * 0.75 * 0.25))
    assert fit.los["x"]["y"] == pytest.approx(NormalDist().cdf(difference))
    assert fit.los["x"]["y"] + fit.los["y"]["x"] == pytest.approx(1)


def test_symmetric_results_give_equal_ratings() -> None:
    cycle = {
        ("a", "b"): 2,
        ("b", "a"): 1,
        ("b", "c"): 2,
        ("c", "b"): 1,
        ("c", "a"): 2,
        ("a", "c"): 1,
    }
    fit = fit_elo(["a", "b", "c"], cycle, virtual_draws=0)
    for name in "abc":
        assert fit.ratings[name].elo == pytest.approx(1500)
    assert fit.los["a"]["b"] == pytest.approx(0.5)
    even = fit_elo(["p", "q"], {("p", "q"): 5, ("q", "p"): 5})
    assert even.ratings["p"].elo == pytest.approx(1500)


def test_perfect_record_stays_finite_with_virtual_draws() -> None:
    fit = fit_elo(["w", "l"], {("w", "l"): 5})  # one virtual draw: 5.5 wins to 0.5
    difference = (fit.ratings["w"].elo or 0) - (fit.ratings["l"].elo or 0)
    assert difference == pytest.approx(400 * math.log10(11))
    with pytest.raises(ValueError, match="infinite"):
        fit_elo(["w", "l"], {("w", "l"): 5}, virtual_draws=0)


def test_joint_fit_is_not_a_pooled_score() -> None:
    """a beats b as often as b beats c: a is as far above b as b is above c, although a and c
    never met."""
    fit = fit_elo(["a", "b", "c"], {("a", "b"): 9, ("b", "a"): 1, ("b", "c"): 9, ("c", "b"): 1})
    a, b, c = (fit.ratings[name].elo or 0 for name in "abc")
    assert a - b == pytest.approx(b - c)
    assert b == pytest.approx(1500)
    assert fit.los["a"]["c"] > fit.los["a"]["b"] > 0.5


def test_anchor_shifts_without_changing_differences() -> None:
    mean = fit_elo(NAMES, WINS)
    anchored = fit_elo(NAMES, WINS, anchor="c", anchor_elo=2000)
    assert anchored.ratings["c"].elo == pytest.approx(2000)
    shift = (anchored.ratings["a"].elo or 0) - (mean.ratings["a"].elo or 0)
    for name in NAMES:
        assert (anchored.ratings[name].elo or 0) - (mean.ratings[name].elo or 0) == (
            pytest.approx(shift)
        )
        for other in NAMES:
            if other != name:
                assert anchored.los[name][other] == pytest.approx(mean.los[name][other])
    with pytest.raises(ValueError, match="anchor"):
        fit_elo(NAMES, WINS, anchor="zz")


def test_disconnected_results_warn_and_fit_each_group() -> None:
    fit = fit_elo(
        ["a", "b", "c", "d", "idle"],
        {("a", "b"): 3, ("b", "a"): 1, ("c", "d"): 1, ("d", "c"): 1},
    )
    assert len(fit.warnings) == 1
    assert "2 groups" in fit.warnings[0]
    assert "{a, b}; {c, d}" in fit.warnings[0]
    assert fit.components == (("a", "b"), ("c", "d"))
    assert (fit.ratings["a"].elo or 0) + (fit.ratings["b"].elo or 0) == pytest.approx(3000)
    assert fit.ratings["c"].elo == pytest.approx(1500)
    assert "c" not in fit.los["a"]
    idle = fit.ratings["idle"]
    assert (idle.elo, idle.low, idle.high, idle.component) == (None, None, None, None)


def test_no_results_at_all() -> None:
    fit = fit_elo(["a", "b"], {})
    assert fit.ratings["a"].elo is None
    assert fit.warnings == ()
    assert fit.components == ()


# ---------------------------------------------------------------------------------------------
# Duplicate pairs as the unit of the intervals

# Pairs between the four bots: (first, second, first's wins, second's wins) -> pairs.
PAIRS = {
    ("a", "b", 2, 0): 3,
    ("a", "b", 1, 1): 2,
    ("a", "b", 0, 2): 1,
    ("a", "c", 2, 0): 4,
    ("a", "c", 1, 1): 1,
    ("a", "c", 1, 0): 1,  # the other match of this pair was void
    ("b", "c", 1, 1): 4,
    ("b", "c", 2, 0): 1,
    ("b", "c", 0, 2): 1,
    ("b", "d", 2, 0): 3,
    ("b", "d", 1, 1): 1,
    ("c", "d", 1, 1): 3,
    ("c", "d", 0, 2): 1,
    ("d", "a", 1, 1): 1,
    ("d", "a", 0, 2): 1,
}


def wins_of(pairs: Mapping[tuple[str, str, int, int], int]) -> dict[tuple[str, str], int]:
    """The match wins that the pairs hold."""
    wins: dict[tuple[str, str], int] = {}
    for (first, second, first_wins, second_wins), count in pairs.items():
        for winner, loser, won in ((first, second, first_wins), (second, first, second_wins)):
            if won:
                wins[(winner, loser)] = wins.get((winner, loser), 0) + won * count
    return wins


def invert(matrix: list[list[float]]) -> list[list[float]]:
    """Gauss-Jordan inversion, for a small well-conditioned matrix."""
    size = len(matrix)
    rows = [[*row, *(1.0 if i == j else 0.0 for j in range(size))] for i, row in enumerate(matrix)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda row: abs(rows[row][column]))
        rows[column], rows[pivot] = rows[pivot], rows[column]
        head = [value / rows[column][column] for value in rows[column]]
        rows[column] = head
        for row in range(size):
            if row != column:
                factor = rows[row][column]
                rows[row] = [a - factor * b for a, b in zip(rows[row], head, strict=True)]
    return [row[size:] for row in rows]


def test_pair_errors_are_the_sprt_errors_for_two_bots() -> None:
    """Two bots, complete pairs, no prior: the pair standard error is the SPRT's standard
    error of the mean pair score, carried to the Elo scale by the slope of the logistic."""
    counts = PairCounts(lost_both=2, split=7, won_both=5)
    pairs = {("new", "old", 2, 0): 5, ("new", "old", 1, 1): 7, ("new", "old", 0, 2): 2}
    fit = fit_elo(["new", "old"], wins_of(pairs), anchor="old", virtual_draws=0, pairs=pairs)
    assert fit.unit == PAIR_UNIT
    new = fit.ratings["new"]
    estimate = elo_estimate(counts)
    assert new.elo is not None
    assert new.elo - 1500 == pytest.approx(estimate.elo)
    mean = counts.mean_score
    spread = sum(
        count * (score - mean) ** 2
        for count, score in zip(counts.as_tuple(), PAIR_SCORES, strict=True)
    )
    score_error = math.sqrt(spread / counts.pairs / counts.pairs)
    assert new.stderr == pytest.approx(score_error * ELO_PER_NATURAL_UNIT / (mean * (1 - mean)))
    # The match interval: 28 independent matches, as before.
    matches = 2 * counts.pairs
    assert new.match_stderr == pytest.approx(
        ELO_PER_NATURAL_UNIT / math.sqrt(matches * mean * (1 - mean))
    )
    # Seven split pairs out of fourteen: the cards decided half of them, and the pairs are
    # steadier than independent matches would be.
    assert new.stderr < new.match_stderr
    assert new.high == pytest.approx(new.elo + 1.959964 * new.stderr, rel=1e-6)
    assert new.match_low == pytest.approx(new.elo - 1.959964 * new.match_stderr, rel=1e-6)


def test_pairs_of_single_matches_give_the_match_interval() -> None:
    pairs = {("x", "y", 1, 0): 17, ("x", "y", 0, 1): 11}
    fit = fit_elo(["x", "y"], wins_of(pairs), virtual_draws=0, pairs=pairs)
    x = fit.ratings["x"]
    assert x.stderr == pytest.approx(x.match_stderr)
    assert fit.los["x"]["y"] == pytest.approx(
        fit_elo(["x", "y"], wins_of(pairs), virtual_draws=0).los["x"]["y"]
    )


def test_pairs_that_never_split_widen_the_interval() -> None:
    """Both matches of each pair go the same way: a pair is one result told twice."""
    pairs = {("x", "y", 2, 0): 12, ("x", "y", 0, 2): 8}
    x = fit_elo(["x", "y"], wins_of(pairs), pairs=pairs).ratings["x"]
    assert x.stderr is not None
    assert x.match_stderr is not None
    assert x.stderr == pytest.approx(math.sqrt(2) * x.match_stderr, rel=0.05)
    without = fit_elo(["x", "y"], wins_of(pairs)).ratings["x"]
    assert (without.low, without.high) == (x.match_low, x.match_high)
    assert without.elo == x.elo


def test_pair_errors_agree_with_a_finite_difference_sandwich() -> None:
    """With bot a anchored, the pair covariance of the others is H⁻¹ (Σ g gᵀ) H⁻¹: H the
    Hessian of the whole log-likelihood (prior included), g the gradient of one pair's,
    both by finite differences on the Elo scale."""
    wins = wins_of(PAIRS)
    fit = fit_elo(NAMES, wins, anchor="a", pairs=PAIRS)
    best = {name: fit.ratings[name].elo or 0.0 for name in NAMES}
    free = ["b", "c", "d"]
    h = 0.5

    def moved(shift: Mapping[str, float]) -> dict[str, float]:
        return {name: best[name] + shift.get(name, 0.0) for name in NAMES}

    def value(shift: Mapping[str, float]) -> float:
        return log_likelihood(moved(shift), wins, 1.0)

    hessian = [[0.0] * 3 for _ in range(3)]
    for i, first in enumerate(free):
        for j, second in enumerate(free):
            corners = [
                value({first: sign_first * h, second: sign_second * h})
                if i != j
                else value({first: (sign_first + sign_second) * h})
                for sign_first, sign_second in ((1, 1), (1, -1), (-1, 1), (-1, -1))
            ]
            hessian[i][j] = (corners[0] - corners[1] - corners[2] + corners[3]) / (4 * h * h)
    spread = [[0.0] * 3 for _ in range(3)]
    for key, count in PAIRS.items():
        one = wins_of({key: 1})
        gradient = [
            (
                log_likelihood(moved({name: h}), one, 0.0)
                - log_likelihood(moved({name: -h}), one, 0.0)
            )
            / (2 * h)
            for name in free
        ]
        for i in range(3):
            for j in range(3):
                spread[i][j] += count * gradient[i] * gradient[j]
    bread = invert([[-value for value in row] for row in hessian])
    sandwich = [
        [sum(bread[i][k] * spread[k][m] * bread[m][j] for k in range(3) for m in range(3))
         for j in range(3)]
        for i in range(3)
    ]  # fmt: skip
    for index, name in enumerate(free):
        assert fit.ratings[name].stderr == pytest.approx(
            math.sqrt(sandwich[index][index]), rel=2e-3
        )
        assert fit.ratings[name].match_stderr == pytest.approx(
            math.sqrt(bread[index][index]), rel=2e-3
        )
    # The LOS uses the pair covariance.
    variance = sandwich[0][0] + sandwich[1][1] - 2 * sandwich[0][1]
    assert fit.los["b"]["c"] == pytest.approx(
        NormalDist().cdf((best["b"] - best["c"]) / math.sqrt(variance)), rel=1e-3
    )


def test_pairs_must_be_the_matches_of_the_wins() -> None:
    with pytest.raises(ValueError, match="do not add up"):
        fit_elo(["x", "y"], {("x", "y"): 3}, pairs={("x", "y", 2, 0): 1})
    with pytest.raises(ValueError, match="one or two decided matches"):
        fit_elo(["x", "y"], {("x", "y"): 3}, pairs={("x", "y", 3, 0): 1})
    assert fit_elo(["x", "y"], {}, pairs={}).unit == PAIR_UNIT
    assert fit_elo(["x", "y"], {}).unit == MATCH_UNIT


def random_field(
    count: int, share: float, seed: int
) -> tuple[
    list[str], dict[str, float], dict[tuple[str, str], int], dict[tuple[str, str, int, int], int]
]:
    """Bots of true Elo ~ N(0, 200²) meeting in random duplicate pairs, ``share`` of a round
    robin's pairs, each pair two independent matches: names, truth, wins and pairs."""
    rng = random.Random(seed)
    names = [f"b{index:03d}" for index in range(count)]
    truth = {name: rng.gauss(0, 200) for name in names}
    wins: dict[tuple[str, str], int] = {}
    pairs: dict[tuple[str, str, int, int], int] = {}
    for _ in range(round(share * count * (count - 1) / 2)):
        first, second = rng.sample(names, 2)
        chance = expected_score(truth[first] - truth[second])
        won = sum(rng.random() < chance for _ in range(2))
        pairs[(first, second, won, 2 - won)] = pairs.get((first, second, won, 2 - won), 0) + 1
        for winner, loser, count_won in ((first, second, won), (second, first, 2 - won)):
            if count_won:
                wins[(winner, loser)] = wins.get((winner, loser), 0) + count_won
    return names, truth, wins, pairs


def slope_and_coverage(fit: RatingFit, truth: Mapping[str, float]) -> tuple[float, float]:
    """Least-squares slope of fitted on true Elo, and the share of intervals holding it."""
    mean_truth = sum(truth.values()) / len(truth)
    centred = {name: value - mean_truth + 1500 for name, value in truth.items()}
    xs = [centred[name] - 1500 for name in truth]
    ys = [(fit.ratings[name].elo or 0.0) - 1500 for name in truth]
    slope = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)
    covered = sum(
        (fit.ratings[name].low or 0.0) <= centred[name] <= (fit.ratings[name].high or 0.0)
        for name in truth
    )
    return slope, covered / len(truth)


def test_a_prior_of_games_against_the_mean_keeps_the_spread_where_pairs_meet_once() -> None:
    """Random pairs at 5 % of a round robin: virtual draws per pair that met compress the
    ratings; a few games against a virtual mean bot do not, and the intervals cover."""
    names, truth, wins, pairs = random_field(400, 0.05, seed=3)
    with_games = fit_elo(names, wins, pairs=pairs, virtual_draws=0, prior_games=2)
    with_draws = fit_elo(names, wins, pairs=pairs)
    slope, coverage = slope_and_coverage(with_games, truth)
    draws_slope, draws_coverage = slope_and_coverage(with_draws, truth)
    assert 0.9 < slope < 1.05
    assert 0.9 <= coverage <= 0.99
    assert draws_slope < 0.8
    assert draws_coverage < 0.8
    assert with_games.prior_games == 2
    assert not with_games.warnings


def test_the_prior_of_games_is_the_maximum_of_its_own_objective() -> None:
    """Independently: at the fit, the log-likelihood plus the prior's games against a
    virtual bot has no slope in any rating (the virtual bot's Elo found by bisection)."""
    prior = 2.0
    fit = fit_elo(NAMES, WINS, virtual_draws=0, prior_games=prior)
    best = {name: fit.ratings[name].elo or 0.0 for name in NAMES}

    def prior_slope(virtual: float) -> float:
        return sum(prior * (0.5 - expected_score(best[name] - virtual)) for name in NAMES)

    low, high = 0.0, 3000.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if prior_slope(middle) < 0 else (low, middle)
    virtual = (low + high) / 2

    def objective(ratings: Mapping[str, float]) -> float:
        total = log_likelihood(ratings, WINS, 0.0)
        for name in NAMES:
            total += prior / 2 * math.log(expected_score(ratings[name] - virtual))
            total += prior / 2 * math.log(expected_score(virtual - ratings[name]))
        return total

    for name in NAMES:
        up = objective({**best, name: best[name] + 1e-3})
        down = objective({**best, name: best[name] - 1e-3})
        assert (up - down) / 2e-3 == pytest.approx(0, abs=1e-6)
    assert sum(best.values()) / 4 == pytest.approx(1500)


def test_a_prior_of_games_compares_bots_that_never_met_a_common_opponent() -> None:
    wins = {("a", "b"): 3, ("b", "a"): 1, ("c", "d"): 1, ("d", "c"): 3}
    fit = fit_elo(["a", "b", "c", "d"], wins, virtual_draws=0, prior_games=2)
    assert not fit.warnings
    assert len(fit.components) == 2
    assert fit.los["a"]["d"] == pytest.approx(0.5, abs=0.01)
    assert fit.los["a"]["c"] > 0.5
    assert dict(fit.los["a"]).keys() == {"b", "c", "d"}


def test_the_match_los_sits_beside_the_pair_los() -> None:
    pairs = {("x", "y", 2, 0): 5, ("x", "y", 1, 1): 5, ("x", "y", 0, 2): 2}
    wins = {("x", "y"): 15, ("y", "x"): 9}
    by_pair = fit_elo(["x", "y"], wins, pairs=pairs)
    by_match = fit_elo(["x", "y"], wins)
    assert by_pair.match_los["x"]["y"] == pytest.approx(by_match.los["x"]["y"])
    assert by_pair.los["x"]["y"] != pytest.approx(by_match.los["x"]["y"])
    assert by_match.match_los["x"]["y"] == by_match.los["x"]["y"]


def test_a_prior_of_games_with_an_anchor_keeps_the_differences() -> None:
    mean = fit_elo(NAMES, WINS, virtual_draws=0, prior_games=2)
    anchored = fit_elo(NAMES, WINS, virtual_draws=0, prior_games=2, anchor="c", anchor_elo=2000)
    assert anchored.ratings["c"].elo == pytest.approx(2000)
    assert anchored.ratings["c"].stderr == pytest.approx(0, abs=1e-9)
    for name in NAMES:
        difference = (mean.ratings[name].elo or 0) - (mean.ratings["c"].elo or 0)
        assert (anchored.ratings[name].elo or 0) - 2000 == pytest.approx(difference)
    assert anchored.los["a"]["b"] == pytest.approx(mean.los["a"]["b"], abs=0.02)


# ---------------------------------------------------------------------------------------------
# Small samples: Firth's bias reduction, the CR3 sandwich and Student's t


def test_small_sample_ratings_are_firths_for_two_bots() -> None:
    """For two bots Firth's estimate has a closed form: half a win added to each side, the
    score (wins + 1/2) / (matches + 1); one step from the MLE reaches it."""
    wins = {("x", "y"): 7, ("y", "x"): 3}
    fit = fit_elo(["x", "y"], wins, virtual_draws=0, small_sample=True, anchor="y")
    plain = fit_elo(["x", "y"], wins, virtual_draws=0, anchor="y")
    assert (fit.ratings["x"].elo or 0) - 1500 == pytest.approx(400 * math.log10(7.5 / 3.5))
    assert (plain.ratings["x"].elo or 0) - 1500 == pytest.approx(400 * math.log10(7 / 3))


def test_small_sample_pair_errors_are_the_cr3_sandwich_with_t_quantiles() -> None:
    """Two bots, no prior: each pair's leverage is its share of the decided matches, so the
    CR3 variance divides each squared pair residual by (1 - d / N)²; the interval takes
    Student's t with one degree of freedom fewer than the pairs."""
    pairs = {("new", "old", 2, 0): 5, ("new", "old", 1, 1): 7, ("new", "old", 0, 2): 2}
    pairs_with_a_void = {**pairs, ("new", "old", 1, 0): 1}
    fit = fit_elo(
        ["new", "old"],
        wins_of(pairs_with_a_void),
        anchor="old",
        virtual_draws=0,
        pairs=pairs_with_a_void,
        small_sample=True,
    )
    matches = 2 * 14 + 1
    score = (5 * 2 + 7 + 1 + 0.5) / (matches + 1)  # Firth's
    information = matches * score * (1 - score)
    spread = sum(
        count * (won - decided * score) ** 2 / (1 - decided / matches) ** 2
        for won, decided, count in ((2, 2, 5), (1, 2, 7), (0, 2, 2), (1, 1, 1))
    )
    new = fit.ratings["new"]
    assert new.stderr == pytest.approx(math.sqrt(spread) / information * ELO_PER_NATURAL_UNIT)
    assert new.match_stderr == pytest.approx(ELO_PER_NATURAL_UNIT / math.sqrt(information))
    t_14 = 2.1447866879  # Student's t, 14 degrees of freedom, 97.5 %
    assert new.elo is not None
    assert new.high == pytest.approx(new.elo + t_14 * new.stderr)
    assert new.match_high == pytest.approx(new.elo + 1.959964 * new.match_stderr, rel=1e-6)


def test_small_sample_corrections_vanish_with_many_pairs() -> None:
    """A round robin with many pairs per two bots: leverages near 0, t near z, and the
    corrected fit within a few per cent of the plain one."""
    pairs = {key: count * 20 for key, count in PAIRS.items()}
    plain = fit_elo(NAMES, wins_of(pairs), pairs=pairs)
    corrected = fit_elo(NAMES, wins_of(pairs), pairs=pairs, small_sample=True)
    for name in NAMES:
        before, after = plain.ratings[name], corrected.ratings[name]
        assert after.elo == pytest.approx(before.elo, abs=2)
        assert after.stderr == pytest.approx(before.stderr, rel=0.03)
        assert after.high == pytest.approx(before.high, abs=2)


def test_the_cholesky_inverse_agrees_with_a_general_one() -> None:
    """Positive definite: by Cholesky; indefinite (never an information matrix, but the
    fallback must hold): a general inverse."""
    rng = np.random.default_rng(5)
    square = rng.normal(size=(6, 6))
    for matrix in (square @ square.T + np.eye(6), square + square.T):
        assert np.allclose(_inverse(matrix), np.linalg.inv(matrix))
