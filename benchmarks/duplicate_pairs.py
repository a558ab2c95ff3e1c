"""How much a duplicate pair's two matches hang together: κ, measured from real pairs.

Plays duplicate pairs (one seed, seats swapped) between bundled bots of different strength
through the match runner and counts the split pairs (one win each). The large-field
benchmark (``benchmarks/large_field.py``) draws a pair as split with probability
``κ · 2 · min(p, 1 - p)``, ``p`` the first bot's expected score; κ is estimated here as

    κ = (split pairs) / Σ_pairs 2 · min(p, 1 - p)

with ``p`` each pairing's observed share of matches. Two independent matches would split
with probability ``2 p (1 - p)``, which the output prints beside it.

    nice -n 10 python benchmarks/duplicate_pairs.py --pairs 12
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from referee.bots import BotSpec
from referee.bundled import resolve_bot
from referee.runner import MatchRunner
from referee.time_control import TimeControl

#: Pairings of bundled bots, as (name, share of random actions) for ``sparring``; None is
#: ``greedy`` itself.
PAIRINGS: tuple[tuple[float | None, float], ...] = ((0.1, 0.4), (0.3, 0.6), (None, 0.3))


def sparring(share: float | None) -> BotSpec:
    """``greedy``, or ``sparring`` with ``share`` random actions."""
    if share is None:
        return resolve_bot("greedy")
    base = resolve_bot("sparring")
    return dataclasses.replace(
        base, name=f"sparring-{share:g}", env={"AEGIS_SPARRING_RANDOM": str(share)}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12, help="duplicate pairs per pairing")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--logs", type=Path, default=Path("/tmp/aegis-duplicate-pairs"))
    parser.add_argument(
        "--pairings",
        nargs="+",
        metavar="P:Q",
        help="sparring shares to pair, e.g. 0.2:0.3 (greedy for P = g); default: "
        + " ".join(f"{'g' if a is None else a}:{b}" for a, b in PAIRINGS),
    )
    arguments = parser.parse_args()
    pairings = PAIRINGS
    if arguments.pairings:
        pairings = tuple(
            (None if first == "g" else float(first), float(second))
            for first, second in (text.split(":") for text in arguments.pairings)
        )
    arguments.logs.mkdir(parents=True, exist_ok=True)
    clock = TimeControl(decision_ms=1000, warmup_ms=20000)
    splits = 0
    expected_splits = 0.0
    independent_splits = 0.0
    total_pairs = 0
    started = time.monotonic()
    with MatchRunner(time_control=clock, log_dir=arguments.logs) as runner:
        for first_share, second_share in pairings:
            first, second = sparring(first_share), sparring(second_share)
            outcomes = []
            for index in range(arguments.pairs):
                seed = arguments.seed * 100_000 + index
                won = 0
                decided = 0
                for order, seats in enumerate(((first, second), (second, first))):
                    report = runner.play(list(seats), seed, match_id=f"{seed}-{order}")
                    if report.winner is not None:
                        decided += 1
                        won += report.players[report.winner] == first.name
                if decided == 2:
                    outcomes.append(won)
            share = sum(outcomes) / (2 * len(outcomes)) if outcomes else 0.5
            split = sum(1 for won in outcomes if won == 1)
            splits += split
            expected_splits += len(outcomes) * 2 * min(share, 1 - share)
            independent_splits += len(outcomes) * 2 * share * (1 - share)
            total_pairs += len(outcomes)
            independent = len(outcomes) * 2 * share * (1 - share)
            print(
                f"{first.name} vs {second.name}: {len(outcomes)} pairs, score {share:.3f}, "
                f"split {split} (independent matches: {independent:.1f})"
            )
    kappa = splits / expected_splits if expected_splits else float("nan")
    print(
        f"all: {total_pairs} pairs, {splits} split, κ = {kappa:.2f} "
        f"(independent matches would give {independent_splits / expected_splits:.2f}); "
        f"{time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
