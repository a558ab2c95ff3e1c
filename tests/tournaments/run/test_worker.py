"""The worker side outside a local pool, as a Dask worker runs it: several threads of one
process each playing with a runner of their own, closing the runners while one plays, the
reaper, and a worker that lacks a bot's program."""

from __future__ import annotations

import dataclasses
import io
import os
import re
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from rich.console import Console

from referee.bots import BotSpec, ResourceLimits
from tests.tournaments.helpers import wait_no_processes, winners, write_config
from tournaments.config.tournament import load_config
from tournaments.errors import ClusterError
from tournaments.report.terminal import QuietDisplay
from tournaments.run import worker
from tournaments.run.coordinator import run_tournament
from tournaments.run.worker import MatchTask, bot_problems, close_worker_runner, play_match_task
from tournaments.store.rows import ResultRow


class ClosingDisplay(QuietDisplay):
    """A quiet display that closes the runners after the ``at``-th stored match, as the
    end of a tournament does on a Dask worker, while the other thread is still playing."""

    def __init__(self, at: int) -> None:
        super().__init__(Console(file=io.StringIO()))
        self.at = at
        self.stored = 0
        self.playing_when_closed: int | None = None

    def match_stored(self, row: ResultRow) -> None:
        super().match_stored(row)
        self.stored += 1
        if self.stored == self.at:
            self.playing_when_closed = len(worker._playing)
            close_worker_runner()


def test_threads_of_one_process_each_get_a_runner(tmp_path: Path) -> None:
    """A thread pool in this process plays the tournament as a two-thread Dask worker would:
    the same results as the local pool; closing the runners mid-run loses nothing; no bot
    and no reaper outlives the final close."""
    config, marker = write_config(tmp_path, ["alpha", "beta", "gamma"], matches_per_pair=6)
    setup = load_config(config)
    display = ClosingDisplay(at=5)
    try:
        with ThreadPoolExecutor(max_workers=2) as threads:
            summary, _ = run_tournament(
                setup.with_overrides(output=tmp_path / "threads", concurrency=2),
                display=display,
                executor=threads,
            )
        assert summary.complete, summary
        assert summary.failure is None
        assert display.playing_when_closed is not None
        assert worker._slots  # runners made again after the close
        assert worker._reaper is not None
    finally:
        close_worker_runner()
    assert worker._slots == {}
    assert worker._reaper is None
    assert wait_no_processes(marker, timeout=5) == []
    local, _ = run_tournament(
        setup.with_overrides(output=tmp_path / "local", concurrency=2), display=display
    )
    assert local.complete
    assert winners(tmp_path / "threads" / "results.sqlite") == winners(
        tmp_path / "local" / "results.sqlite"
    )
    connection = sqlite3.connect(tmp_path / "threads" / "results.sqlite")
    try:
        logs = {
            path.name
            for path in (tmp_path / "threads" / "logs").iterdir()
            if not path.name.startswith(".")  # the log caps' ledgers
        }
        logs.remove("preflight")  # the bots' start before any match, in this thread
        playing = {row[0] for row in connection.execute("SELECT DISTINCT worker FROM results")}
    finally:
        connection.close()
    assert len(playing) == 1  # one process, this one
    assert len(logs) == 2  # a log directory per thread
    assert wait_no_processes(marker, timeout=5) == []


def test_a_bot_s_log_cap_holds_for_the_whole_tournament(tmp_path: Path) -> None:
    """Two worker threads, a fresh process of the bot for every match, the preflight and a
    resumed run: the bot's output kept over all its logs stays within its one cap."""
    config, marker = write_config(tmp_path, ["good", "spammer"], matches_per_pair=2)
    setup = load_config(config)
    good, spammer = setup.bots
    spammer = dataclasses.replace(
        spammer,
        command=(*spammer.command, "--fault", "stderr_spam", "--at", "1"),
        keep_alive=False,
        limits=ResourceLimits(log_bytes=40_000),
    )
    setup = dataclasses.replace(setup, bots=(good, spammer))
    output = tmp_path / "out"
    try:
        with ThreadPoolExecutor(max_workers=2) as threads:
            for concurrency in (2, 1):  # the second run finds everything stored but adds one
                run_tournament(
                    setup.with_overrides(output=output, concurrency=concurrency),
                    display=QuietDisplay(Console(file=io.StringIO())),
                    executor=threads,
                )
                setup = dataclasses.replace(setup, matches_per_pair=4)
    finally:
        close_worker_runner()
    logs = sorted((output / "logs").glob("*/spammer.log"))
    assert len(logs) == 3  # one per worker thread, and the preflight's
    kept = sum(len(path.read_bytes()) for path in logs)
    assert 40_000 <= kept < 40_000 + 200
    assert wait_no_processes(marker, timeout=5) == []


def test_a_worker_without_a_bot_s_program_fails_the_task(tmp_path: Path) -> None:
    """Outside a local pool, a bot that this machine cannot start fails the task (the run
    stops with the reason) instead of being recorded as a forfeit."""
    missing = BotSpec("ghost", (str(tmp_path / "nowhere" / "bot"),))
    elsewhere = BotSpec("lost", ("aegis-no-such-program",), cwd=str(tmp_path / "gone"))
    assert bot_problems([missing, elsewhere]) == [
        f"bot 'ghost': program '{tmp_path}/nowhere/bot' is missing or not executable",
        "bot 'lost': program 'aegis-no-such-program' is not on PATH",
        f"bot 'lost': working directory '{tmp_path}/gone' is missing",
    ]
    task = MatchTask(match_id="r0001-ghost+lost", seed=1, bots=(missing, elsewhere))
    with pytest.raises(ClusterError, match=r"worker .+:\d+ cannot start the bots: bot 'ghost'"):
        play_match_task(task)
    assert worker._slots == {}
    assert worker._playing == set()
    close_worker_runner()
    assert worker._reaper is None


def test_a_worker_without_cgroup_cpu_accounting_fails_a_cpu_clock_task_naming_itself(
    tmp_path: Path,
) -> None:
    """A worker process run with AEGIS_CGROUPS=off (as one that joined a cluster after its
    workers were checked) and a task that requires clock: cpu: the task fails, naming the
    worker and what it lacks, before any bot starts."""
    script = (
        "from referee.bundled import resolve_bot\n"
        "from referee.time_control import Clock, TimeControl\n"
        "from tournaments.errors import ClusterError\n"
        "from tournaments.run.worker import MatchTask, play_match_task\n"
        "bots = (resolve_bot('first'), resolve_bot('random'))\n"
        "cpu = TimeControl(clock=Clock.CPU)\n"
        "task = MatchTask('r0001-first+random', 1, bots, time_control=cpu)\n"
        "try:\n"
        "    play_match_task(task)\n"
        "except ClusterError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AEGIS_CGROUPS": "off"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"worker .+:\d+ cannot keep the clock: time_control\.clock is cpu, but this machine has "
        r"no writable cgroup with CPU accounting .*\n",
        done.stdout,
    ), done.stdout
