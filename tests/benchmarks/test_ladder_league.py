"""The simulated ladder league: a new version's placement and the games spread."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from benchmarks.ladder_league import (
    PLACED_ELO,
    PLACED_PAIRS,
    known_opponents_width,
    ninetieth,
    one_league,
    oracle_pairs,
)
from benchmarks.large_field import Field, play_pairs
from tournaments.stats.ladder import LadderSettings


def test_a_new_version_is_placed_and_its_width_after_the_budget_is_read() -> None:
    run = one_league(
        seed=2,
        bots=12,
        history=4,
        max_pairs=PLACED_PAIRS + 16,
        kappa=0.74,
        settings=LadderSettings(),
    )
    # Twelve bots, every one playing every round: the newcomer has played its 64 pairs.
    assert run.width_at_budget is not None
    assert 0 < run.width_at_budget < math.inf
    assert run.known_width is not None
    assert 0 < run.known_width < math.inf
    assert run.error_at_budget is not None
    assert abs(run.error_at_budget) < 3 * run.width_at_budget
    # How far its opponents were: one distance a pair, each that of the pair's true chance.
    assert run.distances is not None
    assert run.distances.shape == (PLACED_PAIRS,)
    assert (run.distances >= 0).all()
    assert run.distances.max() > 0
    # Not placed by the budget means wider than the target at the budget.
    if run.placed_by_pair is None or run.placed_by_pair > PLACED_PAIRS:
        assert run.width_at_budget > PLACED_ELO
    # An even field: every bot in play plays one pair a round, so no spread at all.
    assert run.spreads
    assert max(run.spreads) == 0.0


def test_no_width_is_read_before_the_newcomer_has_played_the_budget() -> None:
    run = one_league(
        seed=3,
        bots=12,
        history=4,
        max_pairs=PLACED_PAIRS // 2,
        kappa=0.74,
        settings=LadderSettings(),
    )
    assert run.width_at_budget is None
    assert run.distances is None
    assert run.known_width is None
    assert run.error_at_budget is None


def test_a_pair_at_an_even_score_tells_most() -> None:
    even = known_opponents_width(np.full(48, 0.5), 0.74)
    # (1 - κ) / (2 p (1 - p))² a pair, in natural units: ±50 Elo after 48 pairs.
    assert even == pytest.approx(1.96 * 400 / math.log(10) * math.sqrt(0.26 / 0.25 / 48))
    assert even == pytest.approx(PLACED_ELO, abs=0.5)
    # 56 Elo apart (p = 0.58), a pair tells 30 % less: the width grows by about a fifth.
    uneven = known_opponents_width(np.full(48, 0.58), 0.74)
    assert uneven / even == pytest.approx(math.sqrt(1.486 / 1.04), rel=0.01)
    # At an even score a pair split half the time (κ 0.5) tells what two independent
    # matches do; never split (κ 0), what one match does.
    independent = known_opponents_width(np.full(48, 0.5), 0.5)
    assert independent == pytest.approx(1.96 * 400 / math.log(10) * math.sqrt(0.5 / 0.25 / 48))
    assert known_opponents_width(np.full(48, 0.5), 0.0) == pytest.approx(
        known_opponents_width(np.full(48, 0.5), 0.5) * math.sqrt(2)
    )


@pytest.mark.parametrize("elo_apart", [0.0, 56.0, 200.0])
def test_the_width_is_that_of_the_simulated_pairs(elo_apart: float) -> None:
    """The variance the width rests on is that of the pairs the benchmarks draw."""
    field = Field(("x", "y"), np.array([elo_apart, 0.0]), np.zeros(2), 0.0)
    rng = np.random.default_rng(11)
    wins = play_pairs(field, [(0, 1)] * 200_000, 0.74, rng)
    chance = 1 / (1 + 10 ** (-elo_apart / 400))
    slope = 2 * chance * (1 - chance)
    drawn = 1.96 * 400 / math.log(10) * math.sqrt(wins.var() / 64) / slope
    assert known_opponents_width(np.full(64, chance), 0.74) == pytest.approx(drawn, rel=0.01)


def test_the_ninetieth_percentile_is_the_nearest_rank() -> None:
    assert ninetieth(list(range(1, 31))) == 27
    assert ninetieth(list(range(1, 11))) == 9
    assert ninetieth([5.0]) == 5.0


def test_the_oracle_gives_the_newcomer_the_opponent_nearest_its_true_rating() -> None:
    elo = np.array([0.0, 100.0, 210.0, 290.0, 400.0, 500.0])
    field = Field(tuple(f"b{i}" for i in range(6)), elo, np.zeros(6), 0.0)
    pairs = [(5, 0), (1, 4), (2, 3)]
    # The newcomer (bot 5, at 500) would rather meet bot 4 (at 400): their partners swap.
    swapped = oracle_pairs(pairs, 5, field, Counter(), 25.0)
    assert swapped == [(5, 4), (0, 1), (2, 3)]
    # Five earlier meetings with bot 4 cost 125 Elo: 225 against bot 3's 210.
    met = Counter({frozenset((5, 4)): 5})
    assert oracle_pairs(pairs, 5, field, met, 25.0) == [(5, 3), (1, 4), (0, 2)]
    # A newcomer with no pair this round (a bye) is left alone.
    assert oracle_pairs(pairs[1:], 5, field, Counter(), 25.0) == pairs[1:]


def test_the_oracle_brings_the_new_versions_opponents_nearer() -> None:
    """The same league with the oracle choosing the new version's opponents: nearer its true
    rating than the ladder's pairing gets them (and, with no penalty, always one bot)."""
    common = {"seed": 2, "bots": 12, "history": 4, "max_pairs": PLACED_PAIRS, "kappa": 0.74}
    ladder = one_league(**common, settings=LadderSettings())
    oracle = one_league(**common, settings=LadderSettings(), oracle_penalty=25.0)
    assert ladder.distances is not None
    assert oracle.distances is not None
    assert oracle.distances.mean() < ladder.distances.mean()
    stuck = one_league(**common, settings=LadderSettings(), oracle_penalty=0.0)
    assert stuck.distances is not None
    assert np.ptp(stuck.distances) < 1e-6
