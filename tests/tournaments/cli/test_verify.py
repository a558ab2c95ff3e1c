"""The ``verify`` command: a fresh record verifies; a damaged one is reported at its first
disagreement, with its place; a folder (a tournament's output) is verified record by record
and summed up in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tournaments.cli.helpers import Line, invoke, read_lines, write_lines


def test_verify_accepts_a_fresh_record(record: Path) -> None:
    result = invoke("verify", record)
    assert result.exit_code == 0, result.output
    lines = read_lines(record)
    games = sum(1 for line in lines if line["type"] == "game")
    actions = sum(len(line["actions"]) for line in lines if line["type"] == "game")
    assert result.output == f"OK: 3 matches, {games} games, {actions} actions verified\n"


def _play_index(line: Line) -> int:
    actions = line["actions"]
    assert isinstance(actions, list)
    return next(n for n, action in enumerate(actions) if action["action"] == "play")


def test_verify_reports_the_first_disagreement_with_its_place(record: Path) -> None:
    lines = read_lines(record)
    number, line = next((n, line) for n, line in enumerate(lines, 1) if line.get("game") == 2)
    actions = line["actions"]
    assert isinstance(actions, list)
    lead = _play_index(line)
    actions[lead], actions[lead + 1] = actions[lead + 1], actions[lead]
    follow = actions[lead]
    # A later damage is not reported: only the first.
    lines[-1]["winner"] = 1 - lines[-1]["winner"]
    write_lines(record, lines)
    result = invoke("verify", record)
    assert result.exit_code == 1
    assert result.output.startswith(
        f"{record}:{number}: match 1, game 2, action {lead + 1} "
        f"(seat {follow['seat']} play {follow['card']}): illegal card '{follow['card']}' "
        f"for seat {follow['seat']}: it is seat {1 - follow['seat']}'s turn in the play phase\n"
    )
    assert result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("deck", ": match 2, game 1: the deck holds "),
        ("points", ": match 2, game 1: points "),
        ("trick winner", ": match 2, game 1: trick 1: winner is seat "),
        ("termination", ": match 2: termination is "),
        ("missing key", ": match 2, game 1: game line has no 'deck' field"),
        ("version", ": record version 9 is not supported (this verifier reads version 1)"),
    ],
)
def test_verify_damaged_records(record: Path, damage: str, expected: str) -> None:
    lines = read_lines(record)
    number, game = next(
        (n, line) for n, line in enumerate(lines, 1) if line["match"] == 2 and line.get("game") == 1
    )
    end = next(
        n for n, line in enumerate(lines, 1) if line["match"] == 2 and line["type"] == "match_end"
    )
    start = next(
        n for n, line in enumerate(lines, 1) if line["match"] == 2 and line["type"] == "match_start"
    )
    if damage == "deck":
        deck = game["deck"]
        assert isinstance(deck, list)
        deck[0] = deck[1]
    elif damage == "points":
        game["points"] = [9, 9]
    elif damage == "trick winner":
        tricks = game["tricks"]
        assert isinstance(tricks, list)
        tricks[0]["winner"] = 1 - tricks[0]["winner"]
    elif damage == "termination":
        number = end
        lines[end - 1]["termination"] = "both_over_target"
    elif damage == "missing key":
        del game["deck"]
    else:
        number = start
        lines[start - 1]["version"] = 9
    write_lines(record, lines)
    result = invoke("verify", record)
    assert result.exit_code == 1
    assert result.output.startswith(f"{record}:{number}{expected}"), result.output


def test_verify_bad_json_and_truncation(record: Path) -> None:
    text = record.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    record.write_text("".join(lines[:3]) + lines[3][:25], encoding="utf-8")
    result = invoke("verify", record)
    assert result.exit_code == 1
    assert result.output.startswith(f"{record}:4: match 1: line is not valid JSON: ")

    record.write_text("".join(lines[:-1]), encoding="utf-8")
    result = invoke("verify", record)
    assert result.exit_code == 1
    assert result.output == (
        f"{record}:{len(lines) - 1}: match 3: the record ends inside match 3: no match_end line\n"
    )


def test_verify_empty_and_binary_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    result = invoke("verify", empty)
    assert (result.exit_code, result.output) == (1, f"{empty}: the record holds no match\n")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n")
    result = invoke("verify", binary)
    assert result.exit_code == 1
    assert result.output.startswith(f"{binary}:1: line is not valid UTF-8")


def test_verify_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    result = invoke("verify", missing)
    assert result.exit_code == 2
    assert result.output == f"{missing}: cannot read the record: No such file or directory\n"
    result = invoke("verify", tmp_path)
    assert result.exit_code == 2
    assert result.output == f"{tmp_path}: no record (*.jsonl file) in this folder\n"


# ---------------------------------------------------------------------------------------------
# Many records: a tournament's output


def _counts(records: list[Path]) -> tuple[int, int, int]:
    lines = [line for record in records for line in read_lines(record)]
    games = [line for line in lines if line["type"] == "game"]
    starts = sum(1 for line in lines if line["type"] == "match_start")
    return starts, len(games), sum(len(line["actions"]) for line in games)


def test_verify_a_tournament_output_in_one_line(tournament_output: Path) -> None:
    """The output directory holds the store, logs, maybe a report and its replay pages: only
    the records are verified, each of the real bots' matches."""
    records = sorted((tournament_output / "records").glob("*.jsonl"))
    matches, games, actions = _counts(records)
    assert matches == len(records) == 6
    result = invoke("verify", tournament_output)
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"OK: 6 records, 6 matches, {games} games, {actions} actions verified\n"
    )
    # A record named twice (in its folder and by itself) is verified once.
    again = invoke("verify", tournament_output / "records", records[0])
    assert again.output == result.output


def test_verify_many_reports_each_bad_record_and_sums_up(
    tournament_output: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "records"
    shutil.copytree(tournament_output / "records", folder)
    records = sorted(folder.glob("*.jsonl"))
    lines = read_lines(records[2])
    lines[-1]["winner"] = 1 - lines[-1]["winner"]
    write_lines(records[2], lines)
    # A writer's temporary file (hidden) is no record, whatever it holds.
    (folder / ".match-x.jsonl").write_text("half a line", encoding="utf-8")
    (folder / "notes.txt").write_text("not a record", encoding="utf-8")
    _, games, actions = _counts([record for record in records if record != records[2]])
    result = invoke("verify", folder)
    assert result.exit_code == 1
    reported = result.output.splitlines()
    assert len(reported) == 2
    assert reported[0].startswith(f"{records[2]}:{len(lines)}: match 1: winner is seat ")
    assert reported[1] == (
        f"FAILED: of 6 records, 1 disagrees; 5 verified (5 matches, {games} games, "
        f"{actions} actions)"
    )
    missing = tmp_path / "missing.jsonl"
    result = invoke("verify", folder, missing)
    assert result.exit_code == 1  # a disagreement counts before a file that cannot be read
    assert f"{missing}: cannot read the record: No such file or directory" in result.output
    assert result.output.splitlines()[-1].startswith(
        "FAILED: of 7 records, 1 disagrees and 1 cannot be read; 5 verified"
    )
    records[2].unlink()
    result = invoke("verify", folder, missing)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(
        "FAILED: of 6 records, 1 cannot be read; 5 verified"
    )


def test_verify_many_goes_past_a_void_match(tmp_path: Path, record: Path) -> None:
    """A void match (both bots failed before the first game: no game, no winner) is verified
    like any other record, and the others after it."""
    void = tmp_path / "a-void.jsonl"
    start = read_lines(record)[0]
    end = {
        "type": "match_end",
        "match": 1,
        "winner": None,
        "termination": "void",
        "scores": [0, 0],
        "games": 0,
        "faults": [
            {"seat": seat, "bot": name, "fault": "handshake", "detail": "no hello"}
            for seat, name in enumerate(start["players"])
        ],
    }
    void.write_text("".join(json.dumps(line) + "\n" for line in (start, end)), encoding="utf-8")
    result = invoke("verify", tmp_path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith("OK: 2 records, ")


def test_verify_accepts_void_matches(void_record: Path) -> None:
    result = invoke("verify", void_record)
    assert (result.exit_code, result.output) == (0, "OK: 2 matches, 0 games, 0 actions verified\n")
