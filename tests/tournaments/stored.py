"""Build results stores by hand (no bots): synthetic rows for store and standings tests."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from referee.bots import BotSpec
from tournaments.schedule.pairings import ScheduledMatch, match_id, pairing_key
from tournaments.store.database import add_schedule, ensure_meta, open_store, save_bots, save_result
from tournaments.store.rows import ResultRow


def row(
    identifier: str,
    seats: tuple[str, str],
    winner_seat: int | None,
    *,
    scores: tuple[int, int] = (25, 10),
    games: int = 6,
    games_won: tuple[int, int] = (4, 2),
    forfeit: tuple[int, str] | None = None,
) -> ResultRow:
    """A results row; ``forfeit`` is (offending seat, fault kind); no winner means void."""
    void = winner_seat is None
    return ResultRow(
        match_id=identifier,
        seat0=seats[0],
        seat1=seats[1],
        void=void,
        winner_seat=winner_seat,
        winner=None if winner_seat is None else seats[winner_seat],
        termination="void" if void else ("forfeit" if forfeit else "target"),
        score0=0 if void else scores[0],
        score1=0 if void else scores[1],
        games=0 if void else games,
        games_won0=0 if void else games_won[0],
        games_won1=0 if void else games_won[1],
        forfeit_seat=None if forfeit is None else forfeit[0],
        forfeit_bot=None if forfeit is None else seats[forfeit[0]],
        forfeit_kind=None if forfeit is None else forfeit[1],
        forfeit_json=None if forfeit is None else json.dumps({"fault": forfeit[1]}),
        faults_json="[]",
        timings_json="{}",
        record_path=f"records/match-{identifier}.jsonl",
        duration_s=0.01,
        worker="test:1",
        finished_at="2024-01-01T00:00:00.000+00:00",
    )


def new_store(
    directory: Path, names: Sequence[str], *, rules: dict[str, int] | None = None
) -> sqlite3.Connection:
    """A store with meta and bots written; the caller closes it."""
    connection = open_store(directory)
    ensure_meta(
        connection,
        name="synthetic",
        rules=rules or {"target_score": 25},
        time_control={"decision_ms": 1000},
        seed=1,
        anchor=None,
        directory=directory,
    )
    save_bots(connection, [BotSpec(name, ("true",)) for name in names])
    return connection


def store_match(
    connection: sqlite3.Connection,
    round_number: int,
    seats: tuple[str, str],
    winner_seat: int | None,
    **details: Any,
) -> str:
    """Schedule and store one match; return its id."""
    identifier = match_id(round_number, seats)
    add_schedule(
        connection,
        [ScheduledMatch(identifier, round_number, pairing_key(*seats), seats, round_number)],
    )
    save_result(connection, row(identifier, seats, winner_seat, **details))
    return identifier
