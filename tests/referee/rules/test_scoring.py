"""Scoring one game: the attacker table, defender points, promise (D5), conquest and save (D6)."""

from __future__ import annotations

import pytest

from referee.rules.game import GameResult, GameState, Phase, Seat, attacker_points, score_game
from referee.rules.options import RulesOptions
from tests.referee.helpers import ATTACKER_TABLE, DEFAULTS, deal, run, to_play_phase

TABLE = ATTACKER_TABLE
CELLS = [(bid, tricks) for bid in range(1, 6) for tricks in range(0, 6)]


@pytest.mark.parametrize(("bid", "tricks"), CELLS)
def test_attacker_table(bid: int, tricks: int) -> None:
    assert attacker_points(bid, tricks, DEFAULTS) == TABLE.get((bid, tricks), 0)


def test_attacker_table_has_every_winning_cell() -> None:
    assert len(TABLE) == 15
    assert all(tricks >= bid for bid, tricks in TABLE)


@pytest.mark.parametrize("promise_min_bid", [1, 2, 3, 4, 5])
@pytest.mark.parametrize(("bid", "tricks"), CELLS)
def test_d5_promise_min_bid_removes_the_promise_below_it_only(
    promise_min_bid: int, bid: int, tricks: int
) -> None:
    options = RulesOptions(promise_min_bid=promise_min_bid)
    expected = TABLE.get((bid, tricks), 0)
    if tricks == bid and bid < promise_min_bid:
        expected -= 1
    assert attacker_points(bid, tricks, options) == expected


def test_d5_text_reading_examples() -> None:
    text_reading = RulesOptions(promise_min_bid=4)
    assert attacker_points(1, 1, text_reading) == 1  # table: 2
    assert attacker_points(2, 2, text_reading) == 2  # table: 3
    assert attacker_points(3, 3, text_reading) == 3  # table: 4
    assert attacker_points(4, 4, text_reading) == 5  # promise kept at 4
    assert attacker_points(5, 5, text_reading) == 7  # promise and conquest kept at 5
    assert attacker_points(1, 5, text_reading) == 2  # conquest is not a promise
    result = score_game(
        text_reading, attacker=Seat.FIRST, master_bid=2, slave_bid=None, tricks_won=(2, 3)
    )
    assert result.points == (2, 2)
    assert result.promise is False


# Every (master bid, slave bid or pass, attacker's tricks) a game can end with.
GAMES = [
    (master_bid, slave_bid, tricks)
    for master_bid in range(1, 6)
    for slave_bid in [None, *range(master_bid + 1, 6)]
    for tricks in range(0, 6)
]


@pytest.mark.parametrize("master", [Seat.FIRST, Seat.SECOND])
@pytest.mark.parametrize(("master_bid", "slave_bid", "tricks"), GAMES)
def test_score_game_every_outcome(
    master: Seat, master_bid: int, slave_bid: int | None, tricks: int
) -> None:
    attacker = master if slave_bid is None else master.other
    defender = attacker.other
    contract = master_bid if slave_bid is None else slave_bid
    tricks_won = [0, 0]
    tricks_won[attacker] = tricks
    tricks_won[defender] = 5 - tricks
    result = score_game(
        DEFAULTS,
        attacker=attacker,
        master_bid=master_bid,
        slave_bid=slave_bid,
        tricks_won=(tricks_won[0], tricks_won[1]),
    )
    expected = [0, 0]
    if tricks >= contract:
        expected[attacker] = TABLE[contract, tricks]
        saved = master_bid <= 2 and 5 - tricks >= master_bid
        if saved:
            expected[defender] = master_bid
    else:
        saved = False
        expected[defender] = contract + (1 if tricks == 0 else 0)
    assert result.points == (expected[0], expected[1])
    assert result.attacker is attacker
    assert result.defender is defender
    assert result.bid == contract
    assert result.master_bid == master_bid
    assert result.tricks == (tricks_won[0], tricks_won[1])
    assert result.attacker_won is (tricks >= contract)
    assert result.winner is (attacker if tricks >= contract else defender)
    assert result.save is saved
    assert result.promise is (tricks == contract)
    assert result.conquest is (tricks in (0, 5))
    assert sum(result.points) >= 1  # every game gives someone a point


@pytest.mark.parametrize("bid", [2, 3, 4, 5])
def test_defender_scores_the_bid_and_one_more_for_all_five_tricks(bid: int) -> None:
    for tricks in range(bid):
        result = score_game(
            DEFAULTS,
            attacker=Seat.SECOND,
            master_bid=1,
            slave_bid=bid,
            tricks_won=(5 - tricks, tricks),
        )
        assert result.attacker_won is False
        assert result.points == ((bid + 1 if tricks == 0 else bid), 0)
        assert result.conquest is (tricks == 0)
        assert result.save is False


def test_defender_conquest_when_attacker_takes_nothing() -> None:
    result = score_game(
        DEFAULTS, attacker=Seat.FIRST, master_bid=3, slave_bid=None, tricks_won=(0, 5)
    )
    assert result.points == (0, 4)
    assert result.conquest is True
    assert result.winner is Seat.SECOND


def test_save_case_1_slave_passed_defender_is_the_slave() -> None:
    result = score_game(
        DEFAULTS, attacker=Seat.FIRST, master_bid=1, slave_bid=None, tricks_won=(3, 2)
    )
    assert result.points == (1, 1)
    assert result.save is True
    result = score_game(
        DEFAULTS, attacker=Seat.SECOND, master_bid=2, slave_bid=None, tricks_won=(2, 3)
    )
    assert result.points == (2, 2)
    assert result.save is True


def test_save_case_2_slave_overbid_defender_is_the_master() -> None:
    result = score_game(
        DEFAULTS, attacker=Seat.SECOND, master_bid=2, slave_bid=3, tricks_won=(2, 3)
    )
    assert result.points == (2, 4)
    assert result.save is True
    result = score_game(DEFAULTS, attacker=Seat.FIRST, master_bid=1, slave_bid=4, tricks_won=(4, 1))
    assert result.points == (5, 1)
    assert result.save is True


def test_d6_first_example_by_score_game() -> None:
    # The master bids 2, the slave passes; the master takes 3 and the slave 2.
    result = score_game(
        DEFAULTS, attacker=Seat.FIRST, master_bid=2, slave_bid=None, tricks_won=(3, 2)
    )
    assert result.points == (2, 2)  # D6: the master scores 2 (the table), not the text's 3
    assert result.save is True
    assert result.promise is False


@pytest.mark.parametrize(("slave_tricks", "slave_points"), [(3, 4), (4, 3)])
def test_d6_second_example_by_score_game(slave_tricks: int, slave_points: int) -> None:
    # The master bids 1, the slave bids 3 and takes 3 or 4: the master scores 1 either way.
    result = score_game(
        DEFAULTS,
        attacker=Seat.SECOND,
        master_bid=1,
        slave_bid=3,
        tricks_won=(5 - slave_tricks, slave_tricks),
    )
    assert result.points == (1, slave_points)
    assert result.save is True


@pytest.mark.parametrize(
    ("master_bid", "slave_bid", "tricks_won", "points"),
    [
        (3, None, (3, 2), (4, 0)),  # master bid 3: no save although the defender took 2
        (3, None, (4, 1), (3, 0)),
        (3, 4, (1, 4), (0, 5)),  # master bid 3, slave attacker: no save for the master
        (4, 5, (0, 5), (0, 7)),
        (2, None, (4, 1), (2, 0)),  # the defender took fewer than the master's bid
        (2, None, (5, 0), (3, 0)),
        (2, 4, (1, 4), (0, 5)),  # master defends with 1 trick < its bid of 2
        (1, 3, (0, 5), (0, 4)),  # master defends with 0 tricks < its bid of 1
    ],
)
def test_no_save(
    master_bid: int, slave_bid: int | None, tricks_won: tuple[int, int], points: tuple[int, int]
) -> None:
    attacker = Seat.FIRST if slave_bid is None else Seat.SECOND
    result = score_game(
        DEFAULTS,
        attacker=attacker,
        master_bid=master_bid,
        slave_bid=slave_bid,
        tricks_won=tricks_won,
    )
    assert result.points == points
    assert result.save is False
    assert result.attacker_won is True


def test_no_save_when_the_attacker_loses() -> None:
    result = score_game(
        DEFAULTS, attacker=Seat.SECOND, master_bid=1, slave_bid=4, tricks_won=(2, 3)
    )
    assert result.points == (4, 0)  # the master scores as defender, not by save
    assert result.save is False
    assert result.winner is Seat.FIRST


# --- the same through played games ----------------------------------------------------------

# Trump clubs (key card 5C); the hands hold no clubs and no fives, so each trick goes to the
# higher card of the led suit.
KINGS = "KS KH KD 3S 3H"
QUEENS = "QS QH QD 4S 4H"


def finished(state: GameState, *plays: str) -> GameResult:
    state = run(state, *(f"play {code}" for code in plays))
    assert state.phase is Phase.OVER
    assert state.result is not None
    return state.result


@pytest.mark.parametrize("master", [Seat.FIRST, Seat.SECOND])
def test_d6_first_example_played(master: Seat) -> None:
    # The master bids 2, the slave passes; the master takes 3 tricks and the slave 2.
    state = to_play_phase(deal(KINGS, QUEENS, "5C"), master=master, master_bid=2)
    result = finished(state, "KS", "QS", "KH", "QH", "KD", "QD", "3S", "4S", "4H", "3H")
    slave = master.other
    assert result.tricks[master] == 3
    assert result.tricks[slave] == 2
    assert result.points[master] == 2  # D6: not 3
    assert result.points[slave] == 2  # save, case 1
    assert result.save is True


def test_d6_second_example_played_slave_takes_3() -> None:
    # The master bids 1, the slave bids 3 and takes 3; the master takes 2 and scores 1.
    state = to_play_phase(deal(QUEENS, KINGS, "5C"), master_bid=1, slave_bid=3)
    result = finished(state, "QS", "KS", "KH", "QH", "KD", "QD", "3S", "4S", "4H", "3H")
    assert result.tricks == (2, 3)
    assert result.points == (1, 4)
    assert result.save is True


def test_d6_second_example_played_slave_takes_4() -> None:
    # The master bids 1, the slave bids 3 and takes 4; the master takes 1 and still scores 1.
    state = to_play_phase(deal("QS QH QD 4S 2H", KINGS, "5C"), master_bid=1, slave_bid=3)
    result = finished(state, "QS", "KS", "KH", "QH", "KD", "QD", "3H", "2H", "3S", "4S")
    assert result.tricks == (1, 4)
    assert result.points == (1, 3)
    assert result.save is True


def test_played_conquest_by_the_attacker() -> None:
    state = to_play_phase(deal(KINGS, "QS QH QD 2S 2H", "5C"), master_bid=5)
    result = finished(state, "KS", "QS", "KH", "QH", "KD", "QD", "3S", "2S", "3H", "2H")
    assert result.tricks == (5, 0)
    assert result.points == (7, 0)
    assert (result.promise, result.conquest, result.save) == (True, True, False)


def test_played_defender_wins() -> None:
    state = to_play_phase(deal(QUEENS, KINGS, "5C"), master_bid=3)
    result = finished(state, "QS", "KS", "KH", "QH", "KD", "QD", "3S", "4S", "4H", "3H")
    assert result.tricks == (2, 3)
    assert result.attacker is Seat.FIRST
    assert result.attacker_won is False
    assert result.points == (0, 3)


def test_played_d5_option_reaches_the_result() -> None:
    options = RulesOptions(promise_min_bid=4)
    state = to_play_phase(deal(KINGS, QUEENS, "5C"), master_bid=3, options=options)
    result = finished(state, "KS", "QS", "KH", "QH", "KD", "QD", "3S", "4S", "4H", "3H")
    assert result.tricks == (3, 2)
    assert result.points == (3, 0)  # no promise at bid 3 under the text reading; no save
    assert result.promise is False
