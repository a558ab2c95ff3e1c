"""Tournament throughput on the local process pool against a local Dask cluster.

A round robin of four bundled ``random`` bots (distinct names), default rules, played by
``run_tournament`` into a fresh output directory, once with the local pool at concurrency 2
and on a Dask LocalCluster of two single-threaded worker processes (what ``--local-cluster 2``
starts), so that both play two matches at a time on this machine: once with one match per
task (the default) and once with ``--batch-size`` matches per task (``executor.batch_size``).
The three alternate over ``--repeat`` rounds; medians are reported.

For each: matches/s over the whole run (start-up of workers, bots and, for Dask, the cluster
included) and in steady state (first stored match to last); the wall time per match per
worker in steady state (steady seconds x 2 / matches); the mean time inside
``MatchRunner.play`` (the stored ``duration_s``). The per-match overhead of the cluster is the
difference of the wall times per match; the part of it that is not playing is wall time per
match minus the time inside ``play``. CPU per match counts this process and every reaped
descendant (pool workers, or the cluster's helper with its scheduler, nannies and workers;
the bots), start-up and shut-down included; the steady-state CPU per match, by role, is
sampled (psutil) between the third and two thirds of the matches. For reference, the round
trip of an empty task through the same executor (``Client.get_executor(pure=False)``, four
in flight) on the same kind of cluster.

    python benchmarks/cluster.py [--matches-per-pair 30] [--repeat 3] [--batch-size 4]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import resource
import sqlite3
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from statistics import median

import psutil  # installed with dask's distributed
from rich.console import Console

from referee.bundled import resolve_bot
from referee.rules.options import RulesOptions
from referee.time_control import TimeControl
from tournaments.config.tournament import ExecutorSetup, TournamentSetup
from tournaments.report.terminal import QuietDisplay
from tournaments.run.cluster import open_cluster
from tournaments.run.coordinator import run_tournament
from tournaments.store.rows import ResultRow

WORKERS = 2


def _role(process: psutil.Process) -> str:
    """What a process of the run is, from its command line."""
    if process.pid == os.getpid():
        return "coordinator"
    command = " ".join(process.cmdline())
    if "tournaments.run.cluster" in command:
        return "scheduler+nannies"
    if "reaper.py" in command:
        return "reapers"
    if "multiprocessing" in command:
        return "workers"
    return "bots"


def _cpu_by_role() -> dict[int, tuple[str, float]]:
    """CPU seconds so far of this process and each live descendant, with its role."""
    me = psutil.Process()
    found = {}
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            found[process.pid] = (_role(process), times.user + times.system)
    return found


class _Clock(QuietDisplay):
    """A quiet display that notes when the first and last matches were stored, and the CPU
    of every process of the run at the third and two thirds of the matches."""

    def __init__(self, matches: int) -> None:
        super().__init__(Console(file=io.StringIO()))
        self.first: float | None = None
        self.last: float | None = None
        self.marks = (matches // 3, 2 * matches // 3)
        self.stored = 0
        self.samples: list[tuple[float, dict[int, tuple[str, float]]]] = []

    def match_stored(self, row: ResultRow) -> None:
        super().match_stored(row)
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        self.last = now
        self.stored += 1
        if self.stored in self.marks:
            self.samples.append((self.stored, _cpu_by_role()))

    def steady_cpu_ms(self) -> dict[str, float]:
        """CPU milliseconds per match between the two marks, by role (processes alive at
        both marks: the bots and workers kept from match to match)."""
        (first, before), (last, after) = self.samples
        by_role: dict[str, float] = {}
        for pid, (role, seconds) in after.items():
            if pid in before:
                by_role[role] = by_role.get(role, 0.0) + seconds - before[pid][1]
        return {role: 1000 * seconds / (last - first) for role, seconds in by_role.items()}


def _setup(matches_per_pair: int, output: Path, executor: ExecutorSetup) -> TournamentSetup:
    return TournamentSetup(
        name=f"bench-cluster-{executor.kind}",
        bots=tuple(resolve_bot("random", f"random-{index}") for index in range(1, 5)),
        format="round_robin",
        gauntlet=(),
        matches_per_pair=matches_per_pair,
        options=RulesOptions(),
        time_control=TimeControl(decision_ms=1000, warmup_ms=10000),
        concurrency=WORKERS,
        seed=1,
        output=output,
        executor=executor,
    )


def _cpu_seconds() -> float:
    """CPU time of this process and of every reaped descendant: the pool's workers, or the
    local cluster's helper (with its scheduler and nannies) and its workers; their bots."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _mean_play_seconds(output: Path) -> float:
    connection = sqlite3.connect(output / "results.sqlite")
    try:
        return float(connection.execute("SELECT avg(duration_s) FROM results").fetchone()[0])
    finally:
        connection.close()


def throughput(matches_per_pair: int, executor: ExecutorSetup) -> dict[str, float]:
    """Play the round robin on ``executor``; matches/s, wall and play time per match."""
    with tempfile.TemporaryDirectory(prefix="aegis-bench-") as folder:
        output = Path(folder) / "out"
        clock = _Clock(6 * matches_per_pair)
        cpu = _cpu_seconds()
        started = time.perf_counter()
        # The bots' preflight is a start-up cost of its own, not what is measured here.
        summary, _ = run_tournament(
            _setup(matches_per_pair, output, executor), display=clock, preflight=False
        )
        elapsed = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu
        play = _mean_play_seconds(output)
    assert summary.complete, summary
    assert clock.first is not None
    assert clock.last is not None
    steady = clock.last - clock.first
    return {
        "matches": summary.played,
        "seconds": elapsed,
        "first_match_s": clock.first - started,
        "matches_per_s": summary.played / elapsed,
        "steady_matches_per_s": (summary.played - 1) / steady,
        "wall_ms_per_match": 1000 * steady * WORKERS / (summary.played - 1),
        "play_ms_per_match": 1000 * play,
        "cores_used": cpu / elapsed,
        "cpu_ms_per_match": 1000 * cpu / summary.played,
        **{f"steady_cpu_ms:{role}": value for role, value in clock.steady_cpu_ms().items()},
    }


def _nothing() -> None:
    """An empty task."""


def empty_task_round_trip(tasks: int = 400, in_flight: int = 4) -> float:
    """Milliseconds per empty task through the Dask executor, ``in_flight`` at a time."""
    setup = ExecutorSetup(kind="dask", local_workers=WORKERS)
    with open_cluster(setup, (), lambda _text: None) as session:
        for _ in range(20):  # warm up: the function shipped, the workers awake
            session.executor.submit(_nothing).result()
        pending: set[Future[None]] = set()
        submitted = 0
        started = time.perf_counter()
        while submitted < tasks or pending:
            while submitted < tasks and len(pending) < in_flight:
                pending.add(session.executor.submit(_nothing))
                submitted += 1
            _, pending = wait(pending, return_when=FIRST_COMPLETED)
        return 1000 * (time.perf_counter() - started) / tasks


def main() -> None:
    """Run both executors ``--repeat`` times, alternating, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches-per-pair", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=4, help="of the third variant")
    arguments = parser.parse_args()
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}, load average before the run "
        f"{os.getloadavg()[0]:.2f} (other work on the machine competes for the cores)"
    )
    executors = {
        "local pool, concurrency 2": ExecutorSetup(),
        "Dask LocalCluster, 2 workers x 1 thread": ExecutorSetup(
            kind="dask", local_workers=WORKERS
        ),
        f"the same, batch_size {arguments.batch_size}": ExecutorSetup(
            kind="dask", local_workers=WORKERS, batch_size=arguments.batch_size
        ),
    }
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in executors}
    for _ in range(arguments.repeat):
        for name, executor in executors.items():
            runs[name].append(throughput(arguments.matches_per_pair, executor))
    middles = {}
    for name, results in runs.items():
        middle = {key: median(result[key] for result in results) for key in results[0]}
        middles[name] = middle
        print(
            f"{name}: {middle['matches']:.0f} matches in {middle['seconds']:.2f} s "
            f"(first stored after {middle['first_match_s']:.2f} s): "
            f"{middle['matches_per_s']:.1f} matches/s overall, "
            f"{middle['steady_matches_per_s']:.1f} in steady state; per match and worker "
            f"{middle['wall_ms_per_match']:.1f} ms wall, {middle['play_ms_per_match']:.1f} ms "
            f"in MatchRunner.play; CPU {middle['cpu_ms_per_match']:.1f} ms per match, "
            f"{middle['cores_used']:.2f} cores busy"
        )
        steady = {key.split(":")[1]: value for key, value in middle.items() if ":" in key}
        print(
            f"    steady state CPU ms per match: {sum(steady.values()):.1f} = "
            + ", ".join(f"{role} {value:.1f}" for role, value in sorted(steady.items()))
        )
    names = list(executors)
    local = middles[names[0]]
    for name in names[1:]:
        cluster = middles[name]
        ratios = [
            one["steady_matches_per_s"] / other["steady_matches_per_s"]
            for one, other in zip(runs[names[0]], runs[name], strict=True)
        ]
        overhead = cluster["wall_ms_per_match"] - local["wall_ms_per_match"]
        print(
            f"{name} against the local pool: {overhead:+.1f} ms wall per match and worker "
            f"(outside play: local {local['wall_ms_per_match'] - local['play_ms_per_match']:.1f}"
            f" ms, cluster {cluster['wall_ms_per_match'] - cluster['play_ms_per_match']:.1f} "
            f"ms); steady throughput local/cluster {median(ratios):.2f}x (rounds: "
            f"{', '.join(f'{ratio:.2f}' for ratio in ratios)})"
        )
    print(f"empty task round trip on the cluster: {empty_task_round_trip():.2f} ms per task")


if __name__ == "__main__":
    main()
