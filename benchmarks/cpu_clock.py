"""The CPU clock under load: do bots within their budget lose on time, and does the charge
hold still however busy the machine is?

Under ``--burners`` busy loops (default: two per CPU, twice as many runnable threads as
CPUs), plays each bot (a calibrated spinner that spends ``--share`` of every decision's
budget in CPU, ``tests/bots/clockwork.py``, and ``strong``) against ``greedy``, match by
match alternating ``clock: cpu`` and ``clock: wall`` on the same seeds, and counts the
decisions and the timeouts of each clock. On the CPU clock it compares each charge of the
spinner with the CPU time the spinner itself measured (agreement within 1 ms or 2 %). Then,
idle, it plays the spinner's first matches again on the CPU clock: the median charge of the
same decisions idle and loaded; and ``greedy`` against itself on each clock: the wall time
of a decision that hardly thinks, whose difference is the clock's cost per decision.
``--write`` puts the figures in the "The CPU clock under load" section of
``docs/benchmarks.md``.

``--decisions N`` plays on (past ``--matches``) until the two bots have made N decisions on
the CPU clock; long matches (``--target-score``, ``--cold-margin``) make many decisions per
bot start. ``--nice`` lowers the priority of the whole run, burners and bots alike (the
contention among them stays the same), so that it takes what other work leaves of a shared
machine. Interrupted (Ctrl-C), it stops the loaded part and reports what it played.

    python benchmarks/cpu_clock.py --decision-ms 30 --matches 8 --write
    python benchmarks/cpu_clock.py --decision-ms 30 --target-score 500 --cold-margin 1000 \
        --decisions 20000 --warmup-ms 30000 --idle-matches 1 --nice 5 --write
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# The benchmark next to this one (this script's folder is on sys.path when it runs).
from deadlines import burners

from referee.bots import BotSpec
from referee.bundled import resolve_bot
from referee.faults import FaultKind
from referee.rules.options import RulesOptions
from referee.runner import MatchReport, MatchRunner
from referee.sandbox import SandboxMode, SandboxPlan, plan_sandbox
from referee.seeds import derive_seed
from referee.time_control import Clock, TimeControl

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SECTION = "## The CPU clock under load"
CLOCKWORK = Path(__file__).resolve().parents[1] / "tests" / "bots" / "clockwork.py"


@dataclass
class Tally:
    """One bot's figures on one clock."""

    matches: int = 0
    decisions: int = 0
    timeouts: int = 0
    #: Of the timeouts, those of the wall-clock backstop (CPU clock only).
    backstops: int = 0
    other_faults: Counter[str] = field(default_factory=Counter)
    charges: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)

    def add(self, report: MatchReport, name: str) -> tuple[list[float], list[float]]:
        """Count a match of the bot called ``name``; its charges and wall times, in order."""
        self.matches += 1
        charges, walls = decisions_of(report, name)
        self.decisions += len(walls)
        self.charges += charges
        self.walls += walls
        for fault in report.faults:
            if fault.bot != name:
                continue
            print(f"\n{fault.describe()}", file=sys.stderr)
            if fault.kind is FaultKind.TIMEOUT:
                self.timeouts += 1
                self.backstops += "wall-clock backstop" in fault.detail
            else:
                self.other_faults[fault.kind.value] += 1
        return charges, walls


def decisions_of(report: MatchReport, name: str) -> tuple[list[float], list[float]]:
    """The CPU charges (on the CPU clock) and wall times of ``name``'s decisions, in order."""
    charges: list[float] = []
    walls: list[float] = []
    for game, timings, game_charges in zip(
        report.games, report.timings, report.charges, strict=True
    ):
        for turn, wall, charge in zip(game.history, timings, game_charges, strict=True):
            if report.players[int(turn.seat)] == name:
                walls.append(wall)
                if charge is not None:
                    charges.append(charge[0])
    return charges, walls


def own_counts(log: Path) -> list[float]:
    """The CPU ms the clockwork bot measured of each of its decisions, in order."""
    return [
        float(line.split("cpu_ms=", 1)[1].split()[0])
        for line in log.read_text().splitlines()
        if line.startswith("CLOCKWORK decision=")
    ]


@dataclass(frozen=True)
class Bench:
    """How every match of the run is played."""

    control: TimeControl
    options: RulesOptions
    plan: SandboxPlan
    work: Path

    def play(
        self, bots: tuple[BotSpec, BotSpec], clock: Clock, seed: int, logs: str
    ) -> MatchReport:
        """One match on ``clock``, its bots' logs in the folder ``logs`` of the run's."""
        control = dataclasses.replace(self.control, clock=clock)
        folder = self.work / logs
        with MatchRunner(
            options=self.options, time_control=control, log_dir=folder, sandbox=self.plan
        ) as runner:
            return runner.play(list(bots), seed)


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile (nearest rank), 0 for none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def main() -> None:
    """Play the loaded matches on both clocks, then the idle ones, and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decision-ms", type=int, default=30)
    parser.add_argument("--matches", type=int, default=8, help="per bot and clock, loaded")
    parser.add_argument(
        "--decisions", type=int, default=0, help="play on until this many on the CPU clock"
    )
    parser.add_argument("--target-score", type=int, default=RulesOptions().target_score)
    parser.add_argument("--cold-margin", type=int, default=RulesOptions().cold_margin)
    parser.add_argument("--warmup-ms", type=int, default=TimeControl().warmup_ms)
    parser.add_argument("--backstop", type=float, default=TimeControl().backstop)
    parser.add_argument("--nice", type=int, default=0, help="added to the run's niceness")
    parser.add_argument("--idle-matches", type=int, default=2)
    parser.add_argument("--share", type=float, default=0.9, help="the spinner's share")
    parser.add_argument("--burners", type=int, default=2 * len(os.sched_getaffinity(0)))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sandbox", default="auto", choices=[mode.value for mode in SandboxMode])
    parser.add_argument("--write", action="store_true", help=f"record the figures in {DOCS.name}")
    arguments = parser.parse_args()
    os.nice(arguments.nice)
    plan = plan_sandbox(arguments.sandbox)
    spinner = BotSpec("spinner", (sys.executable, str(CLOCKWORK), "spin", str(arguments.share)))
    strong, greedy = resolve_bot("strong"), resolve_bot("greedy")
    other_greedy = resolve_bot("greedy", "greedy-b")
    decision_ms = arguments.decision_ms
    work = Path(tempfile.mkdtemp(prefix="cpu-clock-"))
    control = TimeControl(
        decision_ms=decision_ms, warmup_ms=arguments.warmup_ms, backstop=arguments.backstop
    )
    options = RulesOptions(target_score=arguments.target_score, cold_margin=arguments.cold_margin)
    bench = Bench(control, options, plan, work)
    tallies = {(bot.name, clock): Tally() for bot in (spinner, strong) for clock in Clock}
    agreement: list[tuple[float, float]] = []
    loaded_spinner: list[list[float]] = []
    started = time.monotonic()
    load = os.getloadavg()[0]

    def cpu_decisions() -> int:
        """The decisions of both bots on the CPU clock so far."""
        return sum(tally.decisions for (_, clock), tally in tallies.items() if clock is Clock.CPU)

    def play_loaded(number: int) -> None:
        """The loaded matches of one seed: each bot on each clock in turn."""
        seed = derive_seed(arguments.seed, "match", number)
        for bot in (spinner, strong):
            for clock in (Clock.CPU, Clock.WALL):  # alternating, on the same deal
                logs = f"loaded-{number}-{bot.name}-{clock}"
                report = bench.play((bot, greedy), clock, seed, logs)
                charges, _ = tallies[(bot.name, clock)].add(report, bot.name)
                if bot is spinner and clock is Clock.CPU:
                    loaded_spinner.append(charges)
                    agreement.extend(
                        zip(charges, own_counts(work / logs / "spinner.log"), strict=False)
                    )
        print(
            f"\rloaded: seed {number}, {cpu_decisions()} decisions on the CPU clock, "
            f"{time.monotonic() - started:.0f} s",
            end="",
            file=sys.stderr,
        )

    played = 0
    stopped_early = False
    try:
        with burners(arguments.burners):
            for number in itertools.count(1):
                if number > arguments.matches and cpu_decisions() >= arguments.decisions:
                    break
                play_loaded(number)
                played = number
    except KeyboardInterrupt:
        stopped_early = True
    loaded_s = time.monotonic() - started
    idle_pairs: list[tuple[float, float]] = []
    for number in range(1, min(arguments.idle_matches, len(loaded_spinner)) + 1):
        seed = derive_seed(arguments.seed, "match", number)
        report = bench.play((spinner, greedy), Clock.CPU, seed, f"idle-{number}")
        idle, _ = decisions_of(report, spinner.name)
        idle_pairs += zip(idle, loaded_spinner[number - 1], strict=False)
    cost: dict[Clock, list[float]] = {}
    for clock in Clock:
        cost[clock] = []
        for number in range(1, arguments.idle_matches + 1):
            seed = derive_seed(arguments.seed, "match", number)
            report = bench.play((greedy, other_greedy), clock, seed, f"cost-{clock}")
            cost[clock] += decisions_of(report, greedy.name)[1]
            for fault in report.faults:
                print(f"\n{fault.describe()}", file=sys.stderr)
    print(file=sys.stderr)
    total_s = time.monotonic() - started
    within = sum(abs(charged - own) <= max(1.0, 0.02 * own) for charged, own in agreement)
    worst = max((abs(charged - own) for charged, own in agreement), default=0.0)
    idle_median = statistics.median(pair[0] for pair in idle_pairs) if idle_pairs else 0.0
    loaded_median = statistics.median(pair[1] for pair in idle_pairs) if idle_pairs else 0.0
    cost_cpu_us = statistics.median(cost[Clock.CPU] or [0.0]) * 1000
    cost_wall_us = statistics.median(cost[Clock.WALL] or [0.0]) * 1000
    rows = []
    for (name, clock), tally in tallies.items():
        charged = (
            f"{statistics.median(tally.charges):.1f} / {percentile(tally.charges, 0.95):.1f}"
            if tally.charges
            else "-"
        )
        others = ", ".join(f"{kind} {count}" for kind, count in sorted(tally.other_faults.items()))
        timeouts = f"{tally.timeouts}" + (
            f" (backstop {tally.backstops})" if tally.backstops else ""
        )
        rows.append(
            f"| {name} | {clock} | {tally.matches} | {tally.decisions} | {timeouts} "
            f"| {others or 'none'} | {charged} "
            f"| {statistics.median(tally.walls):.1f} / {percentile(tally.walls, 0.95):.1f} |"
        )
    text = (
        f"{SECTION}\n\n"
        "`python benchmarks/cpu_clock.py [--decision-ms 30] [--matches 8] [--decisions N] "
        "[--target-score S] [--cold-margin M] [--warmup-ms W] [--backstop B] [--nice N] "
        "[--idle-matches 2] "
        "[--share 0.9] [--burners N] [--write]`\n\n"
        + "\n\n".join(__doc__.split("\n\n")[1:3]).replace("``", "`")
        + "\n\n"
        f"One run, {datetime.date.today().isoformat()}: decision_ms {decision_ms}, "
        f"warmup_ms {arguments.warmup_ms}, backstop {arguments.backstop:g}, "
        f"target_score {arguments.target_score}, "
        f"cold_margin {arguments.cold_margin}, {played} seeds (each bot on each clock), "
        f"{arguments.burners} burners on {len(os.sched_getaffinity(0))} CPUs, niceness "
        f"{os.nice(0)}, load average {load:.1f} before, {plan.summary}; loaded part "
        f"{loaded_s:.0f} s, the whole run {total_s:.0f} s"
        f"{' (interrupted: the loaded part stopped early)' if stopped_early else ''}.\n\n"
        "| bot (vs greedy) | clock | matches | decisions | timeouts | other faults "
        "| charged CPU ms median / p95 | wall ms median / p95 |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"- Charge against the spinner's own CPU time: {within} of {len(agreement)} decisions "
        f"within 1 ms or 2 %; the largest difference {worst:.2f} ms.\n"
    )
    if idle_median:
        text += (
            f"- The same {len(idle_pairs)} spinner decisions idle and loaded: median charge "
            f"{idle_median:.2f} ms idle, {loaded_median:.2f} ms loaded "
            f"({(loaded_median - idle_median) / idle_median:+.1%}).\n"
        )
    text += (
        f"- The clock's cost: a `greedy` decision (idle, {len(cost[Clock.CPU])} decisions per "
        f"clock) takes {cost_cpu_us:.0f} µs of wall time (median) on the CPU clock, "
        f"{cost_wall_us:.0f} µs on the wall clock: {cost_cpu_us - cost_wall_us:+.0f} µs.\n"
    )
    print(text)
    if arguments.write:
        docs = DOCS.read_text()
        start = docs.find(SECTION + "\n")
        if start < 0:
            DOCS.write_text(docs.rstrip("\n") + "\n\n" + text)
        else:
            end = docs.find("\n## ", start + len(SECTION))
            rest = "" if end < 0 else docs[end:]
            DOCS.write_text(docs[:start] + text + rest)


if __name__ == "__main__":
    main()
