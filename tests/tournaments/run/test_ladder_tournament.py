"""A ladder (``format: ladder``) played by real bot processes through the installed
``aegis-ref``: its rounds, standings and report; the same records at concurrency 1 and 2 and
on a local Dask cluster; ``kill -9`` in the middle of a round and a resume that stores every
match once and ends with the same standings.

Five bundled bots with randomness of their own, drawn from each match's seed (so that where
and when a match is played does not change how it ends): an odd field, so every round leaves
one bot out.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tournaments.chromium import require_chromium, run_chromium
from tests.tournaments.helpers import (
    FAST_RULES,
    assert_stored_exactly_once,
    bundled_bots,
    differing,
    records_without_times,
    run_cli,
    start_tournament,
    wait_no_processes,
)
from tests.tournaments.html_tree import parse

DASK = Path(sys.executable).parent / "dask"

#: The ladder of every run here: certify the best two, at most four rounds.
LADDER = {"top": 2, "rounds": 4}


def write_ladder_config(folder: Path, name: str, marker: str, **settings: Any) -> Path:
    """The ladder's config: the four bundled bots of the reproducibility tests and ``first``."""
    bots = bundled_bots(marker, keep_alive=True)
    bots.append(
        {
            "name": "first",
            "command": "first",
            "env": {"AEGIS_TEST_MARKER": marker},
            "keep_alive": True,
        }
    )
    data = {
        "name": "ladder",
        "bots": bots,
        "format": "ladder",
        "ladder": dict(LADDER),
        "rules": dict(FAST_RULES),
        "time_control": {"decision_ms": 5000, "warmup_ms": 20000},
        "seed": 2**40 + 30,
        "concurrency": 1,
        **settings,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def stored_rounds(output: Path) -> list[tuple[int, str, int, list[str], dict[str, str], str, int]]:
    """The store's ladder rounds: (round, phase, pairs, byes, status, certification, stop)."""
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT round, phase, pairs, byes_json, status_json, certification, stop "
            "FROM ladder_rounds ORDER BY round"
        ).fetchall()
    finally:
        connection.close()
    return [
        (number, phase, pairs, json.loads(byes), json.loads(status), certification, stop)
        for number, phase, pairs, byes, status, certification, stop in rows
    ]


def stored_ids(output: Path) -> list[str]:
    """The stored match ids, sorted."""
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return sorted(
            match_id for (match_id,) in connection.execute("SELECT match_id FROM results")
        )
    finally:
        connection.close()


def standings_document(output: Path, cwd: Path) -> dict[str, Any]:
    """``aegis-ref standings --format json``."""
    printed = run_cli("standings", str(output), "--format", "json", cwd=cwd, timeout=300)
    assert printed.returncode == 0, printed.stderr
    document: dict[str, Any] = json.loads(printed.stdout)
    return document


@dataclass
class Reference:
    """The ladder played at concurrency 1, uninterrupted, sandboxed where this machine can."""

    folder: Path
    marker: str
    output: Path
    stdout: str
    records: dict[str, list[Any]]
    standings: dict[str, Any]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    folder = tmp_path_factory.mktemp("ladder")
    marker = uuid.uuid4().hex
    config = write_ladder_config(folder, "reference", marker)
    output = folder / "reference"
    finished = run_cli("tournament", str(config), "--output", str(output), cwd=folder, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert wait_no_processes(marker, timeout=5) == []
    return Reference(
        folder,
        marker,
        output,
        finished.stdout,
        records_without_times(output),
        standings_document(output, folder),
    )


def test_a_ladder_plays_rounds_of_duplicate_pairs(reference: Reference) -> None:
    """A Swiss round gives every bot in play one duplicate pair (both seat orders on the
    round's deal) and the bot left out rotates; a final round plays pairs of finalists,
    each at most once; the run stops within its budget of rounds, and the store keeps every round's
    plan and every match once."""
    rounds = stored_rounds(reference.output)
    assert rounds, "no round planned"
    *played, last = rounds
    assert last[6] == 1, "the last plan stops the ladder"
    assert 1 <= len(played) <= LADDER["rounds"]
    ids = assert_stored_exactly_once(reference.output, len(reference.records))
    byes: list[str] = []
    for number, phase, pairs, round_byes, status, _certification, stop in played:
        assert stop == 0
        in_round = [match_id for match_id in ids if match_id.startswith(f"r{number:04d}-")]
        assert len(in_round) == 2 * pairs
        seats = [match_id.split("-", 1)[1].split("+") for match_id in in_round]
        bots = [bot for pair in seats for bot in pair]
        for first, second in seats:
            assert [second, first] in seats  # both seat orders of every pair
        assert len({frozenset(pair) for pair in seats}) == pairs  # a pair meets once a round
        if phase == "swiss":
            assert all(bots.count(bot) == 2 for bot in bots)  # one pair per bot
            assert not set(bots) & set(round_byes)
        else:  # the final: the finalists' open pairs (all of them if none is open)
            finalists = {name for name, place in status.items() if place == "finalist"}
            assert set(bots) <= finalists
            assert 1 <= pairs <= len(finalists) * (len(finalists) - 1) // 2
        assert set(status) == {"random", "random-2", "greedy", "strong", "first"}
        byes += round_byes
    if all(rnd[1] == "swiss" and len(rnd[3]) == 1 for rnd in played[:2]):
        assert byes[0] != byes[1], "the bye rotates"
    stored_seeds = _seeds(reference.output)
    for number in range(1, len(played) + 1):
        assert len(stored_seeds[number]) == 1  # one deal per round, whoever plays it


def _seeds(output: Path) -> dict[int, set[int]]:
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        found: dict[int, set[int]] = {}
        for number, seed in connection.execute("SELECT round, seed FROM schedule"):
            found.setdefault(number, set()).add(seed)
        return found
    finally:
        connection.close()


def test_the_standings_show_status_interval_and_certification(reference: Reference) -> None:
    document = reference.standings
    ladder = document["ladder"]
    last = stored_rounds(reference.output)[-1]
    assert ladder["finished"] is True
    assert ladder["certification"] == last[5]
    assert ladder["certification"]  # "top 2 certified at 95 %" or what is still open
    for bot in document["bots"]:
        assert bot["status"] in ("contender", "out", "finalist")
        assert bot["status"] == last[4][bot["name"]]
        assert bot["matches"] + bot["void"] > 0
        assert bot["elo_low"] <= bot["elo"] <= bot["elo_high"]
    table = run_cli("standings", str(reference.output), cwd=reference.folder, timeout=300)
    assert table.returncode == 0, table.stderr
    assert "status" in table.stdout
    assert f"Ladder finished after {last[0] - 1} round(s): {last[5]}" in " ".join(
        table.stdout.split()
    )
    # The run said so too, and showed its rounds and budget as they went.
    assert "Ladder finished after" in reference.stdout
    assert "Round 1 of 4 (swiss): 2 pair(s), bye: " in reference.stdout
    assert "Round 2 of 4 " in reference.stdout
    # The CSV form ends with each bot's status, as the JSON one has it.
    printed = run_cli(
        "standings", str(reference.output), "--format", "csv", cwd=reference.folder, timeout=60
    )
    assert printed.returncode == 0, printed.stderr
    lines = list(csv.reader(io.StringIO(printed.stdout)))
    assert lines[0][-1] == "status"
    assert {line[1]: line[-1] for line in lines[1:]} == last[4]


def test_the_report_shows_the_ladder(reference: Reference, tmp_path: Path) -> None:
    """The report, as headless Chromium builds it: the certification line, and a status
    column with each bot's status."""
    require_chromium()
    written = run_cli("report", str(reference.output), cwd=reference.folder, timeout=120)
    assert written.returncode == 0, written.stderr
    url = (reference.output / "report.html").resolve().as_uri()
    dumped = run_chromium(["--dump-dom", url], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    page = parse(dumped.stdout)
    last = stored_rounds(reference.output)[-1]
    assert f"Ladder finished after {last[0] - 1} round(s): {last[5]}" in page.all_text()
    table = page.by_id("standings-table")
    headings = [heading.all_text() for heading in table.find_all("th")]
    assert headings[-1] == "status"
    shown = {
        cells[1].all_text(): cells[-1].all_text()
        for row in table.find_all("tr")
        if len(cells := row.find_all("td")) == len(headings)
    }
    assert shown == last[4]  # every bot, with the status of the last plan


def test_concurrency_two_gives_the_records_and_standings_of_concurrency_one(
    reference: Reference,
) -> None:
    config = write_ladder_config(reference.folder, "concurrent", reference.marker, concurrency=2)
    output = reference.folder / "concurrent"
    finished = run_cli(
        "tournament", str(config), "--output", str(output), "--quiet",
        cwd=reference.folder, timeout=300,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    assert differing(records_without_times(output), reference.records) == []
    assert standings_document(output, reference.folder) == reference.standings


@pytest.mark.skipif(not DASK.exists(), reason="needs the cluster extra (dask)")
def test_a_local_dask_cluster_gives_the_same_records_and_standings(reference: Reference) -> None:
    config = write_ladder_config(reference.folder, "dask", reference.marker)
    output = reference.folder / "dask"
    finished = run_cli(
        "tournament", str(config), "--output", str(output), "--local-cluster", "2",
        cwd=reference.folder, timeout=300,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    assert "Playing on the Dask cluster started here" in finished.stdout
    assert differing(records_without_times(output), reference.records) == []
    assert standings_document(output, reference.folder) == reference.standings
    assert wait_no_processes(reference.marker, timeout=10) == []


def test_kill_9_in_the_middle_of_a_round_and_resume(reference: Reference) -> None:
    """SIGKILL to the whole run (coordinator, workers, bots) once round 2 has stored a
    match but not all; the same command again plays only what is missing: every match stored
    once, the records and standings of the uninterrupted run."""
    config = write_ladder_config(reference.folder, "killed", reference.marker)
    output = reference.folder / "killed"
    run = start_tournament(config, output, reference.folder)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        if any(match_id.startswith("r0002-") for match_id in _ids_if_any(output)):
            os.killpg(run.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    _stdout, stderr = run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL, stderr
    in_round = [match_id for match_id in stored_ids(output) if match_id.startswith("r0002-")]
    planned = {row[0]: row[2] for row in stored_rounds(output)}
    assert 0 < len(in_round) < 2 * planned[2], "the run was not killed in the middle of round 2"
    assert wait_no_processes(reference.marker, timeout=10) == []
    resumed = run_cli(
        "tournament", str(config), "--output", str(output), cwd=reference.folder, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Ladder: 1 round(s) stored, round 2 next" in resumed.stdout
    assert_stored_exactly_once(output, len(reference.records))
    assert differing(records_without_times(output), reference.records) == []
    assert standings_document(output, reference.folder) == reference.standings
    again = run_cli(
        "tournament", str(config), "--output", str(output), cwd=reference.folder, timeout=300
    )  # a finished ladder: nothing more to play
    assert again.returncode == 0, again.stderr
    assert "round(s) stored, finished" in again.stdout
    assert "Preflight" not in again.stdout
    assert_stored_exactly_once(output, len(reference.records))


def _ids_if_any(output: Path) -> list[str]:
    """The stored match ids, none while the store is not there yet."""
    if not (output / "results.sqlite").exists():
        return []
    try:
        return stored_ids(output)
    except sqlite3.Error:
        return []


def test_a_bot_added_to_the_config_joins_from_the_next_round(reference: Reference) -> None:
    """A ladder played for its two rounds by four bots, then resumed with a fifth: the
    stored rounds stay as they were played (no match again, none left out), and the
    newcomer reopens the ladder with its budget (as a league's new version does): it plays
    from round 3 on, against some bots rather than every one."""
    marker = reference.marker
    four = write_ladder_config(reference.folder, "four", marker, ladder={"rounds": 2})
    data = yaml.safe_load(four.read_text(encoding="utf-8"))
    data["bots"] = [bot for bot in data["bots"] if bot["name"] != "first"]
    four.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    output = reference.folder / "joined"
    played = run_cli("tournament", str(four), "--output", str(output), "--quiet",
                     cwd=reference.folder, timeout=300)  # fmt: skip
    assert played.returncode == 0, played.stderr
    before = records_without_times(output)
    assert {match_id.split("-")[1][:4] for match_id in before} == {"r000"}
    assert not any("first" in name for name in before)
    five = write_ladder_config(reference.folder, "five", marker, ladder={"rounds": 2})
    resumed = run_cli("tournament", str(five), "--output", str(output), "--quiet",
                      cwd=reference.folder, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    after = records_without_times(output)
    assert {name: after[name] for name in before} == before
    rounds = stored_rounds(output)
    assert [len(row[4]) for row in rounds] == [4, 4, 5, 5, 5]  # each round's field
    newcomer = [name for name in after if "first" in name]
    assert newcomer
    assert all(name.startswith(("match-r0003-", "match-r0004-")) for name in newcomer)
    opponents = {
        bot
        for name in newcomer
        for bot in name.removeprefix("match-").removesuffix(".jsonl").split("-", 1)[1].split("+")
    } - {"first"}
    assert 0 < len(opponents) < 4
    document = standings_document(output, reference.folder)
    assert {bot["name"] for bot in document["bots"]} == {
        "random", "random-2", "greedy", "strong", "first"
    }  # fmt: skip
    assert_stored_exactly_once(output, len(after))


def test_a_ladder_of_sparring_bots_finds_their_known_order(tmp_path: Path) -> None:
    """Sparring bots whose strength is set (the smaller the share of random actions, the
    stronger): the ladder, sandboxed where this machine can, certifies the best two in
    their true order before its budget is spent, the weakest out of the race."""
    marker = uuid.uuid4().hex
    chances = {
        "best": 0.0,
        "second": 0.35,
        "third": 0.7,
        "weak-a": 1.0,
        "weak-b": 1.0,
        "weak-c": 1.0,
    }
    data = {
        "name": "sparring-ladder",
        "bots": [
            {
                "name": name,
                "command": "sparring",
                "env": {"AEGIS_SPARRING_RANDOM": str(chance), "AEGIS_TEST_MARKER": marker},
                "keep_alive": True,
            }
            for name, chance in chances.items()
        ],
        "format": "ladder",
        "ladder": {"top": 2, "max_matches": 60},
        "rules": {"target_score": 15},
        "seed": 2**40 + 6,
        "concurrency": 2,
    }
    config = tmp_path / "sparring.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    output = tmp_path / "out"
    finished = run_cli(
        "tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path, timeout=300
    )
    assert finished.returncode == 0, finished.stderr
    assert wait_no_processes(marker, timeout=10) == []
    document = standings_document(output, tmp_path)
    ranked = [bot["name"] for bot in document["bots"]]
    assert ranked[:2] == ["best", "second"], document["ladder"]["certification"]
    statuses = {bot["name"]: bot["status"] for bot in document["bots"]}
    assert "out" in {statuses[name] for name in ("weak-a", "weak-b", "weak-c")}
    # Certified before the budget ran out: the run stopped there.
    assert document["ladder"]["certification"] == "top 2 certified at 95 %"
    assert document["matches_played"] < 60  # void ones too
