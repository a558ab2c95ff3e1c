"""The results store: one SQLite database (WAL) and one record file per match.

Layout of an output directory::

    results.sqlite          meta, bots, schedule, results, retired, ladder_rounds (this
                            module's schema)
    records/match-<id>.jsonl    each finished match in the record format (docs/records.md)
    logs/                   the bots' output, per worker process; the ledgers of their caps

Only the coordinator writes. A finished match is stored once and atomically: its record is
written to a temporary file, synced and renamed into place, and then its row is inserted in
one transaction (``INSERT OR IGNORE`` on the match id, which is the primary key). A run that
dies at any point leaves either no row (the match is played again, its record replaced) or
the row and its record: never a row without its record, never a match twice.

The schedule keeps every match any run on the directory scheduled; the *current* ones
(``schedule.current``) are those of the last run's config. A run marks its config's matches
current and the others not (:func:`set_schedule`): a bot removed from the config, or fewer
matches per pair, takes its matches out of the current schedule, played or not. They stay in
the store and their records on disk, and come back if a later config schedules them again.
Every count and reader of results below covers the current schedule only, so the run, the
standings and the report agree; :func:`count_unscheduled` counts the stored matches left out.

Readers (``aegis-ref standings``, ``aegis-ref report``) open the database read-only and may
do so during a run. This module alone knows the SQL: readers get typed rows from its
functions, with the JSON columns decoded and checked here, once. Whatever fails (a full
disk, a damaged file), every function here raises :class:`~tournaments.errors.StoreError`,
which names the file and what could not be done, never a bare SQLite or OS error.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeGuard, TypeVar

from referee.bots import BotSpec
from referee.faults import Fault
from referee.record_files import write_record as write_record_file
from tournaments.errors import StoreError, StoreLockedError, StoreMismatchError
from tournaments.schedule.pairings import ScheduledMatch
from tournaments.schedule.seeds import draw_seed
from tournaments.store.rows import RESULT_COLUMNS, ResultRow

__all__ = [
    "DATABASE_NAME",
    "RECORDS_DIR",
    "RESULT_COLUMNS",
    "SCHEMA_VERSION",
    "DecisionTimes",
    "MatchActivity",
    "PairGroup",
    "ResultGroup",
    "RetiredBot",
    "StoredBot",
    "StoredMatch",
    "StoredMeta",
    "StoredOutcome",
    "StoredRound",
    "add_schedule",
    "clear_rounds",
    "config_hash",
    "count_results",
    "count_scheduled",
    "count_unscheduled",
    "data_version",
    "ensure_meta",
    "is_stored",
    "latest_round",
    "lock_output",
    "open_store",
    "pair_results",
    "read_containment",
    "read_meta",
    "recent_matches",
    "record_containment",
    "record_path",
    "remove_stale_temporaries",
    "result_groups",
    "retire_bots",
    "retired_bots",
    "retired_counts",
    "round_winners",
    "save_bots",
    "save_result",
    "save_round",
    "set_schedule",
    "snapshot",
    "stored_activity",
    "stored_bot_names",
    "stored_bots",
    "stored_match",
    "stored_matches",
    "stored_outcomes",
    "stored_rounds",
    "unscheduled_bot_names",
    "write_record",
]

DATABASE_NAME = "results.sqlite"
RECORDS_DIR = "records"
SCHEMA_VERSION = 1
_LOCK_NAME = ".lock"
_TEMPORARY_SUFFIX = ".tmp"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    command TEXT,
    remote_key TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS schedule (
    match_id TEXT PRIMARY KEY,
    round INTEGER NOT NULL,
    pairing TEXT NOT NULL,
    seat0 TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    seed INTEGER NOT NULL,
    scheduled_at TEXT NOT NULL,
    current INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS results (
    match_id TEXT PRIMARY KEY REFERENCES schedule (match_id),
    seat0 TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    void INTEGER NOT NULL,
    winner_seat INTEGER,
    winner TEXT,
    termination TEXT NOT NULL,
    score0 INTEGER NOT NULL,
    score1 INTEGER NOT NULL,
    games INTEGER NOT NULL,
    games_won0 INTEGER NOT NULL,
    games_won1 INTEGER NOT NULL,
    forfeit_seat INTEGER,
    forfeit_bot TEXT,
    forfeit_kind TEXT,
    forfeit_json TEXT,
    faults_json TEXT NOT NULL,
    timings_json TEXT NOT NULL,
    record_path TEXT NOT NULL,
    duration_s REAL NOT NULL,
    worker TEXT NOT NULL,
    finished_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS retired (
    name TEXT PRIMARY KEY,
    replaced_by TEXT,
    retired_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ladder_rounds (
    round INTEGER PRIMARY KEY,
    bots_json TEXT NOT NULL,
    phase TEXT NOT NULL,
    pairs INTEGER NOT NULL,
    byes_json TEXT NOT NULL,
    status_json TEXT NOT NULL,
    certification TEXT NOT NULL,
    stop INTEGER NOT NULL,
    prior_games REAL NOT NULL,
    confidence REAL NOT NULL,
    planned_at TEXT NOT NULL
);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# ---------------------------------------------------------------------------------------------
# Failures: every store operation that fails raises StoreError, never a bare sqlite3 or OS error

_P = ParamSpec("_P")
_R = TypeVar("_R")
_Operation = Callable[Concatenate[sqlite3.Connection, _P], _R]

# SQLite's names of the errors a full disk (or a disk that fails) gives.
_DISK_ERRORS = ("SQLITE_FULL", "SQLITE_IOERR")


def _free_space(path: Path) -> str:
    """`` (N KiB free on its disk)``, for a failure that a full disk may explain."""
    for candidate in (path, *path.parents):
        with contextlib.suppress(OSError):
            return f" ({shutil.disk_usage(candidate).free // 1024} KiB free on its disk)"
    return ""


def _database_file(connection: sqlite3.Connection) -> Path | None:
    try:
        for _number, name, file in connection.execute("PRAGMA database_list"):
            if name == "main" and file:
                return Path(file)
    except sqlite3.Error:
        pass
    return None


def _store_failure(where: Path | None, what: str, error: sqlite3.Error | OSError) -> StoreError:
    """The StoreError of a failed store operation: which file, what was being done, why."""
    if isinstance(error, OSError):
        reason = error.strerror or str(error)
        full = error.errno in (errno.ENOSPC, errno.EDQUOT)
    else:
        reason = str(error)
        full = getattr(error, "sqlite_errorname", "").startswith(_DISK_ERRORS)
    place = str(where) if where is not None else "results store"
    return StoreError(
        f"{place}: cannot {what}: {reason}" + (_free_space(where) if full and where else "")
    )


def _store_operation(what: str) -> Callable[[_Operation[_P, _R]], _Operation[_P, _R]]:
    """Make a store function's SQLite failure a :class:`StoreError` naming the file and
    ``what`` it was doing ("record the bots")."""

    def decorate(function: _Operation[_P, _R]) -> _Operation[_P, _R]:
        def operation(connection: sqlite3.Connection, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return function(connection, *args, **kwargs)
            except sqlite3.Error as error:
                raise _store_failure(_database_file(connection), what, error) from None

        functools.update_wrapper(operation, function)
        return operation

    return decorate


def _store_stream(
    what: str,
) -> Callable[[_Operation[_P, Iterator[_R]]], _Operation[_P, Iterator[_R]]]:
    """:func:`_store_operation` for a reader that streams its rows (a generator)."""

    def decorate(function: _Operation[_P, Iterator[_R]]) -> _Operation[_P, Iterator[_R]]:
        def stream(
            connection: sqlite3.Connection, /, *args: _P.args, **kwargs: _P.kwargs
        ) -> Iterator[_R]:
            try:
                yield from function(connection, *args, **kwargs)
            except sqlite3.Error as error:
                raise _store_failure(_database_file(connection), what, error) from None

        functools.update_wrapper(stream, function)
        return stream

    return decorate


# ---------------------------------------------------------------------------------------------
# Opening


def open_store(directory: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """Open the output directory's database; create it (and the directory) unless read-only.

    The caller closes the connection. Raises :class:`StoreError` if it cannot be opened.
    """
    path = directory / DATABASE_NAME
    try:
        if read_only:
            if not path.is_file():
                raise StoreError(f"{directory}: no {DATABASE_NAME}: not a tournament output")
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            connection.execute("PRAGMA query_only = ON")
            _check_schema(connection, directory)
            return connection
        directory.mkdir(parents=True, exist_ok=True)
        (directory / RECORDS_DIR).mkdir(exist_ok=True)
        connection = sqlite3.connect(path)
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            # Every commit reaches the disk: a stored match survives a power cut.
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
            with connection:
                connection.executescript(_SCHEMA)
                connection.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                if not _knows_current(connection):
                    # A store made before the schedule knew its current matches: all are.
                    connection.execute(
                        "ALTER TABLE schedule ADD COLUMN current INTEGER NOT NULL DEFAULT 1"
                    )
                # The matches left out, usually none: finding them costs nothing then.
                connection.execute(
                    "CREATE INDEX IF NOT EXISTS schedule_left_out ON schedule (match_id) "
                    "WHERE current = 0"
                )
            _check_schema(connection, directory)
        except BaseException:
            connection.close()
            raise
        return connection
    except sqlite3.Error as error:
        raise _store_failure(path, "open the results store", error) from None
    except OSError as error:
        raise StoreError(f"{directory}: {error.strerror or error}") from None


def _check_schema(connection: sqlite3.Connection, directory: Path) -> None:
    try:
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error as error:
        connection.close()
        raise StoreError(f"{directory}: not a tournament results store ({error})") from None
    if row is None or row[0] != str(SCHEMA_VERSION):
        connection.close()
        raise StoreError(
            f"{directory}: results store schema {row[0] if row else 'unknown'} is not "
            f"supported (this version reads schema {SCHEMA_VERSION})"
        )


@contextlib.contextmanager
def lock_output(directory: Path) -> Iterator[None]:
    """Hold the output directory's lock: one writer at a time. The lock dies with its
    process, so a killed run never leaves it stale."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(directory / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise StoreError(
            f"cannot use {directory} as the output directory: {error.strerror or error}"
        ) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "?"
            raise StoreLockedError(
                f"{directory} is in use by another aegis-ref tournament (pid {holder})"
            ) from None
        try:
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        except OSError as error:  # a full disk, say
            raise _store_failure(directory / _LOCK_NAME, "write the lock", error) from None
        yield
    finally:
        os.close(descriptor)


# ---------------------------------------------------------------------------------------------
# Meta: what the results depend on


@dataclass(frozen=True, slots=True)
class StoredMeta:
    """What a store says about its tournament."""

    name: str
    config_hash: str
    rules: dict[str, Any]
    time_control: dict[str, Any]
    seed: int
    anchor: str | None
    #: The seed was drawn for this store (the config named none): a secret, not shown.
    seed_drawn: bool = False


def config_hash(rules: Mapping[str, Any], time_control: Mapping[str, Any], seed: int) -> str:
    """A digest of everything that changes a match's result: rules, clock and seeds."""
    text = json.dumps(
        {"rules": dict(rules), "time_control": dict(time_control), "seed": seed},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode()).hexdigest()


@_store_operation("read the tournament's settings")
def read_meta(connection: sqlite3.Connection) -> StoredMeta | None:
    """The store's tournament meta, or None for a store that has none yet."""
    values = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    if "config_hash" not in values:
        return None
    return StoredMeta(
        name=values.get("name", ""),
        config_hash=values["config_hash"],
        rules=json.loads(values["rules"]),
        time_control=json.loads(values["time_control"]),
        seed=int(values["seed"]),
        anchor=values.get("anchor") or None,
        seed_drawn=values.get("seed_drawn") == "1",
    )


def _differences(label: str, stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    return [
        f"{label}.{key}: stored {stored.get(key)!r}, config {wanted.get(key)!r}"
        for key in sorted(set(stored) | set(wanted))
        if stored.get(key) != wanted.get(key)
    ]


@_store_operation("write the tournament's settings")
def ensure_meta(
    connection: sqlite3.Connection,
    *,
    name: str,
    rules: Mapping[str, Any],
    time_control: Mapping[str, Any],
    seed: int | None,
    anchor: str | None,
    directory: Path,
) -> int:
    """Write the meta of a new store, or check that an existing one was played under the
    same rules, time control and seed (raising :class:`StoreMismatchError` if not); return
    the master seed to play with.

    ``seed`` None (a config without one) means the store's own: a new store draws a secret
    one (:func:`~tournaments.schedule.seeds.draw_seed`) and keeps it, an existing one gives back the
    seed it keeps, so that a resumed tournament deals from the seed it started with. The
    name and the rating anchor do not change results and are simply updated.
    """
    stored = read_meta(connection)
    drawn = seed is None and stored is None
    if seed is None:
        seed = stored.seed if stored is not None else draw_seed()
    digest = config_hash(rules, time_control, seed)
    if stored is not None and stored.config_hash != digest:
        changes = [
            *_differences("rules", stored.rules, rules),
            *_differences("time_control", stored.time_control, time_control),
        ]
        if stored.seed != seed:
            # A drawn seed stays secret, even in an error message.
            shown = "(secret: drawn for it)" if stored.seed_drawn else stored.seed
            changes.append(f"seed: stored {shown}, config {seed}")
        raise StoreMismatchError(
            f"{directory} holds results played under other settings:\n  "
            + "\n  ".join(changes or ["(settings differ)"])
            + "\nMixing them would make the results meaningless: use another output "
            "directory (--output), or restore the settings."
        )
    values = {"name": name, "anchor": anchor or ""}
    if stored is None:
        values.update(
            config_hash=digest,
            rules=json.dumps(dict(rules), sort_keys=True),
            time_control=json.dumps(dict(time_control), sort_keys=True),
            seed=str(seed),
            seed_drawn="1" if drawn else "0",
            created_at=_now(),
        )
    with connection:
        connection.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", values.items()
        )
    return seed


# ---------------------------------------------------------------------------------------------
# Bots and schedule


@_store_operation("record the bots")
def save_bots(connection: sqlite3.Connection, bots: Iterable[BotSpec]) -> None:
    """Add new bots and refresh the command of known ones (a command may move; a name is the
    bot's identity)."""
    with connection:
        _save_bots(connection, bots)


def _save_bots(connection: sqlite3.Connection, bots: Iterable[BotSpec]) -> None:
    """:func:`save_bots` inside the caller's transaction."""
    now = _now()
    connection.executemany(
        "INSERT INTO bots (name, command, remote_key, first_seen, last_seen) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
        "command = excluded.command, remote_key = excluded.remote_key, "
        "last_seen = excluded.last_seen",
        (
            (
                spec.name,
                json.dumps(list(spec.command)) if spec.command else None,
                spec.curve_public_key,
                now,
                now,
            )
            for spec in bots
        ),
    )


_CONTAINMENT_KEY = "containment"


@_store_operation("note how the bots are contained")
def record_containment(connection: sqlite3.Connection, sandboxed: bool, summary: str) -> None:
    """Note how this run contains its bots. An unsandboxed run is remembered for good: the
    results it stored stay those of bots that could reach the machine, whatever later runs
    do."""
    stored = read_containment(connection)
    if sandboxed and stored is not None:
        return  # an earlier run was unsandboxed: that stays the tournament's note
    value = None if sandboxed else summary
    with connection:
        connection.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (_CONTAINMENT_KEY, json.dumps({"sandboxed": sandboxed, "summary": value})),
        )


def read_containment(connection: sqlite3.Connection) -> str | None:
    """Why some of the tournament's bots ran unsandboxed ("bots ran unsandboxed as user
    root: ..."), or None when every run sandboxed them (or none said)."""
    try:
        row = connection.execute(
            "SELECT value FROM meta WHERE key = ?", (_CONTAINMENT_KEY,)
        ).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    try:
        data = json.loads(row[0])
    except (TypeError, ValueError):
        return None
    summary = data.get("summary") if isinstance(data, dict) else None
    return summary if isinstance(summary, str) and summary else None


def _knows_current(connection: sqlite3.Connection) -> bool:
    """Whether the schedule marks its current matches (a store opened read-only may predate
    it: then every scheduled match is current)."""
    columns = connection.execute("PRAGMA table_info(schedule)").fetchall()
    return any(column[1] == "current" for column in columns)


def _leaves_out(connection: sqlite3.Connection) -> bool:
    """Whether the current schedule leaves out any scheduled match (an index look-up)."""
    if not _knows_current(connection):
        return False
    found = connection.execute("SELECT 1 FROM schedule WHERE current = 0 LIMIT 1").fetchone()
    return found is not None


def _current(connection: sqlite3.Connection) -> str:
    """The SQL condition on a results row: its match is in the current schedule. No
    condition at all while the schedule leaves nothing out (the usual case); else one
    look-up per row in the index of the matches left out."""
    if not _leaves_out(connection):
        return "1"
    return (
        "NOT EXISTS (SELECT 1 FROM schedule WHERE schedule.match_id = results.match_id "
        "AND schedule.current = 0)"
    )


def _schedule_matches(connection: sqlite3.Connection, matches: Iterable[ScheduledMatch]) -> int:
    """Add the matches not yet scheduled and mark every one given current; return how many
    were new. Inside the caller's transaction."""
    now = _now()
    before = _count_all_scheduled(connection)
    connection.executemany(
        "INSERT INTO schedule (match_id, round, pairing, seat0, seat1, seed, scheduled_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (match_id) DO UPDATE SET current = 1",
        (
            (match.match_id, match.round, match.pairing, *match.seats, match.seed, now)
            for match in matches
        ),
    )
    return _count_all_scheduled(connection) - before


@_store_operation("add the matches to the schedule")
def add_schedule(connection: sqlite3.Connection, matches: Iterable[ScheduledMatch]) -> int:
    """Add the matches not yet scheduled, in one transaction, and count every one given in
    the current schedule again; return how many were new. The other scheduled matches are
    left as they are (:func:`set_schedule` makes a schedule the whole current one)."""
    with connection:
        return _schedule_matches(connection, matches)


@dataclass(frozen=True, slots=True)
class RetiredBot:
    """A bot replaced by a newer version of itself (a league's): its results are history."""

    name: str
    replaced_by: str | None
    retired_at: str


@_store_operation("retire the bots replaced")
def retire_bots(connection: sqlite3.Connection, retired: Mapping[str, str | None]) -> int:
    """Retire each bot of ``retired`` (name: the bot replacing it), in one transaction: note
    it, and take its matches not yet played out of the schedule; return how many left it.
    Its stored results stay. A bot retired already keeps its first note."""
    if not retired:
        return 0
    now = _now()
    with connection:
        connection.executemany(
            "INSERT OR IGNORE INTO retired (name, replaced_by, retired_at) VALUES (?, ?, ?)",
            ((name, by, now) for name, by in retired.items()),
        )
        before = connection.total_changes
        connection.executemany(
            "DELETE FROM schedule WHERE (seat0 = ? OR seat1 = ?) "
            "AND match_id NOT IN (SELECT match_id FROM results)",
            ((name, name) for name in retired),
        )
        return connection.total_changes - before


def retired_bots(connection: sqlite3.Connection) -> dict[str, RetiredBot]:
    """The retired bots by name (none in a store made before leagues)."""
    try:
        cursor = connection.execute("SELECT name, replaced_by, retired_at FROM retired")
    except sqlite3.OperationalError:  # a store older than the table, opened read-only
        return {}
    return {name: RetiredBot(name, by, at) for name, by, at in cursor}


@_store_operation("count the retired bots' matches")
def retired_counts(connection: sqlite3.Connection, *, current: bool = False) -> tuple[int, int]:
    """Matches of the schedule, and stored results, in which a retired bot played; with
    ``current``, only those of the current schedule."""
    if not retired_bots(connection):
        return 0, 0
    retired = "(seat0 IN (SELECT name FROM retired) OR seat1 IN (SELECT name FROM retired))"
    in_schedule = "current = 1" if current and _knows_current(connection) else "1"
    in_results = _current(connection) if current else "1"
    scheduled = connection.execute(
        f"SELECT count(*) FROM schedule WHERE {retired} AND {in_schedule}"
    ).fetchone()
    stored = connection.execute(
        f"SELECT count(*) FROM results WHERE {retired} AND {in_results}"
    ).fetchone()
    return int(scheduled[0]), int(stored[0])


@_store_operation("write the bots and the schedule")
def set_schedule(
    connection: sqlite3.Connection,
    matches: Iterable[ScheduledMatch],
    bots: Iterable[BotSpec] = (),
) -> int:
    """Make ``matches`` the current schedule: add the new ones, count the known ones in
    again, and leave every other scheduled match out (kept, played or not, for a later
    schedule that has it again); with them, record ``bots`` (:func:`save_bots`). One
    transaction: a run that cannot write them all changes neither. Return how many matches
    were new."""
    with connection:
        _save_bots(connection, bots)
        connection.execute("UPDATE schedule SET current = 0 WHERE current = 1")
        return _schedule_matches(connection, matches)


@_store_operation("count the scheduled matches")
def count_scheduled(connection: sqlite3.Connection) -> int:
    """Matches in the current schedule (the last run's config's)."""
    left_out = 0
    if _leaves_out(connection):
        query = "SELECT count(*) FROM schedule WHERE current = 0"
        left_out = int(connection.execute(query).fetchone()[0])
    return _count_all_scheduled(connection) - left_out


def _count_all_scheduled(connection: sqlite3.Connection) -> int:
    """Every match ever scheduled on this store, current or not."""
    return int(connection.execute("SELECT count(*) FROM schedule").fetchone()[0])


# ---------------------------------------------------------------------------------------------
# Results


def record_path(directory: Path, match_id: str) -> Path:
    """Where a match's record goes."""
    return directory / RECORDS_DIR / f"match-{match_id}.jsonl"


def remove_stale_temporaries(directory: Path) -> int:
    """Delete records half-written by a run that died; call while holding the lock."""
    removed = 0
    for path in (directory / RECORDS_DIR).glob(f".*{_TEMPORARY_SUFFIX}"):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


def write_record(path: Path, lines: Sequence[str]) -> None:
    """Write a record atomically and durably (:func:`referee.record_files.write_record`).
    Call before the match's row is committed. Raises :class:`StoreError` if it cannot (a
    full disk, say), leaving no temporary file behind."""
    try:
        write_record_file(path, lines)
    except OSError as error:
        raise _store_failure(path, "write the record", error) from None


@_store_operation("store a result")
def save_result(connection: sqlite3.Connection, row: ResultRow) -> bool:
    """Insert a finished match's row in one transaction; False if it was already stored."""
    placeholders = ", ".join("?" for _ in RESULT_COLUMNS)
    with connection:
        cursor = connection.execute(
            f"INSERT OR IGNORE INTO results ({', '.join(RESULT_COLUMNS)}) VALUES ({placeholders})",
            row.values(),
        )
        return cursor.rowcount == 1


@_store_operation("look up a result")
def is_stored(connection: sqlite3.Connection, match_id: str) -> bool:
    """True if the match's result is in the store."""
    found = connection.execute("SELECT 1 FROM results WHERE match_id = ?", (match_id,))
    return found.fetchone() is not None


@_store_operation("count the results")
def count_results(connection: sqlite3.Connection) -> int:
    """Finished matches stored, of the current schedule."""
    stored = int(connection.execute("SELECT count(*) FROM results").fetchone()[0])
    return stored - count_unscheduled(connection)


@_store_operation("count the results")
def count_unscheduled(connection: sqlite3.Connection) -> int:
    """Finished matches stored that the current schedule leaves out (a bot removed from the
    config, fewer matches per pair): kept, and counted nowhere else."""
    if not _leaves_out(connection):
        return 0
    query = (
        "SELECT count(*) FROM schedule JOIN results ON results.match_id = schedule.match_id "
        "WHERE schedule.current = 0"
    )
    return int(connection.execute(query).fetchone()[0])


@dataclass(frozen=True, slots=True)
class ResultGroup:
    """Stored matches with the same seats and the same outcome, summed.

    The standings are computed from these groups, whose number grows with the number of
    pairings, not of matches: the coordinator never holds every result in memory.
    """

    seats: tuple[str, str]
    #: None: void (both bots failed before game 1).
    winner_seat: int | None
    #: The seat that forfeited and why, if the match was forfeited.
    forfeit_seat: int | None
    forfeit_kind: str | None
    matches: int
    games: int
    games_won: tuple[int, int]
    scores: tuple[int, int]


@_store_stream("read the results")
def result_groups(
    connection: sqlite3.Connection, *, unscheduled_too: bool = False
) -> Iterator[ResultGroup]:
    """The stored results of the current schedule aggregated by seats and outcome (see
    :class:`ResultGroup`): every result's groups less those of the results left out, which
    are found through their own index, so that leaving matches out costs no look-up per
    result. With ``unscheduled_too``, every stored result, also those the current schedule
    leaves out (a league's replaced versions)."""
    left_out: dict[tuple[Any, ...], tuple[int, ...]] = {}
    if not unscheduled_too and _leaves_out(connection):
        left_out = {
            tuple(key): tuple(sums)
            for *key, sums in _grouped(
                connection,
                "FROM schedule JOIN results ON results.match_id = schedule.match_id "
                "WHERE schedule.current = 0",
            )
        }
    for *key, sums in _grouped(connection, "FROM results"):
        removed = left_out.get(tuple(key))
        if removed is not None:
            sums = tuple(total - part for total, part in zip(sums, removed, strict=True))
        matches, games, won0, won1, score0, score1 = sums
        if matches:
            seat0, seat1, winner, forfeit_seat, kind = key
            yield ResultGroup(
                (seat0, seat1),
                winner,
                forfeit_seat,
                kind,
                matches,
                games,
                (won0, won1),
                (score0, score1),
            )


_GROUP_KEY = "results.seat0, results.seat1, winner_seat, forfeit_seat, forfeit_kind"


def _grouped(connection: sqlite3.Connection, source: str) -> Iterator[list[Any]]:
    """``[seat0, seat1, winner_seat, forfeit_seat, forfeit_kind, sums]`` per group of the
    results in ``source`` (a FROM clause), sums being (matches, games, games won by each
    seat, scores of each seat)."""
    cursor = connection.execute(
        f"SELECT {_GROUP_KEY}, count(*), sum(games), sum(games_won0), sum(games_won1), "
        f"sum(score0), sum(score1) {source} GROUP BY {_GROUP_KEY} ORDER BY {_GROUP_KEY}"
    )
    for row in cursor:
        yield [*row[:5], tuple(row[5:])]


@dataclass(frozen=True, slots=True)
class PairGroup:
    """Duplicate pairs (the two matches of one round between two bots) that ended alike."""

    #: The two bots, sorted.
    bots: tuple[str, str]
    #: Decided matches each bot won in the pair, in the order of ``bots``: (2, 0), (1, 1) or
    #: (0, 2), or (1, 0), (0, 1) when the pair's other match was void or is not stored yet.
    wins: tuple[int, int]
    pairs: int


@_store_stream("read the results by pair")
def pair_results(connection: sqlite3.Connection) -> Iterator[PairGroup]:
    """The stored decided matches of the current schedule by duplicate pair, pairs that ended
    alike counted together; a pair without a decided match is left out. Grows with the
    pairings, not the matches."""
    current = "s.current = 1" if _knows_current(connection) else "1"
    cursor = connection.execute(
        "SELECT low, high, low_wins, high_wins, count(*) FROM ("
        "  SELECT min(r.seat0, r.seat1) AS low, max(r.seat0, r.seat1) AS high,"
        "    sum(r.winner = min(r.seat0, r.seat1)) AS low_wins,"
        "    sum(r.winner = max(r.seat0, r.seat1)) AS high_wins"
        "  FROM results AS r JOIN schedule AS s ON s.match_id = r.match_id"
        f"  WHERE r.winner IS NOT NULL AND {current}"
        "  GROUP BY s.pairing, s.round"
        ") GROUP BY low, high, low_wins, high_wins ORDER BY low, high, low_wins, high_wins"
    )
    for low, high, low_wins, high_wins, pairs in cursor:
        yield PairGroup((low, high), (low_wins, high_wins), pairs)


@dataclass(frozen=True, slots=True)
class StoredBot:
    """A bot of the store: when it was first and last in a run's config."""

    name: str
    first_seen: str
    last_seen: str


@_store_operation("read the bots")
def stored_bots(connection: sqlite3.Connection) -> list[StoredBot]:
    """The store's bots in the order they were first added."""
    cursor = connection.execute(
        "SELECT name, first_seen, last_seen FROM bots ORDER BY first_seen, rowid"
    )
    return [StoredBot(name, first, last) for name, first, last in cursor]


@_store_operation("read the bots")
def stored_bot_names(connection: sqlite3.Connection) -> list[str]:
    """The bots of the current schedule (every bot of a store without one), in the order
    they were first added."""
    return [name for name, current in _bots(connection) if current]


@_store_operation("read the bots")
def unscheduled_bot_names(connection: sqlite3.Connection) -> list[str]:
    """The bots of earlier runs that the current schedule leaves out, in the order they were
    first added."""
    return [name for name, current in _bots(connection) if not current]


def _bots(connection: sqlite3.Connection) -> list[tuple[str, bool]]:
    """Every bot, and whether it plays in the current schedule (every one does while the
    schedule leaves nothing out)."""
    names = [
        name for (name,) in connection.execute("SELECT name FROM bots ORDER BY first_seen, rowid")
    ]
    if not _leaves_out(connection):
        return [(name, True) for name in names]
    return [(name, _plays(connection, name)) for name in names]


def _plays(connection: sqlite3.Connection, name: str) -> bool:
    """Whether the bot has a match in the current schedule (found in its first round, for a
    bot that has)."""
    found = connection.execute(
        "SELECT 1 FROM schedule WHERE current = 1 AND (seat0 = ? OR seat1 = ?) LIMIT 1",
        (name, name),
    ).fetchone()
    return found is not None


@_store_operation("read the results")
def data_version(connection: sqlite3.Connection) -> int:
    """A number that changes when another connection commits to the store (SQLite's
    ``PRAGMA data_version``): a reader's cheap "has anything changed?", which reads no
    table and holds no transaction."""
    return int(connection.execute("PRAGMA data_version").fetchone()[0])


@contextlib.contextmanager
def snapshot(connection: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every query in it sees the same results, even during a run."""
    started = not connection.in_transaction
    if started:
        connection.execute("BEGIN")
    try:
        yield
    finally:
        if started and connection.in_transaction:
            connection.rollback()


# ---------------------------------------------------------------------------------------------
# Results one by one, as the report reads them: typed rows, their JSON decoded here, once


@dataclass(frozen=True, slots=True)
class StoredMatch:
    """One stored match: who played, how it ended, where its record is."""

    match_id: str
    seats: tuple[str, str]
    #: None: void.
    winner: str | None
    termination: str
    scores: tuple[int, int]
    games: int
    #: The bot that forfeited and its fault's kind, if the match was forfeited.
    forfeit_bot: str | None
    forfeit_kind: str | None
    duration_s: float
    #: Relative to the output directory.
    record_path: str


@_store_operation("read the results")
def stored_matches(
    connection: sqlite3.Connection, *, limit: int | None = None
) -> list[StoredMatch]:
    """The stored matches by match id (round, then seats); the first ``limit`` of them."""
    cursor = connection.execute(
        "SELECT match_id, seat0, seat1, winner, termination, score0, score1, games, "
        "forfeit_bot, forfeit_kind, duration_s, record_path FROM results "
        f"WHERE {_current(connection)} ORDER BY match_id LIMIT ?",
        (-1 if limit is None else max(limit, 0),),
    )
    return [
        StoredMatch(
            match_id=match_id,
            seats=(seat0, seat1),
            winner=winner,
            termination=termination,
            scores=(score0, score1),
            games=games,
            forfeit_bot=forfeit_bot,
            forfeit_kind=forfeit_kind,
            duration_s=duration,
            record_path=path,
        )
        for (
            match_id,
            seat0,
            seat1,
            winner,
            termination,
            score0,
            score1,
            games,
            forfeit_bot,
            forfeit_kind,
            duration,
            path,
        ) in cursor
    ]


_MATCH_COLUMNS = (
    "match_id, seat0, seat1, winner, termination, score0, score1, games, "
    "forfeit_bot, forfeit_kind, duration_s, record_path"
)


def _stored_match(row: Sequence[Any]) -> StoredMatch:
    match_id, seat0, seat1, winner, termination, score0, score1, games, *rest = row
    forfeit_bot, forfeit_kind, duration, path = rest
    return StoredMatch(
        match_id, (seat0, seat1), winner, termination, (score0, score1), games,
        forfeit_bot, forfeit_kind, duration, path,
    )  # fmt: skip


@_store_operation("read the results")
def recent_matches(connection: sqlite3.Connection, limit: int) -> list[StoredMatch]:
    """The ``limit`` matches stored last (of the current schedule), the latest first."""
    cursor = connection.execute(
        f"SELECT {_MATCH_COLUMNS} FROM results WHERE {_current(connection)} "
        "ORDER BY finished_at DESC, rowid DESC LIMIT ?",
        (max(limit, 0),),
    )
    return [_stored_match(row) for row in cursor]


@_store_operation("read the results")
def stored_match(connection: sqlite3.Connection, match_id: str) -> StoredMatch | None:
    """The stored match ``match_id`` (current or not), None if there is none."""
    row = connection.execute(
        f"SELECT {_MATCH_COLUMNS} FROM results WHERE match_id = ?", (match_id,)
    ).fetchone()
    return None if row is None else _stored_match(row)


@dataclass(frozen=True, slots=True)
class StoredOutcome:
    """Who played a stored match and who won it."""

    seats: tuple[str, str]
    #: None: void.
    winner_seat: int | None


@_store_stream("read the results")
def stored_outcomes(connection: sqlite3.Connection) -> Iterator[StoredOutcome]:
    """Every stored match's outcome in the order the matches were stored (finish time, then
    insertion); streamed."""
    cursor = connection.execute(
        "SELECT seat0, seat1, winner_seat FROM results "
        f"WHERE {_current(connection)} ORDER BY finished_at, rowid"
    )
    for seat0, seat1, winner_seat in cursor:
        yield StoredOutcome((seat0, seat1), winner_seat)


@dataclass(frozen=True, slots=True)
class DecisionTimes:
    """Per seat: the decisions a match asked for, and their mean and slowest time in ms
    (None for a seat that made none)."""

    decisions: tuple[int, int]
    mean_ms: tuple[float | None, float | None]
    max_ms: tuple[float | None, float | None]
    #: Per seat, each decision's wall time in ms (empty from stores of older runs).
    wall_ms: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    #: Per seat, each decision's CPU charge in ms, on the CPU clock (else empty).
    cpu_ms: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())


#: What an empty timing summary (``{}``, as hand-built stores write) counts as: no decision.
_NO_TIMES = DecisionTimes((0, 0), (None, None), (None, None))


@dataclass(frozen=True, slots=True)
class MatchActivity:
    """What the bots of one stored match did wrong, and how fast they decided."""

    match_id: str
    record_path: str
    seats: tuple[str, str]
    faults: tuple[Fault, ...]
    times: DecisionTimes


@_store_stream("read the results")
def stored_activity(connection: sqlite3.Connection) -> Iterator[MatchActivity]:
    """Every stored match's faults and decision times, in the order the matches were stored
    (finish time, then insertion); streamed. Raises :class:`StoreError` for a row whose
    faults or timings are not what a tournament stores."""
    cursor = connection.execute(
        "SELECT match_id, record_path, seat0, seat1, faults_json, timings_json FROM results "
        f"WHERE {_current(connection)} ORDER BY finished_at, rowid"
    )
    for match_id, path, seat0, seat1, faults_json, timings_json in cursor:
        faults = _json_column(match_id, "faults_json", faults_json)
        if not isinstance(faults, list):
            raise _damaged(match_id, "faults_json", "is not a list")
        yield MatchActivity(
            match_id,
            path,
            (seat0, seat1),
            tuple(_fault(match_id, fault) for fault in faults),
            _times(match_id, _json_column(match_id, "timings_json", timings_json)),
        )


def _damaged(match_id: str, column: str, what: str) -> StoreError:
    return StoreError(
        f"results store: match {match_id}: {column} {what}: a damaged store, or not one "
        "aegis-ref wrote"
    )


def _json_column(match_id: str, column: str, text: object) -> object:
    if not isinstance(text, str):
        raise _damaged(match_id, column, "is not text")
    try:
        return json.loads(text)
    except ValueError as error:
        raise _damaged(match_id, column, f"is not JSON ({error})") from None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _fault(match_id: str, value: object) -> Fault:
    if isinstance(value, dict):
        try:
            return Fault.from_json(value)
        except ValueError:
            pass  # reported below, as the store's damage
    raise _damaged(match_id, "faults_json", f"holds {str(value)[:80]!r}, not a fault")


def _times(match_id: str, value: object) -> DecisionTimes:
    if value == {}:
        return _NO_TIMES
    if isinstance(value, dict):
        decisions = value.get("decisions")
        mean, slowest = _milliseconds(value.get("mean_ms")), _milliseconds(value.get("max_ms"))
        if (
            isinstance(decisions, list)
            and len(decisions) == 2
            and all(_is_int(count) for count in decisions)
            and mean is not None
            and slowest is not None
        ):
            walls, charges = _each_time(value.get("wall_ms")), _each_time(value.get("cpu_ms"))
            if walls is not None and charges is not None:
                return DecisionTimes((decisions[0], decisions[1]), mean, slowest, walls, charges)
    raise _damaged(match_id, "timings_json", f"holds {str(value)[:80]!r}, not decision times")


def _each_time(value: object) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """Per seat, a list of times in ms, as floats (absent: none); None if it is not one."""
    if value is None:
        return ((), ())
    if not (
        isinstance(value, list) and len(value) == 2 and all(isinstance(v, list) for v in value)
    ):
        return None
    seats = []
    for times in value:
        if not all(isinstance(time, int | float) and not isinstance(time, bool) for time in times):
            return None
        seats.append(tuple(float(time) for time in times))
    return seats[0], seats[1]


def _milliseconds(value: object) -> tuple[float | None, float | None] | None:
    """A pair of times in ms (each a number or None) as floats; None if it is not one."""
    if not (isinstance(value, list) and len(value) == 2):
        return None
    times: list[float | None] = []
    for time in value:
        if time is None:
            times.append(None)
        elif isinstance(time, int | float) and not isinstance(time, bool):
            times.append(float(time))
        else:
            return None
    return times[0], times[1]


# ---------------------------------------------------------------------------------------------
# A ladder's rounds: what each planned (recomputable from the results; kept for the readers)


@dataclass(frozen=True, slots=True)
class StoredRound:
    """What a ladder planned for one round, as its standings show it."""

    round: int
    #: The field the round was planned for (bots join a league, or a config, on the way).
    bots: tuple[str, ...]
    #: "swiss" or "final".
    phase: str
    #: Duplicate pairs planned (two matches each).
    pairs: int
    #: Bots left out of this round (an odd count of active bots).
    byes: tuple[str, ...]
    #: Each bot's place in the race: "contender", "out" or "finalist".
    status: Mapping[str, str]
    #: What is certified, or what is still open ("top 3 certified at 95 %").
    certification: str
    #: Nothing more to play: the budget is spent or the top is certified.
    stop: bool
    #: The ladder's prior (virtual games against a bot of the mean rating) and confidence,
    #: with which its standings fit the ratings as its planner does.
    prior_games: float = 2.0
    confidence: float = 0.95


@_store_operation("read a ladder round's results")
def round_winners(connection: sqlite3.Connection, round_number: int) -> dict[str, str | None]:
    """``{match_id: winner}`` of the stored matches of round ``round_number`` (None: void),
    found by the round in their ids (``r0003-...``) through the primary key."""
    prefix = f"r{round_number:04d}-"
    cursor = connection.execute(
        "SELECT match_id, winner FROM results WHERE match_id >= ? AND match_id < ?",
        (prefix, prefix[:-1] + "."),  # "." follows "-": every id of the round, no other
    )
    return dict(cursor.fetchall())


@_store_operation("clear the ladder's rounds")
def clear_rounds(connection: sqlite3.Connection) -> None:
    """Forget every stored round plan (a run plans them all again from the results)."""
    with connection:
        connection.execute("DELETE FROM ladder_rounds")


@_store_operation("store a ladder round")
def save_round(connection: sqlite3.Connection, planned: StoredRound) -> None:
    """Store (or replace) what round ``planned.round`` planned."""
    with connection:
        connection.execute(
            "INSERT OR REPLACE INTO ladder_rounds (round, bots_json, phase, pairs, byes_json, "
            "status_json, certification, stop, prior_games, confidence, planned_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                planned.round,
                json.dumps(list(planned.bots)),
                planned.phase,
                planned.pairs,
                json.dumps(list(planned.byes)),
                json.dumps(dict(planned.status), sort_keys=True),
                planned.certification,
                int(planned.stop),
                planned.prior_games,
                planned.confidence,
                _now(),
            ),
        )


@_store_operation("read the ladder's rounds")
def latest_round(connection: sqlite3.Connection) -> StoredRound | None:
    """The last round a ladder planned; None for a store of another format (or one made
    before ladders)."""
    found = _rounds(connection, "ORDER BY round DESC LIMIT 1")
    return found[0] if found else None


@_store_operation("read the ladder's rounds")
def stored_rounds(connection: sqlite3.Connection) -> list[StoredRound]:
    """Every round a ladder planned, in order."""
    return _rounds(connection, "ORDER BY round")


def _rounds(connection: sqlite3.Connection, order: str) -> list[StoredRound]:
    known = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ladder_rounds'"
    ).fetchone()
    if known is None:  # a store opened read-only, made before ladders
        return []
    cursor = connection.execute(
        "SELECT round, bots_json, phase, pairs, byes_json, status_json, certification, stop, "
        f"prior_games, confidence FROM ladder_rounds {order}"
    )
    found = []
    for number, bots, phase, pairs, byes, status, certification, stop, *fit in cursor:
        prior_games, confidence = fit
        found.append(
            StoredRound(
                number,
                tuple(json.loads(bots)),
                phase,
                pairs,
                tuple(json.loads(byes)),
                json.loads(status),
                certification,
                bool(stop),
                prior_games,
                confidence,
            )
        )
    return found
