"""Elo ratings by maximum likelihood over all results jointly: pure functions, pure Python.

The model is Bradley-Terry on the Elo scale, as Ordo and BayesElo use it: bot ``i`` beats
bot ``j`` with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``. :func:`fit_elo` finds the
ratings that make all the results most likely together (not a per-bot pooled score, which
ignores who each bot played):

- **Prior.** Each pair of bots that has met gets ``virtual_draws`` virtual drawn matches,
  counted as half a win each way (BayesElo's ``prior``; default 1 here, i.e. one extra win
  and loss split evenly). This keeps the estimate finite when a bot won (or lost) every
  match, where the plain maximum-likelihood estimate is infinite, and shrinks ratings from
  a handful of matches slightly towards each other. With ``virtual_draws=0`` the fit is the
  plain MLE, which exists only if every bot both won and lost within each group.
- **Fit.** Newton's method on the (concave) log-likelihood in natural units
  ``θ = r · ln 10 / 400``, one bot held at 0, with step halving; to 1e-12.
- **Anchor.** The mean rating is 1500, or a named anchor bot is fixed at ``anchor_elo``.
- **Uncertainty.** The covariance of the ratings is the inverse of the observed information
  (the negative Hessian of the log-likelihood, prior included) at the fit: relative to the
  anchor bot, or, for a mean anchor, its pseudo-inverse ``(F + J/n)⁻¹ - J/n``, the
  covariance of ratings constrained to their mean. Intervals are ``elo ± z · stderr`` with
  ``z`` for the given confidence (1.96 for 95 %).
- **Duplicate pairs.** The two matches of a duplicate pair share their deals, so they are not
  independent: given ``pairs`` (how each pair between two bots ended), the covariance is
  also estimated with the pair as the unit, as the SPRT does (:mod:`tournaments.stats.sprt`). That
  is the cluster-robust ("sandwich") covariance ``F⁻¹ (Σ_c g_c g_cᵀ) F⁻¹``, where ``g_c`` is
  the gradient of pair ``c``'s log-likelihood at the fit: the spread of the pair results
  replaces the spread the model expects of independent matches. The intervals and the LOS
  then use it, and the match-based intervals are kept beside it (``match_low`` …). For two
  bots and complete pairs it is the SPRT's standard error of the mean pair score carried to
  the Elo scale; a pair with one decided match (the other void) is a unit of one match.
- **Likelihood of superiority.** ``LOS(i, j) = Φ((r_i - r_j) / sd(r_i - r_j))``, the normal
  approximation with the full covariance.
- **Disconnected results.** If the graph of who played whom falls into separate groups,
  ratings are only comparable within a group: each group is fitted on its own (anchored at
  the anchor bot if it is in that group, else at a mean of 1500) and a warning says so.
  Bots without results have no rating.

Matches in Aegis always have a winner; a forfeit is a loss for the offender and a void match
counts for nobody, which the caller decides when it builds the win counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "DEFAULT_ELO",
    "ELO_PER_NATURAL_UNIT",
    "MATCH_UNIT",
    "PAIR_UNIT",
    "PairResults",
    "Rating",
    "RatingFit",
    "components",
    "expected_score",
    "fit_elo",
]

DEFAULT_ELO = 1500.0
#: Elo points per natural (logistic) unit: 400 / ln 10.
ELO_PER_NATURAL_UNIT = 400 / math.log(10)
_TOLERANCE = 1e-12
_MAX_ITERATIONS = 200

#: :attr:`RatingFit.unit` when the intervals treat a duplicate pair as the unit.
PAIR_UNIT = "pair"
#: :attr:`RatingFit.unit` when they treat every match as independent (no pairs given).
MATCH_UNIT = "match"

#: ``pairs[(a, b, a_wins, b_wins)]``: how many duplicate pairs between bots ``a`` and ``b``
#: ended with ``a`` winning ``a_wins`` and ``b`` winning ``b_wins`` of their decided matches
#: (``a_wins + b_wins`` is 2, or 1 when the pair's other match was void or is not played yet).
PairResults = Mapping[tuple[str, str, int, int], int]


def expected_score(elo_difference: float) -> float:
    """The probability of winning with an Elo advantage of ``elo_difference``."""
    return 1 / (1 + 10 ** (-elo_difference / 400))


@dataclass(frozen=True, slots=True)
class Rating:
    """One bot's rating: None throughout for a bot without results."""

    name: str
    elo: float | None
    #: Lower and upper bounds of the confidence interval, with :attr:`RatingFit.unit` as the
    #: unit: the duplicate pair when the fit was given pairs, else the match.
    low: float | None
    high: float | None
    #: Standard error in Elo points (0 for the anchor bot), of the same interval.
    stderr: float | None
    #: Index of the bot's group in :attr:`RatingFit.components`.
    component: int | None
    #: The interval and standard error that count every match as independent (the model's
    #: own covariance); the same as ``low``, ``high``, ``stderr`` for a fit without pairs.
    match_low: float | None = None
    match_high: float | None = None
    match_stderr: float | None = None


@dataclass(frozen=True, slots=True)
class RatingFit:
    """Ratings of every bot, the likelihood of superiority and any warnings."""

    ratings: dict[str, Rating]
    #: ``los[a][b]``: probability that ``a`` is stronger than ``b`` (same group only).
    los: dict[str, dict[str, float]]
    #: Groups of bots connected by results; bots without results are in none.
    components: tuple[tuple[str, ...], ...]
    warnings: tuple[str, ...]
    virtual_draws: float
    confidence: float
    #: The unit of the intervals and the LOS: :data:`PAIR_UNIT` or :data:`MATCH_UNIT`.
    unit: str = MATCH_UNIT


def components(
    names: Sequence[str], games: Mapping[tuple[str, str], float]
) -> list[tuple[str, ...]]:
    """Groups of bots connected by played matches, each in ``names`` order, bots without
    matches left out."""
    neighbours: dict[str, set[str]] = {name: set() for name in names}
    for (first, second), count in games.items():
        if count > 0 and first != second and first in neighbours and second in neighbours:
            neighbours[first].add(second)
            neighbours[second].add(first)
    seen: set[str] = set()
    groups: list[tuple[str, ...]] = []
    for name in names:
        if name in seen or not neighbours[name]:
            continue
        group = {name}
        frontier = [name]
        while frontier:
            for other in neighbours[frontier.pop()]:
                if other not in group:
                    group.add(other)
                    frontier.append(other)
        seen |= group
        groups.append(tuple(member for member in names if member in group))
    return groups


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    exp = math.exp(x)
    return exp / (1 + exp)


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Solve ``matrix · x = vector`` by Gaussian elimination with partial pivoting."""
    size = len(vector)
    rows = [[*matrix[index], vector[index]] for index in range(size)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda row: abs(rows[row][column]))
        if abs(rows[pivot][column]) < 1e-300:
            raise ZeroDivisionError("singular matrix")
        rows[column], rows[pivot] = rows[pivot], rows[column]
        head = rows[column]
        for row in range(column + 1, size):
            factor = rows[row][column] / head[column]
            if factor:
                target = rows[row]
                for position in range(column, size + 1):
                    target[position] -= factor * head[position]
    solution = [0.0] * size
    for row in range(size - 1, -1, -1):
        total = rows[row][size] - sum(
            rows[row][column] * solution[column] for column in range(row + 1, size)
        )
        solution[row] = total / rows[row][row]
    return solution


def _product(first: list[list[float]], second: list[list[float]]) -> list[list[float]]:
    """The matrix product ``first · second``."""
    columns = list(zip(*second, strict=True))
    return [
        [sum(a * b for a, b in zip(row, column, strict=True)) for column in columns]
        for row in first
    ]


def _inverse(matrix: list[list[float]]) -> list[list[float]]:
    size = len(matrix)
    columns = [
        _solve(matrix, [1.0 if row == index else 0.0 for row in range(size)])
        for index in range(size)
    ]
    return [[columns[column][row] for column in range(size)] for row in range(size)]


class _Component:
    """The fit of one connected group of bots."""

    def __init__(
        self, members: Sequence[str], wins: Mapping[tuple[str, str], float], virtual_draws: float
    ) -> None:
        self.members = tuple(members)
        size = len(members)
        self.index = index = {name: position for position, name in enumerate(members)}
        self.wins = [[0.0] * size for _ in range(size)]
        for (winner, loser), count in wins.items():
            if winner in index and loser in index and winner != loser and count > 0:
                self.wins[index[winner]][index[loser]] += count
        for first in range(size):
            for second in range(first + 1, size):
                if self.wins[first][second] + self.wins[second][first] > 0:
                    self.wins[first][second] += virtual_draws / 2
                    self.wins[second][first] += virtual_draws / 2
        self.games = [
            [self.wins[first][second] + self.wins[second][first] for second in range(size)]
            for first in range(size)
        ]

    def log_likelihood(self, theta: Sequence[float]) -> float:
        size = len(theta)
        return sum(
            self.wins[first][second] * _log_sigmoid(theta[first] - theta[second])
            for first in range(size)
            for second in range(size)
            if self.wins[first][second]
        )

    def gradient_and_information(
        self, theta: Sequence[float]
    ) -> tuple[list[float], list[list[float]]]:
        size = len(theta)
        gradient = [0.0] * size
        information = [[0.0] * size for _ in range(size)]
        for first in range(size):
            for second in range(size):
                games = self.games[first][second]
                if first == second or not games:
                    continue
                probability = _sigmoid(theta[first] - theta[second])
                gradient[first] += self.wins[first][second] - games * probability
                curvature = games * probability * (1 - probability)
                information[first][first] += curvature
                information[first][second] -= curvature
        return gradient, information

    def pair_spread(self, theta: Sequence[float], pairs: PairResults) -> list[list[float]]:
        """``Σ_c g_c g_cᵀ`` over the duplicate pairs ``c`` within the group, where ``g_c`` is
        the gradient of the pair's log-likelihood at ``theta``: the meat of the sandwich.

        A pair is between two bots ``a`` and ``b``, so ``g_c`` is ``x`` for ``a``, ``-x`` for
        ``b`` and 0 elsewhere, with ``x`` = ``a``'s wins in the pair minus the wins the fit
        expects of it; its outer product is ``x²`` on the diagonal at ``a`` and ``b`` and
        ``-x²`` off it.
        """
        size = len(self.members)
        spread = [[0.0] * size for _ in range(size)]
        for (first, second, first_wins, second_wins), count in pairs.items():
            a, b = self.index.get(first), self.index.get(second)
            if a is None or b is None or not count:
                continue
            expected = (first_wins + second_wins) * _sigmoid(theta[a] - theta[b])
            weight = count * (first_wins - expected) ** 2
            spread[a][a] += weight
            spread[b][b] += weight
            spread[a][b] -= weight
            spread[b][a] -= weight
        return spread

    def fit(self) -> list[float]:
        """Maximum-likelihood θ with the first member held at 0."""
        size = len(self.members)
        theta = [0.0] * size
        current = self.log_likelihood(theta)
        for _ in range(_MAX_ITERATIONS):
            gradient, information = self.gradient_and_information(theta)
            reduced = [row[1:] for row in information[1:]]
            step = _solve(reduced, gradient[1:])
            scale = 1.0
            while True:
                candidate = [0.0, *(theta[i + 1] + scale * step[i] for i in range(size - 1))]
                value = self.log_likelihood(candidate)
                if value >= current - 1e-12 or scale < 1e-6:
                    break
                scale /= 2
            theta, current = candidate, value
            if max((abs(scale * delta) for delta in step), default=0.0) < _TOLERANCE:
                break
        return theta

    def is_strongly_connected(self) -> bool:
        """True if every bot can be reached from every other along wins: the condition for
        a finite plain MLE."""
        size = len(self.members)

        def reach(forward: bool) -> set[int]:
            seen = {0}
            frontier = [0]
            while frontier:
                node = frontier.pop()
                for other in range(size):
                    count = self.wins[node][other] if forward else self.wins[other][node]
                    if count > 0 and other not in seen:
                        seen.add(other)
                        frontier.append(other)
            return seen

        return len(reach(True)) == size and len(reach(False)) == size


def fit_elo(
    names: Sequence[str],
    wins: Mapping[tuple[str, str], float],
    *,
    anchor: str | None = None,
    anchor_elo: float = DEFAULT_ELO,
    virtual_draws: float = 1.0,
    confidence: float = 0.95,
    pairs: PairResults | None = None,
) -> RatingFit:
    """Fit Elo ratings to match results (see the module's description of the method).

    ``wins[(a, b)]`` is how many matches ``a`` won against ``b``; ``pairs``, the same matches
    by duplicate pair (:data:`PairResults`), makes the pair the unit of the intervals and the
    LOS. Raises ``ValueError`` for ``virtual_draws=0`` with results that have no finite
    maximum-likelihood estimate, and for pairs that do not add up to ``wins``.
    """
    if virtual_draws < 0 or not 0 < confidence < 1:
        raise ValueError("virtual_draws must be >= 0 and confidence between 0 and 1")
    if anchor is not None and anchor not in names:
        raise ValueError(f"anchor {anchor!r} is not one of the bots")
    if pairs is not None:
        _check_pairs(wins, pairs)
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    games: dict[tuple[str, str], float] = {}
    for (winner, loser), count in wins.items():
        games[(winner, loser)] = games.get((winner, loser), 0) + count
    groups = components(names, games)
    ratings = {name: Rating(name, None, None, None, None, None) for name in names}
    los: dict[str, dict[str, float]] = {}
    warnings: list[str] = []
    if len(groups) > 1:
        listing = "; ".join("{" + ", ".join(group) + "}" for group in groups)
        warnings.append(
            f"the results fall into {len(groups)} groups that never played each other "
            f"({listing}): ratings compare only within a group, each anchored on its own"
        )
    for number, group in enumerate(groups):
        component = _Component(group, wins, virtual_draws)
        if virtual_draws == 0 and not component.is_strongly_connected():
            raise ValueError(
                "a bot won or lost all its matches within {"
                + ", ".join(group)
                + "}: the plain maximum-likelihood Elo is infinite (use virtual_draws > 0)"
            )
        theta = component.fit()
        _, information = component.gradient_and_information(theta)
        size = len(group)
        if anchor in group:
            fixed = group.index(anchor)
            keep = [position for position in range(size) if position != fixed]
            reduced = _inverse([[information[i][j] for j in keep] for i in keep])
            covariance = [[0.0] * size for _ in range(size)]
            for row, i in enumerate(keep):
                for column, j in enumerate(keep):
                    covariance[i][j] = reduced[row][column]
            shift = anchor_elo - theta[fixed] * ELO_PER_NATURAL_UNIT
        else:
            mean = 1 / size
            padded = _inverse([[value + mean for value in row] for row in information])
            covariance = [[value - mean for value in row] for row in padded]
            shift = DEFAULT_ELO - sum(theta) / size * ELO_PER_NATURAL_UNIT
        # The anchor's row and column of the covariance are zero, and with a mean anchor its
        # rows sum to zero: either way the sandwich keeps the same constraint.
        shown = (
            covariance
            if pairs is None
            else _product(_product(covariance, component.pair_spread(theta, pairs)), covariance)
        )
        for position, name in enumerate(group):
            elo = theta[position] * ELO_PER_NATURAL_UNIT + shift
            stderr = math.sqrt(max(shown[position][position], 0.0)) * ELO_PER_NATURAL_UNIT
            model = math.sqrt(max(covariance[position][position], 0.0)) * ELO_PER_NATURAL_UNIT
            ratings[name] = Rating(
                name,
                elo,
                elo - z * stderr,
                elo + z * stderr,
                stderr,
                number,
                elo - z * model,
                elo + z * model,
                model,
            )
        for i, first in enumerate(group):
            beats = los.setdefault(first, {})
            for j, second in enumerate(group):
                if i == j:
                    continue
                variance = shown[i][i] + shown[j][j] - 2 * shown[i][j]
                difference = theta[i] - theta[j]
                if variance <= 0:
                    beats[second] = 0.5 if difference == 0 else float(difference > 0)
                else:
                    beats[second] = NormalDist().cdf(difference / math.sqrt(variance))
    unit = MATCH_UNIT if pairs is None else PAIR_UNIT
    return RatingFit(ratings, los, tuple(groups), tuple(warnings), virtual_draws, confidence, unit)


def _check_pairs(wins: Mapping[tuple[str, str], float], pairs: PairResults) -> None:
    """Raise ``ValueError`` unless ``pairs`` hold exactly the decided matches of ``wins``."""
    counted: dict[tuple[str, str], float] = {}
    for (first, second, first_wins, second_wins), count in pairs.items():
        if first == second or count < 0 or min(first_wins, second_wins) < 0:
            raise ValueError(f"not a duplicate pair: {(first, second, first_wins, second_wins)}")
        if first_wins + second_wins not in (1, 2):
            raise ValueError(
                f"a duplicate pair has one or two decided matches, got {first_wins} + "
                f"{second_wins} between {first} and {second}"
            )
        for winner, loser, won in ((first, second, first_wins), (second, first, second_wins)):
            if won and count:
                counted[(winner, loser)] = counted.get((winner, loser), 0) + won * count
    given = {key: count for key, count in wins.items() if count > 0}
    if set(given) != set(counted) or any(
        not math.isclose(given[key], counted[key]) for key in given
    ):
        raise ValueError("the pairs do not add up to the wins: they must be the same matches")
