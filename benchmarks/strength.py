"""Bot strength: duplicate pairs of matches between two bots through the match runner.

Each pair plays the same seed twice, seats swapped, so both bots get the same deals and the
luck of the cards cancels out as far as it can. Prints the first bot's wins, its win rate
with a 95 % confidence interval (Wilson score interval), the games played and the faults;
``--write`` records the result as a row of the "Bot strength" section of
``docs/benchmarks.md`` (a row for the same bots, deadline and rules is replaced; the rest
of the file is left alone).

    nice -n 10 python benchmarks/strength.py greedy random --pairs 100 --decision-ms 1000
    nice -n 10 python benchmarks/strength.py strong greedy --pairs 100 --decision-ms 100 --write
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import time
from pathlib import Path

from referee.bundled import resolve_bot
from referee.rules.options import RulesOptions
from referee.runner import MatchRunner
from referee.time_control import TimeControl

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SECTION = "## Bot strength"
INTRO = """\
`nice -n 10 python benchmarks/strength.py BOT OPPONENT [--pairs 100] [--decision-ms 1000]
[--seed 1] [--target-score 25] [--write]`

Duplicate pairs of matches through the match runner, the bots being processes that speak the
protocol: each seed is played twice with the seats swapped, so both bots get the same deals.
One match at a time. "win %" is the first bot's share of the matches, with its 95 % Wilson
score interval; "faults" counts every fault in those matches (each forfeits its match).
Rules are the defaults unless the row says otherwise.
"""
TABLE_HEADER = (
    "| bot | opponent | decision_ms | rules | matches | wins | win % | 95 % CI | games | faults "
    "| date |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
)


def wilson(wins: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion, as fractions."""
    if total == 0:
        return 0.0, 1.0
    share = wins / total
    denominator = 1 + z * z / total
    centre = (share + z * z / (2 * total)) / denominator
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def rules_text(options: RulesOptions) -> str:
    """The options that differ from the defaults, or ``default``."""
    default = RulesOptions().to_dict()
    changed = [
        f"{key}={value}" for key, value in options.to_dict().items() if default[key] != value
    ]
    return ", ".join(changed) or "default"


def update_docs(row: str, key: str, path: Path = DOCS) -> None:
    """Put ``row`` in the section's table, replacing the row that starts with ``key``."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find(SECTION + "\n")
    if start < 0:
        section = f"{SECTION}\n\n{INTRO}\n{TABLE_HEADER}{row}\n"
        path.write_text(text.rstrip("\n") + "\n\n" + section)
        return
    end = text.find("\n## ", start + len(SECTION))
    end = len(text) if end < 0 else end + 1
    lines = text[start:end].split("\n")
    rows = [index for index, line in enumerate(lines) if line.startswith("| ")]
    if not rows:
        lines[1:1] = ["", *TABLE_HEADER.rstrip("\n").split("\n")]
        rows = [index for index, line in enumerate(lines) if line.startswith("| ")]
    same = [index for index in rows if lines[index].startswith(key)]
    if same:
        lines[same[0]] = row
    else:
        lines.insert(rows[-1] + 1, row)
    path.write_text(text[:start] + "\n".join(lines) + text[end:])


def main() -> None:
    """Play the pairs and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bot", help="a bundled bot's name or a command line")
    parser.add_argument("opponent", help="a bundled bot's name or a command line")
    parser.add_argument("--pairs", type=int, default=100, help="duplicate pairs (2 matches each)")
    parser.add_argument("--decision-ms", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1, help="the first pair's seed")
    parser.add_argument("--target-score", type=int, default=RulesOptions().target_score)
    parser.add_argument("--write", action="store_true", help=f"record the result in {DOCS.name}")
    arguments = parser.parse_args()
    options = RulesOptions(target_score=arguments.target_score)
    bot, opponent = arguments.bot, arguments.opponent
    specs = [resolve_bot(bot), resolve_bot(opponent)]
    if bot == opponent:
        specs = [resolve_bot(bot, f"{bot}-a"), resolve_bot(opponent, f"{opponent}-b")]
    name = specs[0].name
    wins = matches = games = faults = 0
    started = time.monotonic()
    clock = TimeControl(decision_ms=arguments.decision_ms)
    with MatchRunner(options=options, time_control=clock) as runner:
        for seed in range(arguments.seed, arguments.seed + arguments.pairs):
            for order, pair in enumerate((specs, specs[::-1])):
                report = runner.play(pair, seed, match_id=f"{seed}-{order}")
                matches += 1
                games += len(report.games)
                faults += len(report.faults)
                for fault in report.faults:
                    print(f"\nmatch {report.match_id}: {fault.describe()}", file=sys.stderr)
                winner = report.winner
                wins += winner is not None and report.players[winner] == name
            print(
                f"\r{matches} matches, {wins} won by {name}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    print(file=sys.stderr)
    low, high = wilson(wins, matches)
    share = wins / matches if matches else 0.0
    seconds = time.monotonic() - started
    print(f"{bot} vs {opponent}, decision_ms {arguments.decision_ms}, {rules_text(options)}")
    print(f"matches {matches}  wins {wins}  win {share:.1%}  95% CI {low:.1%} - {high:.1%}")
    print(f"games {games}  faults {faults}  time {seconds:.0f} s")
    if arguments.write:
        key = f"| {bot} | {opponent} | {arguments.decision_ms} | {rules_text(options)} |"
        today = datetime.date.today().isoformat()
        row = (
            f"{key} {matches} | {wins} | {share:.1%} | {low:.1%} - {high:.1%} | {games} "
            f"| {faults} | {today} |"
        )
        update_docs(row, key)
        print(f"written to {DOCS}")


if __name__ == "__main__":
    main()
