"""A ladder's rounds fed from a real SQLite store: each pair as the planner reads it (void
and forfeited matches as the standings count them), a round's results found by its ids,
and the rounds planned again from the store as they were played."""

from __future__ import annotations

from pathlib import Path

from tests.tournaments.stored import new_store, store_match
from tournaments.run.ladder_run import pair_outcomes, round_matches, settings_for_field
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
