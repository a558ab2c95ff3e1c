"""A match: first master, alternation, target, D7 both over target, called games, forfeits."""

from __future__ import annotations

import random

import pytest

from referee.rules.cards import DECK, Card, parse_card
from referee.rules.errors import IllegalActionError
from referee.rules.game import GameResult, GameState, Phase, Seat, score_game
from referee.rules.match import (
    MatchResult,
    MatchState,
    Termination,
    draw_first_master,
    finish_game,
    forfeit,
    new_match,
    start_game,
)
from referee.rules.options import RulesOptions
from referee.selfplay import FirstLegalPolicy, RandomPolicy, play_game, play_policy_match
from tests.referee.helpers import DEFAULTS, cards, deal, run

# Trump clubs; the kings' hand takes three tricks against the queens' hand if it leads.
KINGS = "KS KH KD 3S 3H"
QUEENS = "QS QH QD 4S 4H"
KINGS_LEAD = ["play KS", "play QS", "play KH", "play QH", "play KD", "play QD"]
KINGS_LEAD += ["play 3S", "play 4S", "play 4H", "play 3H"]
QUEENS_LEAD = ["play QS", "play KS", "play KH", "play QH", "play KD", "play QD"]
QUEENS_LEAD += ["play 3S", "play 4S", "play 4H", "play 3H"]


def draw(codes: str) -> tuple[Card, Card]:
    """The two cards drawn for the first master, seat 0's first."""
    first, second = cards(codes)
    return first, second


def crafted_match(
    scores: tuple[int, int],
    *,
    games_played: int = 0,
    first: Seat = Seat.FIRST,
    options: RulesOptions = DEFAULTS,
) -> MatchState:
    """A match in progress with these scores; earlier results are placeholders."""
    first_draw = draw("KS QS") if first is Seat.FIRST else draw("QS KS")
    placeholder = score_game(
        options, attacker=Seat.FIRST, master_bid=1, slave_bid=None, tricks_won=(0, 5)
    )
    return MatchState(
        options=options,
        first_draw=first_draw,
        first_master=first,
        scores=scores,
        results=(placeholder,) * games_played,
        result=None,
    )


def crafted_finished(match: MatchState, result: GameResult) -> GameState:
    """The match's next game, marked finished with ``result``."""
    game = start_game(match, DECK)
    return game._replace(phase=Phase.OVER, to_move=None, result=result)


def points_result(points: tuple[int, int], attacker: Seat = Seat.FIRST) -> GameResult:
    """A game result that gives these points (the other fields are placeholders)."""
    return GameResult(
        attacker=attacker,
        bid=1,
        master_bid=1,
        tricks=(3, 2),
        points=points,
        attacker_won=True,
        promise=False,
        conquest=False,
        save=False,
    )


def test_new_match() -> None:
    match = new_match(DEFAULTS, (parse_card("2C"), parse_card("AS")))  # D1: the 2 beats the Ace
    assert match.first_master is Seat.FIRST
    assert match.scores == (0, 0)
    assert match.results == ()
    assert match.result is None
    assert match.is_over is False
    assert match.games_played == 0
    assert match.next_master is Seat.FIRST
    game = start_game(match, DECK)
    assert game.master is Seat.FIRST
    assert game.game_number == 1
    assert game.scores_before == (0, 0)
    assert game.options is DEFAULTS


def test_new_match_rejects_a_double_draw() -> None:
    with pytest.raises(IllegalActionError, match="same card"):
        new_match(DEFAULTS, (parse_card("9D"), parse_card("9D")))


def test_draw_first_master_is_seeded_and_distinct() -> None:
    first = draw_first_master(random.Random(5))
    assert first == draw_first_master(random.Random(5))
    assert first[0] is not first[1]
    draws = {draw_first_master(random.Random(seed)) for seed in range(50)}
    assert len(draws) > 40


def test_master_alternates_every_game() -> None:
    options = RulesOptions(target_score=1000, cold_margin=1000)
    match = new_match(options, draw("QH KH"))  # seat 1 drew the stronger card
    assert match.first_master is Seat.SECOND
    rng = random.Random(3)
    policies = [RandomPolicy(1), RandomPolicy(2)]
    masters = []
    for game_number in range(1, 9):
        assert match.next_master is (Seat.SECOND if game_number % 2 else Seat.FIRST)
        game = start_game(match, tuple(rng.sample(DECK, 52)))
        assert game.game_number == game_number
        assert game.scores_before == match.scores
        game = play_game(game, policies)
        masters.append(game.master)
        before = match.scores
        match = finish_game(match, game)
        assert game.result is not None
        assert match.scores == (
            before[0] + game.result.points[0],
            before[1] + game.result.points[1],
        )
        assert match.results[-1] == game.result
        assert match.result is None
    assert masters == [Seat.SECOND, Seat.FIRST] * 4
    assert match.games_played == 8


# --- the end of a match ---------------------------------------------------------------------


def test_d7_both_over_target_the_attacker_wins_with_the_lower_score() -> None:
    # Seat 0 is master, bids 2, the slave passes; seat 0 takes 3 tricks (2 points) and
    # seat 1 takes 2 (2 points by save): 23 + 2 = 25 and 24 + 2 = 26.
    match = crafted_match((23, 24))
    game = run(start_game(match, deal(KINGS, QUEENS, "5C")), "stop", "bid 2", "pass", *KINGS_LEAD)
    assert game.result is not None
    assert game.result.points == (2, 2)
    assert game.result.save is True
    match = finish_game(match, game)
    assert match.scores == (25, 26)
    assert match.result == MatchResult(Seat.FIRST, Termination.BOTH_OVER_TARGET, (25, 26), 1)
    assert match.is_over


def test_d7_both_over_target_when_the_slave_attacks() -> None:
    # Seat 0 is master and bids 2; seat 1 overbids 3 and takes 3 tricks (4 points); seat 0
    # takes 2 (2 points by save, case 2): 24 + 2 = 26 and 21 + 4 = 25.
    match = crafted_match((24, 21))
    game = start_game(match, deal(QUEENS, KINGS, "5C"))
    game = run(game, "stop", "bid 2", "bid 3", *QUEENS_LEAD)
    assert game.result is not None
    assert game.result.points == (2, 4)
    assert game.result.winner is Seat.SECOND
    match = finish_game(match, game)
    assert match.result == MatchResult(Seat.SECOND, Termination.BOTH_OVER_TARGET, (26, 25), 1)


@pytest.mark.parametrize("attacker", [Seat.FIRST, Seat.SECOND])
def test_d7_crafted_result_winner_of_the_game_wins(attacker: Seat) -> None:
    match = crafted_match((24, 24), games_played=3, first=Seat.SECOND)
    assert match.next_master is Seat.FIRST
    result = score_game(
        DEFAULTS,
        attacker=attacker,
        master_bid=1,
        slave_bid=None if attacker is Seat.FIRST else 2,
        tricks_won=(3, 2) if attacker is Seat.FIRST else (2, 3),
    )
    assert result.save is True
    assert result.winner is attacker
    match = finish_game(match, crafted_finished(match, result))
    assert match.result is not None
    assert match.result.winner is attacker
    assert match.result.termination is Termination.BOTH_OVER_TARGET
    assert match.result.games == 4


@pytest.mark.parametrize(
    ("before", "points", "winner"),
    [
        ((22, 20), (4, 0), Seat.FIRST),
        ((24, 24), (1, 0), Seat.FIRST),  # exactly the target
        ((20, 22), (0, 3), Seat.SECOND),
        ((10, 24), (0, 1), Seat.SECOND),  # a lead of 15 too: the target comes first
        ((24, 5), (2, 0), Seat.FIRST),
    ],
)
def test_exactly_one_at_target_wins(
    before: tuple[int, int], points: tuple[int, int], winner: Seat
) -> None:
    match = crafted_match(before)
    match = finish_game(match, crafted_finished(match, points_result(points)))
    scores = (before[0] + points[0], before[1] + points[1])
    assert match.result == MatchResult(winner, Termination.TARGET, scores, 1)
    assert match.result.loser is winner.other


@pytest.mark.parametrize(
    ("before", "points", "winner"),
    [
        ((9, 0), (1, 0), Seat.FIRST),
        ((0, 8), (0, 2), Seat.SECOND),
        ((20, 14), (4, 0), Seat.FIRST),
        ((3, 10), (0, 3), Seat.SECOND),
    ],
)
def test_lead_of_cold_margin_wins_a_called_game(
    before: tuple[int, int], points: tuple[int, int], winner: Seat
) -> None:
    match = crafted_match(before)
    match = finish_game(match, crafted_finished(match, points_result(points)))
    scores = (before[0] + points[0], before[1] + points[1])
    assert abs(scores[0] - scores[1]) == 10
    assert match.result == MatchResult(winner, Termination.COLD, scores, 1)


@pytest.mark.parametrize(
    ("before", "points"),
    [((5, 0), (4, 0)), ((0, 0), (2, 2)), ((23, 15), (1, 0)), ((24, 24), (0, 0)), ((0, 9), (0, 0))],
)
def test_match_goes_on(before: tuple[int, int], points: tuple[int, int]) -> None:
    match = crafted_match(before)
    match = finish_game(match, crafted_finished(match, points_result(points)))
    assert match.result is None
    assert match.is_over is False
    assert match.next_master is Seat.SECOND
    assert start_game(match, DECK).game_number == 2


def test_options_set_target_and_cold_margin() -> None:
    options = RulesOptions(target_score=5, cold_margin=3)
    match = crafted_match((2, 0), options=options)
    over = finish_game(match, crafted_finished(match, points_result((1, 0))))
    assert over.result == MatchResult(Seat.FIRST, Termination.COLD, (3, 0), 1)
    match = crafted_match((3, 2), options=options)
    over = finish_game(match, crafted_finished(match, points_result((0, 3))))
    assert over.result == MatchResult(Seat.SECOND, Termination.TARGET, (3, 5), 1)


def test_start_game_refuses_after_the_end() -> None:
    match = crafted_match((9, 0))
    match = finish_game(match, crafted_finished(match, points_result((1, 0))))
    assert match.is_over
    with pytest.raises(IllegalActionError, match="the match is over"):
        start_game(match, DECK)


# --- forfeit --------------------------------------------------------------------------------


@pytest.mark.parametrize("offender", [Seat.FIRST, Seat.SECOND])
def test_forfeit_the_offender_loses_whatever_the_scores(offender: Seat) -> None:
    leading = (20, 0) if offender is Seat.FIRST else (0, 20)
    match = crafted_match(leading, games_played=2)
    over = forfeit(match, offender)
    assert over.result == MatchResult(offender.other, Termination.FORFEIT, leading, 2)
    assert over.result.loser is offender
    assert over.scores == leading
    assert over.results == match.results
    assert match.result is None  # the input is unchanged


def test_forfeit_accepts_an_int_seat_and_refuses_a_finished_match() -> None:
    match = forfeit(new_match(DEFAULTS, draw("AS 2S")), 1)  # type: ignore[arg-type]
    assert match.result is not None
    assert match.result.winner is Seat.FIRST
    with pytest.raises(IllegalActionError, match="already over"):
        forfeit(match, Seat.FIRST)


# --- finish_game checks ---------------------------------------------------------------------


def test_finish_game_rejects_an_unfinished_game() -> None:
    match = crafted_match((0, 0), games_played=4)
    game = start_game(match, DECK)
    with pytest.raises(IllegalActionError, match="game 5 is not finished"):
        finish_game(match, game)
    game = run(game, "stop", "bid 1", "pass", "play AS")
    with pytest.raises(IllegalActionError, match="not finished"):
        finish_game(match, game)


def test_finish_game_rejects_the_same_game_twice() -> None:
    match = new_match(DEFAULTS, draw("KS QS"))
    game = play_game(start_game(match, DECK), [FirstLegalPolicy(), FirstLegalPolicy()])
    after = finish_game(match, game)
    with pytest.raises(IllegalActionError, match="expected game 2 with master seat 1"):
        finish_game(after, game)


def test_finish_game_rejects_a_game_with_the_wrong_number() -> None:
    match = crafted_match((0, 0), games_played=2)
    game = crafted_finished(match, points_result((1, 0)))._replace(game_number=2)
    with pytest.raises(IllegalActionError, match=r"game 2 .* is not the next game"):
        finish_game(match, game)


def test_finish_game_rejects_a_game_with_the_wrong_master() -> None:
    match = crafted_match((0, 0), games_played=1)
    assert match.next_master is Seat.SECOND
    game = crafted_finished(match, points_result((1, 0)))._replace(master=Seat.FIRST)
    with pytest.raises(IllegalActionError, match="master seat 0 is not the next game"):
        finish_game(match, game)


def test_finish_game_does_not_change_its_input() -> None:
    match = crafted_match((3, 4), games_played=1)
    game = crafted_finished(match, points_result((2, 0)))
    after = finish_game(match, game)
    assert match.scores == (3, 4)
    assert match.games_played == 1
    assert after.scores == (5, 4)
    assert after.games_played == 2


# --- whole matches --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_play_policy_match_is_reproducible_and_ends(seed: int) -> None:
    policies = [RandomPolicy(seed), RandomPolicy(seed + 100)]
    played = play_policy_match(DEFAULTS, seed, policies)
    again = play_policy_match(DEFAULTS, seed, [RandomPolicy(seed), RandomPolicy(seed + 100)])
    assert played == again
    match = played.match
    assert match.result is not None
    assert 1 <= match.result.games == len(played.games) == match.games_played <= 49
    assert match.scores == (
        sum(result.points[0] for result in match.results),
        sum(result.points[1] for result in match.results),
    )
    assert [game.master for game in played.games] == [
        match.first_master if number % 2 == 0 else match.first_master.other
        for number in range(len(played.games))
    ]
