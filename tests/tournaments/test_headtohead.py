"""The score of two bots over duplicate pairs: the tally of played matches, the score line,
the Elo difference and the likelihood of superiority; pure, on made-up matches."""

from __future__ import annotations

import itertools

import pytest

from referee.faults import Fault, FaultKind
from tournaments.headtohead import Played, Score, Tally, likelihood_of_superiority
from tournaments.sprt import PairCounts, elo_estimate


def played(number: int, winner: str | None, *, fault: FaultKind | None = None) -> Played:
    """Match ``number`` of ``a`` against ``b`` (``a`` in seat 0 when odd), won by
    ``winner`` (None: void), with one fault of the loser's if asked."""
    players = ("a", "b") if number % 2 else ("b", "a")
    seat = None if winner is None else players.index(winner)
    faults: tuple[Fault, ...] = ()
    if fault is not None:
        loser = 1 - (seat or 0)
        faults = (Fault(fault, loser, players[loser], "made up"),)
    return Played(
        number=number,
        players=players,
        winner=seat,
        termination="void" if seat is None else "target",
        scores=(0, 0) if seat is None else ((25, 3) if seat == 0 else (3, 25)),
        games=0 if seat is None else 4,
        points=(0, 0) if seat is None else ((25, 3) if seat == 0 else (3, 25)),
        forfeit=None,
        faults=faults,
        record=(),
    )


def test_the_tally_counts_wins_points_faults_and_whole_pairs() -> None:
    tally = Tally(("a", "b"))
    winners = ["a", "a", "a", "b", "b", "b", None, "a", "a"]  # 2-0, 1-1, 0-2, void, unpaired
    for number, winner in enumerate(winners, 1):
        tally.add(played(number, winner, fault=FaultKind.TIMEOUT if number == 6 else None))
    assert tally.played == 9
    assert (tally.wins["a"], tally.wins["b"], tally.void) == (5, 3, 1)
    assert tally.points["a"] == 5 * 25 + 3 * 3
    assert tally.pairs == PairCounts(lost_both=1, split=1, won_both=1)
    assert (tally.void_pairs, tally.unpaired) == (1, 1)
    assert tally.fault_text("a") == "timeout 1"
    assert tally.fault_text("b") == "none"
    score = tally.score()
    assert score.score_text() == "Score of a vs b: 5 - 3 [0.625] 8 (1 void)"
    assert score.elo() == elo_estimate(PairCounts(1, 1, 1))
    assert score.elo_text().startswith("Elo difference: +0.0 ")
    assert "LOS: 50.0 %, over 3 pairs (2-0: 1, 1-1: 1, 0-2: 1)" in score.elo_text()


def test_the_score_of_counted_pairs() -> None:
    score = Score.of_pairs(("new", "old"), PairCounts(lost_both=2, split=3, won_both=5))
    assert (score.wins, score.losses, score.matches) == (13, 7, 20)
    assert score.score_text() == "Score of new vs old: 13 - 7 [0.650] 20"


def test_the_los_of_known_counts() -> None:
    # Mean pair score 0.6 with a standard error of sqrt(0.14 / 10): Φ(0.845) = 0.801.
    assert likelihood_of_superiority(PairCounts(2, 4, 4)) == pytest.approx(0.80099, abs=1e-5)
    assert likelihood_of_superiority(PairCounts()) == 0.5
    assert likelihood_of_superiority(PairCounts(split=7)) == 0.5
    assert likelihood_of_superiority(PairCounts(won_both=3)) == 1.0
    assert likelihood_of_superiority(PairCounts(lost_both=3)) == 0.0


def test_the_los_agrees_with_the_elo_interval() -> None:
    """Both rest on the same mean and standard error: the 95 % interval lies above 0 exactly
    when the LOS exceeds 97.5 %, and a swap of the two bots mirrors the LOS."""
    for counts in itertools.product(range(6), repeat=3):
        pairs = PairCounts(*counts)
        if not pairs.pairs:
            continue
        los = likelihood_of_superiority(pairs)
        estimate = elo_estimate(pairs)
        if abs(los - 0.975) > 1e-9:
            assert (estimate.lower > 0) == (los > 0.975), counts
        mirrored = PairCounts(pairs.won_both, pairs.split, pairs.lost_both)
        assert likelihood_of_superiority(mirrored) == pytest.approx(1 - los)
