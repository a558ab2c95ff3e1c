"""The SPRT's error rates, length and Elo estimates, measured by simulation, for both stopping
rules.

For each test (elo0, elo1) and each true Elo difference (elo0, where accepting H1 is the
error, and elo1, where accepting H0 is), simulated runs of duplicate pairs: each pair is 1-1
with the chance ``--split`` and otherwise 2-0 or 0-2, so that the expected score is the
logistic one of the true Elo. Every run is fed pair by pair to ``tournaments.stats.sprt`` exactly
as ``aegis-ref sprt`` feeds it (the LLR, its overshoot statistics, the bounds in force and
the decision of each rule, on the same pairs for both rules) until both rules have decided.
At each rule's stop, the Elo estimates of both kinds are taken: the sequential one that the
command prints at the end (``tournaments.stats.sprt_elo``) and the fixed-sample one of the counts.

Per test, true Elo and rule: the error rate against the nominal alpha or beta (with its 95 %
binomial margin), the mean number of pairs, and for each estimate the share of runs where it
came out above the true Elo (50 % for a median-unbiased estimate) and where its 95 %
interval held the true Elo (95 % if it keeps its promise).

    python benchmarks/sprt.py [--runs 1000] [--split 0.5] [--jobs 2] [--seed 1]
        [--test 0 5 --test 0 20 ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tournaments.stats.sprt import (
    Decision,
    PairOutcome,
    SprtStatus,
    SprtTest,
    StoppingRule,
    elo_estimate,
    elo_to_score,
)
from tournaments.stats.sprt_elo import sequential_estimate

DEFAULT_TESTS = ((0.0, 5.0), (0.0, 20.0), (0.0, 50.0))
#: Runs per task handed to a worker process.
CHUNK = 25


@dataclass(frozen=True, slots=True)
class Task:
    """Some runs of one test at one true Elo."""

    elo0: float
    elo1: float
    true_elo: float
    split: float
    runs: int
    seed: str


@dataclass(frozen=True, slots=True)
class Stop:
    """Where one rule stopped one run, and the estimates there."""

    rule: StoppingRule
    decision: Decision
    pairs: int
    sequential: tuple[float, float, float]  # elo, lower, upper
    fixed: tuple[float, float, float]


def _outcomes(true_elo: float, split: float, rng: random.Random) -> Iterator[PairOutcome]:
    score = elo_to_score(true_elo)
    won_both = score - split / 2
    if not 0 <= won_both <= 1 - split:
        raise SystemExit(f"--split {split} is impossible at Elo {true_elo:+g}")
    while True:
        draw = rng.random()
        if draw < won_both:
            yield PairOutcome.WON_BOTH
        elif draw < won_both + split:
            yield PairOutcome.SPLIT
        else:
            yield PairOutcome.LOST_BOTH


def simulate(task: Task) -> tuple[Task, list[Stop], float]:
    """Play ``task.runs`` runs; each ends once both rules have decided. Also returns the CPU
    seconds it took."""
    began = time.process_time()
    rng = random.Random(task.seed)
    tests = [SprtTest(task.elo0, task.elo1, rule=rule) for rule in StoppingRule]
    driver = tests[0]  # the LLR and its overshoot statistics do not depend on the rule
    stops: list[Stop] = []
    for _ in range(task.runs):
        status = driver.start()
        ended: dict[StoppingRule, SprtStatus] = {}
        outcomes = _outcomes(task.true_elo, task.split, rng)
        while len(ended) < len(tests):
            status = driver.advance(status, next(outcomes))
            for test in tests:
                if test.rule in ended:
                    continue
                lower, upper = test.bounds_in_force(status.overshoot)
                decision = test.decide(status.llr, lower, upper)
                if decision is not Decision.CONTINUE:
                    ended[test.rule] = dataclasses.replace(
                        status, lower=lower, upper=upper, decision=decision
                    )
        for test in tests:
            final = ended[test.rule]
            sequential = sequential_estimate(test, final.counts)
            fixed = elo_estimate(final.counts)
            stops.append(
                Stop(
                    test.rule,
                    final.decision,
                    final.counts.pairs,
                    (sequential.elo, sequential.lower, sequential.upper),
                    (fixed.elo, fixed.lower, fixed.upper),
                )
            )
    return task, stops, time.process_time() - began


def _share(hits: int, total: int) -> str:
    return f"{100 * hits / total:.1f} %"


def _rate(hits: int, total: int) -> str:
    """A share with its 95 % binomial margin (normal approximation)."""
    p = hits / total
    margin = 1.96 * math.sqrt(max(p * (1 - p), 1 / total) / total)
    return f"{100 * p:.1f} % ± {100 * margin:.1f}"


def _estimate_cells(stops: list[Stop], truth: float, kind: str) -> list[str]:
    figures = [getattr(stop, kind) for stop in stops]
    above = sum(elo > truth for elo, _, _ in figures)
    covered = sum(lower <= truth <= upper for _, lower, upper in figures)
    return [_share(above, len(figures)), _share(covered, len(figures))]


def main() -> None:
    """Run the simulations and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs per test and true Elo")
    parser.add_argument("--split", type=float, default=0.5, help="the share of 1-1 pairs")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--test",
        nargs=2,
        type=float,
        action="append",
        metavar=("ELO0", "ELO1"),
        help="a test to simulate (repeatable; default: 0 5, 0 20 and 0 50)",
    )
    arguments = parser.parse_args()
    tests = [tuple(test) for test in arguments.test] if arguments.test else DEFAULT_TESTS
    tasks = [
        Task(elo0, elo1, truth, arguments.split, min(CHUNK, arguments.runs - start), seed)
        for elo0, elo1 in tests
        for truth in (elo0, elo1)
        for start in range(0, arguments.runs, CHUNK)
        for seed in [f"{arguments.seed}/{elo0}/{elo1}/{truth}/{arguments.split}/{start}"]
    ]
    began = time.monotonic()
    cpu = 0.0
    results: dict[tuple[float, float, float], list[Stop]] = {}
    with Pool(arguments.jobs) as pool:
        for done, (task, stops, seconds) in enumerate(pool.imap_unordered(simulate, tasks), 1):
            results.setdefault((task.elo0, task.elo1, task.true_elo), []).extend(stops)
            cpu += seconds
            print(f"\r{done}/{len(tasks)} tasks", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    elapsed = time.monotonic() - began
    print(
        f"{arguments.runs} runs per row, 1-1 share {arguments.split:g}, alpha = beta = 0.05, "
        f"seed {arguments.seed}; {elapsed:.0f} s with {arguments.jobs} processes, "
        f"{cpu:.0f} s of CPU"
    )
    print()
    print(
        "| test | true Elo | rule | error rate (nominal 5 %) | mean pairs | "
        "sequential estimate above truth | its 95 % interval holds truth | "
        "fixed-sample estimate above truth | its 95 % interval holds truth |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for elo0, elo1 in tests:
        for truth in (elo0, elo1):
            wrong = Decision.ACCEPT_H1 if truth == elo0 else Decision.ACCEPT_H0
            for rule in StoppingRule:
                stops = [stop for stop in results[(elo0, elo1, truth)] if stop.rule is rule]
                errors = sum(stop.decision is wrong for stop in stops)
                pairs = sum(stop.pairs for stop in stops) / len(stops)
                cells = [
                    f"({elo0:g}, {elo1:g})",
                    f"{truth:+g}",
                    rule.value,
                    _rate(errors, len(stops)),
                    f"{pairs:,.0f}",
                    *_estimate_cells(stops, truth, "sequential"),
                    *_estimate_cells(stops, truth, "fixed"),
                ]
                print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
