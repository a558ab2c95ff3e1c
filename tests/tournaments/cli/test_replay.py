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


# ---------------------------------------------------------------------------------------------
# Many records


def test_several_records_one_after_another(record: Path) -> None:
    result = invoke("replay", "--no-color", record, GOLDEN)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith("── ")] == [
        f"── {record} ──",
        f"── {GOLDEN} ──",
    ]
    assert result.output.count("Winner: ") == 6


def test_a_tournament_folder(tournament_output: Path) -> None:
    result = invoke("replay", "--no-color", "--game", "1", tournament_output)
    assert result.exit_code == 0, result.output
    records = sorted((tournament_output / "records").glob("*.jsonl"))
    headers = [line for line in result.output.splitlines() if line.startswith("── ")]
    assert headers == [f"── {path} ──" for path in records]


def test_a_bad_record_among_good_ones(tmp_path: Path, record: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("nope\n", encoding="utf-8")
    result = invoke("replay", "--no-color", broken, record)
    assert result.exit_code == 2
    assert f"{broken}:1: not JSON: Expecting value" in result.output
    assert result.output.count("Winner: ") == 3  # the good record is still shown
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("replay", empty)
    assert (result.exit_code, result.output) == (
        2,
        f"{empty}: no record (*.jsonl file) in this folder\n",
    )


def test_lines_that_break_a_json_parser(tmp_path: Path) -> None:
    """An integer of thousands of digits, or nesting deeper than the parser goes: a clear
    error naming the line, in the trace and for a page, never a traceback."""
    for name, text in (("big", '{"seed": ' + "9" * 5000 + "}"), ("deep", "[" * 100_000)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(text + "\n", encoding="utf-8")
        for extra in ((), ("--html", str(tmp_path / f"{name}.html"))):
            result = invoke("replay", path, *extra)
            assert result.exit_code == 2, result.output
            assert result.output.startswith(f"{path}:1: not JSON: ")


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
