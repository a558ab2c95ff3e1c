"""The ``replay`` command: a readable trace of a record, all of it or one match or game."""

from __future__ import annotations

from pathlib import Path

from tests.tournaments.cli.helpers import invoke, read_lines, write_lines

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "selfplay-seed-7.jsonl"


def test_the_whole_record_match_by_match() -> None:
    result = invoke("replay", "--no-color", GOLDEN)
    assert result.exit_code == 0, result.output
    starts = [line for line in result.output.splitlines() if line.startswith("Match ")]
    assert starts == [f"Match {number}: random vs random" for number in (1, 2, 3)]
    assert result.output.count("Winner: ") == 3
    assert "\x1b[" not in result.output


def test_one_game_of_one_match(record: Path) -> None:
    result = invoke("replay", "--match", "1", "--game", "2", record)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith(" Game 2  (scores ")
    assert lines[2].startswith("  key card ")
    assert "Match 1" not in result.output
    assert "Winner: " not in result.output


def test_colour_on_demand(record: Path) -> None:
    assert "\x1b[" in invoke("replay", "--color", record).output


def test_nothing_matches(record: Path) -> None:
    result = invoke("replay", "--match", "9", record)
    assert result.exit_code == 1
    assert "nothing matches: check --match and --game" in result.output


def test_unreadable_and_malformed_records(tmp_path: Path, record: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    result = invoke("replay", missing)
    assert result.exit_code == 2
    assert f"{missing}: cannot read the record" in result.output
    not_json = tmp_path / "not.jsonl"
    not_json.write_text("nope\n", encoding="utf-8")
    result = invoke("replay", not_json)
    assert (result.exit_code, result.output) == (2, f"{not_json}:1: not JSON: Expecting value\n")
    lines = read_lines(record)
    del lines[1]["deck"]
    write_lines(record, lines)
    result = invoke("replay", record)
    assert result.exit_code == 2
    assert "malformed record (KeyError: 'deck')" in result.output


def test_a_void_match_shows_both_faults(void_record: Path) -> None:
    result = invoke("replay", "--no-color", void_record)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith("Match ")] == [
        "Match 1: false-a vs false-b",
        "Match 2: false-b vs false-a",
    ]
    assert lines.count("Void: both bots failed before the first game; no winner") == 2
    faults = [line for line in lines if line.startswith("  fault: ")]
    assert faults[:2] == [
        f"  fault: false-{bot} (seat {seat}) handshake: process ended (exit code 1) before a "
        "valid hello"
        for seat, bot in ((0, "a"), (1, "b"))
    ]
    assert len(faults) == 4
    assert "Winner" not in result.output
