"""A ladder league, simulated: how fast a new version is placed, and whether every bot keeps
playing.

A league of ``--bots`` current bots (true Elo ~ N(0, 200²)) plays ``--history`` rounds of the
ladder (:func:`tournaments.stats.ladder.plan_round`, the league's settings: no ``top`` unless
``--top``, no budget), one duplicate pair's result drawn as in ``benchmarks/large_field.py``
(κ from ``benchmarks/duplicate_pairs.py``). Then a new version arrives: its predecessor
leaves the field (its results stay, as a league keeps them), the new one (true Elo drawn
from the same distribution) joins from the next round, and the budget counts from there, as
:class:`tournaments.run.ladder_run.Ladder` plans a league's rounds. The rounds go on until the
new version's interval (the standings' 95 % interval, by pair; and the wider of the one by
pair and by match, as the planner reads it) is within ±50 Elo, or ``--max-pairs`` of its
pairs.

Reported over ``--seeds`` seeds: the new version's duplicate pairs until ±50 (median, 90th
percentile, most), its error then (fitted minus true, both against the field's mean), its
half width by pair once it has played 64 pairs (the target's budget) and how far its
opponents in them were from its true rating; and,
over every window of 10 consecutive rounds of every seed, the spread of games of the bots
in play throughout the window (not out of the race, in the field all along): ``(most -
least) / most``, whose target is at most 25 %.

    OPENBLAS_NUM_THREADS=1 python benchmarks/ladder_league.py [--bots 64] [--seeds 30]
                                                              [--history 20] [--top K]
        [--random-share 0.1] [--repeat-penalty 100] [--oracle PENALTY]

``--oracle``: the new version's opponent each round is the one an oracle that knows the
true ratings would choose (the nearest to its own, each earlier meeting adding PENALTY
Elo): what no pairing could better by choosing the new version's opponents.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

try:  # imported by the tests, from the project's root
    from benchmarks.large_field import DEFAULT_KAPPA, Field, make_field, record
except ModuleNotFoundError:  # run as a script: its own folder comes first on the path
    from large_field import DEFAULT_KAPPA, Field, make_field, record

from tournaments.stats.ladder import OUT, LadderSettings, PairOutcome, RoundPlan, plan_round
from tournaments.stats.ratings import ELO_PER_NATURAL_UNIT

T = TypeVar("T", int, float)

#: The window of rounds of the games-spread target, and the target.
WINDOW = 10
SPREAD_TARGET = 0.25
#: The placement target: the new version's interval within this many Elo, after at most
#: this many of its duplicate pairs (at the median).
PLACED_ELO = 50.0
PLACED_PAIRS = 64


def _half_widths(plan: RoundPlan, name: str) -> tuple[float, float]:
    """The bot's 95 % half width by pair, and the wider of by pair and by match."""
    rating = plan.fit.ratings[name]
    if rating.elo is None or rating.high is None or rating.match_high is None:
        return float("inf"), float("inf")
    by_pair = rating.high - rating.elo
    return by_pair, max(by_pair, rating.match_high - rating.elo)


def _spreads(plans: list[RoundPlan], outcomes: list[PairOutcome]) -> list[float]:
    """``(most - least) / most`` games of the bots in play throughout each window."""
    games: dict[int, Counter[str]] = {}
    for outcome in outcomes:
        played = games.setdefault(outcome.round, Counter())
        played[outcome.first] += 2
        played[outcome.second] += 2
    spreads = []
    for start in range(len(plans) - WINDOW + 1):
        window = plans[start : start + WINDOW]
        in_play = set.intersection(
            *({name for name, status in plan.status.items() if status != OUT} for plan in window)
        )
        counts = [
            sum(games.get(plan.round_number, {}).get(name, 0) for plan in window)
            for name in sorted(in_play)
        ]
        if counts and max(counts):
            spreads.append((max(counts) - min(counts)) / max(counts))
    return spreads


def known_opponents_width(chances: np.ndarray, kappa: float) -> float:
    """The 95 % half width (Elo) of a bot's rating from duplicate pairs in which its
    chance of winning a match is each of ``chances``, against opponents whose ratings are
    known exactly: the variance of its wins in the pairs (drawn as in
    ``benchmarks/large_field.py``: split with probability κ·2·min(p, 1-p)) over the square
    of their slope in its rating. At an even score a pair tells most."""
    split = np.minimum(kappa * 2 * np.minimum(chances, 1 - chances), 1.0)
    both = chances - split / 2  # the chance of winning both matches of the pair
    variance = split + 4 * both - (2 * chances) ** 2
    slope = 2 * chances * (1 - chances)
    return float(1.96 * ELO_PER_NATURAL_UNIT * math.sqrt(variance.sum()) / slope.sum())


@dataclass(frozen=True, slots=True)
class LeagueRun:
    """One seed's figures for the new version, and the games spreads of every window."""

    #: Its pairs until ±50 by pair, and by the wider of by pair and by match (None: never).
    placed_by_pair: int | None
    placed: int | None
    #: Its error when placed by the wider interval (fitted minus true, against the mean).
    error: float | None
    #: Its half width by pair after :data:`PLACED_PAIRS` pairs (None: it played fewer).
    width_at_budget: float | None
    #: The half width those pairs would give against opponents known exactly.
    known_width: float | None
    #: Its error then (fitted minus true, against the field's mean).
    error_at_budget: float | None
    spreads: list[float]
    #: How far from its true rating its opponents were in those pairs (Elo, in order).
    distances: np.ndarray | None = None


def oracle_pairs(
    pairs: list[tuple[int, int]],
    newcomer: int,
    field: Field,
    meetings: Counter[frozenset[int]],
    repeat_penalty: float,
) -> list[tuple[int, int]]:
    """``pairs`` with the newcomer's opponent swapped for the bot that an oracle knowing the
    true ratings would choose: the nearest to the newcomer's true rating, each earlier
    meeting of the two adding ``repeat_penalty`` Elo (the bound of what a pairing could
    do for the newcomer; its opponent's old partner takes the one left)."""
    at = next((index for index, pair in enumerate(pairs) if newcomer in pair), None)
    if at is None:
        return pairs
    given = pairs[at][1] if pairs[at][0] == newcomer else pairs[at][0]
    in_play = sorted({bot for pair in pairs for bot in pair} - {newcomer})
    cost = [
        abs(float(field.elo[newcomer] - field.elo[bot]))
        + repeat_penalty * meetings[frozenset((newcomer, bot))]
        for bot in in_play
    ]
    chosen = in_play[int(np.argmin(cost))]
    if chosen == given:
        return pairs
    swapped = []
    for pair in pairs:
        if newcomer in pair:
            swapped.append((newcomer, chosen))
        elif chosen in pair:
            swapped.append((given, pair[1] if pair[0] == chosen else pair[0]))
        else:
            swapped.append(pair)
    return swapped


def one_league(
    seed: int,
    bots: int,
    history: int,
    max_pairs: int,
    kappa: float,
    settings: LadderSettings,
    oracle_penalty: float | None = None,
) -> LeagueRun:
    """One seed: a league of ``bots`` plays ``history`` rounds, then a new version replaces
    the first bot and plays until placed (or ``max_pairs``). With ``oracle_penalty``, the
    new version's opponent each round is the oracle's (:func:`oracle_pairs`)."""
    rng = np.random.default_rng(seed)
    field = make_field("normal", bots + 1, rng)  # the last one is the new version
    position = {name: index for index, name in enumerate(field.names)}
    newcomer = field.names[-1]
    outcomes: list[PairOutcome] = []
    plans: list[RoundPlan] = []
    current = list(field.names[:-1])
    first_of_field = 1
    placed_by_pair: int | None = None
    placed: int | None = None
    error: float | None = None
    width_at_budget: float | None = None
    known_width: float | None = None
    error_at_budget: float | None = None
    meetings: Counter[frozenset[int]] = Counter()
    distances: np.ndarray | None = None
    round_number = 0
    while True:
        round_number += 1
        if round_number == history + 1:  # the new version replaces the first bot
            current = [*field.names[1:]]
            first_of_field = round_number
        spent = 2 * sum(1 for outcome in outcomes if outcome.round >= first_of_field)
        plan = plan_round(
            current,
            outcomes,
            round_number,
            seed,
            settings,
            matches_played=spent,
            rounds_played=round_number - first_of_field,
        )
        if round_number > history:
            pairs_played = sum(newcomer in (o.first, o.second) for o in outcomes)
            by_pair, wider = _half_widths(plan, newcomer)
            if placed_by_pair is None and by_pair <= PLACED_ELO:
                placed_by_pair = pairs_played
            if width_at_budget is None and pairs_played >= PLACED_PAIRS:
                width_at_budget = by_pair
                chances = _chances(field, position, outcomes, newcomer)[:PLACED_PAIRS]
                known_width = known_opponents_width(chances, kappa)
                distances = np.abs(400 * np.log10(chances / (1 - chances)))
                error_at_budget = _error(plan, field, position, current, newcomer)
            if placed is None and wider <= PLACED_ELO:
                placed = pairs_played
                error = _error(plan, field, position, current, newcomer)
            if (
                (
                    placed is not None
                    and round_number >= history + 2 * WINDOW
                    and pairs_played >= PLACED_PAIRS
                )
                or pairs_played >= max_pairs
                or plan.status.get(newcomer) == OUT  # out of the race: never placed
            ):
                break
        if plan.stop:
            break
        plans.append(plan)
        pairs = [(position[a], position[b]) for a, b in plan.pairs]
        if oracle_penalty is not None and round_number > history:
            pairs = oracle_pairs(pairs, position[newcomer], field, meetings, oracle_penalty)
        for pair in pairs:
            meetings[frozenset(pair)] += 1
        outcomes.extend(record(field, pairs, round_number, kappa, rng))
    return LeagueRun(
        placed_by_pair,
        placed,
        error,
        width_at_budget,
        known_width,
        error_at_budget,
        _spreads(plans, outcomes),
        distances,
    )


def _error(
    plan: RoundPlan, field: Field, position: dict[str, int], current: list[str], name: str
) -> float:
    """``name``'s fitted minus true rating, each against the mean of the field ``current``
    (``position``: each bot's index in ``field``)."""
    fitted = np.array([plan.fit.ratings[bot].elo or 0.0 for bot in current])
    truth = np.array([field.elo[position[bot]] for bot in current])
    own = plan.fit.ratings[name].elo or 0.0
    return float((own - fitted.mean()) - (field.elo[position[name]] - truth.mean()))


def _chances(
    field: Field, position: dict[str, int], outcomes: list[PairOutcome], name: str
) -> np.ndarray:
    """``name``'s true chance of winning a match in each of its pairs, in order."""
    mine = [o for o in outcomes if name in (o.first, o.second)]
    own = np.full(len(mine), position[name])
    others = np.array([position[o.second if o.first == name else o.first] for o in mine])
    return np.asarray(1 / (1 + 10 ** (-field.difference(own, others) / 400)), dtype=np.float64)


def ninetieth(ordered: list[T]) -> T:
    """The 90th percentile of sorted values (nearest rank: the smallest value with at
    least 90 % of them at or below it)."""
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def _summary(values: list[int | None], cap: int) -> str:
    found = sorted(value if value is not None else cap + 1 for value in values)
    missing = sum(value is None for value in values)
    return (
        f"median {statistics.median(found):g}, 90th percentile {ninetieth(found)}, most {found[-1]}"
        + (f" ({missing} not placed within {cap})" if missing else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--history", type=int, default=20)
    parser.add_argument("--max-pairs", type=int, default=128)
    parser.add_argument("--kappa", type=float, default=DEFAULT_KAPPA)
    parser.add_argument("--top", type=int, default=None)
    parser.add_argument("--random-share", type=float, default=LadderSettings().random_share)
    parser.add_argument("--repeat-penalty", type=float, default=LadderSettings().repeat_penalty)
    parser.add_argument(
        "--oracle",
        type=float,
        default=None,
        metavar="PENALTY",
        help="the new version's opponent chosen by an oracle that knows the true ratings: "
        "the nearest to its own, each earlier meeting adding PENALTY Elo",
    )
    arguments = parser.parse_args()
    settings = LadderSettings(
        top=arguments.top,
        random_share=arguments.random_share,
        repeat_penalty=arguments.repeat_penalty,
    )
    started = time.perf_counter()
    runs = [
        one_league(
            seed,
            arguments.bots,
            arguments.history,
            arguments.max_pairs,
            arguments.kappa,
            settings,
            arguments.oracle,
        )
        for seed in range(1, arguments.seeds + 1)
    ]
    by_pair = [run.placed_by_pair for run in runs]
    wider = [run.placed for run in runs]
    errors = [abs(run.error) for run in runs if run.error is not None]
    widths = [run.width_at_budget for run in runs if run.width_at_budget is not None]
    known = [run.known_width for run in runs if run.known_width is not None]
    misses = [run.error_at_budget for run in runs if run.error_at_budget is not None]
    spreads = [spread for run in runs for spread in run.spreads]
    print(
        f"{arguments.bots} bots, top {arguments.top}, random share {settings.random_share}, "
        f"repeat penalty {settings.repeat_penalty}, κ {arguments.kappa}, "
        f"{arguments.history} rounds before the new version, {arguments.seeds} seeds"
        + ("" if arguments.oracle is None else f", oracle's pairing (repeats +{arguments.oracle})")
        + " "
        f"({time.perf_counter() - started:.0f} s)"
    )
    print(f"pairs until ±{PLACED_ELO:g} by pair: {_summary(by_pair, arguments.max_pairs)}")
    print(
        f"pairs until ±{PLACED_ELO:g} by pair and by match: {_summary(wider, arguments.max_pairs)}"
    )
    if errors:
        print(f"|error| then: median {statistics.median(errors):.0f} Elo, most {max(errors):.0f}")
    if widths:
        ordered = sorted(widths)
        print(
            f"half width by pair after {PLACED_PAIRS} pairs ({len(widths)} seeds): median "
            f"±{statistics.median(widths):.1f} Elo, 90th percentile ±{ninetieth(ordered):.1f}, "
            f"widest ±{ordered[-1]:.1f}; the same pairs against opponents known exactly: "
            f"median ±{statistics.median(known):.1f}; {PLACED_PAIRS} pairs at an even score: "
            f"±{known_opponents_width(np.full(PLACED_PAIRS, 0.5), arguments.kappa):.1f}"
        )
        spread = math.sqrt(statistics.fmean(error * error for error in misses))
        covered = sum(
            abs(run.error_at_budget) <= run.width_at_budget
            for run in runs
            if run.error_at_budget is not None and run.width_at_budget is not None
        )
        print(
            f"its error then: 1.96 times its root mean square ±{1.96 * spread:.1f} Elo, "
            f"within its interval in {covered} of {len(misses)} seeds"
        )
        apart = np.array([run.distances for run in runs if run.distances is not None])
        print(
            f"its opponents in those pairs: on average {apart.mean():.0f} Elo from its true "
            f"rating (pairs 1-16: {apart[:, :16].mean():.0f}, 17-32: {apart[:, 16:32].mean():.0f}"
            f", 33-64: {apart[:, 32:].mean():.0f}), {100 * (apart > 100).mean():.0f} % more "
            "than 100 Elo away"
        )
    over = sum(spread > SPREAD_TARGET for spread in spreads)
    print(
        f"games spread over {WINDOW} rounds, {len(spreads)} windows: median "
        f"{100 * statistics.median(spreads):.0f} %, most {100 * max(spreads):.0f} %, "
        f"{over} over {100 * SPREAD_TARGET:.0f} %"
    )


if __name__ == "__main__":
    main()
