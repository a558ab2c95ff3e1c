"""The list of matches in flight for the web service: written when it changes, a few times
a second at most, and at once at the end of a run."""

from __future__ import annotations

from pathlib import Path

from tournaments.run.in_play import InPlayNotes, read_in_play
from tournaments.schedule.pairings import ScheduledMatch, match_id, pairing_key


def _match(round_number: int, seats: tuple[str, str]) -> ScheduledMatch:
    return ScheduledMatch(
        match_id(round_number, seats), round_number, pairing_key(*seats), seats, round_number
    )


def _shown(directory: Path) -> list[str]:
    return [entry["match_id"] for entry in read_in_play(directory)]


def test_changes_within_the_interval_wait_for_the_next_note(tmp_path: Path) -> None:
    first, second, third = _match(1, ("a", "b")), _match(1, ("b", "a")), _match(2, ("a", "c"))
    notes = InPlayNotes(tmp_path, min_seconds=0.25)
    assert notes.note([first, second], 10.0)
    assert _shown(tmp_path) == [first.match_id, second.match_id]
    assert not notes.note([second, third], 10.1)  # changed, but written 0.1 s ago
    assert _shown(tmp_path) == [first.match_id, second.match_id]
    assert not notes.note([second, third], 10.2)
    assert notes.note([second, third], 10.3)  # the held-back change, once the interval passed
    assert _shown(tmp_path) == [second.match_id, third.match_id]
    assert not notes.note([second, third], 20.0)  # unchanged: nothing to write


def test_the_final_list_is_written_at_once(tmp_path: Path) -> None:
    notes = InPlayNotes(tmp_path, min_seconds=0.25)
    assert notes.note([_match(1, ("a", "b"))], 5.0)
    assert notes.note([], 5.01, final=True)
    assert _shown(tmp_path) == []
    assert not notes.note([], 5.02, final=True)  # already written
