"""The score of two bots over duplicate pairs: the tally of played matches, the score line,
and the Elo difference with its interval and LOS, as the standings' ratings give them; pure,
on made-up matches."""

from __future__ import annotations

import itertools

import pytest

from referee.faults import Fault, FaultKind
from tournaments.run.headtohead import Played, Score, Tally
from tournaments.stats.ratings import fit_elo
from tournaments.stats.sprt import PairCounts


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


def tally(winners: list[str | None]) -> Tally:
    counted = Tally(("a", "b"))
    for number, winner in enumerate(winners, 1):
        counted.add(played(number, winner, fault=FaultKind.TIMEOUT if number == 6 else None))
    return counted


def test_the_tally_counts_wins_points_faults_and_pairs() -> None:
    counted = tally(["a", "a", "a", "b", "b", "b", None, "a", "a"])  # 2-0 1-1 0-2 void, half
    assert counted.played == 9
    assert (counted.wins["a"], counted.wins["b"], counted.void) == (5, 3, 1)
    assert counted.points["a"] == 5 * 25 + 3 * 3
    assert counted.pairs == PairCounts(lost_both=1, split=1, won_both=1)
    assert (counted.void_pairs, counted.unpaired) == (1, 1)
    assert counted.fault_text("a") == "timeout 1"
    assert counted.fault_text("b") == "none"
    score = counted.score()
    assert score.score_text() == "Score of a vs b: 5 - 3 [0.625] 8 (1 void)"
    # The pair with a void match and the half-played last pair count their decided match.
    assert score.pair_results == {
        ("a", "b", 2, 0): 1,
        ("a", "b", 1, 1): 1,
        ("a", "b", 0, 2): 1,
        ("a", "b", 1, 0): 2,
    }
    assert score.elo_text().endswith(", over 3 pairs (2-0: 1, 1-1: 1, 0-2: 1) and 2 of one match")


def test_the_elo_difference_is_the_standings_rating_of_the_two() -> None:
    counted = tally(["a", "a", "a", "b", "a", "a", "b", "b", "a", "b"])
    score = counted.score()
    difference = score.elo()
    assert difference is not None
    pairs = {("a", "b", 2, 0): 2, ("a", "b", 1, 1): 2, ("a", "b", 0, 2): 1}
    fit = fit_elo(["a", "b"], {("a", "b"): 6, ("b", "a"): 4}, pairs=pairs)
    first, second = fit.ratings["a"], fit.ratings["b"]
    assert first.elo is not None
    assert second.elo is not None
    assert difference.elo == pytest.approx(first.elo - second.elo)
    assert difference.los == pytest.approx(fit.los["a"]["b"])
    # With a mean anchor each rating is half the difference from 1500: twice its error.
    assert first.stderr is not None
    assert (difference.high - difference.low) / 2 == pytest.approx(1.96 * 2 * first.stderr, 1e-3)
    assert score.elo_text() == (
        f"Elo difference: {difference.text()}, over 5 pairs (2-0: 2, 1-1: 2, 0-2: 1)"
    )
    assert difference.text().startswith("+")


def test_the_los_agrees_with_the_interval() -> None:
    """Both are the same normal approximation: the 95 % interval lies above 0 exactly when
    the LOS exceeds 97.5 %; swapping the bots mirrors both."""
    for counts in itertools.product(range(4), repeat=3):
        pairs = PairCounts(*counts)
        if not pairs.pairs:
            continue
        difference = Score.of_pairs(("a", "b"), pairs).elo()
        mirrored = Score.of_pairs(("a", "b"), PairCounts(*reversed(counts))).elo()
        assert difference is not None
        assert mirrored is not None
        if abs(difference.los - 0.975) > 1e-9:
            assert (difference.low > 0) == (difference.los > 0.975), counts
        assert mirrored.los == pytest.approx(1 - difference.los)
        assert mirrored.elo == pytest.approx(-difference.elo, abs=1e-9)


def test_the_score_of_counted_pairs_and_of_nothing() -> None:
    score = Score.of_pairs(("new", "old"), PairCounts(lost_both=2, split=3, won_both=5))
    assert (score.wins, score.losses, score.matches) == (13, 7, 20)
    assert score.score_text() == "Score of new vs old: 13 - 7 [0.650] 20"
    nothing = tally([None, None]).score()
    assert nothing.elo() is None
    assert nothing.score_text() == "Score of a vs b: 0 - 0 [0.500] 0 (2 void)"
    assert nothing.elo_text() == "Elo difference: none, no match had a winner"
