"""The matches a run has handed to its workers and not yet stored: what ``aegis-ref serve``
shows as being played.

The coordinator writes :data:`IN_PLAY_NAME` in the output folder (atomically, a small JSON
list) whenever the set changes, at most every quarter of a second
(:class:`InPlayNotes`), and an empty list when it returns. It holds the matches in
flight: each worker's current match and the one queued behind it (the coordinator keeps
two per worker), so it says "being played or next", never less. Readers never trust it
beyond display: a run killed mid-way leaves its last list, which the next run replaces.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tournaments.schedule.pairings import ScheduledMatch

__all__ = ["IN_PLAY_NAME", "InPlayNotes", "read_in_play", "write_in_play"]

IN_PLAY_NAME = "in-play.json"


def write_in_play(directory: Path, matches: Iterable[ScheduledMatch]) -> None:
    """Write the matches in flight. Raises ``OSError``."""
    listed = [
        {"match_id": match.match_id, "round": match.round, "seats": list(match.seats)}
        for match in matches
    ]
    temporary = directory / f".{IN_PLAY_NAME}.tmp"
    temporary.write_text(json.dumps(listed), encoding="utf-8")
    os.replace(temporary, directory / IN_PLAY_NAME)


class InPlayNotes:
    """Writes the matches in flight when they change, at most every ``min_seconds``: with
    quick matches the set changes with every match, and each write costs the coordinator
    about 0.6 ms of CPU. A change held back is written at the next :meth:`note` once the
    interval has passed (the coordinator notes a few times a second); ``final`` writes at
    once (the run's last, empty list)."""

    def __init__(self, directory: Path, min_seconds: float = 0.25) -> None:
        self.directory = directory
        self.min_seconds = min_seconds
        #: The matches in flight as last written.
        self.written: frozenset[str] = frozenset()
        self._at = -math.inf

    def note(self, matches: Sequence[ScheduledMatch], now: float, *, final: bool = False) -> bool:
        """The matches in flight at ``now`` (``time.monotonic``); True if written. Raises
        ``OSError``."""
        shown = frozenset(match.match_id for match in matches)
        if shown == self.written or (not final and now - self._at < self.min_seconds):
            return False
        write_in_play(self.directory, matches)
        self.written, self._at = shown, now
        return True


def read_in_play(directory: Path) -> list[dict[str, Any]]:
    """The matches in flight as the run last wrote them; none if it wrote nothing legible."""
    try:
        listed = json.loads((directory / IN_PLAY_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(listed, list):
        return []
    return [
        {"match_id": entry["match_id"], "round": entry["round"], "seats": entry["seats"]}
        for entry in listed
        if isinstance(entry, dict)
        and isinstance(entry.get("match_id"), str)
        and isinstance(entry.get("round"), int)
        and isinstance(entry.get("seats"), list)
        and len(entry["seats"]) == 2
        and all(isinstance(seat, str) for seat in entry["seats"])
    ]
