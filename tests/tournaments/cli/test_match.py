"""The ``match`` command against real bot processes: the bots' names (given, said in their
hello, or kept apart), why a bot could not play, and the score it ends with."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.tournaments.cli.helpers import FAST, invoke, rawbot, read_lines, run_script


def players(record: Path) -> set[tuple[str, ...]]:
    return {tuple(line["players"]) for line in read_lines(record) if line["type"] == "match_start"}


def test_bots_are_called_by_the_names_they_give_in_their_hello(tmp_path: Path) -> None:
    # Two bots both started by a file called run: once called run-a and run-b.
    alpha = run_script(tmp_path / "a", rawbot("--name", "alpha"))
    beta = run_script(tmp_path / "b", rawbot("--name", "beta"))
    record = tmp_path / "r.jsonl"
    result = invoke("match", alpha, beta, *FAST, "--sandbox", "off", "--record", record)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("alpha vs beta: 2 matches, seed 1\n")
    assert players(record) == {("alpha", "beta"), ("beta", "alpha")}
    assert "\nScore of alpha vs beta: " in result.output


def test_a_given_name_wins_and_clashing_names_are_kept_apart(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    said_one = run_script(tmp_path / "b", rawbot("--name", "one"))
    result = invoke(
        "match", f"one={said_one}", said_one, *FAST, "--sandbox", "off", "--record", record
    )
    assert result.exit_code == 0, result.output
    assert players(record) == {("one", "one-b"), ("one-b", "one")}
    twice = invoke("match", "x=first", "x=random", "--sandbox", "off")
    assert twice.exit_code == 2
    assert "both bots are named 'x'" in twice.output


def test_a_hello_name_that_is_no_bot_name_is_not_used(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    command = rawbot("--name", "../\x1b[31mred")
    result = invoke("match", command, "first", *FAST, "--sandbox", "off", "--record", record)
    assert result.exit_code == 0, result.output
    assert "calls itself '../\\x1b[31mred', which is no bot name" in result.output
    assert "\x1b" not in result.output  # shown escaped, never sent to the terminal
    assert players(record) == {("rawbot", "first"), ("first", "rawbot")}


def test_a_bot_that_cannot_start_is_quoted(tmp_path: Path) -> None:
    broken = run_script(tmp_path / "broken", f"{sys.executable} -c 'import no_such_module_here'")
    result = invoke("match", broken, "first", *FAST, "--sandbox", "off")
    assert result.exit_code == 0, result.output
    why = "; last output: \"ModuleNotFoundError: No module named 'no_such_module_here'\""
    forfeits = [line for line in result.output.splitlines() if "forfeit:" in line]
    assert len(forfeits) == 2
    assert all(
        "handshake before the first game: process ended (exit code 1) before a valid hello" in line
        for line in forfeits
    )
    assert all(why in line for line in forfeits)
    assert "did not say hello, so it is called 'run': run handshake before the" in result.output


def test_the_end_is_the_score_the_elo_and_the_los(tmp_path: Path) -> None:
    result = invoke("match", "first", "random", "--matches", "3", *FAST, "--sandbox", "off")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert re.fullmatch(r"Score of first vs random: (\d) - (\d) \[\d\.\d{3}\] 3", lines[-2])
    assert re.fullmatch(
        r"Elo difference: [+-]\d+\.\d ± \d+\.\d \(95 %\), LOS: \d+\.\d %, "
        r"over 1 pair \(2-0: \d, 1-1: \d, 0-2: \d\) and 1 of one match",
        lines[-1],
    )


def test_remote_bots_play_one_match_at_a_time(tmp_path: Path) -> None:
    key = tmp_path / "referee.key"
    assert invoke("keygen", key).exit_code == 0
    bot = "remote:" + "0" * 40
    listen = ["--listen", "127.0.0.1:0", "--key-file", str(key)]
    result = invoke("match", bot, "first", *listen, "--concurrency", "2", "--sandbox", "off")
    assert result.exit_code == 2
    assert "remote bot remote-00000000 plays one match at a time" in result.output
    assert "--concurrency must be 1, not 2" in result.output
