"""Engine throughput: random-vs-random complete games per second, in-process, on one core.

Each game is dealt from a seeded RNG and played through the public API (``observation``,
``legal_actions``, a uniform random policy, ``apply``), exactly as ``referee.selfplay`` does.
The figure is the best of several repeats, so background load lowers it rather than raising it.

    python benchmarks/engine.py [--games 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

from referee.build_info import hot_path_build
from referee.rules.game import Seat, new_game, shuffled_deck
from referee.rules.options import RulesOptions
from referee.selfplay import RandomPolicy, play_game


def games_per_second(games: int, seed: int) -> float:
    """Play ``games`` random games and return the rate."""
    options = RulesOptions()
    rng = random.Random(seed)
    policies = [RandomPolicy(seed + 1), RandomPolicy(seed + 2)]
    seats = (Seat.FIRST, Seat.SECOND)
    started = time.perf_counter()
    for number in range(games):
        play_game(new_game(options, seats[number % 2], shuffled_deck(rng)), policies)
    return games / (time.perf_counter() - started)


def main() -> None:
    """Run the benchmark and print a report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says
    rates = [games_per_second(arguments.games, seed) for seed in range(arguments.repeats)]
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
        f"hot path {hot_path_build()}"
    )
    print(f"games per repeat: {arguments.games}, repeats: {arguments.repeats}")
    print("rates: " + ", ".join(f"{rate:,.0f}" for rate in rates))
    print(f"best: {max(rates):,.0f} games/s  median: {sorted(rates)[len(rates) // 2]:,.0f} games/s")


if __name__ == "__main__":
    main()
