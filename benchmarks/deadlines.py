"""Deadlines on a loaded machine: does a bot answer in time while other work wants the CPUs?

Plays each BOT against OPPONENT in duplicate pairs through the match runner, started as a
tournament starts bots (sandboxed where bubblewrap works, the opponent frozen while the bot
thinks), at each ``--decision-ms``, while ``--burners`` busy loops (default: one per CPU, at
this process's niceness) compete for the CPUs. With several BOTs, pair by pair in turn, so
that they meet the same load (two versions of a bot, say). Prints per bot and deadline the
matches, those won, those forfeited by a timeout (and other faults), its answer times as
the referee measured them (median, 99th percentile and slowest, the slowest also as a share
of the deadline) and the opponent's slowest answer and timeouts. ``--write`` puts the rows
in the "Deadlines under load" section of ``docs/benchmarks.md`` (the row of the same bot,
opponent, deadline and burners is replaced).

    python benchmarks/deadlines.py strong greedy --decision-ms 100 200 --pairs 12 --write
    python benchmarks/deadlines.py strong old="python3 old/bot.py" greedy --pairs 24
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from referee.bundled import resolve_pair
from referee.faults import FaultKind
from referee.runner import MatchReport, MatchRunner
from referee.sandbox import SandboxMode, plan_sandbox
from referee.seeds import derive_seed
from referee.time_control import TimeControl

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SECTION = "## Deadlines under load"
INTRO = """\
`python benchmarks/deadlines.py BOT [BOT ...] OPPONENT [--decision-ms 100 200] [--pairs 12]
[--burners N] [--seed 1] [--write]`

Duplicate pairs of matches through the match runner, the bots sandboxed as in a tournament
(the opponent frozen while the bot thinks), while N busy loops (default: one per CPU, at the
benchmark's own niceness) compete for the CPUs, on top of whatever else the machine runs.
"timeouts" counts the matches BOT forfeited by a timeout; the answer times are BOT's, as the
referee measured them (from sending `decide` to reading `act`), over every decision of every
match but the first (which has the warm-up allowance too), as long as the referee's own
stalls made them (a reply that came in time is taken in time, however late the referee
reads it); "opponent slowest" and "opponent timeouts" are the opponent's, the machine's own
delays where the opponent hardly thinks.
"""
TABLE_HEADER = (
    "| bot | opponent | decision_ms | burners | load before | matches | won | timeouts "
    "| other faults "
    "| median ms | p99 ms | slowest ms | slowest / deadline | opponent slowest ms "
    "| opponent timeouts | date |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In a burner, between fork and exec: the kernel kills it when the benchmark dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


@contextlib.contextmanager
def burners(count: int) -> Iterator[None]:
    """``count`` busy loops for as long as the block runs."""
    processes = [
        subprocess.Popen(  # a fixed command, no input
            [sys.executable, "-c", "while True: pass"], preexec_fn=_die_with_parent
        )
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()


def answer_times(report: MatchReport, name: str) -> list[float]:
    """The decision times, in ms, of the bot called ``name`` in this match, but its first:
    that one may take the warm-up allowance too."""
    times = []
    for game, timings in zip(report.games, report.timings, strict=True):
        for turn, milliseconds in zip(game.history, timings, strict=False):
            if report.players[int(turn.seat)] == name and milliseconds is not None:
                times.append(milliseconds)
    return times[1:]


def update_docs(row: str, key: str, path: Path = DOCS) -> None:
    """Put ``row`` in the section's table, replacing the row that starts with ``key``."""
    text = path.read_text()
    start = text.find(SECTION + "\n")
    if start < 0:
        text = text.rstrip("\n") + f"\n\n{SECTION}\n\n{INTRO}\n{TABLE_HEADER}"
        start = text.find(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    end = len(text) if end < 0 else end + 1
    lines = text[start:end].rstrip("\n").split("\n")
    same = [index for index, line in enumerate(lines) if line.startswith(key)]
    if same:
        lines[same[0]] = row
    else:
        rows = [index for index, line in enumerate(lines) if line.startswith("|")]
        lines.insert(rows[-1] + 1, row)  # after the last row, or the header's rule
    path.write_text(text[:start] + "\n".join(lines) + "\n" + text[end:].lstrip("\n"))


@dataclass
class Tally:
    """One bot's figures at one deadline."""

    matches: int = 0
    won: int = 0
    times: list[float] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    #: The opponent's answer times and timeouts in this bot's matches.
    theirs: list[float] = field(default_factory=list)
    their_timeouts: int = 0

    def add(self, report: MatchReport, name: str, opponent: str) -> None:
        """Count a match of the bot called ``name``."""
        self.matches += 1
        self.won += report.winner is not None and report.players[report.winner] == name
        self.times += answer_times(report, name)
        self.theirs += answer_times(report, opponent)
        for fault in report.faults:
            if fault.bot == name:
                self.faults[fault.kind.value] += 1
            else:
                self.their_timeouts += fault.kind is FaultKind.TIMEOUT
            print(f"\n{fault.describe()}", file=sys.stderr)

    def row(self, key: str, decision_ms: int, load: float) -> str:
        """The table row after ``key`` (bot, opponent, deadline, burners)."""
        times = sorted(self.times)
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))] if times else 0.0
        slowest = times[-1] if times else 0.0
        median = statistics.median(times) if times else 0.0
        faults = Counter(self.faults)
        timeouts = faults.pop("timeout", 0)
        others = ", ".join(f"{kind} {count}" for kind, count in sorted(faults.items()))
        return (
            f"{key} {load:.1f} | {self.matches} | {self.won} | {timeouts} | {others or 'none'} "
            f"| {median:.1f} | {p99:.1f} | {slowest:.1f} | {slowest / decision_ms:.0%} "
            f"| {max(self.theirs, default=0.0):.1f} | {self.their_timeouts} "
            f"| {datetime.date.today().isoformat()} |"
        )


def main() -> None:
    """Play the pairs at each deadline under load, and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "bots",
        nargs="+",
        help="the bots to time (bundled names or NAME=COMMAND), then the opponent",
    )
    parser.add_argument("--decision-ms", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--pairs", type=int, default=12, help="duplicate pairs per deadline")
    parser.add_argument("--burners", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--seed", type=int, default=1, help="master seed of the pairs")
    parser.add_argument("--sandbox", default="auto", choices=[mode.value for mode in SandboxMode])
    parser.add_argument("--write", action="store_true", help=f"record the rows in {DOCS.name}")
    arguments = parser.parse_args()
    if len(arguments.bots) < 2:
        parser.error("give at least one bot and the opponent")
    *texts, opponent_text = arguments.bots
    pairs = [resolve_pair(text, opponent_text) for text in texts]
    plan = plan_sandbox(arguments.sandbox)
    print(f"{plan.summary}; {arguments.burners} burners", file=sys.stderr)
    load = os.getloadavg()[0]
    rows = []
    with burners(arguments.burners):
        for decision_ms in arguments.decision_ms:
            tallies = [Tally() for _ in pairs]
            started = time.monotonic()
            with MatchRunner(
                time_control=TimeControl(decision_ms=decision_ms), sandbox=plan
            ) as runner:
                for number in range(1, arguments.pairs + 1):
                    seed = derive_seed(arguments.seed, "match", number)
                    # Pair by pair, every bot in turn: they all meet the same load.
                    for (bot, opponent), tally in zip(pairs, tallies, strict=True):
                        for seats in ((bot, opponent), (opponent, bot)):
                            report = runner.play(seats, seed, f"{number}-{seats[0].name}")
                            tally.add(report, bot.name, opponent.name)
                    print(f"\r{decision_ms} ms: {number} pairs", end="", file=sys.stderr)
            print(file=sys.stderr)
            seconds = time.monotonic() - started
            for (bot, opponent), tally in zip(pairs, tallies, strict=True):
                key = f"| {bot.name} | {opponent.name} | {decision_ms} | {arguments.burners} |"
                rows.append((key, tally.row(key, decision_ms, load)))
                print(rows[-1][1])
            print(f"{seconds:.0f} s")
    if arguments.write:
        for key, row in rows:
            update_docs(row, key)
        print(f"written to {DOCS}")


if __name__ == "__main__":
    main()
