"""The Elo of a stopped SPRT: the exit law of the Brownian walk against the method of images,
the estimate against fishtest's ``SPRT_elo`` and against its own definition, the edges."""

from __future__ import annotations

import math

import pytest

from tests.tournaments.sprt_formulas import images_probability, walk_of
from tournaments.stats.sprt import PairCounts, SprtTest, StoppingRule
from tournaments.stats.sprt_elo import (
    ELO_SEARCH_LIMIT,
    SequentialEstimate,
    sequential_estimate,
    worse_outcome_probability,
)

A, B = math.log(0.05 / 0.95), math.log(0.95 / 0.05)


@pytest.mark.parametrize(
    ("lower", "upper", "drift", "variance", "time", "position"),
    [
        # The eigenfunction series: some diffusion times, moderate drift.
        (A, B, 0.0, 0.01, 300.0, 0.5),
        (A, B, 0.002, 0.01, 300.0, -1.0),
        (A, B, -0.004, 0.02, 900.0, A),  # accepted H0 at that time
        (A, B, 0.004, 0.02, 900.0, B),  # accepted H1 at that time
        (-1.5, 3.0, 0.01, 0.05, 40.0, 2.0),
        # Short times (Siegmund's single reflection).
        (A, B, 0.02, 0.01, 10.0, 0.3),
        (A, B, -0.05, 0.02, 5.0, A),
        # Strong drift.
        (A, B, 0.05, 0.01, 60.0, B),
        (A, B, -0.06, 0.01, 40.0, -1.0),
    ],
)
def test_exit_law_equals_the_method_of_images(
    lower: float, upper: float, drift: float, variance: float, time: float, position: float
) -> None:
    assert worse_outcome_probability(
        lower, upper, drift, variance, time, position
    ) == pytest.approx(images_probability(lower, upper, drift, variance, time, position), abs=1e-6)


def test_exit_law_orders_the_outcomes() -> None:
    values = [worse_outcome_probability(A, B, 0.001, 0.01, 400.0, y) for y in (A, -1, 0, 1, B)]
    assert values == sorted(values)
    assert 0 < values[0] < values[-1] < 1
    drifts = [worse_outcome_probability(A, B, mu, 0.01, 400.0, 0.5) for mu in (-0.01, 0, 0.01)]
    assert drifts == sorted(drifts, reverse=True)  # the more drift, the rarer a worse outcome
    with pytest.raises(ValueError, match="lower < 0 < upper"):
        worse_outcome_probability(1.0, 2.0, 0.0, 0.01, 1.0, 1.5)


# fishtest's stat_util.SPRT_elo({"losses": L, "draws": D, "wins": W}, elo0, elo1,
# elo_model="logistic") for pair counts (L, D, W), computed with its published code:
# Elo, interval, LOS. The counts at (0, 50) are where the sequences of test_sprt.py stop.
FISHTEST_SPRT_ELO = [
    (
        PairCounts(2000, 5000, 2150),
        (0, 5),
        (5.143820487788127, -0.01056736295266113, 10.096957073313073, 0.9747739579986161),
    ),
    (
        PairCounts(0, 17, 5),
        (0, 50),
        (74.34804980706558, 9.671453460725875, 143.02556338029095, 0.9877986237584812),
    ),
    (
        PairCounts(14, 45, 30),
        (0, 50),
        (54.726081123241435, 1.171508626703024, 108.8558672945806, 0.9773326382988612),
    ),
    (
        PairCounts(41, 79, 42),
        (0, 50),
        (10.161580840871448, -30.39494736793224, 53.923019775492726, 0.6863380820751447),
    ),
    (
        PairCounts(16, 38, 12),
        (0, 50),
        (-12.841369745720321, -69.95825135319532, 45.26897862581491, 0.32924613450190554),
    ),
    (
        PairCounts(0, 1, 0),
        (0, 20),
        (0.0017881811988546708, -30.469325802465203, 30.473554414591863, 0.5000460033930438),
    ),
]


@pytest.mark.parametrize(("counts", "hypotheses", "expected"), FISHTEST_SPRT_ELO)
def test_estimate_equals_fishtests(
    counts: PairCounts, hypotheses: tuple[float, float], expected: tuple[float, ...]
) -> None:
    for rule in StoppingRule:  # the walk's bounds are Wald's under both rules
        estimate = sequential_estimate(SprtTest(*hypotheses, rule=rule), counts)
        figures = (estimate.elo, estimate.lower, estimate.upper, estimate.los)
        assert figures == pytest.approx(expected, abs=1e-6)


def test_the_issue_example_prints_as_fishtest_shows_it() -> None:
    estimate = sequential_estimate(SprtTest(0, 5), PairCounts(2000, 5000, 2150))
    assert estimate.text() == "+5.1 [-0.0, +10.1]"
    assert isinstance(estimate, SequentialEstimate)
    assert estimate.confidence == 0.95


@pytest.mark.parametrize(
    ("counts", "hypotheses"),
    [
        (PairCounts(14, 45, 30), (0, 50)),  # stopped by the dynamic rule inside Wald's bounds
        (PairCounts(41, 79, 42), (0, 50)),  # stopped past Wald's lower bound
        (PairCounts(30, 60, 35), (0, 20)),  # still running
    ],
)
def test_estimate_meets_its_definition(counts: PairCounts, hypotheses: tuple[float, float]) -> None:
    """At the estimate the chance of a worse outcome is 1/2; at the ends of the interval
    97.5 % and 2.5 %; at Elo 0 it is the LOS: with that chance recomputed here."""
    estimate = sequential_estimate(SprtTest(*hypotheses), counts)
    drift, variance, time, position = walk_of(counts, *hypotheses)

    def worse(elo: float) -> float:
        return images_probability(A, B, drift(elo), variance, time, position)

    assert worse(estimate.elo) == pytest.approx(0.5, abs=1e-6)
    assert worse(estimate.lower) == pytest.approx(0.975, abs=1e-6)
    assert worse(estimate.upper) == pytest.approx(0.025, abs=1e-6)
    assert worse(0.0) == pytest.approx(estimate.los, abs=1e-6)


def test_edges_are_finite() -> None:
    test = SprtTest(0, 20)
    won = sequential_estimate(test, PairCounts(0, 0, 3))
    lost = sequential_estimate(test, PairCounts(3, 0, 0))
    # fishtest: +907.0 [+314.4, +1000] and -906.9 [-1000, -308.8]; the tails of its normal
    # distribution are approximated there, so the last digits may differ.
    assert won.elo == pytest.approx(906.96, abs=0.05)
    assert won.lower == pytest.approx(314.43, abs=0.01)
    assert won.upper == ELO_SEARCH_LIMIT  # beyond the search: the interval is open above
    assert lost.elo == pytest.approx(-906.95, abs=0.05)
    assert lost.lower == -ELO_SEARCH_LIMIT
    assert won.text() == "+907.0 [+314.4, +1000.0]"
    for estimate in (won, lost, sequential_estimate(test, PairCounts())):
        figures = (estimate.elo, estimate.lower, estimate.upper, estimate.los)
        assert all(math.isfinite(figure) for figure in figures)
        assert estimate.lower <= estimate.elo <= estimate.upper
    with pytest.raises(ValueError, match="confidence"):
        sequential_estimate(test, PairCounts(1, 1, 1), confidence=1.0)
