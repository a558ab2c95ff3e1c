"""The ``sprt`` command against real bot processes: its verdicts, exit codes and record."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tournaments.cli.helpers import invoke
from tournaments.cli.sprt import EXIT_ERROR, EXIT_H0, EXIT_H1, EXIT_UNDECIDED


def test_first_against_itself_accepts_h0(tmp_path: Path) -> None:
    record = tmp_path / "sprt.jsonl"
    result = invoke(
        "sprt", "first", "first", "--elo1", "200", "--target-score", "5", "--record", record
    )
    assert result.exit_code == EXIT_H0, result.output
    assert "H0 accepted" in result.output
    assert "LLR" in result.output
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    ends = [line for line in lines if line["type"] == "match_end"]
    assert len(ends) % 2 == 0
    assert {line["players"][0] for line in lines if line["type"] == "match_start"} == {
        "first-new",
        "first-old",
    }


def test_first_against_random(tmp_path: Path) -> None:
    result = invoke(
        *("sprt", "first", "random", "--elo0", "0", "--elo1", "200"),
        *("--target-score", "5", "--max-matches", "9", "--seed", "5"),
    )
    assert result.exit_code in (EXIT_H1, EXIT_H0, EXIT_UNDECIDED), result.output
    assert "LLR" in result.output
    assert "Elo" in result.output
    pair_lines = [line for line in result.output.splitlines() if line.startswith("pair ")]
    assert 1 <= len(pair_lines) <= 4  # --max-matches 9 allows 4 whole pairs
    if result.exit_code == EXIT_UNDECIDED:
        assert "undecided: --max-matches 9 reached" in result.output


def test_bad_arguments_are_refused() -> None:
    swapped = invoke("sprt", "first", "random", "--elo0", "20", "--elo1", "0")
    assert swapped.exit_code == 2
    assert "elo0 < elo1" in swapped.output
    unknown = invoke("sprt", "first", "no-such-bot-here")
    assert unknown.exit_code == EXIT_ERROR
    assert "no-such-bot-here" in unknown.output
