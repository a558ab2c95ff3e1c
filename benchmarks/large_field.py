"""Large fields: the ladder against baselines on simulated fields, seeded and reproducible.

A field of ``--size`` bots with true Elo ~ N(0, 200²), in one of four variants:

- ``planted``: the top 10 spaced 25 Elo apart, the 10th 60 Elo clear of the 11th;
- ``clones``: 30 % of the bots are near-identical copies (± 2 Elo) of others;
- ``heavy``: heavy tails (Student's t with 3 degrees of freedom, scaled to sd 200);
- ``intransitive``: a rock-paper-scissors term, ``60 · sin(φ_i - φ_j)`` Elo on top of the
  ratings (the truth the metrics use is the transitive part).

One duplicate pair's result is drawn from the true difference: split (one win each) with
probability ``κ · 2 · min(p, 1 - p)``, else won twice by either bot so that the expected
score stays ``p`` (κ from ``benchmarks/duplicate_pairs.py``).

Methods: the ladder (:func:`tournaments.stats.ladder.plan_round`) with ``top: 10`` and a budget
of ``--share`` of the round robin's matches (it may stop earlier, certified), the ladder
ranking the whole field (no ``top``) on the same budget, and at the latter's number of
matches (else the top-10 ladder's), three baselines: uniform random pairs, a plain Swiss (rounds
paired by points, top down, avoiding repeats) and a rating-neighbour scheduler in the
manner of Halite's (online Elo updated after every pair, each bot in turn, fewest games
first, meets one of the 8 unpaired bots nearest in rating). Each baseline's ratings are the
same joint fit (``prior_games`` 2, pair intervals, ``small_sample``) of its results.

Metrics per run: the matches as a share of the round robin (a duplicate pair for every two
bots: n (n - 1) matches), the top 10 set and order found, Elo RMSE (both centred), Kendall's
τ, the share of 95 % intervals that hold the truth and the slope of fitted on true Elo (also
for the fit without the small-sample corrections), pairs per bot (min / median / max);
and the time to pair one swiss round of 10,000 bots. The per-seed lines (``--per-seed``)
also hold ``final_from``: the share of the round robin played when a ladder's final began
(-1: it did not), which tells whether ``--final-share`` (the top-10 ladder's
``final_share``) started it or the race did.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/large_field.py --size 1000 \\
        --share 0.03 --seeds 1 --variants planted --jobs 2 [--per-seed FILE]
    python benchmarks/large_field.py --summarise FILE [FILE ...]

``--per-seed`` appends each seed's figures to a JSON-lines file as the seed finishes, so a
long run that is stopped keeps the seeds it finished, and runs of different seed ranges
can be summarised together with ``--summarise`` (a seed counted once per variant).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from tournaments.stats.ladder import (
    FINAL,
    FieldState,
    LadderSettings,
    PairOutcome,
    fit_inputs,
    plan_round,
    swiss_pairs,
)
from tournaments.stats.ratings import RatingFit, fit_elo

VARIANTS = ("planted", "clones", "heavy", "intransitive")
TOP = 10
#: The top-10 ladder's name in the figures (the only method that uses ``final_share``).
TOP_METHOD = f"ladder, top {TOP}"
SPREAD = 200.0
#: κ measured by benchmarks/duplicate_pairs.py on close pairings: 0.68 in 41 pairs, 0.75 in
#: 240 more, 0.74 pooled (docs/benchmarks.md).
DEFAULT_KAPPA = 0.74
DEFAULT_FINAL_SHARE = LadderSettings().final_share


@dataclass(frozen=True, slots=True)
class Field:
    """A simulated field: names, true ratings (the metrics' truth) and the intransitive
    angle of each bot (0 amplitude for the transitive variants)."""

    names: tuple[str, ...]
    elo: np.ndarray
    angle: np.ndarray
    cycle_elo: float

    def difference(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """The true Elo advantage of bots ``first`` over ``second`` (positions)."""
        return (self.elo[first] - self.elo[second]) + self.cycle_elo * np.sin(
            self.angle[first] - self.angle[second]
        )


def make_field(variant: str, size: int, rng: np.random.Generator) -> Field:
    """A field of the given variant."""
    names = tuple(f"b{index:05d}" for index in range(size))
    angle = np.zeros(size)
    cycle = 0.0
    if variant == "heavy":
        elo = rng.standard_t(3, size) * SPREAD / math.sqrt(3)
    else:
        elo = rng.normal(0, SPREAD, size)
    if variant == "planted":
        order = np.argsort(-elo)
        eleventh = elo[order[TOP]]
        elo[order[:TOP]] = eleventh + 60 + 25 * np.arange(TOP - 1, -1, -1)
    elif variant == "clones":
        copies = rng.choice(size, int(0.3 * size), replace=False)
        originals = np.setdiff1d(np.arange(size), copies)
        elo[copies] = elo[rng.choice(originals, len(copies))] + rng.normal(0, 2, len(copies))
    elif variant == "intransitive":
        angle = rng.uniform(0, 2 * math.pi, size)
        cycle = 60.0
    return Field(names, elo, angle, cycle)


def play_pairs(
    field: Field, pairs: Sequence[tuple[int, int]], kappa: float, rng: np.random.Generator
) -> np.ndarray:
    """The first bot's wins (0, 1 or 2) in each duplicate pair."""
    if not pairs:
        return np.zeros(0, dtype=np.int64)
    first = np.array([a for a, _ in pairs])
    second = np.array([b for _, b in pairs])
    chance = 1 / (1 + 10 ** (-field.difference(first, second) / 400))
    split = np.minimum(kappa * 2 * np.minimum(chance, 1 - chance), 1.0)
    sweep = np.clip((chance - split / 2) / np.maximum(1 - split, 1e-12), 0, 1)
    draw = rng.random(len(pairs))
    other = rng.random(len(pairs))
    return np.where(draw < split, 1, np.where(other < sweep, 2, 0))


@dataclass(slots=True)
class Run:
    """The results of one method on one field."""

    outcomes: list[PairOutcome]
    fit: RatingFit
    certified: bool | None = None
    #: A ladder's matches played when its final began (None: it never did).
    final_from: int | None = None


def results_fit(
    names: Sequence[str], outcomes: Sequence[PairOutcome], *, small_sample: bool = True
) -> RatingFit:
    """The joint fit every method is judged by (``small_sample=False``: the plain one, for
    comparison)."""
    wins, pairs = fit_inputs(outcomes)
    return fit_elo(
        names, wins, pairs=pairs, virtual_draws=0, prior_games=2, small_sample=small_sample
    )


def record(
    field: Field,
    pairs: Sequence[tuple[int, int]],
    round_number: int,
    kappa: float,
    rng: np.random.Generator,
) -> list[PairOutcome]:
    won = play_pairs(field, pairs, kappa, rng)
    return [
        PairOutcome(field.names[a], field.names[b], int(w), 2 - int(w), round_number)
        for (a, b), w in zip(pairs, won.tolist(), strict=True)
    ]


def run_ladder(
    field: Field,
    share: float,
    seed: int,
    kappa: float,
    rng: np.random.Generator,
    top: int | None = TOP,
    final_share: float = DEFAULT_FINAL_SHARE,
    race_confidence: float | None = None,
) -> Run:
    size = len(field.names)
    settings = LadderSettings(
        top=top,
        max_matches=int(share * size * (size - 1)),
        final_share=final_share,
        race_confidence=race_confidence,
    )
    position = {name: index for index, name in enumerate(field.names)}
    outcomes: list[PairOutcome] = []
    round_number = 0
    final_from = None
    while True:
        round_number += 1
        plan = plan_round(
            field.names, outcomes, round_number, seed, settings, matches_played=2 * len(outcomes)
        )
        if plan.phase == FINAL and plan.pairs and final_from is None:
            final_from = 2 * len(outcomes)
        if plan.stop:
            return Run(outcomes, plan.fit, plan.certification.certified, final_from)
        pairs = [(position[a], position[b]) for a, b in plan.pairs]
        outcomes.extend(record(field, pairs, round_number, kappa, rng))


def run_random(field: Field, budget_pairs: int, kappa: float, rng: np.random.Generator) -> Run:
    size = len(field.names)
    first = rng.integers(0, size, budget_pairs)
    second = (first + rng.integers(1, size, budget_pairs)) % size
    pairs = list(zip(first.tolist(), second.tolist(), strict=True))
    outcomes = record(field, pairs, 1, kappa, rng)
    return Run(outcomes, results_fit(field.names, outcomes))


def rounds_until(
    field: Field,
    budget_pairs: int,
    kappa: float,
    rng: np.random.Generator,
    pair_round: Callable[[list[PairOutcome]], list[tuple[int, int]]],
) -> Run:
    """Play rounds from ``pair_round`` until ``budget_pairs`` are played (the last cut)."""
    outcomes: list[PairOutcome] = []
    round_number = 0
    while len(outcomes) < budget_pairs:
        round_number += 1
        pairs = pair_round(outcomes)[: budget_pairs - len(outcomes)]
        outcomes.extend(record(field, pairs, round_number, kappa, rng))
    return Run(outcomes, results_fit(field.names, outcomes))


def run_swiss(field: Field, budget_pairs: int, kappa: float, rng: np.random.Generator) -> Run:
    size = len(field.names)
    position = {name: index for index, name in enumerate(field.names)}
    points = np.zeros(size)
    met: set[tuple[int, int]] = set()
    seen = 0

    def pair_round(outcomes: list[PairOutcome]) -> list[tuple[int, int]]:
        nonlocal seen
        for outcome in outcomes[seen:]:
            a, b = position[outcome.first], position[outcome.second]
            points[a] += outcome.first_wins
            points[b] += outcome.second_wins
            met.update(((a, b), (b, a)))
        seen = len(outcomes)
        order = sorted(range(size), key=lambda p: (-points[p], rng.random()))
        free = list(order)
        pairs = []
        while len(free) > 1:
            head = free.pop(0)
            partner = next((other for other in free if (head, other) not in met), free[0])
            free.remove(partner)
            pairs.append((head, partner))
        return pairs

    return rounds_until(field, budget_pairs, kappa, rng, pair_round)


def run_neighbours(field: Field, budget_pairs: int, kappa: float, rng: np.random.Generator) -> Run:
    size = len(field.names)
    position = {name: index for index, name in enumerate(field.names)}
    rating = np.zeros(size)
    games = np.zeros(size)
    seen = 0

    def pair_round(outcomes: list[PairOutcome]) -> list[tuple[int, int]]:
        nonlocal seen
        for outcome in outcomes[seen:]:  # online Elo, in the order played
            a, b = position[outcome.first], position[outcome.second]
            expected = 2 / (1 + 10 ** ((rating[b] - rating[a]) / 400))
            change = 16 * (outcome.first_wins - expected)
            rating[a] += change
            rating[b] -= change
            games[a] += 1
            games[b] += 1
        seen = len(outcomes)
        by_rating = list(np.argsort(rating).tolist())
        free = set(range(size))
        pairs = []
        for seed_bot in sorted(range(size), key=lambda p: (games[p], rng.random())):
            if seed_bot not in free:
                continue
            free.discard(seed_bot)
            at = by_rating.index(seed_bot)
            near = [p for p in by_rating[max(0, at - 8) : at + 9] if p in free][:8]
            if not near:
                near = sorted(free)[:1]
            if not near:
                break
            partner = near[int(rng.integers(len(near)))]
            free.discard(partner)
            pairs.append((seed_bot, partner))
        return pairs

    return rounds_until(field, budget_pairs, kappa, rng, pair_round)


def interval_figures(field: Field, fit: RatingFit) -> tuple[np.ndarray, float, float]:
    """The fitted Elo of every bot, the share of intervals that hold the truth and the
    least-squares slope of fitted on true Elo (both centred)."""
    truth = field.elo - field.elo.mean() + 1500
    rated = [fit.ratings[name] for name in field.names]
    elo = np.array([r.elo if r.elo is not None else 1500.0 for r in rated])
    low = np.array([r.low if r.low is not None else -math.inf for r in rated])
    high = np.array([r.high if r.high is not None else math.inf for r in rated])
    coverage = float(np.mean((low <= truth) & (truth <= high)))
    slope = float(np.dot(elo - 1500, truth - 1500) / np.dot(truth - 1500, truth - 1500))
    return elo, coverage, slope


def metrics(field: Field, run: Run) -> dict[str, float]:
    """The run's figures against the truth; ``plain_``: those of the fit without the
    small-sample corrections, on the same results."""
    names = field.names
    size = len(names)
    truth = field.elo - field.elo.mean() + 1500
    elo, coverage, slope = interval_figures(field, run.fit)
    plain_elo, plain_coverage, plain_slope = interval_figures(
        field, results_fit(names, run.outcomes, small_sample=False)
    )
    true_top = [names[p] for p in np.argsort(-truth, kind="stable")[:TOP].tolist()]
    found_top = [names[p] for p in np.argsort(-elo, kind="stable")[:TOP].tolist()]
    played = Counter[str]()
    for outcome in run.outcomes:
        played[outcome.first] += 1
        played[outcome.second] += 1
    games = sorted(played[name] for name in names)
    tau = kendalltau(elo, truth).statistic
    return {
        "share": 2 * len(run.outcomes) / (size * (size - 1)),
        "top_set": float(set(found_top) == set(true_top)),
        "top_order": float(found_top == true_top),
        "rmse": float(np.sqrt(np.mean((elo - truth) ** 2))),
        "tau": float(tau),
        "coverage": coverage,
        "slope": slope,
        "plain_coverage": plain_coverage,
        "plain_slope": plain_slope,
        "plain_rmse": float(np.sqrt(np.mean((plain_elo - truth) ** 2))),
        "games_min": float(games[0]),
        "games_median": float(statistics.median(games)),
        "games_max": float(games[-1]),
        "certified": float(bool(run.certified)),
        # The share of the round robin played when a ladder's final began (-1: it did not).
        "final_from": -1.0 if run.final_from is None else run.final_from / (size * (size - 1)),
    }


def pairing_time(size: int = 10_000, repeats: int = 3) -> float:
    """Median seconds to pair one swiss round of ``size`` bots (ratings and variances
    random, a few earlier meetings)."""
    rng = np.random.default_rng(0)
    names = tuple(f"b{index:05d}" for index in range(size))
    meetings = Counter(
        frozenset((names[a], names[b]))
        for a, b in rng.integers(0, size, (size, 2)).tolist()
        if a != b
    )
    state = FieldState(
        names,
        rng.normal(1500, SPREAD, size),
        rng.uniform(30, 150, size) ** 2,
        Counter(dict.fromkeys(names, 3)),
        meetings,
    )
    times = []
    for repeat in range(repeats):
        started = time.perf_counter()
        swiss_pairs(state, list(range(size)), LadderSettings(), repeat + 1, random.Random(repeat))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


@dataclass(frozen=True, slots=True)
class Task:
    """One seed of one variant, for a worker process."""

    variant: str
    seed: int
    size: int
    share: float
    kappa: float
    methods: tuple[str, ...]
    final_share: float = DEFAULT_FINAL_SHARE


def run_seed(task: Task) -> tuple[Task, dict[str, dict[str, float]]]:
    """Every method's figures on one field (the seed and the variant decide everything)."""
    rng = np.random.default_rng([task.seed, VARIANTS.index(task.variant)])
    field = make_field(task.variant, task.size, rng)
    figures: dict[str, dict[str, float]] = {}
    budget = None
    if "top" in task.methods:
        ladder = run_ladder(
            field, task.share, task.seed, task.kappa, rng, final_share=task.final_share
        )
        figures[TOP_METHOD] = metrics(field, ladder)
        budget = len(ladder.outcomes)
    if "whole" in task.methods:
        whole = run_ladder(field, task.share, task.seed, task.kappa, rng, top=None)
        figures["ladder, whole field"] = metrics(field, whole)
        budget = len(whole.outcomes)
    if budget is None:
        budget = int(task.share * task.size * (task.size - 1) / 2)
    for method, runner in (
        ("random", run_random),
        ("swiss", run_swiss),
        ("neighbours", run_neighbours),
    ):
        if method in task.methods:
            figures[method] = metrics(field, runner(field, budget, task.kappa, rng))
    return task, figures


def summarise(paths: Sequence[Path]) -> None:
    """The tables of per-seed files: a table for each variant, size, budget and κ, a row for
    each method (the top-10 ladder's for each ``final_share`` it ran with, the one setting
    of a single method); the lines of one seed in several files are read together."""
    seen: dict[tuple[str, int, int, float, float], dict[str, dict[str, float]]] = {}
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = (
                    entry["variant"],
                    entry["size"],
                    entry["seed"],
                    entry["share"],
                    entry["kappa"],
                )
                # Lines written before the setting existed: the ladder without it.
                final_share = entry.get("final_share", 0.0)
                figures = {
                    (
                        f"{method}, final_share {final_share}" if method == TOP_METHOD else method
                    ): values
                    for method, values in entry["figures"].items()
                }
                seen[key] = {**seen.get(key, {}), **figures}
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                raise SystemExit(f"{path}:{number}: not a per-seed line ({error})") from None
    groups: dict[tuple[str, int, float, float], dict[str, list[dict[str, float]]]] = {}
    seeds: dict[tuple[str, int, float, float], list[int]] = {}
    for (variant, size, seed, share, kappa), figures in sorted(seen.items()):
        group = (variant, size, share, kappa)
        seeds.setdefault(group, []).append(seed)
        for method, values in figures.items():
            groups.setdefault(group, {}).setdefault(method, []).append(values)
    for group, rows in groups.items():
        variant, size, share, kappa = group
        numbers = seeds[group]
        print(
            f"\n{variant}: {size} bots, {len(numbers)} seeds ({min(numbers)} to "
            f"{max(numbers)}), κ = {kappa}, ladder budget {share:.1%}"
        )
        print_table(rows)


def print_table(rows: dict[str, list[dict[str, float]]]) -> None:
    """Means over the seeds (the top 10 as a count of seeds), one line a method."""
    print(
        "| method | matches (share of RR) | top 10 set | top 10 order | certified | "
        "Elo RMSE | Kendall τ | 95 % coverage | slope | plain fit: coverage, slope, RMSE | "
        "pairs per bot min / median / max |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for method, runs in rows.items():
        # Lines of older versions of this script may lack a figure: the common ones.
        keys = set(runs[0]).intersection(*runs)
        mean = {key: statistics.fmean(run[key] for run in runs) for key in keys}
        count = len(runs)
        certified = (
            f"{round(mean['certified'] * count)}/{count}" if method.startswith("ladder") else "-"
        )
        print(
            f"| {method} | {mean['share']:.2%} | {round(mean['top_set'] * count)}/{count} | "
            f"{round(mean['top_order'] * count)}/{count} | {certified} | {mean['rmse']:.1f} | "
            f"{mean['tau']:.3f} | {mean['coverage']:.1%} | {mean['slope']:.2f} | "
            f"{mean['plain_coverage']:.1%}, {mean['plain_slope']:.2f}, "
            f"{mean['plain_rmse']:.1f} | "
            f"{mean['games_min']:.0f} / {mean['games_median']:.0f} / {mean['games_max']:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--share", type=float, default=0.03, help="the ladder's budget")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--kappa", type=float, default=DEFAULT_KAPPA)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["top", "whole", "random", "swiss", "neighbours"],
        choices=["top", "whole", "random", "swiss", "neighbours"],
        help="top: the top-10 ladder; whole: the ladder for the whole field; baselines",
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (seeds)")
    parser.add_argument("--pairing-size", type=int, default=10_000)
    parser.add_argument(
        "--final-share",
        type=float,
        default=DEFAULT_FINAL_SHARE,
        help="the top-10 ladder's final_share (the share of its budget kept for the final)",
    )
    parser.add_argument(
        "--per-seed", type=Path, help="append each seed's figures to this JSON-lines file"
    )
    parser.add_argument(
        "--summarise", type=Path, nargs="+", help="print the tables of per-seed files and stop"
    )
    arguments = parser.parse_args()
    if arguments.summarise:
        summarise(arguments.summarise)
        return
    seconds = pairing_time(arguments.pairing_size)
    print(f"pairing one round of {arguments.pairing_size} bots: {seconds:.3f} s")
    seeds = range(arguments.first_seed, arguments.first_seed + arguments.seeds)
    for variant in arguments.variants:
        tasks = [
            Task(
                variant,
                seed,
                arguments.size,
                arguments.share,
                arguments.kappa,
                tuple(arguments.methods),
                arguments.final_share,
            )
            for seed in seeds
        ]
        started = time.monotonic()
        rows: dict[str, list[dict[str, float]]] = {}
        with multiprocessing.Pool(arguments.jobs) as pool:
            for task, figures in pool.imap_unordered(run_seed, tasks):
                for method, values in figures.items():
                    rows.setdefault(method, []).append(values)
                if arguments.per_seed is not None:
                    entry = {
                        "variant": task.variant,
                        "size": task.size,
                        "seed": task.seed,
                        "share": task.share,
                        "kappa": task.kappa,
                        "final_share": task.final_share,
                        "figures": figures,
                    }
                    with arguments.per_seed.open("a") as log:
                        log.write(json.dumps(entry) + "\n")
        print(
            f"\n{variant}: {arguments.size} bots, {arguments.seeds} seeds, κ = "
            f"{arguments.kappa}, ladder budget {arguments.share:.1%} "
            f"({time.monotonic() - started:.0f} s with {arguments.jobs} processes)"
        )
        print_table(rows)


if __name__ == "__main__":
    main()
