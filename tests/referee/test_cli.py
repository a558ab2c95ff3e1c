"""The ``selfplay`` and ``verify`` commands, in-process and as the installed console script."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from referee.records import dumps_line, match_lines
from referee.rules.options import RulesOptions
from referee.selfplay import PlayedMatch
from referee.selfplay_runs import run_selfplay
from tests.golden.regenerate import GOLDEN, regenerate
from tournaments.cli import app

GOLDEN_DIRECTORY = Path(__file__).resolve().parents[1] / "golden"
# The console script installed beside this interpreter (the venv's bin or Scripts directory).
CONSOLE_SCRIPT = Path(sys.executable).with_name("aegis-ref")

Line = dict[str, Any]

runner = CliRunner()


def _invoke(*arguments: str | Path) -> Result:
    return runner.invoke(app, [str(argument) for argument in arguments])


def _selfplay(path: Path, *arguments: str) -> Result:
    result = _invoke("selfplay", "--record", path, *arguments)
    assert result.exit_code == 0, result.output
    return result


def _lines(path: Path) -> list[Line]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[Line]) -> None:
    path.write_text("".join(dumps_line(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """A fresh three-match record written by the command."""
    path = tmp_path / "r.jsonl"
    _selfplay(path, "--matches", "3", "--seed", "7")
    return path


# ---------------------------------------------------------------------------------------------
# selfplay


def test_selfplay_writes_a_record_and_prints_one_line(record: Path) -> None:
    lines = _lines(record)
    matches = [line for line in lines if line["type"] == "match_end"]
    games = [line for line in lines if line["type"] == "game"]
    assert len(matches) == 3
    assert lines[0]["players"] == ["random", "random"]
    summary = _invoke("selfplay", "--matches", "3", "--seed", "7", "--record", record).output
    wins = [sum(1 for line in matches if line["winner"] == seat) for seat in (0, 1)]
    assert summary.startswith(
        f"3 matches, {len(games)} games: seat 0 won {wins[0]}, seat 1 won {wins[1]}; terminations "
    )
    assert summary.endswith(f"; record {record}\n")
    assert summary.count("\n") == 1


def test_selfplay_without_record_only_prints() -> None:
    result = _invoke("selfplay", "--matches", "2")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("2 matches, ")
    assert "record" not in result.output


def test_same_seed_gives_byte_identical_records(tmp_path: Path) -> None:
    first, second, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    _selfplay(first, "--matches", "4", "--seed", "11")
    _selfplay(second, "--matches", "4", "--seed", "11")
    _selfplay(other, "--matches", "4", "--seed", "12")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()


def test_match_k_depends_only_on_seed_and_k(tmp_path: Path) -> None:
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    _selfplay(short, "--matches", "2", "--seed", "5")
    _selfplay(long, "--matches", "3", "--seed", "5")
    assert long.read_bytes().startswith(short.read_bytes())


def test_selfplay_rules_options_and_policies_reach_the_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _selfplay(
        path,
        *("--matches", "2", "--policy", "first", "--policy", "random"),
        *("--target-score", "30", "--cold-margin", "12"),
        *("--promise-min-bid", "4", "--max-exchange-rounds", "2"),
    )
    start = _lines(path)[0]
    assert start["players"] == ["first", "random"]
    assert start["rules"] == {
        "target_score": 30,
        "cold_margin": 12,
        "promise_min_bid": 4,
        "max_exchange_rounds": 2,
    }
    assert _invoke("verify", path).exit_code == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--policy", "clever"], "unknown policy 'clever'; choose from first, random"),
        (["--policy", "first", "--policy", "first", "--policy", "first"], "two, seat 0 first"),
        (["--max-exchange-rounds", "5"], "max_exchange_rounds must be between 0 and 4, got 5"),
        (["--matches", "0"], "--matches"),
    ],
)
def test_selfplay_bad_arguments(arguments: list[str], message: str) -> None:
    result = _invoke("selfplay", *arguments)
    assert result.exit_code == 2
    # Typer draws the error in a box: drop the frame and the line breaks before comparing.
    assert message in " ".join(result.output.replace("│", " ").split())


def test_selfplay_into_a_missing_directory(tmp_path: Path) -> None:
    result = _invoke("selfplay", "--matches", "1", "--record", tmp_path / "no" / "r.jsonl")
    assert result.exit_code == 2
    assert "cannot write record" in result.output


def _fail_after_first_match(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    real = match_lines

    def failing(played: PlayedMatch, players: Sequence[str], match_number: int = 1) -> list[Line]:
        if match_number > 1:
            raise error
        return real(played, players, match_number)

    monkeypatch.setattr("referee.selfplay_runs.match_lines", failing)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("disk on fire")])
def test_an_interrupted_run_leaves_the_old_record_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("old\n", encoding="utf-8")
    _fail_after_first_match(monkeypatch, error)
    with pytest.raises(type(error)):
        run_selfplay(
            matches=3, seed=1, policies=("random", "random"), options=RulesOptions(), record=path
        )
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["r.jsonl"]


def test_a_link_to_a_record_is_kept_and_its_target_replaced(tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    _selfplay(link, "--matches", "1")
    assert link.is_symlink()
    assert _lines(target)[0]["type"] == "match_start"
    assert sorted(os.listdir(tmp_path)) == ["link.jsonl", "target.jsonl"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    _selfplay(pipe, "--matches", "1")
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    assert received
    assert received[0].startswith(b'{"type":"match_start"')
    assert sorted(os.listdir(tmp_path)) == ["pipe"]


def test_the_record_gets_the_usual_file_mode(record: Path) -> None:
    umask = os.umask(0)
    os.umask(umask)
    assert record.stat().st_mode & 0o777 == 0o666 & ~umask


# ---------------------------------------------------------------------------------------------
# verify


def test_verify_accepts_a_fresh_record(record: Path) -> None:
    result = _invoke("verify", record)
    assert result.exit_code == 0, result.output
    lines = _lines(record)
    games = sum(1 for line in lines if line["type"] == "game")
    actions = sum(len(line["actions"]) for line in lines if line["type"] == "game")
    assert result.output == f"OK: 3 matches, {games} games, {actions} actions verified\n"


def _play_index(line: Line) -> int:
    actions = line["actions"]
    assert isinstance(actions, list)
    return next(n for n, action in enumerate(actions) if action["action"] == "play")


def test_verify_reports_the_first_disagreement_with_its_place(record: Path) -> None:
    lines = _lines(record)
    number, line = next((n, line) for n, line in enumerate(lines, 1) if line.get("game") == 2)
    actions = line["actions"]
    assert isinstance(actions, list)
    lead = _play_index(line)
    actions[lead], actions[lead + 1] = actions[lead + 1], actions[lead]
    follow = actions[lead]
    # A later damage is not reported: only the first.
    lines[-1]["winner"] = 1 - lines[-1]["winner"]
    _write(record, lines)
    result = _invoke("verify", record)
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
    lines = _lines(record)
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
    _write(record, lines)
    result = _invoke("verify", record)
    assert result.exit_code == 1
    assert result.output.startswith(f"{record}:{number}{expected}"), result.output


def test_verify_bad_json_and_truncation(record: Path) -> None:
    text = record.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    record.write_text("".join(lines[:3]) + lines[3][:25], encoding="utf-8")
    result = _invoke("verify", record)
    assert result.exit_code == 1
    assert result.output.startswith(f"{record}:4: match 1: line is not valid JSON: ")

    record.write_text("".join(lines[:-1]), encoding="utf-8")
    result = _invoke("verify", record)
    assert result.exit_code == 1
    assert result.output == (
        f"{record}:{len(lines) - 1}: match 3: the record ends inside match 3: no match_end line\n"
    )


def test_verify_empty_and_binary_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    result = _invoke("verify", empty)
    assert (result.exit_code, result.output) == (1, f"{empty}: the record holds no match\n")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n")
    result = _invoke("verify", binary)
    assert result.exit_code == 1
    assert result.output.startswith(f"{binary}:1: line is not valid UTF-8")


def test_verify_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    result = _invoke("verify", missing)
    assert result.exit_code == 2
    assert result.output == f"{missing}: cannot read the record: No such file or directory\n"
    result = _invoke("verify", tmp_path)
    assert result.exit_code == 2
    assert f"{tmp_path}: cannot read the record: Is a directory" in result.output


# ---------------------------------------------------------------------------------------------
# Golden records


def test_golden_records_are_reproduced_byte_for_byte(tmp_path: Path) -> None:
    written = regenerate(tmp_path)
    assert sorted(path.name for path in written) == sorted(GOLDEN)
    for path in written:
        checked_in = GOLDEN_DIRECTORY / path.name
        assert checked_in.exists(), (
            f"{checked_in} is missing: run python tests/golden/regenerate.py"
        )
        assert path.read_bytes() == checked_in.read_bytes(), (
            f"{checked_in.name} differs from a fresh run: the record format, the engine or a "
            "policy changed. If that is intended, run python tests/golden/regenerate.py and "
            "review the diff."
        )


def test_golden_directory_holds_only_known_records() -> None:
    assert sorted(path.name for path in GOLDEN_DIRECTORY.glob("*.jsonl")) == sorted(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_records_verify(name: str) -> None:
    result = _invoke("verify", GOLDEN_DIRECTORY / name)
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------------------------------
# The installed console script


def _run(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *map(str, arguments)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="aegis-ref is not installed here")
def test_console_script_selfplay_then_verify(tmp_path: Path) -> None:
    played = _run("selfplay", "--matches", "20", "--seed", "3", "--record", "r.jsonl", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert played.stdout.startswith("20 matches, ")
    assert played.stdout.endswith("; record r.jsonl\n")

    checked = _run("verify", "r.jsonl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("OK: 20 matches, ")

    damaged = tmp_path / "r.jsonl"
    lines = _lines(damaged)
    lines[1]["scores_before"] = [1, 0]
    _write(damaged, lines)
    checked = _run("verify", "r.jsonl", cwd=tmp_path)
    assert checked.returncode == 1
    assert checked.stdout == (
        "r.jsonl:2: match 1, game 1: scores_before [1, 0] but the running scores are [0, 0]\n"
    )

    missing = _run("verify", "nothing.jsonl", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert "nothing.jsonl: cannot read the record" in missing.stderr


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="aegis-ref is not installed here")
def test_console_script_version_names_the_protocol_and_the_build(tmp_path: Path) -> None:
    from importlib.metadata import version

    from protocol.version import PROTOCOL_VERSION

    shown = _run("--version", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(
        f"aegis-ref {version('aegis-ref')} (protocol {PROTOCOL_VERSION}, "
    )
    # The development install is editable, so never compiled (setup.py).
    assert "hot path pure Python); Python 3." in shown.stdout
