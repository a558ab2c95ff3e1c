"""The simulated ladder league: a new version's placement and the games spread."""

from __future__ import annotations

import math

from benchmarks.ladder_league import PLACED_ELO, PLACED_PAIRS, one_league
from tournaments.stats.ladder import LadderSettings


def test_a_new_version_is_placed_and_its_width_after_the_budget_is_read() -> None:
    placed_by_pair, _placed, _error, width, spreads = one_league(
        seed=2,
        bots=12,
        history=4,
        max_pairs=PLACED_PAIRS + 16,
        kappa=0.74,
        settings=LadderSettings(),
    )
    # Twelve bots, every one playing every round: the newcomer has played its 64 pairs.
    assert width is not None
    assert 0 < width < math.inf
    # Placed by pair after the budget in this seed, so wider than the target at the budget.
    assert placed_by_pair is not None
    assert placed_by_pair > PLACED_PAIRS
    assert width > PLACED_ELO
    # An even field: every bot in play plays one pair a round, so no spread at all.
    assert spreads
    assert max(spreads) == 0.0


def test_no_width_is_read_before_the_newcomer_has_played_the_budget() -> None:
    *_, width, _ = one_league(
        seed=3,
        bots=12,
        history=4,
        max_pairs=PLACED_PAIRS // 2,
        kappa=0.74,
        settings=LadderSettings(),
    )
    assert width is None
