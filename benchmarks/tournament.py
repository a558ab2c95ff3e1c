"""Tournament throughput and coordinator memory.

(a) Throughput: a round robin of four bundled ``random`` bots (distinct names), default rules,
    played with concurrency 1, 2 and 3, each into a fresh output directory, with each
    worker keeping to CPUs of its own (executor affinity, the default: the CPUs split in
    equal groups) and not. Reports
    matches/s and games/s of each and their ratio to concurrency 1 (target for 2: >= 1.7 on
    two cores), both over the whole run (worker and bot start-up included) and in steady state
    (first stored match to last), and the CPU used (this process and its reaped descendants:
    the workers and their bots). For reference, the same ratio for bare match-runner loops
    (one MatchRunner per process with two random bots cycling through their pairs as a
    tournament worker does; no tournament code at all), each on one CPU and not. The
    settings alternate over ``--repeat`` rounds and the figures are medians: on a shared
    machine single runs vary a lot.
(b) Memory: the coordinator's peak resident set size, its Python heap peak and the heap
    still in use at the last match after a garbage collection (tracemalloc), for tournaments
    of 100 and 1,000 matches (five random bots, concurrency 2, target score 5), each in a
    fresh interpreter. The target is flat: the coordinator keeps a bounded window of matches
    in flight and reads standings as aggregates, never every result.

(c) Containment: the same four-bot round robin (concurrency 2, pinned) with bots kept
    alive unsandboxed, started afresh for every match unsandboxed, and afresh in a
    bubblewrap sandbox (with the opponent frozen while a bot decides): matches/s and games/s,
    alternating over ``--repeat`` rounds. Then the start cost of one bot process, from its
    start to its hello and again to its exit after ``shutdown``, for the bundled Python
    (``random``) and C bots, with and without the sandbox, measured alternately
    (``--starts`` each); the target is a sandbox that adds at most 10 % to a bot's start.
    cgroups, where the machine has them, are the same in both.

    python benchmarks/tournament.py [--matches-per-pair 30] [--max-concurrency 3]
                                    [--repeat 3] [--sizes 100,1000] [--starts 40]
                                    [--only a,b,c]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from rich.console import Console

from referee.bundled import resolve_bot
from referee.rules.options import RulesOptions
from referee.runner import MatchRunner
from referee.sandbox import SandboxMode, plan_sandbox
from referee.server import BotServer
from referee.time_control import TimeControl
from tournaments.config.tournament import ExecutorSetup, TournamentSetup
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import cpus_text, run_tournament, worker_cpus
from tournaments.store.rows import ResultRow


class StoreClock(QuietDisplay):
    """A quiet display that notes when the first and last matches were stored (also used by
    benchmarks/remote.py)."""

    def __init__(self) -> None:
        super().__init__(Console(file=io.StringIO()))
        self.first: float | None = None
        self.last: float | None = None
        self.games = 0
        self.games_after_first = 0

    def match_stored(self, row: ResultRow) -> None:
        super().match_stored(row)
        now = time.perf_counter()
        self.games += row.games
        if self.first is None:
            self.first = now
        else:
            self.games_after_first += row.games
        self.last = now


def _setup(
    bots: int,
    matches_per_pair: int,
    concurrency: int,
    output: Path,
    rules: RulesOptions,
    affinity: bool = True,
    *,
    keep_alive: bool = True,
    sandbox: SandboxMode = SandboxMode.OFF,
) -> TournamentSetup:
    return TournamentSetup(
        name=f"bench-{bots}x{matches_per_pair}-c{concurrency}",
        bots=tuple(
            replace(resolve_bot("random", f"random-{index}"), keep_alive=keep_alive)
            for index in range(1, bots + 1)
        ),
        format="round_robin",
        gauntlet=(),
        matches_per_pair=matches_per_pair,
        options=rules,
        time_control=TimeControl(decision_ms=1000, warmup_ms=10000),
        concurrency=concurrency,
        seed=1,
        output=output,
        executor=ExecutorSetup(affinity=affinity),
        sandbox=sandbox,
    )


def _cpu_seconds() -> float:
    """CPU time of this process and of every reaped descendant: the workers, and through
    them the bots (the pool reaps its workers when it shuts down)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def throughput(
    matches_per_pair: int,
    concurrency: int,
    affinity: bool,
    scratch: Path,
    *,
    keep_alive: bool = True,
    sandbox: SandboxMode = SandboxMode.OFF,
) -> dict[str, float]:
    """Play the four-bot round robin into a fresh directory under ``scratch``; matches/s and
    games/s overall and in steady state."""
    # Directories are removed only at the end of the benchmark: just after thousands of
    # files are deleted, ext4 spends about a millisecond of kernel time on each new file
    # (its inode allocator skips recently deleted inodes), in the coordinator's process.
    output = Path(tempfile.mkdtemp(prefix="run-", dir=scratch)) / "out"
    setup = _setup(
        4,
        matches_per_pair,
        concurrency,
        output,
        RulesOptions(),
        affinity,
        keep_alive=keep_alive,
        sandbox=sandbox,
    )
    clock = StoreClock()
    before = _cpu_seconds()
    started = time.perf_counter()
    # The bots' preflight is a start-up cost of its own, not what is measured here.
    summary, _ = run_tournament(setup, display=clock, preflight=False)
    elapsed = time.perf_counter() - started
    cpu = _cpu_seconds() - before
    assert summary.complete
    assert clock.first is not None
    assert clock.last is not None
    steady = clock.last - clock.first
    return {
        "matches": summary.played,
        "games": clock.games,
        "seconds": elapsed,
        "matches_per_s": summary.played / elapsed,
        "games_per_s": clock.games / elapsed,
        "steady_matches_per_s": (summary.played - 1) / steady,
        "steady_games_per_s": clock.games_after_first / steady,
        "cores_used": cpu / elapsed,
        "cpu_ms_per_game": 1000 * cpu / clock.games,
    }


class _HeapProbe(StoreClock):
    """At the last match: collect garbage and note the Python heap still in use."""

    def __init__(self, matches: int) -> None:
        super().__init__()
        self.matches = matches
        self.stored = 0
        self.retained = 0

    def match_stored(self, row: ResultRow) -> None:
        super().match_stored(row)
        self.stored += 1
        if self.stored == self.matches:
            gc.collect()
            self.retained = tracemalloc.get_traced_memory()[0]


def _runner_loop(seconds: float, bots: int, results: Any, cpu: int | None = None) -> None:
    """Play matches with a bare MatchRunner among ``bots`` random bots, cycling through every
    ordered pair as a tournament worker does; put games/s. ``cpu``: pin to it first."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    with MatchRunner(time_control=TimeControl(decision_ms=1000, warmup_ms=10000)) as runner:
        specs = [resolve_bot("random", f"random-{index}") for index in range(bots)]
        pairs = [[first, second] for first in specs for second in specs if first is not second]
        for pair in pairs:
            runner.play(pair, 0)  # start every bot before the clock
        games = number = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            number += 1
            games += len(runner.play(pairs[number % len(pairs)], number).games)
        results.put(games / (time.perf_counter() - started))


def runner_baseline(processes: int, bots: int, seconds: float, pinned: bool = False) -> float:
    """Games/s of ``processes`` bare match-runner loops side by side, each with its own
    ``bots`` random bots (on a CPU of its own if ``pinned``): no tournament code at all."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    allowed = sorted(os.sched_getaffinity(0))
    workers = [
        context.Process(
            target=_runner_loop,
            args=(seconds, bots, results, allowed[index % len(allowed)] if pinned else None),
        )
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    rates = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    return float(sum(rates))


def start_cost(bot: str, sandboxed: bool) -> tuple[float, float]:
    """Seconds from starting ``bot`` to its hello, and from ``shutdown`` to its exit."""
    plan = plan_sandbox("required" if sandboxed else "off")
    with BotServer(sandbox=plan) as server:
        started = time.perf_counter()
        session = server.start_bot(resolve_bot(bot))
        fault = server.handshake(session, 20.0)
        hello = time.perf_counter() - started
        assert fault is None, fault
        stopping = time.perf_counter()
        server.stop_bot(session)
        return hello, time.perf_counter() - stopping


def containment(matches_per_pair: int, repeat: int, starts: int, scratch: Path) -> None:
    """(c): the three ways to run bots, and the start cost with and without the sandbox."""
    modes = {
        "kept alive, unsandboxed": (True, SandboxMode.OFF),
        "fresh per match, unsandboxed": (False, SandboxMode.OFF),
        "fresh per match, sandboxed": (False, SandboxMode.REQUIRED),
    }
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode, (keep_alive, sandbox) in modes.items():
            runs[mode].append(
                throughput(
                    matches_per_pair, 2, True, scratch, keep_alive=keep_alive, sandbox=sandbox
                )
            )
    base = median(run["games_per_s"] for run in runs["kept alive, unsandboxed"])
    for mode, results in runs.items():
        games = median(run["games_per_s"] for run in results)
        rounds = ", ".join(f"{run['games_per_s']:.0f}" for run in results)
        print(
            f"(c) {mode}: {median(run['matches_per_s'] for run in results):.1f} matches/s, "
            f"{games:.0f} games/s ({games / base:.2f}x kept alive; rounds: {rounds} games/s)"
        )
    for bot in ("random", "c"):
        times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        start_cost(bot, False)  # warm the page cache and build the C bot if needed
        start_cost(bot, True)
        for _ in range(starts):
            for sandboxed in (False, True):
                times[sandboxed].append(start_cost(bot, sandboxed))
        bare_hello = median(hello for hello, _ in times[False])
        boxed_hello = median(hello for hello, _ in times[True])
        ratios = sorted(
            boxed[0] / bare[0] for bare, boxed in zip(times[False], times[True], strict=True)
        )
        print(
            f"    start of one {bot} bot to its hello, median of {starts}: unsandboxed "
            f"{1000 * bare_hello:.1f} ms, sandboxed {1000 * boxed_hello:.1f} ms: "
            f"{boxed_hello / bare_hello:.2f}x (median of paired ratios {median(ratios):.2f}x); "
            f"stop after shutdown {1000 * median(stop for _, stop in times[False]):.1f} ms "
            f"and {1000 * median(stop for _, stop in times[True]):.1f} ms"
        )


def memory_run(matches: int) -> dict[str, float]:
    """In this (fresh) interpreter: a five-bot round robin of ``matches`` matches; the
    coordinator's peak RSS and Python heap peak."""
    pairs = 10
    if matches % (2 * pairs):
        raise SystemExit(f"--memory-run needs a multiple of {2 * pairs} matches")
    with tempfile.TemporaryDirectory(prefix="aegis-bench-") as folder:
        setup = _setup(5, matches // pairs, 2, Path(folder) / "out", RulesOptions(target_score=5))
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tracemalloc.start()
        started = time.perf_counter()
        probe = _HeapProbe(matches)
        # The bots' preflight is a start-up cost of its own, not what is measured here.
        summary, _ = run_tournament(setup, display=probe, preflight=False)
        elapsed = time.perf_counter() - started
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert summary.played == matches
    return {
        "matches": matches,
        "seconds": elapsed,
        "rss_before_mb": baseline / 1024,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "heap_peak_mb": heap_peak / 2**20,
        "heap_retained_mb": probe.retained / 2**20,
    }


def main() -> None:
    """Run (a) and (b) and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches-per-pair", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of (a)")
    parser.add_argument("--sizes", default="100,1000", help="match counts for (b)")
    parser.add_argument(
        "--max-concurrency", type=int, default=3, help="(a) runs concurrency 1 to this"
    )
    parser.add_argument("--starts", type=int, default=40, help="bot starts per setting in (c)")
    parser.add_argument("--only", default="a,b,c", help="which parts to run")
    parser.add_argument("--memory-run", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.memory_run:
        print(json.dumps(memory_run(arguments.memory_run)))
        return
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}, load average before the run "
        f"{os.getloadavg()[0]:.2f} (other work on the machine competes for the cores)"
    )
    parts = set(arguments.only.split(","))
    if "c" in parts:
        with tempfile.TemporaryDirectory(prefix="aegis-bench-") as scratch:
            containment(
                arguments.matches_per_pair, arguments.repeat, arguments.starts, Path(scratch)
            )
    if "a" in parts:
        concurrency_part(arguments)
    if "b" in parts:
        memory_part(arguments)


def concurrency_part(arguments: argparse.Namespace) -> None:
    """(a): throughput by concurrency, pinned and not, against bare runner loops."""
    concurrencies = range(1, arguments.max_concurrency + 1)
    # Rounds alternate the settings so that a burst of other work on the machine hits them
    # alike; the figures are medians over the rounds. Each concurrency runs with the workers
    # pinned to CPUs (the default, when there are enough CPUs) and without.
    settings = [
        (concurrency, affinity) for affinity in (True, False) for concurrency in concurrencies
    ]
    runs: dict[tuple[int, bool], list[dict[str, float]]] = {setting: [] for setting in settings}
    bare: dict[tuple[int, bool], list[float]] = {
        (processes, pinned): [] for pinned in (True, False) for processes in (1, 2)
    }
    with tempfile.TemporaryDirectory(prefix="aegis-bench-") as scratch:
        for _ in range(arguments.repeat):
            for concurrency, affinity in settings:
                runs[concurrency, affinity].append(
                    throughput(arguments.matches_per_pair, concurrency, affinity, Path(scratch))
                )
            for processes, pinned in bare:
                bare[processes, pinned].append(runner_baseline(processes, 2, 3.0, pinned))
    for (concurrency, affinity), results in runs.items():
        middle = {key: median(result[key] for result in results) for key in results[0]}
        groups = worker_cpus(concurrency) if affinity else None
        placement = (
            f"CPUs {' | '.join(cpus_text(group) for group in groups)}"
            if groups is not None
            else "not pinned"
        )
        print(
            f"(a) concurrency {concurrency}, {placement}: {middle['matches']:.0f} matches, "
            f"{middle['games']:.0f} games in {middle['seconds']:.2f} s: "
            f"{middle['matches_per_s']:.1f} matches/s, {middle['games_per_s']:.0f} games/s; "
            f"steady state {middle['steady_matches_per_s']:.1f} matches/s, "
            f"{middle['steady_games_per_s']:.0f} games/s; CPU {middle['cores_used']:.2f} cores "
            f"busy, {middle['cpu_ms_per_game']:.2f} CPU ms per game"
        )
    for affinity in (True, False):
        for concurrency in list(concurrencies)[1:]:
            ones, these = runs[1, affinity], runs[concurrency, affinity]
            overall = [
                run["games_per_s"] / one["games_per_s"]
                for run, one in zip(these, ones, strict=True)
            ]
            steady = [
                run["steady_games_per_s"] / one["steady_games_per_s"]
                for run, one in zip(these, ones, strict=True)
            ]
            print(
                f"    ratio {concurrency}/1 (games/s), affinity {'on' if affinity else 'off'}, "
                f"median of {arguments.repeat} rounds: {median(overall):.2f}x overall, "
                f"{median(steady):.2f}x steady state "
                f"(rounds: {', '.join(f'{value:.2f}' for value in steady)})"
            )
    for pinned in (True, False):
        one_process, two_processes = bare[1, pinned], bare[2, pinned]
        ratios = [two / one for one, two in zip(one_process, two_processes, strict=True)]
        print(
            f"    baseline, bare MatchRunner loops with 2 random bots each (no tournament "
            f"code), {'pinned' if pinned else 'not pinned'}: 1 process "
            f"{median(one_process):.0f} games/s, 2 processes {median(two_processes):.0f} "
            f"games/s: {median(ratios):.2f}x (rounds: {', '.join(f'{v:.2f}' for v in ratios)})"
        )


def memory_part(arguments: argparse.Namespace) -> None:
    """(b): the coordinator's memory for tournaments of several sizes."""
    for size in (int(text) for text in arguments.sizes.split(",")):
        output = subprocess.run(
            [sys.executable, __file__, "--memory-run", str(size)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        memory = json.loads(output.strip().splitlines()[-1])
        print(
            f"(b) {size} matches in {memory['seconds']:.1f} s: coordinator RSS "
            f"{memory['rss_before_mb']:.1f} MB before the run, peak {memory['rss_peak_mb']:.1f} "
            f"MB; Python heap peak {memory['heap_peak_mb']:.2f} MB, in use after a garbage "
            f"collection at the last match {memory['heap_retained_mb']:.2f} MB"
        )


if __name__ == "__main__":
    main()
