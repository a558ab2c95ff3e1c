"""The real ladder's sparring field, simulated: how often a ladder can find its top K in
order on the budget, and how often anything could.

``benchmarks/ladder_field.py`` plays a field of ``sparring`` bots through the referee,
which takes a minute a run; this drives the ladder's own planner
(:func:`tournaments.stats.ladder.plan_round`) over the same field hundreds of times, each
duplicate pair drawn as in ``benchmarks/large_field.py`` from the bots' true Elo. The
true Elo of each random-action share comes from :data:`CURVE`, measured by real round
robins of sparring bots (``--measure`` plays one and prints it). Reported per setting:
the top K found in order, the set found, certified; and references at the same budget:
uniform random pairs, and two schedules that know the true top ``finalists`` (which no
real schedule does) and spend the whole budget on them: round robins of them, and pairs of
neighbours in the true order (#1-#2, #2-#3, ...) in turn. They show what the budget
allows once the top is known, not a bound on what a schedule could do.

    OPENBLAS_NUM_THREADS=1 python benchmarks/ladder_field_sim.py [--seeds 200]
        [--final-shares 0 0.3] [--race-confidences 0.9]
        [--top-step 0.1 | --top-chances 0,0.15,...]
        [--rest-from 0.6] [--kappa 0.74]
    python benchmarks/ladder_field_sim.py --measure 0,0.1,0.2 [--matches-per-pair 16]
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

try:  # imported by the tests, from the project's root
    from benchmarks.ladder_field import AEGIS_REF, add_field_arguments, field_chances, sparring_bot
    from benchmarks.large_field import (
        DEFAULT_KAPPA,
        Field,
        record,
        results_fit,
        run_ladder,
        run_random,
    )
except ModuleNotFoundError:  # run as a script: its own folder comes first on the path
    from ladder_field import AEGIS_REF, add_field_arguments, field_chances, sparring_bot
    from large_field import DEFAULT_KAPPA, Field, record, results_fit, run_ladder, run_random

from tournaments.config.ladder import default_finalists

#: A sparring bot's Elo by its random-action share (``AEGIS_SPARRING_RANDOM``), default
#: rules: a round robin of 0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5 and 0.6 (16
#: matches a pairing, 720 matches, seed 78; ±50 to ±66 Elo at 95 %), and beyond 0.6 the
#: slope of a round robin of 0 to 1 in steps of 0.1 (8 matches a pairing, seed 77: 0.6 to
#: 1 lost 210 Elo), on the first one's scale. Differences are what matter.
CURVE = (
    (0.0, 1754.0),
    (0.1, 1699.0),
    (0.15, 1621.0),
    (0.2, 1595.0),
    (0.25, 1574.0),
    (0.3, 1499.0),
    (0.35, 1417.0),
    (0.4, 1357.0),
    (0.5, 1305.0),
    (0.6, 1179.0),
    (1.0, 970.0),
)


def elo_of(chance: float) -> float:
    """The Elo of a sparring bot that plays a random action with this chance."""
    shares, elos = zip(*CURVE, strict=True)
    return float(np.interp(chance, shares, elos))


@dataclass(frozen=True, slots=True)
class Task:
    chances: tuple[float, ...]
    top: int
    share: float
    kappa: float
    seed: int
    final_share: float | None  # None: the oracle and the random pairs
    race_confidence: float | None = None  # None: the ladder's default


def make_field(chances: tuple[float, ...]) -> Field:
    elo = np.array([elo_of(chance) for chance in chances])
    size = len(chances)
    return Field(
        tuple(f"spar-{rank:03d}" for rank in range(1, size + 1)),
        elo - elo.mean(),
        np.zeros(size),
        0.0,
    )


def found(field: Field, elo: dict[str, float | None], top: int) -> tuple[bool, bool]:
    """The top K in order, and as a set (bots are named in their true order)."""
    ranked = sorted(field.names, key=lambda name: -(elo[name] or -np.inf))[:top]
    truth = list(field.names[:top])
    return ranked == truth, set(ranked) == set(truth)


def run(task: Task) -> dict[str, tuple[bool, bool, bool]]:
    """One seed: the ladder at ``task.final_share``, or the two references."""
    field = make_field(task.chances)
    size = len(field.names)
    budget = int(task.share * size * (size - 1))
    rng = np.random.default_rng([task.seed, 64])
    if task.final_share is not None:
        ladder = run_ladder(
            field,
            task.share,
            task.seed,
            task.kappa,
            rng,
            task.top,
            task.final_share,
            task.race_confidence,
        )
        ratings = {name: ladder.fit.ratings[name].elo for name in field.names}
        race = "" if task.race_confidence is None else f", race_confidence {task.race_confidence:g}"
        return {
            f"ladder, final_share {task.final_share:g}{race}": (
                *found(field, ratings, task.top),
                bool(ladder.certified),
            )
        }
    figures = {}
    randomly = run_random(field, budget // 2, task.kappa, rng)
    ratings = {name: randomly.fit.ratings[name].elo for name in field.names}
    figures["uniform random pairs"] = (*found(field, ratings, task.top), False)
    finalists = default_finalists(task.top, size)
    everyone = [(a, b) for a in range(finalists) for b in range(a + 1, finalists)]
    neighbours = [(a, a + 1) for a in range(finalists - 1)]
    for schedule, pairings in (("round robins of", everyone), ("neighbours in", neighbours)):
        pairs = [pairings[index % len(pairings)] for index in range(budget // 2)]
        outcomes = record(field, pairs, 1, task.kappa, rng)
        fit = results_fit(field.names[:finalists], outcomes)
        ratings = {name: fit.ratings[name].elo for name in field.names[:finalists]}
        ratings |= dict.fromkeys(field.names[finalists:])
        figures[f"oracle: {schedule} the true top {finalists}"] = (
            *found(field, ratings, task.top),
            False,
        )
    return figures


def measure(chances: list[float], matches_per_pair: int, seed: int) -> None:
    """Play a round robin of sparring bots at these shares and print its standings."""
    folder = Path(tempfile.mkdtemp(prefix="sparring-curve-"))
    config = {
        "name": "sparring-curve",
        "bots": [sparring_bot(f"p{chance:.3f}", chance) for chance in chances],
        "format": "round_robin",
        "matches_per_pair": matches_per_pair,
        "concurrency": 2,
        "seed": seed,
    }
    path = folder / "curve.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    output = folder / "results"
    subprocess.run(
        [str(AEGIS_REF), "tournament", str(path), "--output", str(output), "--quiet"],
        check=True,
    )
    subprocess.run([str(AEGIS_REF), "standings", str(output), "--format", "markdown"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_field_arguments(parser)
    parser.add_argument("--kappa", type=float, default=DEFAULT_KAPPA)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--final-shares", type=float, nargs="+", default=[0.0, 0.3])
    parser.add_argument(
        "--race-confidences",
        type=float,
        nargs="+",
        default=[],
        help="also run the ladder at each final share with these race_confidence values",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--measure", help="shares to play a real round robin of, e.g. 0,0.1")
    parser.add_argument("--matches-per-pair", type=int, default=16)
    parser.add_argument("--seed", type=int, default=78)
    arguments = parser.parse_args()
    if arguments.measure:
        shares = [float(part) for part in arguments.measure.split(",")]
        measure(shares, arguments.matches_per_pair, arguments.seed)
        return
    chances = tuple(field_chances(arguments))
    elos = [round(elo_of(chance) - elo_of(chances[0])) for chance in chances]
    print(
        f"{arguments.bots} bots, top {arguments.top}, budget {arguments.share:.0%} of the "
        f"round robin, κ {arguments.kappa}, {arguments.seeds} seeds; Elo below the best: "
        f"top {elos[: arguments.top]}, then {elos[arguments.top]} to {elos[-1]}"
    )
    settings: list[tuple[float | None, float | None]] = [
        (None, None),
        *((share, None) for share in arguments.final_shares),
        *((share, race) for race in arguments.race_confidences for share in arguments.final_shares),
    ]
    tasks = [
        Task(chances, arguments.top, arguments.share, arguments.kappa, seed, share, race)
        for share, race in settings
        for seed in range(1, arguments.seeds + 1)
    ]
    totals: dict[str, list[int]] = {}
    with multiprocessing.Pool(arguments.jobs) as pool:
        for figures in pool.imap(run, tasks, chunksize=4):
            for method, flags in figures.items():
                counts = totals.setdefault(method, [0, 0, 0])
                for at, flag in enumerate(flags):
                    counts[at] += flag
    seeds = arguments.seeds
    print(f"| schedule | top {arguments.top} in order | set | certified |")
    print("|---|---|---|---|")
    for method, (order, same, certified) in totals.items():
        print(f"| {method} | {order}/{seeds} | {same}/{seeds} | {certified}/{seeds} |")


if __name__ == "__main__":
    sys.exit(main())
