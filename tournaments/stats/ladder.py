"""The ladder: an adaptive format that ranks a large field with a few per cent of a round
robin's matches. Pure: no I/O, no clock, randomness only from the seed.

A ladder plays in rounds. :func:`plan_round` looks at the results of the earlier rounds and
says who meets in the next one:

- **Fit.** A joint Bradley-Terry fit of all results (:func:`tournaments.stats.ratings.fit_elo`)
  with ``prior_games`` virtual games of each bot against a virtual bot of the mean rating,
  the duplicate pair as the unit of its intervals, corrected for few results per bot
  (``small_sample``: most bots have a few dozen pairs, many of them against one
  neighbourhood). The pairing and the race use the larger
  of a bot's two standard errors, by pair and by match: from a bot's few pairs the spread
  of pair results is a poor estimate (one pair that went as expected would give none),
  and a bot that leaves the race plays no more games that could correct it.
- **Out of the race** (with ``top: K``): a bot leaves the race when at least K bots are
  above it, each at the confidence ``race_confidence``, by default ``1 - (1 - confidence)
  / K`` (one-sided, the two ratings' covariance ignored, which widens the comparison):
  stricter than the certification, since a bot out of the race rests (no more games) and
  comes back only if a later fit no longer has K bots above it.
- **Swiss rounds.** Every active bot (every bot, or the contenders) plays one duplicate
  pair. With an odd count, the bot with the most pairs played sits out (ties drawn), so
  the bye rotates. A share ``random_share`` of the pairs are drawn at random across the
  whole field, which keeps the rating scale connected; the rest is a maximum-weight perfect
  matching: of all of them (networkx's blossom) up to :data:`WHOLE_MATCHING` bots, else of
  windows of :data:`WINDOW` bots in rating order, whose boundaries shift every other round
  (each window's best matching found by trying all its matchings at once: a round of 10,000
  bots is paired in a fraction of a second). The weight of a pair is the chance that the
  fit has their order wrong, ``2 Φ(-z)`` with ``z`` their distance in standard errors:
  close and uncertain bots meet. Every earlier meeting adds ``repeat_penalty`` Elo to the
  distance.
- **Final.** Once no more than ``finalists`` contenders are left (at least K + 1, filled up
  with the best bots out of the race), or once all but ``final_share`` of the budget is
  spent (then the ``finalists`` best contenders of each round's fit play on and the others
  rest, so that one of them comes back if a later fit ranks it among the best: with a small
  field and budget the race alone narrows the field too late to leave the leaders games
  enough to be ordered), each round plays one pair for every comparison of two finalists
  that the certification still has open (:func:`final_pairs`; filled up to half the
  finalists with other pairs of them, those with a bot of an open comparison first, each
  group least known first; a round robin of them if none of the open comparisons is
  between two finalists): a comparison already decided has nothing left to learn from its
  two bots' games.
- **Certification.** The top K is certified when each of them is above every other bot,
  and each above the next, with a likelihood of superiority of at least ``confidence`` (each
  comparison on its own, not simultaneously; the lower of the fit's LOS by pair and by
  match).
  Without ``top``, the whole order.
- **Budget.** ``rounds`` and ``max_matches`` (a pair is two matches): the last round is cut
  to what is left, keeping the pairs whose order is least known. A plan with nothing to play
  (budget spent, certified) says ``stop``.

A round depends only on the bots, the results of earlier rounds (in any order), the seed,
the round number, the settings and the budget spent so far (``matches_played``,
``rounds_played``), so a resumed or distributed run plans the same rounds.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import networkx as nx
import numpy as np
from scipy.special import ndtr

from referee.seeds import derive_seed
from tournaments.config.ladder import (
    LadderSettings,
    check_settings,
    default_finalists,
    race_confidence,
)
from tournaments.stats.ratings import DEFAULT_ELO, ELO_PER_NATURAL_UNIT, RatingFit, fit_elo

__all__ = [
    "CONTENDER",
    "FINAL",
    "FINALIST",
    "OUT",
    "SWISS",
    "WHOLE_MATCHING",
    "WINDOW",
    "Certification",
    "FieldState",
    "LadderSettings",
    "PairOutcome",
    "RoundPlan",
    "check_settings",
    "default_finalists",
    "final_pairs",
    "fit_inputs",
    "perfect_matchings",
    "plan_round",
    "swiss_pairs",
]

#: Bot statuses in :attr:`RoundPlan.status`.
CONTENDER = "contender"
OUT = "out"
FINALIST = "finalist"
#: Phases of :attr:`RoundPlan.phase`.
SWISS = "swiss"
FINAL = "final"

#: Up to this many active bots, a swiss round is one maximum-weight perfect matching of all
#: of them (networkx).
WHOLE_MATCHING = 32
#: Above that, bots per window: each window's best matching is found by trying all 945
#: matchings of 10 bots at once (numpy), and bots far apart in rating would not be paired by
#: a whole matching anyway (the random share does that).
WINDOW = 10
# An edge weight's floor (over 1 + z), so that the matching still tells pairs apart.
_WEIGHT_FLOOR = 1e-9


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """One duplicate pair as stored: its decided matches (2, or 1 if one was void)."""

    first: str
    second: str
    first_wins: int
    second_wins: int
    round: int


@dataclass(frozen=True, slots=True)
class Certification:
    """Whether the top K (or the whole order) is decided at the confidence, and what is not."""

    top: int | None
    confidence: float
    certified: bool
    #: The top K (or every bot with results) by rating, best first.
    ranking: tuple[str, ...]
    #: Comparisons still below the confidence, e.g. ``"#3 a over #4 b: 88.1 %"``.
    open: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """``top 10 certified at 95 %``, or what is still open."""
        level = f"{self.confidence * 100:g} %"
        what = f"top {self.top}" if self.top is not None else f"order of {len(self.ranking)}"
        if self.certified:
            return f"{what} certified at {level}"
        shown = "; ".join(self.open[:3]) + ("; …" if len(self.open) > 3 else "")
        count = len(self.open)
        return (
            f"{what} not certified at {level}: {count} comparison{'s' * (count != 1)} "
            f"open ({shown})"
        )


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """Who plays in one round, and what the results so far say."""

    round_number: int
    #: Seat order of each pair's first match.
    pairs: tuple[tuple[str, str], ...]
    #: Active bots left out this round (an odd count, or the budget's cut).
    byes: tuple[str, ...]
    #: Bots out of the race: no more games.
    resting: tuple[str, ...]
    #: :data:`SWISS` or :data:`FINAL`.
    phase: str
    #: bot -> :data:`CONTENDER`, :data:`OUT` or :data:`FINALIST`.
    status: Mapping[str, str]
    certification: Certification
    #: Nothing more to play: the budget is spent or the ranking certified.
    stop: bool
    fit: RatingFit


@dataclass(slots=True)
class FieldState:
    """What the pairing knows of the bots to plan, in the order of ``bots``: ratings and
    their variances (Elo²), pairs played, and how often each two bots met."""

    names: tuple[str, ...]
    elo: np.ndarray
    variance: np.ndarray
    pairs_played: Counter[str]
    meetings: Counter[frozenset[str]]


def fit_inputs(
    results: Sequence[PairOutcome],
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str, int, int], int]]:
    """The wins and the pairs of ``results`` as :func:`tournaments.stats.ratings.fit_elo` takes
    them (pairs without a decided match left out)."""
    wins: dict[tuple[str, str], float] = {}
    pairs: dict[tuple[str, str, int, int], int] = {}
    for outcome in results:
        if outcome.first_wins + outcome.second_wins == 0:
            continue
        key = (outcome.first, outcome.second, outcome.first_wins, outcome.second_wins)
        pairs[key] = pairs.get(key, 0) + 1
        for winner, loser, won in (
            (outcome.first, outcome.second, outcome.first_wins),
            (outcome.second, outcome.first, outcome.second_wins),
        ):
            if won:
                wins[(winner, loser)] = wins.get((winner, loser), 0) + won
    return wins, pairs


def _fit_field(
    bots: Sequence[str], results: Sequence[PairOutcome], settings: LadderSettings
) -> tuple[RatingFit, FieldState]:
    """Fit every result; return the fit and the bots' ratings and variances for planning."""
    ordered = sorted(
        results, key=lambda r: (r.round, r.first, r.second, r.first_wins, r.second_wins)
    )
    wins, pairs = fit_inputs(ordered)
    pairs_played: Counter[str] = Counter()
    meetings: Counter[frozenset[str]] = Counter()
    for outcome in ordered:
        if outcome.first_wins + outcome.second_wins:
            pairs_played[outcome.first] += 1
            pairs_played[outcome.second] += 1
            meetings[frozenset((outcome.first, outcome.second))] += 1
    # Bots that left the field (older league versions) still tell about their opponents.
    known = set(bots)
    others = sorted({name for pair in wins for name in pair} - known)
    fit = fit_elo(
        [*bots, *others],
        wins,
        virtual_draws=0.0,
        prior_games=settings.prior_games,
        confidence=settings.confidence,
        pairs=pairs,
        small_sample=True,
    )
    # A bot without results: the mean rating and the prior's variance.
    prior_stderr = 2 / math.sqrt(settings.prior_games) * ELO_PER_NATURAL_UNIT
    elo = np.full(len(bots), DEFAULT_ELO)
    variance = np.full(len(bots), prior_stderr**2)
    for position, name in enumerate(bots):
        rating = fit.ratings[name]
        if rating.elo is None or rating.stderr is None or rating.match_stderr is None:
            continue
        elo[position] = rating.elo
        variance[position] = max(rating.stderr, rating.match_stderr) ** 2
    return fit, FieldState(tuple(bots), elo, variance, pairs_played, meetings)


def _out_of_race(state: FieldState, top: int, confidence: float) -> np.ndarray:
    """True for each bot with at least ``top`` bots above it, each at the one-sided
    ``confidence`` (:func:`tournaments.config.ladder.race_confidence`)."""
    z = NormalDist().inv_cdf(confidence)
    size = len(state.names)
    out = np.zeros(size, dtype=bool)
    if top >= size:
        return out
    chunk = 512
    for start in range(0, size, chunk):
        rows = slice(start, min(size, start + chunk))
        lower = state.elo[None, :] - z * np.sqrt(
            state.variance[rows, None] + state.variance[None, :]
        )
        above = (lower > state.elo[rows, None]).sum(axis=1)
        out[rows] = above >= top
    return out


def _certify(
    fit: RatingFit, state: FieldState, top: int | None, confidence: float
) -> tuple[Certification, set[frozenset[str]]]:
    """Which comparisons of the top K (or of neighbours in the whole order) are decided;
    the two bots of each open one."""
    order = [state.names[i] for i in np.argsort(-state.elo, kind="stable").tolist()]
    rank = {name: position + 1 for position, name in enumerate(order)}
    rated = [name for name in order if fit.ratings[name].elo is not None]
    open_: list[str] = []
    open_pairs: set[frozenset[str]] = set()

    def compare(higher: str, lower: str) -> None:
        # The lower of the LOS by pair and by match: a few pairs that went as expected would
        # make the pair's spread, and its LOS, too confident.
        by_pair = fit.los.get(higher, {}).get(lower)
        by_match = fit.match_los.get(higher, {}).get(lower)
        if by_pair is None or by_match is None or min(by_pair, by_match) < confidence:
            open_pairs.add(frozenset((higher, lower)))
        if by_pair is None or by_match is None:
            open_.append(f"#{rank[higher]} {higher} over #{rank[lower]} {lower}: no results")
        elif min(by_pair, by_match) < confidence:
            value = min(by_pair, by_match)
            open_.append(
                f"#{rank[higher]} {higher} over #{rank[lower]} {lower}: {value * 100:.1f} %"
            )

    if top is None:
        for higher, lower in itertools.pairwise(order):
            compare(higher, lower)
        certified = not open_ and len(rated) == len(order)
        return Certification(None, confidence, certified, tuple(order), tuple(open_)), open_pairs
    leaders = order[:top]
    for higher, lower in itertools.pairwise(leaders):
        compare(higher, lower)
    # The K-th against everyone below it first: the set boundary is the usual open question.
    for lower in order[top:]:
        for higher in reversed(leaders):
            compare(higher, lower)
    certified = not open_ and all(fit.ratings[name].elo is not None for name in leaders)
    return Certification(top, confidence, certified, tuple(leaders), tuple(open_)), open_pairs


def _weight(state: FieldState, first: int, second: int, repeat_penalty: float) -> float:
    """The chance that the fit has the pair's order wrong, with repeats counted as distance."""
    windows = np.array([[first, second]])
    return float(_window_weights(state, windows, repeat_penalty)[0, 0, 1])


def _window_weights(state: FieldState, windows: np.ndarray, repeat_penalty: float) -> np.ndarray:
    """``weights[k, i, j]``: :func:`_weight` of bots ``windows[k, i]`` and ``windows[k, j]``."""
    elo = state.elo[windows]
    variance = state.variance[windows]
    distance = np.abs(elo[:, :, None] - elo[:, None, :])
    if repeat_penalty and state.meetings:
        where = {int(position): (k, slot) for (k, slot), position in np.ndenumerate(windows)}
        at = {name: where[p] for p, name in enumerate(state.names) if p in where}
        for pair, count in state.meetings.items():
            first, second = (at.get(name) for name in pair)
            if first is not None and second is not None and first[0] == second[0]:
                distance[first[0], first[1], second[1]] += repeat_penalty * count
                distance[first[0], second[1], first[1]] += repeat_penalty * count
    z = distance / np.sqrt(variance[:, :, None] + variance[:, None, :])
    # Below the floor the chance is nil for all of them, but a closer pair still comes
    # first: without that, a small field's matching would pick among ties arbitrarily.
    weights: np.ndarray = np.maximum(2 * ndtr(-z), _WEIGHT_FLOOR / (1 + z))
    return weights


@functools.cache
def perfect_matchings(size: int) -> np.ndarray:
    """Every perfect matching of ``size`` (even) points, as an array of shape
    ``(count, size // 2, 2)``: 945 for 10 points."""

    def build(points: tuple[int, ...]) -> Iterator[tuple[tuple[int, int], ...]]:
        if not points:
            yield ()
            return
        first, rest = points[0], points[1:]
        for at, partner in enumerate(rest):
            for tail in build(rest[:at] + rest[at + 1 :]):
                yield ((first, partner), *tail)

    return np.array(list(build(tuple(range(size)))), dtype=np.int64).reshape(-1, size // 2, 2)


def _match_windows(
    state: FieldState, windows: np.ndarray, repeat_penalty: float
) -> list[tuple[int, int]]:
    """The maximum-weight perfect matching of each window (rows of bots of one even size),
    by trying every matching of a window at once."""
    weights = _window_weights(state, windows, repeat_penalty)
    matchings = perfect_matchings(windows.shape[1])
    totals = weights[:, matchings[:, :, 0], matchings[:, :, 1]].sum(axis=2)
    best = matchings[np.argmax(totals, axis=1)]
    rows = np.arange(len(windows))[:, None]
    firsts, seconds = windows[rows, best[:, :, 0]], windows[rows, best[:, :, 1]]
    return list(zip(firsts.ravel().tolist(), seconds.ravel().tolist(), strict=True))


def _match_whole(
    state: FieldState, ranked: Sequence[int], repeat_penalty: float
) -> list[tuple[int, int]]:
    """The maximum-weight perfect matching of all of ``ranked`` (networkx's blossom)."""
    weights = _window_weights(state, np.array([ranked], dtype=np.int64), repeat_penalty)[0]
    graph: nx.Graph[int] = nx.Graph()
    for at, first in enumerate(ranked):
        for other, second in enumerate(ranked[at + 1 :], start=at + 1):
            graph.add_edge(first, second, weight=float(weights[at, other]))
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    return sorted((min(a, b), max(a, b)) for a, b in matching)


def swiss_pairs(
    state: FieldState,
    active: list[int],
    settings: LadderSettings,
    round_number: int,
    rng: random.Random,
) -> tuple[list[tuple[int, int]], list[int]]:
    """A swiss round: pairs of the ``active`` bots (positions in ``state``) and the bye, if
    any, drawn with ``rng`` (see the module's description)."""
    tiebreak = {position: rng.random() for position in active}
    byes: list[int] = []
    if len(active) % 2:
        most = max(state.pairs_played[state.names[p]] for p in active)
        candidates = [p for p in active if state.pairs_played[state.names[p]] == most]
        bye = min(candidates, key=lambda p: tiebreak[p])
        byes.append(bye)
        active = [p for p in active if p != bye]
    pairs: list[tuple[int, int]] = []
    expected = settings.random_share * len(active) / 2
    random_count = min(len(active) // 2, int(expected + rng.random()))
    if random_count:
        chosen = rng.sample(sorted(active), 2 * random_count)
        pairs.extend(zip(chosen[::2], chosen[1::2], strict=True))
        taken = set(chosen)
        active = [p for p in active if p not in taken]
    ranked = sorted(active, key=lambda p: (-float(state.elo[p]), tiebreak[p]))
    if len(ranked) <= WHOLE_MATCHING:
        if ranked:
            pairs.extend(_match_whole(state, ranked, settings.repeat_penalty))
        return pairs, byes
    # Every other round the windows start half a window later, so no boundary is fixed.
    start = WINDOW // 2 if round_number % 2 == 0 else 0
    start -= start % 2
    bounds = [0, *range(start or WINDOW, len(ranked), WINDOW), len(ranked)]
    by_size: dict[int, list[list[int]]] = {}
    for low, high in itertools.pairwise(bounds):
        if high > low:
            by_size.setdefault(high - low, []).append(ranked[low:high])
    for windows in by_size.values():
        pairs.extend(
            _match_windows(state, np.array(windows, dtype=np.int64), settings.repeat_penalty)
        )
    return pairs, byes


def _is_open(state: FieldState, pair: tuple[int, int], open_pairs: set[frozenset[str]]) -> bool:
    """Whether the certification has the comparison of the pair's two bots open."""
    return frozenset((state.names[pair[0]], state.names[pair[1]])) in open_pairs


def _final_need(
    state: FieldState, open_pairs: set[frozenset[str]], undecided: set[int]
) -> Callable[[tuple[int, int]], tuple[bool, bool, float]]:
    """The sort key of a final's pairs, most needed first: the comparisons still open, then
    pairs with a bot of one (``undecided``), then the rest, each group least known first."""

    def need(pair: tuple[int, int]) -> tuple[bool, bool, float]:
        return (
            not _is_open(state, pair, open_pairs),
            pair[0] not in undecided and pair[1] not in undecided,
            -_weight(state, pair[0], pair[1], 0.0),
        )

    return need


def final_pairs(
    state: FieldState, finalists: Sequence[int], open_pairs: set[frozenset[str]]
) -> list[tuple[int, int]]:
    """A final round's pairs of ``finalists`` (positions in ``state``): one for every
    comparison of two finalists that the certification still has open (``open_pairs``:
    neighbours in the top K, each of the top K against each bot below it), then, should
    that be fewer than half the finalists, other pairs up to that many: first those with a
    bot of an open comparison, then the rest, each by how little the fit knows their order
    (a perfect matching's worth of pairs, though a bot may play twice and another not at
    all; the finalists left idle are not byes); a round robin of them when none of the open
    comparisons is between two finalists.

    A pair whose comparison is decided teaches the certification little, while the open
    ones need games against each other, and a round cannot hold a pair twice (a round's
    matches share its deals). What fills the round is best spent on the bots of the open
    comparisons too: a game of either against a third finalist moves the difference
    between them, one between two bots whose places are decided does not.
    """
    ranked = sorted(finalists, key=lambda p: (-float(state.elo[p]), p))
    everyone = [(a, b) for at, a in enumerate(ranked) for b in ranked[at + 1 :]]
    asked = [pair for pair in everyone if _is_open(state, pair, open_pairs)]
    if not asked:
        return everyone
    chosen = set(asked)
    undecided = {position for pair in asked for position in pair}
    others = sorted(
        (pair for pair in everyone if pair not in chosen),
        key=_final_need(state, open_pairs, undecided),
    )
    return asked + others[: max(0, len(ranked) // 2 - len(asked))]


def _budget_spent(settings: LadderSettings, rounds_played: int, matches_played: int) -> float:
    """The share of the budget spent (the larger of the matches' and the rounds'); 0
    without a budget."""
    spent = 0.0
    if settings.max_matches:
        spent = max(spent, matches_played / settings.max_matches)
    if settings.rounds:
        spent = max(spent, rounds_played / settings.rounds)
    return spent


def plan_round(
    bots: Sequence[str],
    results: Sequence[PairOutcome],
    round_number: int,
    seed: int,
    settings: LadderSettings,
    *,
    matches_played: int,
    rounds_played: int | None = None,
) -> RoundPlan:
    """Plan round ``round_number`` (from 1) of a ladder of ``bots`` from the earlier
    ``results`` (see the module's description of the policy). The budget is what
    ``matches_played`` and ``rounds_played`` (default: every round before this one) have
    spent of the settings' ``max_matches`` and ``rounds``."""
    if rounds_played is None:
        rounds_played = round_number - 1
    fit, state = _fit_field(bots, results, settings)
    rng = random.Random(derive_seed(seed, "ladder", round_number))
    size = len(bots)
    top = settings.top
    certification, open_pairs = _certify(fit, state, top, settings.confidence)
    out = (
        _out_of_race(state, top, race_confidence(settings))
        if top is not None
        else np.zeros(size, dtype=bool)
    )
    contenders = [position for position in range(size) if not out[position]]
    finalists = None if top is None else settings.finalists or default_finalists(top, size)
    budget = math.inf if settings.max_matches is None else settings.max_matches - matches_played
    over = settings.rounds is not None and rounds_played >= settings.rounds
    spent = _budget_spent(settings, rounds_played, matches_played)
    phase = SWISS
    if (
        finalists is not None
        and len(contenders) > finalists
        and settings.final_share > 0
        and not over
        and budget >= 2
        # 1e-9: a share such as 0.7 of 10 rounds is 3 rounds, not 3.0000000000000004.
        and spent >= 1 - settings.final_share - 1e-9
    ):
        # The budget kept for the final: the best contenders of this round's fit play it,
        # the others rest (one may come back if a later fit ranks it among the best).
        contenders = sorted(sorted(contenders, key=lambda p: -float(state.elo[p]))[:finalists])
    if top is not None and finalists is not None and len(contenders) <= finalists:
        phase = FINAL
        by_rating = sorted(range(size), key=lambda p: -float(state.elo[p]))
        while len(contenders) < min(top + 1, size):
            contenders.append(next(p for p in by_rating if p not in contenders))
        contenders.sort()
    playing = set(contenders)
    status = {
        name: (FINALIST if phase == FINAL else CONTENDER) if position in playing else OUT
        for position, name in enumerate(bots)
    }
    resting = tuple(name for name in bots if status[name] == OUT)
    pairs: list[tuple[int, int]] = []
    byes: list[int] = []
    if not certification.certified and not over and budget >= 2:
        if phase == FINAL:
            pairs = final_pairs(state, contenders, open_pairs)
        else:
            pairs, byes = swiss_pairs(state, contenders, settings, round_number, rng)
        if 2 * len(pairs) > budget:
            # The budget's last round: keep the pairs whose order is least known, in a final
            # in final_pairs' order of need.
            if phase == FINAL:
                asked = [pair for pair in pairs if _is_open(state, pair, open_pairs)]
                undecided = {position for pair in asked for position in pair}
                need = _final_need(state, open_pairs, undecided)
                keep = sorted(pairs, key=need)[: int(budget // 2)]
            else:
                keep = sorted(pairs, key=lambda pair: -_weight(state, pair[0], pair[1], 0.0))[
                    : int(budget // 2)
                ]
            cut = set(pairs) - set(keep)
            pairs = [pair for pair in pairs if pair not in cut]
            left_out = {p for pair in cut for p in pair} - {p for pair in pairs for p in pair}
            byes = sorted({*byes, *left_out})
    seated = tuple(
        (bots[a], bots[b]) if rng.random() < 0.5 else (bots[b], bots[a]) for a, b in pairs
    )
    return RoundPlan(
        round_number=round_number,
        pairs=seated,
        byes=tuple(bots[p] for p in sorted(byes)),
        resting=resting,
        phase=phase,
        status=status,
        certification=certification,
        stop=not seated,
        fit=fit,
    )
