"""A ladder's rounds fed from a real SQLite store: each pair as the planner reads it (void
and forfeited matches as the standings count them), a round's results found by its ids,
and the rounds planned again from the store as they were played."""

from __future__ import annotations

import io
from pathlib import Path

import yaml
from rich.console import Console

from tests.tournaments.stored import new_store, store_match
from tournaments.config.tournament import TournamentSetup, parse_config
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import _open_ladder
from tournaments.run.ladder_run import (
    Ladder,
    pair_outcomes,
    round_matches,
    settings_for_field,
)
from tournaments.stats.ladder import LadderSettings, PairOutcome, RoundPlan, plan_round
from tournaments.store.database import round_winners

BOTS = ["a", "b", "c", "d"]


def _plan(pairs: tuple[tuple[str, str], ...], number: int = 3) -> RoundPlan:
    plan = plan_round(BOTS, [], number, 1, LadderSettings(), matches_played=0)
    return RoundPlan(
        number,
        pairs,
        (),
        (),
        plan.phase,
        plan.status,
        plan.certification,
        False,
        plan.fit,
    )


def test_each_pair_as_the_planner_reads_it(tmp_path: Path) -> None:
    connection = new_store(tmp_path, BOTS)
    try:
        store_match(connection, 3, ("a", "b"), 0)
        store_match(connection, 3, ("b", "a"), 1)  # a won both
        store_match(connection, 3, ("c", "d"), None)  # void: the pair counts one match
        store_match(connection, 3, ("d", "c"), 1, forfeit=(0, "timeout"))  # a loss for d
        store_match(connection, 2, ("a", "c"), 0)  # another round: not this one's
        store_match(connection, 4, ("a", "d"), 0)
        winners = round_winners(connection, 3)
    finally:
        connection.close()
    assert winners == {
        "r0003-a+b": "a",
        "r0003-b+a": "a",
        "r0003-c+d": None,
        "r0003-d+c": "c",
    }
    plan = _plan((("a", "b"), ("c", "d")))
    assert pair_outcomes(plan, winners) == [
        PairOutcome("a", "b", 2, 0, 3),
        PairOutcome("c", "d", 1, 0, 3),
    ]


def test_a_pair_of_two_void_matches_teaches_nothing(tmp_path: Path) -> None:
    connection = new_store(tmp_path, BOTS)
    try:
        store_match(connection, 3, ("a", "b"), None)
        store_match(connection, 3, ("b", "a"), None)
        winners = round_winners(connection, 3)
    finally:
        connection.close()
    assert pair_outcomes(_plan((("a", "b"),)), winners) == []


def test_a_round_s_matches_are_both_seat_orders_on_its_deal() -> None:
    matches = round_matches(_plan((("b", "a"), ("c", "d")), number=12), master_seed=7)
    assert [match.match_id for match in matches] == [
        "r0012-b+a",
        "r0012-a+b",
        "r0012-c+d",
        "r0012-d+c",
    ]
    assert {match.seed for match in matches} == {matches[0].seed}
    assert {match.pairing for match in matches} == {"a+b", "c+d"}


def test_a_field_smaller_than_its_top_caps_top_and_finalists() -> None:
    """A league's field before enough bots have arrived: top and finalists capped at it."""
    settings = LadderSettings(top=10, finalists=14, rounds=3)
    assert settings_for_field(settings, 4) == LadderSettings(top=4, finalists=4, rounds=3)
    assert settings_for_field(settings, 40) == settings
    assert settings_for_field(LadderSettings(), 3) == LadderSettings()


def _ladder_setup(tmp_path: Path, names: list[str], **ladder: int) -> TournamentSetup:
    config = {
        "name": "budget",
        "format": "ladder",
        "ladder": ladder,
        "seed": 2**40 + 3,
        "bots": [{"name": name, "command": "random"} for name in names],
    }
    return parse_config(yaml.safe_dump(config), base_dir=tmp_path)


def _play(ladder: Ladder, connection: object, count: int | None = None) -> None:
    """Store the current round's matches (the first ``count`` of them), seat 0 winning."""
    for match in ladder.current_matches()[:count]:
        store_match(connection, match.round, match.seats, 0)  # type: ignore[arg-type]


def test_the_budget_counts_from_the_round_a_changed_field_begins(tmp_path: Path) -> None:
    """Four bots, a budget of 8 matches (two rounds of two pairs): after round 1 the budget
    has 4 spent. A fifth bot added in the middle of round 2: round 2 finishes with the four
    it began with, and the five's budget begins after it, so the progress bar's total is
    every match of rounds 1 and 2 plus a whole budget."""
    four = ["a", "b", "c", "d"]
    connection = new_store(tmp_path, [*four, "e"])
    try:
        ladder = Ladder(_ladder_setup(tmp_path, four, max_matches=8), connection)
        ladder.replay()
        _play(ladder, connection)
        ladder.advance()
        assert (ladder.round_number, ladder.field_first_round) == (2, 1)
        assert (ladder.field_matches_played, ladder.matches_before_budget()) == (4, 0)
        _play(ladder, connection, count=1)  # stopped in the middle of round 2

        # Resumed with five: the note says whose round 2 is and where the budget begins.
        notes = io.StringIO()
        five_setup = _ladder_setup(tmp_path, [*four, "e"], max_matches=8)
        _open_ladder(five_setup, connection, QuietDisplay(Console(file=notes)))
        assert (
            "Ladder: 1 round(s) stored, round 2 next (begun before bots were added, who join "
            "from round 3, where the budget counts from again); " in notes.getvalue()
        )
        five = Ladder(five_setup, connection)
        five.replay()
        assert five.round_number == 2
        assert five.plan_field == tuple(four)  # round 2 finishes with the field it began with
        assert five.matches_before_budget() == 8  # rounds 1 and 2: the five's budget after
        _play(five, connection)
        five.advance()
        assert (five.round_number, five.field_first_round) == (3, 3)
        assert five.plan_field == (*four, "e")
        assert (five.field_matches_played, five.matches_before_budget()) == (0, 8)
        _play(five, connection)
        five.advance()
        assert (five.round_number, five.field_first_round) == (4, 3)
        assert (five.field_matches_played, five.matches_before_budget()) == (4, 8)
    finally:
        connection.close()
