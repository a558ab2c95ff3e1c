"""Standings from a store: tallies, forfeits and void matches, and every output format."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.tournaments.stored import new_store, store_match
from tournaments.cli import app
from tournaments.report.formats import CSV_COLUMNS, CSV_LADDER_COLUMNS
from tournaments.stats.ratings import PAIR_UNIT, fit_elo
from tournaments.stats.sprt import PairCounts
from tournaments.stats.standings import load_standings, tally
from tournaments.store.database import (
    PairGroup,
    ResultGroup,
    StoredRound,
    open_store,
    pair_results,
    save_round,
)


@pytest.fixture
def output(tmp_path: Path) -> Path:
    """A store of three bots: a beats b twice (once by b's timeout), b and c split, one void
    match between a and c."""
    connection = new_store(tmp_path, ["a", "b", "c"])
    try:
        store_match(connection, 1, ("a", "b"), 0, scores=(25, 10), games=6, games_won=(4, 2))
        store_match(connection, 1, ("b", "a"), 1, scores=(3, 4), games=2, forfeit=(0, "timeout"))
        store_match(connection, 1, ("b", "c"), 0, scores=(25, 20), games=9, games_won=(5, 4))
        store_match(connection, 1, ("c", "b"), 0, scores=(26, 12), games=7, games_won=(5, 2))
        store_match(connection, 1, ("a", "c"), None)
    finally:
        connection.close()
    return tmp_path


def test_tally_counts_forfeits_as_losses_and_void_for_nobody() -> None:
    groups = [
        ResultGroup(("a", "b"), 1, 0, "crash", 2, 4, (1, 3), (5, 9)),
        ResultGroup(("b", "a"), None, 1, "handshake", 1, 0, (0, 0), (0, 0)),
    ]
    records = tally(["a", "b"], groups)
    a, b = records["a"], records["b"]
    assert (a.matches, a.wins, a.losses, a.void) == (2, 0, 2, 1)
    assert a.forfeits == {"crash": 2}
    assert (b.matches, b.wins, b.losses, b.void) == (2, 2, 0, 1)
    assert not b.forfeits
    assert (a.games, a.games_won, a.points_for, a.points_against) == (4, 1, 5, 9)
    assert a.points_for_per_game == pytest.approx(1.25)
    assert b.win_rate == 1.0


def test_standings_from_a_store(output: Path) -> None:
    connection = open_store(output, read_only=True)
    try:
        standings = load_standings(connection)
    finally:
        connection.close()
    assert (standings.matches_played, standings.matches_scheduled) == (5, 5)
    assert (standings.games, standings.void) == (24, 1)
    by_name = {row.name: row for row in standings.rows}
    assert standings.rows[0].name == "a"
    a, b = by_name["a"].record, by_name["b"].record
    assert (a.wins, a.losses, a.void) == (2, 0, 1)
    assert (b.wins, b.losses, sum(b.forfeits.values())) == (1, 3, 1)
    assert b.forfeits == {"timeout": 1}
    assert standings.crosstable["a"]["b"] == (2, 0)
    assert standings.crosstable["c"]["b"] == (1, 1)
    assert "c" not in standings.crosstable["a"]  # only a void match between them
    assert standings.warnings == ()
    elos = [row.rating.elo or 0 for row in standings.rows]
    assert sum(elos) / 3 == pytest.approx(1500)


def invoke(*arguments: str) -> tuple[int, str]:
    """Run the root app in-process; exit code and output."""
    result = CliRunner().invoke(app, list(arguments))
    return result.exit_code, result.output


def test_json_format(output: Path) -> None:
    code, text = invoke("standings", str(output), "--format", "json")
    assert code == 0, text
    data = json.loads(text)
    assert data["tournament"] == "synthetic"
    assert data["matches_played"] == 5
    bots = {bot["name"]: bot for bot in data["bots"]}
    for bot in bots.values():
        assert {"name", "elo", "elo_low", "elo_high", "matches", "wins", "losses", "forfeits"} <= (
            set(bot)
        )
        assert bot["elo_low"] < bot["elo"] < bot["elo_high"]
    assert (bots["b"]["forfeits"], bots["b"]["forfeits_by_kind"]) == (1, {"timeout": 1})
    assert data["crosstable"]["a"]["b"] == {"wins": 2, "losses": 0}
    assert data["los"]["a"]["b"] + data["los"]["b"]["a"] == pytest.approx(1, abs=1e-3)


def test_csv_format(output: Path) -> None:
    code, text = invoke("standings", str(output), "--format", "csv")
    assert code == 0, text
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert rows[0][:8] == [
        "rank",
        "name",
        "elo",
        "elo_low",
        "elo_high",
        "matches",
        "wins",
        "losses",
    ]
    assert [line[1] for line in rows[1:]] == ["a", "c", "b"]
    assert len(rows) == 4


def test_markdown_format(output: Path) -> None:
    code, text = invoke("standings", str(output), "-f", "markdown")
    assert code == 0, text
    lines = text.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("| # | bot |")))
    assert lines[header + 1].startswith("|---:|---|")
    assert lines[header + 2].startswith("| 1 | a |")
    assert "| void |" in lines[header]
    assert "### Crosstable" in text
    assert "| b | 0-2 | 1-1 | · |" in text


def test_html_format(output: Path) -> None:
    code, text = invoke("standings", str(output), "-f", "html")
    assert code == 0, text
    assert text.startswith("<!DOCTYPE html>")
    assert text.count('<table class="standings">') == 1
    assert '<td class="name">a</td>' in text
    assert '<table class="crosstable">' in text
    assert text.rstrip().endswith("</html>")


def test_table_format_and_anchor(output: Path) -> None:
    code, text = invoke("standings", str(output), "--anchor", "b")
    assert code == 0, text
    assert "Elo anchor b = 1500" in text
    assert "Crosstable" in text
    assert "1500" in text


def test_standings_errors(tmp_path: Path, output: Path) -> None:
    code, text = invoke("standings", str(tmp_path / "missing"))
    assert code == 2
    assert "no results.sqlite: not a tournament output" in text
    code, text = invoke("standings", str(output), "--anchor", "zz")
    assert code == 2
    assert "--anchor: unknown bot 'zz'; bots: a, c, b" in text
    code, text = invoke("standings", str(output), "--format", "pdf")
    assert code == 2


# ---------------------------------------------------------------------------------------------
# Duplicate pairs: the unit of the intervals


def test_pair_results_group_the_two_matches_of_each_round(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b", "c"])
    try:
        store_match(connection, 1, ("a", "b"), 0)
        store_match(connection, 1, ("b", "a"), 1)  # a won both: 2-0
        store_match(connection, 2, ("a", "b"), 1)
        store_match(connection, 2, ("b", "a"), 1)  # split: 1-1
        store_match(connection, 3, ("a", "b"), 0)
        store_match(connection, 3, ("b", "a"), 1)  # a 2-0 again
        store_match(connection, 1, ("c", "b"), 0)
        store_match(connection, 1, ("b", "c"), None)  # one decided match: c won it
        store_match(connection, 2, ("b", "c"), 0)  # the other match not played yet
        store_match(connection, 1, ("a", "c"), None)
        store_match(connection, 1, ("c", "a"), None)  # no decided match: no pair
        groups = list(pair_results(connection))
        standings = load_standings(connection)
    finally:
        connection.close()
    assert groups == [
        PairGroup(("a", "b"), (1, 1), 1),
        PairGroup(("a", "b"), (2, 0), 2),
        PairGroup(("b", "c"), (0, 1), 1),
        PairGroup(("b", "c"), (1, 0), 1),
    ]
    assert standings.fit.unit == PAIR_UNIT
    assert standings.pairs["a"]["b"] == PairCounts(lost_both=0, split=1, won_both=2)
    assert standings.pairs["b"]["a"] == PairCounts(lost_both=2, split=1, won_both=0)
    assert "c" not in standings.pairs  # b and c have no complete pair


def test_json_and_csv_give_both_intervals(output: Path) -> None:
    code, text = invoke("standings", str(output), "--format", "json")
    assert code == 0, text
    data = json.loads(text)
    assert data["interval_unit"] == "pair"
    for bot in data["bots"]:
        assert bot["elo_match_low"] < bot["elo"] < bot["elo_match_high"]
        assert bot["elo_low"] <= bot["elo"] <= bot["elo_high"]
    # b and c split their pair: the pairs show less spread than independent matches would.
    assert data["pairs"]["b"]["c"] == {"won_both": 0, "split": 1, "lost_both": 0}
    assert data["pairs"]["a"]["b"] == {"won_both": 1, "split": 0, "lost_both": 0}
    code, text = invoke("standings", str(output), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["name"]: row["elo_match_low"] for row in rows} == {
        bot["name"]: str(bot["elo_match_low"]) for bot in data["bots"]
    }
    code, text = invoke("standings", str(output))
    assert "±pair" in text
    assert "±match" in text


def test_a_tournaments_intervals_are_by_duplicate_pair(tournament_output: Path) -> None:
    """The standings of real matches: their pair intervals are the fit's with the pairs read
    from the records themselves (round and bots from the match id, winner from match_end),
    and their match intervals the fit's without pairs."""
    wins: Counter[tuple[str, str]] = Counter()
    by_pair: dict[tuple[str, str, str], list[str]] = {}
    for record in sorted((tournament_output / "records").glob("*.jsonl")):
        lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
        players, end = lines[0]["players"], lines[-1]
        round_number = record.name.split("-")[1]
        low, high = sorted(players)
        decided = by_pair.setdefault((round_number, low, high), [])
        if end["winner"] is not None:
            winner = players[end["winner"]]
            wins[(winner, players[1 - end["winner"]])] += 1
            decided.append(winner)
    pairs: Counter[tuple[str, str, int, int]] = Counter()
    for (_, low, high), winners in by_pair.items():
        if winners:
            pairs[(low, high, winners.count(low), winners.count(high))] += 1
    code, text = invoke("standings", str(tournament_output), "--format", "json")
    assert code == 0, text
    data = json.loads(text)
    names = [bot["name"] for bot in data["bots"]]
    by_pairs = fit_elo(names, wins, pairs=pairs)
    by_matches = fit_elo(names, wins)
    for bot in data["bots"]:
        pair, match = by_pairs.ratings[bot["name"]], by_matches.ratings[bot["name"]]
        assert (bot["elo_low"], bot["elo_high"]) == (
            round(pair.low or 0, 1),
            round(pair.high or 0, 1),
        )
        assert (bot["elo_match_low"], bot["elo_match_high"]) == (
            round(match.low or 0, 1),
            round(match.high or 0, 1),
        )
    assert data["los"]["alpha"]["crasher"] == round(by_pairs.los["alpha"]["crasher"], 4)


def test_a_ladder_csv_has_each_bot_status_and_a_round_robin_csv_has_none(output: Path) -> None:
    """A ladder's CSV ends with the status column of its last planned round; the same store
    without a planned round (any other format) keeps the columns it had."""
    code, text = invoke("standings", str(output), "--format", "csv")
    assert code == 0, text
    assert tuple(next(csv.reader(io.StringIO(text)))) == CSV_COLUMNS
    status = {"a": "finalist", "b": "out", "c": "contender"}
    connection = open_store(output)
    try:
        save_round(
            connection,
            StoredRound(2, ("a", "b", "c"), "final", 1, ("b",), status, "top 1 open", False),
        )
    finally:
        connection.close()
    code, text = invoke("standings", str(output), "--format", "csv")
    assert code == 0, text
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == (*CSV_COLUMNS, *CSV_LADDER_COLUMNS) == (*CSV_COLUMNS, "status")
    assert {line[1]: line[-1] for line in rows[1:]} == status
    assert len(rows) == 4
