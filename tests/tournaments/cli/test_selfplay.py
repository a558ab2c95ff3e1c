"""The ``selfplay`` command, the record files it writes, and the golden records."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from tests.golden.regenerate import GOLDEN, regenerate
from tests.tournaments.cli.helpers import invoke, read_lines, selfplay

GOLDEN_DIRECTORY = Path(__file__).resolve().parents[2] / "golden"


def test_selfplay_writes_a_record_and_prints_one_line(record: Path) -> None:
    lines = read_lines(record)
    matches = [line for line in lines if line["type"] == "match_end"]
    games = [line for line in lines if line["type"] == "game"]
    assert len(matches) == 3
    assert lines[0]["players"] == ["random", "random"]
    summary = invoke("selfplay", "--matches", "3", "--seed", "7", "--record", record).output
    wins = [sum(1 for line in matches if line["winner"] == seat) for seat in (0, 1)]
    assert summary.startswith(
        f"3 matches, {len(games)} games: seat 0 won {wins[0]}, seat 1 won {wins[1]}; terminations "
    )
    assert summary.endswith(f"; record {record}\n")
    assert summary.count("\n") == 1


def test_selfplay_without_record_only_prints() -> None:
    result = invoke("selfplay", "--matches", "2")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("2 matches, ")
    assert "record" not in result.output


def test_same_seed_gives_byte_identical_records(tmp_path: Path) -> None:
    first, second, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    selfplay(first, "--matches", "4", "--seed", "11")
    selfplay(second, "--matches", "4", "--seed", "11")
    selfplay(other, "--matches", "4", "--seed", "12")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()


def test_match_k_depends_only_on_seed_and_k(tmp_path: Path) -> None:
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    selfplay(short, "--matches", "2", "--seed", "5")
    selfplay(long, "--matches", "3", "--seed", "5")
    assert long.read_bytes().startswith(short.read_bytes())


def test_selfplay_rules_options_and_policies_reach_the_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    selfplay(
        path,
        *("--matches", "2", "--policy", "first", "--policy", "random"),
        *("--target-score", "30", "--cold-margin", "12"),
        *("--promise-min-bid", "4", "--max-exchange-rounds", "2"),
    )
    start = read_lines(path)[0]
    assert start["players"] == ["first", "random"]
    assert start["rules"] == {
        "target_score": 30,
        "cold_margin": 12,
        "promise_min_bid": 4,
        "max_exchange_rounds": 2,
    }
    assert invoke("verify", path).exit_code == 0


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
    result = invoke("selfplay", *arguments)
    assert result.exit_code == 2
    # Typer draws the error in a box: drop the frame and the line breaks before comparing.
    assert message in " ".join(result.output.replace("│", " ").split())


def test_selfplay_into_a_missing_directory(tmp_path: Path) -> None:
    result = invoke("selfplay", "--matches", "1", "--record", tmp_path / "no" / "r.jsonl")
    assert result.exit_code == 2
    assert "cannot write record" in result.output


def test_a_link_to_a_record_is_kept_and_its_target_replaced(tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    selfplay(link, "--matches", "1")
    assert link.is_symlink()
    assert read_lines(target)[0]["type"] == "match_start"
    assert sorted(os.listdir(tmp_path)) == ["link.jsonl", "target.jsonl"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    selfplay(pipe, "--matches", "1")
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
    result = invoke("verify", GOLDEN_DIRECTORY / name)
    assert result.exit_code == 0, result.output
