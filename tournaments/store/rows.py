"""The result row: what a worker reports of a played match, what the store keeps of it in
its ``results`` table, and what the coordinator hands to the displays and the forfeit tally.

One typed value instead of a dict read by key, so that a renamed or missing column is a
type error where the row is built, not a ``KeyError`` (or a silent ``None``) where it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

__all__ = ["RESULT_COLUMNS", "ResultRow"]


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One stored match, a column of the ``results`` table per field, in the table's order."""

    match_id: str
    #: The bots by seat.
    seat0: str
    seat1: str
    #: True when neither bot won: both failed before the first game (stored as 0 or 1).
    void: bool
    #: The winner's seat and name; None for a void match.
    winner_seat: int | None
    winner: str | None
    #: How the match ended (``referee`` termination value), ``void`` for a void match.
    termination: str
    #: Match points by seat.
    score0: int
    score1: int
    #: Games played, and won by each seat.
    games: int
    games_won0: int
    games_won1: int
    #: The fault that forfeited the match, if one did: its seat, bot, kind and JSON.
    forfeit_seat: int | None
    forfeit_bot: str | None
    forfeit_kind: str | None
    forfeit_json: str | None
    #: Every fault of the match, a JSON list.
    faults_json: str
    #: The decision times by seat, a JSON object.
    timings_json: str
    #: The match's record, relative to the output directory.
    record_path: str
    duration_s: float
    #: ``host:pid`` of the process that played it.
    worker: str
    #: When it finished, ISO 8601 UTC.
    finished_at: str

    @property
    def seats(self) -> tuple[str, str]:
        """The bots by seat."""
        return (self.seat0, self.seat1)

    def values(self) -> tuple[object, ...]:
        """The row's values in the order of :data:`RESULT_COLUMNS`, as SQLite stores them."""
        return tuple(
            int(self.void) if name == "void" else getattr(self, name) for name in RESULT_COLUMNS
        )

    def stored_at(self, record_path: str) -> ResultRow:
        """The same row with its record at ``record_path``."""
        return replace(self, record_path=record_path)


#: The columns of the ``results`` table, in the order of :meth:`ResultRow.values`.
RESULT_COLUMNS = tuple(field.name for field in fields(ResultRow))
