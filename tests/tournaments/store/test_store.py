"""The results store: real SQLite files, idempotent inserts, meta checks, the lock."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from protocol.codes import FaultKind
from referee.faults import Fault
from tests.tournaments.stored import new_store, row, store_match
from tournaments.errors import StoreError, StoreLockedError, StoreMismatchError
from tournaments.schedule.pairings import schedule
from tournaments.schedule.seeds import SMALL_SEED
from tournaments.store import database as store
from tournaments.store.database import (
    RESULT_COLUMNS,
    DecisionTimes,
    add_schedule,
    count_results,
    count_scheduled,
    count_unscheduled,
    ensure_meta,
    is_stored,
    lock_output,
    open_store,
    read_meta,
    record_path,
    remove_stale_temporaries,
    result_groups,
    save_result,
    set_schedule,
    stored_activity,
    stored_bot_names,
    stored_matches,
    stored_outcomes,
    unscheduled_bot_names,
    write_record,
)


def test_new_store_is_wal_with_its_tables(tmp_path: Path) -> None:
    connection = new_store(tmp_path / "out", ["a", "b"])
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        assert {"meta", "bots", "schedule", "results"} <= tables
        assert (tmp_path / "out" / "records").is_dir()
        assert stored_bot_names(connection) == ["a", "b"]
        meta = read_meta(connection)
        assert meta is not None
        assert (meta.name, meta.rules, meta.seed) == ("synthetic", {"target_score": 25}, 1)
    finally:
        connection.close()


def test_a_match_is_stored_once(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b"])
    try:
        identifier = store_match(connection, 1, ("a", "b"), 0)
        assert is_stored(connection, identifier)
        assert not save_result(connection, row(identifier, ("a", "b"), 1))
        assert count_results(connection) == 1
        assert [match.winner for match in stored_matches(connection)] == ["a"]
        # The primary key refuses a second row even without OR IGNORE.
        with pytest.raises(sqlite3.IntegrityError):
            connection.execute(
                "INSERT INTO results SELECT * FROM results WHERE match_id = ?", (identifier,)
            )
        # The row's fields are the table's columns, in its order.
        columns = [line[1] for line in connection.execute("PRAGMA table_info(results)")]
        assert tuple(columns) == RESULT_COLUMNS
    finally:
        connection.close()


def test_schedule_is_added_once(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b", "c"])
    try:
        assert add_schedule(connection, schedule(["a", "b"], matches_per_pair=4)) == 4
        assert add_schedule(connection, schedule(["a", "b"], matches_per_pair=4)) == 0
        assert add_schedule(connection, schedule(["a", "b", "c"], matches_per_pair=4)) == 8
        assert count_scheduled(connection) == 12
    finally:
        connection.close()


def _results(connection: sqlite3.Connection) -> dict[str, object]:
    """What every reader of results sees: the ids, seats and bots they cover."""
    return {
        "played": count_results(connection),
        "scheduled": count_scheduled(connection),
        "retired": count_unscheduled(connection),
        "bots": stored_bot_names(connection),
        "retired bots": unscheduled_bot_names(connection),
        "matches": [match.match_id for match in stored_matches(connection)],
        "groups": sorted(group.seats for group in result_groups(connection)),
        "outcomes": sorted(outcome.seats for outcome in stored_outcomes(connection)),
        "activity": sorted(match.match_id for match in stored_activity(connection)),
    }


def test_the_current_schedule_is_the_last_one_set(tmp_path: Path) -> None:
    """set_schedule makes a schedule the current one: a bot it leaves out leaves every
    reader, with its matches played or not; nothing is deleted, and it all comes back."""
    connection = new_store(tmp_path, ["a", "b", "c"])
    try:
        three = list(schedule(["a", "b", "c"], matches_per_pair=2))
        assert set_schedule(connection, three) == 6
        for identifier, seats in (("r0001-a+b", ("a", "b")), ("r0001-a+c", ("a", "c"))):
            save_result(connection, row(identifier, seats, 0))
        assert _results(connection)["played"] == 2
        assert set_schedule(connection, schedule(["a", "b"], matches_per_pair=2)) == 0
        assert _results(connection) == {
            "played": 1,
            "scheduled": 2,
            "retired": 1,
            "bots": ["a", "b"],
            "retired bots": ["c"],
            "matches": ["r0001-a+b"],
            "groups": [("a", "b")],
            "outcomes": [("a", "b")],
            "activity": ["r0001-a+b"],
        }
        assert is_stored(connection, "r0001-a+c")  # kept: not played again if c returns
        # Fewer matches per pair leaves the later rounds out the same way.
        assert set_schedule(connection, three) == 0
        assert set_schedule(connection, schedule(["a", "b", "c"], matches_per_pair=4)) == 6
        assert _results(connection)["scheduled"] == 12
        assert set_schedule(connection, three) == 0
        everything = _results(connection)
        assert everything["played"] == 2
        assert everything["scheduled"] == 6
        assert everything["retired"] == 0
        assert everything["bots"] == ["a", "b", "c"]
        assert everything["retired bots"] == []
        # add_schedule adds without leaving anything out.
        assert add_schedule(connection, schedule(["a", "b"], matches_per_pair=4)) == 0
        assert count_scheduled(connection) == 8
    finally:
        connection.close()


def test_a_store_older_than_the_current_schedule_counts_every_match(tmp_path: Path) -> None:
    """A store written before the schedule marked its current matches: read-only, every
    scheduled match counts; opened to write, it gains the mark, every match current."""
    old_schema = store._SCHEMA.replace(",\n    current INTEGER NOT NULL DEFAULT 1", "")
    assert old_schema != store._SCHEMA
    connection = sqlite3.connect(tmp_path / "results.sqlite")
    connection.executescript(old_schema)
    connection.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    connection.executemany(
        "INSERT INTO bots VALUES (?, NULL, NULL, 't', 't')", [("a",), ("b",), ("c",)]
    )
    for match in schedule(["a", "b", "c"], matches_per_pair=2):
        connection.execute(
            "INSERT INTO schedule VALUES (?, ?, ?, ?, ?, ?, 't')",
            (match.match_id, match.round, match.pairing, *match.seats, match.seed),
        )
    connection.commit()
    connection.close()
    for read_only in (True, False):
        connection = open_store(tmp_path, read_only=read_only)
        try:
            found = _results(connection)
            assert (found["scheduled"], found["retired"]) == (6, 0)
            assert (found["bots"], found["retired bots"]) == (["a", "b", "c"], [])
        finally:
            connection.close()
    connection = open_store(tmp_path)
    try:
        assert set_schedule(connection, schedule(["a", "b"], matches_per_pair=2)) == 0
        assert stored_bot_names(connection) == ["a", "b"]
    finally:
        connection.close()


def test_changed_settings_are_refused(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b"], rules={"target_score": 5})
    try:
        settings: dict[str, Any] = {
            "rules": {"target_score": 5},
            "time_control": {"decision_ms": 1000},
            "seed": 1,
        }
        ensure_meta(connection, name="renamed", anchor="a", directory=tmp_path, **settings)
        meta = read_meta(connection)
        assert meta is not None
        assert (meta.name, meta.anchor) == ("renamed", "a")
        with pytest.raises(StoreMismatchError, match=r"rules\.target_score: stored 5, config 7"):
            ensure_meta(
                connection,
                name="x",
                anchor=None,
                directory=tmp_path,
                **(settings | {"rules": {"target_score": 7}}),
            )
        with pytest.raises(StoreMismatchError, match=r"time_control\.decision_ms: stored 1000"):
            ensure_meta(
                connection,
                name="x",
                anchor=None,
                directory=tmp_path,
                **(settings | {"time_control": {"decision_ms": 10}}),
            )
        with pytest.raises(StoreMismatchError, match="seed: stored 1, config 2"):
            ensure_meta(
                connection, name="x", anchor=None, directory=tmp_path, **(settings | {"seed": 2})
            )
    finally:
        connection.close()


def test_a_store_draws_the_seed_a_config_does_not_give(tmp_path: Path) -> None:
    """Without a seed, a new store draws a long one and keeps it: every later run gets it
    back, and a config that now names a seed is refused without the drawn one shown."""
    settings: dict[str, Any] = {
        "name": "drawn",
        "rules": {"target_score": 5},
        "time_control": {"decision_ms": 1000},
        "anchor": None,
    }
    connection = open_store(tmp_path / "drawn")
    try:
        seed = ensure_meta(connection, directory=tmp_path, seed=None, **settings)
        assert SMALL_SEED <= seed < 2**64
        meta = read_meta(connection)
        assert meta is not None
        assert (meta.seed, meta.seed_drawn) == (seed, True)
        assert ensure_meta(connection, directory=tmp_path, seed=None, **settings) == seed
        assert ensure_meta(connection, directory=tmp_path, seed=seed, **settings) == seed
        with pytest.raises(StoreMismatchError) as caught:
            ensure_meta(connection, directory=tmp_path, seed=42, **settings)
        assert "seed: stored (secret: drawn for it), config 42" in str(caught.value)
        assert str(seed) not in str(caught.value)
    finally:
        connection.close()
    # Another store draws another seed; a store made with an explicit seed keeps that one.
    other = open_store(tmp_path / "other")
    explicit = open_store(tmp_path / "explicit")
    try:
        assert ensure_meta(other, directory=tmp_path, seed=None, **settings) != seed
        assert ensure_meta(explicit, directory=tmp_path, seed=42, **settings) == 42
        assert ensure_meta(explicit, directory=tmp_path, seed=None, **settings) == 42
        meta = read_meta(explicit)
        assert meta is not None
        assert (meta.seed, meta.seed_drawn) == (42, False)
    finally:
        other.close()
        explicit.close()


def test_read_only_store_reads_during_writes(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"no results\.sqlite"):
        open_store(tmp_path / "nothing", read_only=True)
    writer = new_store(tmp_path, ["a", "b"])
    try:
        store_match(writer, 1, ("a", "b"), 0)
        reader = open_store(tmp_path, read_only=True)
        try:
            assert count_results(reader) == 1
            store_match(writer, 1, ("b", "a"), 1)
            assert count_results(reader) == 2
            with pytest.raises(sqlite3.OperationalError):
                reader.execute("DELETE FROM results")
        finally:
            reader.close()
    finally:
        writer.close()


def test_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "results.sqlite").write_bytes(b"this is not a database, not at all......" * 4)
    with pytest.raises(StoreError):
        open_store(tmp_path, read_only=True)


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    with (
        lock_output(tmp_path),
        pytest.raises(StoreLockedError, match="in use by another"),
        lock_output(tmp_path),
    ):
        pass
    with lock_output(tmp_path):  # released
        pass


def test_records_are_written_atomically(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b"])
    connection.close()
    path = record_path(tmp_path, "r0001-a+b")
    write_record(path, ['{"type":"match_start"}', '{"type":"match_end"}'])
    assert path.read_text() == '{"type":"match_start"}\n{"type":"match_end"}\n'
    write_record(path, ["{}"])
    assert path.read_text() == "{}\n"
    assert [entry.name for entry in path.parent.iterdir()] == [path.name]
    (path.parent / ".match-r0002-a+b.jsonl.1234abcd.tmp").write_text("half")
    assert remove_stale_temporaries(tmp_path) == 1
    assert [entry.name for entry in path.parent.iterdir()] == [path.name]


def test_result_groups_sum_by_seats_and_outcome(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b"])
    try:
        store_match(connection, 1, ("a", "b"), 0, scores=(25, 3), games=5, games_won=(4, 1))
        store_match(connection, 2, ("a", "b"), 0, scores=(26, 9), games=7, games_won=(5, 2))
        store_match(connection, 1, ("b", "a"), 1, forfeit=(0, "timeout"))
        store_match(connection, 2, ("b", "a"), None)
        groups = list(result_groups(connection))
    finally:
        connection.close()
    assert [(group.seats, group.winner_seat, group.matches) for group in groups] == [
        (("a", "b"), 0, 2),
        (("b", "a"), None, 1),
        (("b", "a"), 1, 1),
    ]
    first = groups[0]
    assert (first.games, first.games_won, first.scores) == (12, (9, 3), (51, 12))
    assert (groups[2].forfeit_seat, groups[2].forfeit_kind) == (0, "timeout")


def test_faults_and_times_are_read_typed(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b"])
    try:
        fault = {
            "seat": 1,
            "bot": "b",
            "fault": "crash",
            "detail": "exited",
            "game": 2,
            "decision": None,
            "stderr_tail": ["x", "last"],
        }
        times = {
            "decisions": [3, 0],
            "mean_ms": [1, None],
            "max_ms": [2.5, None],
            "wall_ms": [[0.5, 2.5, 0], []],
            "cpu_ms": [[0.25, 1, 0], []],
        }
        identifier = store_match(connection, 1, ("a", "b"), 0, forfeit=(1, "crash"))
        with connection:
            connection.execute(
                "UPDATE results SET faults_json = ?, timings_json = ? WHERE match_id = ?",
                (json.dumps([fault]), json.dumps(times), identifier),
            )
        store_match(connection, 1, ("b", "a"), 0)
        first, second = stored_activity(connection)
        crash = Fault(FaultKind.CRASH, 1, "b", "exited", 2, None, ("x", "last"))
        assert first.faults == (crash,)
        assert first.times == DecisionTimes(
            (3, 0), (1.0, None), (2.5, None), ((0.5, 2.5, 0.0), ()), ((0.25, 1.0, 0.0), ())
        )
        assert (second.faults, second.times.decisions) == ((), (0, 0))
        assert [outcome.seats for outcome in stored_outcomes(connection)] == [
            ("a", "b"),
            ("b", "a"),
        ]
        assert [match.forfeit_kind for match in stored_matches(connection, limit=1)] == ["crash"]
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("faults_json", "not json"),
        ("faults_json", '{"seat": 0}'),
        ("faults_json", '[{"seat": 0, "bot": "a"}]'),
        ("faults_json", '[{"seat": 0, "bot": "a", "fault": "no such kind", "detail": ""}]'),
        ("timings_json", '{"decisions": [1]}'),
        ("timings_json", '{"decisions": [1, 2], "mean_ms": ["1", 2], "max_ms": [1, 2]}'),
        (
            "timings_json",
            '{"decisions": [1, 0], "mean_ms": [1, null], "max_ms": [1, null], "cpu_ms": [["1"]]}',
        ),
        (
            "timings_json",
            '{"decisions": [1, 0], "mean_ms": [1, null], "max_ms": [1, null], '
            '"wall_ms": [[true], []]}',
        ),
    ],
)
def test_a_damaged_result_is_a_store_error(tmp_path: Path, column: str, value: str) -> None:
    connection = new_store(tmp_path, ["a", "b"])
    try:
        identifier = store_match(connection, 1, ("a", "b"), 0)
        with connection:  # damaged by hand
            connection.execute(
                f"UPDATE results SET {column} = ? WHERE match_id = ?", (value, identifier)
            )
        with pytest.raises(StoreError, match=rf"match r0001-a\+b: {column} .*damaged store"):
            list(stored_activity(connection))
    finally:
        connection.close()
