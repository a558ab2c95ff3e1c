"""The ``verify`` command: a fresh record verifies; a damaged one is reported at its first
disagreement, with its place."""

from __future__ import annotations

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
    assert f"{tmp_path}: cannot read the record: Is a directory" in result.output


def test_verify_accepts_void_matches(void_record: Path) -> None:
    result = invoke("verify", void_record)
    assert (result.exit_code, result.output) == (0, "OK: 2 matches, 0 games, 0 actions verified\n")
