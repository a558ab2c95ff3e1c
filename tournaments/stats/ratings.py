"""Elo ratings by maximum likelihood over all results jointly: pure functions on numpy arrays.

The model is Bradley-Terry on the Elo scale, as Ordo and BayesElo use it: bot ``i`` beats
bot ``j`` with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``. :func:`fit_elo` finds the
ratings that make all the results most likely together (not a per-bot pooled score, which
ignores who each bot played):

- **Prior.** Two kinds, which keep the estimate finite when a bot won (or lost) every match
  (where the plain maximum-likelihood estimate is infinite) and shrink ratings from a handful
  of matches:

  - ``virtual_draws`` (the default, 1): each pair of bots that has met gets that many virtual
    drawn matches, half a win each way (BayesElo's ``prior``). In a round robin, where every
    pair plays many matches, it is a small pull. Where most pairs meet once (a ladder of a
    large field) it weighs as much as the results and compresses the ratings: the prior
    then grows with the number of distinct opponents.
  - ``prior_games`` (a ladder's choice): each bot plays that many virtual games against a
    virtual bot of the mean rating, winning half. The pull is the same for every bot however
    many opponents it met, and it ties every bot to one scale, so bots of separate groups get
    comparable (shrunk) ratings and the fit is joint even when the results are not connected.

  With both 0 the fit is the plain MLE, which exists only if every bot both won and lost
  within each group.
- **Fit.** Newton's method on the (concave) log-likelihood in natural units
  ``θ = r · ln 10 / 400``, with step halving, to a step of 1e-9 (one bot held at 0 without
  ``prior_games``; with it the virtual mean bot is at 0).
- **Anchor.** The mean rating is 1500, or a named anchor bot is fixed at ``anchor_elo``.
- **Uncertainty.** The covariance of the ratings is the inverse of the observed information
  (the negative Hessian of the log-likelihood, prior included) at the fit: relative to the
  anchor bot, or, for a mean anchor, of the ratings minus their mean. Intervals are
  ``elo ± z · stderr`` with ``z`` for the given confidence (1.96 for 95 %).
- **Duplicate pairs.** The two matches of a duplicate pair share their deals, so they are not
  independent: given ``pairs`` (how each pair between two bots ended), the covariance is
  also estimated with the pair as the unit, as the SPRT does (:mod:`tournaments.stats.sprt`). That
  is the cluster-robust ("sandwich") covariance ``F⁻¹ (Σ_c g_c g_cᵀ) F⁻¹``, where ``g_c`` is
  the gradient of pair ``c``'s log-likelihood at the fit: the spread of the pair results
  replaces the spread the model expects of independent matches. The intervals and the LOS
  then use it, and the match-based intervals are kept beside it (``match_low`` …). For two
  bots and complete pairs it is the SPRT's standard error of the mean pair score carried to
  the Elo scale; a pair with one decided match (the other void) is a unit of one match.
- **Small samples** (``small_sample``, the ladder's choice). Where bots have a few dozen
  pairs, most against close neighbours (a ladder), three known small-sample effects show:
  the maximum-likelihood ratings spread wider than the truth (logistic regression's bias
  away from 0, summed along chains of close pairings), the sandwich runs small (each pair's
  residual is taken at a fit that its own result pulled towards it), and its variance,
  estimated from a bot's own few pairs, is itself uncertain. The corrections: one step of
  Firth's bias reduction (refit with each pair of bots' leverage ``h = n p (1 - p)
  Var(θ_a - θ_b)`` added as ``h`` drawn games, half won each way; for two bots it is
  exactly Firth's (wins + 1/2) / (matches + 1)); the CR3 sandwich (each pair's squared
  residual divided by ``(1 - h_c)²``, a jackknife's correction); and pair intervals with
  Student's t quantile of one degree of freedom fewer than the bot's pairs. All three
  vanish as the pairs per bot grow (a round robin's intervals barely move).
- **Likelihood of superiority.** ``LOS(i, j) = Φ((r_i - r_j) / sd(r_i - r_j))``, the normal
  approximation with the full covariance.
- **Disconnected results.** If the graph of who played whom falls into separate groups,
  ratings are only comparable within a group: without ``prior_games`` each group is fitted
  on its own (anchored at the anchor bot if it is in that group, else at a mean of 1500) and
  a warning says so. Bots without results have no rating.

The work is dense linear algebra on the bots that have results (the results enter once,
summed per pair of bots), so a fit of 1,000 bots takes well under a second however many
matches they played.

Matches in Aegis always have a winner; a forfeit is a loss for the offender and a void match
counts for nobody, which the caller decides when it builds the win counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.lapack import dpotrf, dpotri
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, log_expit, ndtr, stdtrit

__all__ = [
    "DEFAULT_ELO",
    "ELO_PER_NATURAL_UNIT",
    "MATCH_UNIT",
    "PAIR_UNIT",
    "PairResults",
    "Rating",
    "RatingFit",
    "SuperiorityTable",
    "components",
    "expected_score",
    "fit_elo",
]

DEFAULT_ELO = 1500.0
#: Elo points per natural (logistic) unit: 400 / ln 10.
ELO_PER_NATURAL_UNIT = 400 / math.log(10)
#: Newton's method stops at a step this small (natural units; 2e-7 Elo): with a thousand
#: bots the gradient's rounding alone moves θ by about 1e-9.
_TOLERANCE = 1e-9
_MAX_ITERATIONS = 200

#: :attr:`RatingFit.unit` when the intervals treat a duplicate pair as the unit.
PAIR_UNIT = "pair"
#: :attr:`RatingFit.unit` when they treat every match as independent (no pairs given).
MATCH_UNIT = "match"

#: ``pairs[(a, b, a_wins, b_wins)]``: how many duplicate pairs between bots ``a`` and ``b``
#: ended with ``a`` winning ``a_wins`` and ``b`` winning ``b_wins`` of their decided matches
#: (``a_wins + b_wins`` is 2, or 1 when the pair's other match was void or is not played yet).
PairResults = Mapping[tuple[str, str, int, int], int]

# numpy's stubs type the results of bincount, unique or inv loosely: arrays of any dtype.
Matrix = NDArray[Any]


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


class _SuperiorityRow(Mapping[str, float]):
    """``LOS(name, other)`` for every ``other`` fitted with ``name``, read from one row."""

    __slots__ = ("_index", "_position", "_values")

    def __init__(self, index: Mapping[str, int], position: int, values: Matrix) -> None:
        self._index = index
        self._position = position
        self._values = values

    def __getitem__(self, other: str) -> float:
        position = self._index[other]
        if position == self._position:
            raise KeyError(other)
        return float(self._values[position])

    def __iter__(self) -> Iterator[str]:
        return (name for name, at in self._index.items() if at != self._position)

    def __len__(self) -> int:
        return len(self._index) - 1


class SuperiorityTable(Mapping[str, Mapping[str, float]]):
    """``table[a][b]``: the probability that ``a`` is stronger than ``b``, for two bots fitted
    together; kept as the ratings and their covariance, a bot's row computed when it is
    first read, so a field of a thousand bots does not become a million numbers (or Python
    floats) until someone reads them."""

    __slots__ = ("_blocks", "_rows", "_where")

    def __init__(self) -> None:
        self._blocks: list[tuple[dict[str, int], Matrix, Matrix]] = []
        self._where: dict[str, tuple[int, int]] = {}
        self._rows: dict[tuple[int, int], Matrix] = {}

    def add(self, members: Sequence[str], theta: Matrix, covariance: Matrix) -> None:
        """Add bots fitted together: their ratings θ and the covariance of θ."""
        index = {name: position for position, name in enumerate(members)}
        for name, position in index.items():
            self._where[name] = (len(self._blocks), position)
        self._blocks.append((index, theta, covariance))

    def __getitem__(self, name: str) -> Mapping[str, float]:
        where = self._where[name]
        index, theta, covariance = self._blocks[where[0]]
        row = self._rows.get(where)
        if row is None:
            row = self._rows[where] = _superiority_row(theta, covariance, where[1])
        return _SuperiorityRow(index, where[1], row)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __repr__(self) -> str:
        return f"SuperiorityTable({len(self)} bots)"


@dataclass(frozen=True, slots=True)
class RatingFit:
    """Ratings of every bot, the likelihood of superiority and any warnings."""

    ratings: dict[str, Rating]
    #: ``los[a][b]``: probability that ``a`` is stronger than ``b`` (same group only, or any
    #: two bots with results when the fit has ``prior_games``).
    los: Mapping[str, Mapping[str, float]]
    #: Groups of bots connected by results; bots without results are in none.
    components: tuple[tuple[str, ...], ...]
    warnings: tuple[str, ...]
    virtual_draws: float
    confidence: float
    #: The unit of the intervals and the LOS: :data:`PAIR_UNIT` or :data:`MATCH_UNIT`.
    unit: str = MATCH_UNIT
    #: Virtual games of each bot against a virtual bot of the mean rating (0: none).
    prior_games: float = 0.0
    #: The LOS that counts every match as independent (the model's own covariance); the same
    #: as ``los`` for a fit without pairs.
    match_los: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def components(
    names: Sequence[str], games: Mapping[tuple[str, str], float]
) -> list[tuple[str, ...]]:
    """Groups of bots connected by played matches, each in ``names`` order, bots without
    matches left out."""
    index = {name: position for position, name in enumerate(names)}
    rows, columns = [], []
    for (first, second), count in games.items():
        if count > 0 and first != second and first in index and second in index:
            rows.append(index[first])
            columns.append(index[second])
    return _groups(names, np.array(rows, dtype=np.int64), np.array(columns, dtype=np.int64))


def _groups(
    names: Sequence[str], rows: NDArray[np.int64], columns: NDArray[np.int64]
) -> list[tuple[str, ...]]:
    """The connected groups of the graph with edges ``rows[k]``-``columns[k]``, in order of
    their first member, members in ``names`` order, isolated bots left out."""
    size = len(names)
    if not size or not len(rows):
        return []
    graph = coo_matrix((np.ones(len(rows)), (rows, columns)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    played = np.zeros(size, dtype=bool)
    played[rows] = True
    played[columns] = True
    members: dict[int, list[str]] = {}
    for position in np.flatnonzero(played).tolist():
        members.setdefault(int(labels[position]), []).append(names[position])
    first_at = {name: position for position, name in enumerate(names)}
    return sorted((tuple(group) for group in members.values()), key=lambda g: first_at[g[0]])


Positions = NDArray[Any]


@dataclass(frozen=True, slots=True)
class _Wins:
    """Match wins as arrays: ``count[k]`` wins of ``winner[k]`` over ``loser[k]``."""

    winner: Positions
    loser: Positions
    count: Matrix


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Duplicate pairs as arrays, one row per (first, second, first wins, second wins)."""

    first: Positions
    second: Positions
    first_wins: Matrix
    decided: Matrix
    count: Matrix

    def select(self, keep: NDArray[Any]) -> _Pairs:
        return _Pairs(
            self.first[keep],
            self.second[keep],
            self.first_wins[keep],
            self.decided[keep],
            self.count[keep],
        )


def _positions(values: Sequence[int]) -> Positions:
    return np.array(values, dtype=np.int64)


def _floats(values: Sequence[float]) -> Matrix:
    return np.array(values, dtype=np.float64)


class _Block:
    """Bots fitted together (one connected group, or every bot with results under a prior
    of virtual games against the mean), their results as lists of edges."""

    def __init__(self, size: int, wins: _Wins, virtual_draws: float, prior_games: float) -> None:
        self.size = size
        winner, loser, count = wins.winner, wins.loser, wins.count
        if virtual_draws and len(winner):
            low, high = np.minimum(winner, loser), np.maximum(winner, loser)
            met = np.unique(low * size + high)
            first, second = met // size, met % size
            half = np.full(len(met), virtual_draws / 2)
            winner = np.concatenate([winner, first, second])
            loser = np.concatenate([loser, second, first])
            count = np.concatenate([count, half, half])
        self.winner, self.loser, self.count = winner, loser, count
        self.prior_games = prior_games

    def log_likelihood(self, theta: Matrix) -> float:
        value = float(self.count @ log_expit(theta[self.winner] - theta[self.loser]))
        if self.prior_games:
            value += self.prior_games * float(np.sum(log_expit(theta) + log_expit(-theta))) / 2
        return value

    def gradient_and_information(self, theta: Matrix) -> tuple[Matrix, Matrix]:
        size = self.size
        probability = expit(theta[self.winner] - theta[self.loser])
        surprise = self.count * (1 - probability)
        gradient: Matrix = np.bincount(self.winner, surprise, size) - np.bincount(
            self.loser, surprise, size
        )
        curvature = self.count * probability * (1 - probability)
        between = np.bincount(self.winner * size + self.loser, curvature, size * size).reshape(
            size, size
        )
        information = -(between + between.T)
        diagonal: Matrix = np.bincount(self.winner, curvature, size) + np.bincount(
            self.loser, curvature, size
        )
        if self.prior_games:
            mean_probability = expit(theta)
            gradient += self.prior_games * (0.5 - mean_probability)
            diagonal += self.prior_games * mean_probability * (1 - mean_probability)
        information[np.diag_indices(size)] += diagonal
        return gradient, information

    def with_draws(self, weight: Matrix) -> _Block:
        """This block with ``weight[k]`` more games on edge ``k``, half won each way."""
        wins = _Wins(
            np.concatenate([self.winner, self.winner, self.loser]),
            np.concatenate([self.loser, self.loser, self.winner]),
            np.concatenate([self.count, weight / 2, weight / 2]),
        )
        return _Block(self.size, wins, 0.0, self.prior_games)

    def fit(self, start: Matrix | None = None) -> Matrix:
        """Maximum-likelihood θ: the first bot held at 0, or the virtual mean bot at 0;
        Newton's method from ``start`` (zeros if None)."""
        size = self.size
        free = slice(0, size) if self.prior_games else slice(1, size)
        theta = np.zeros(size) if start is None else start.copy()
        current = self.log_likelihood(theta)
        for _ in range(_MAX_ITERATIONS):
            gradient, information = self.gradient_and_information(theta)
            step = np.zeros(size)
            if size > free.start:
                step[free] = _solve(information[free, free], gradient[free])
            scale = 1.0
            while True:
                candidate = theta + scale * step
                value = self.log_likelihood(candidate)
                if value >= current - 1e-12 or scale < 1e-6:
                    break
                scale /= 2
            theta, current = candidate, value
            if float(np.max(np.abs(scale * step), initial=0.0)) < _TOLERANCE:
                break
        return theta

    def is_strongly_connected(self) -> bool:
        """True if every bot can be reached from every other along wins: the condition for
        a finite plain MLE."""
        won = self.count > 0
        graph = coo_matrix(
            (np.ones(int(won.sum())), (self.winner[won], self.loser[won])),
            shape=(self.size, self.size),
        )
        count, _ = connected_components(graph, directed=True, connection="strong")
        return bool(count == 1)


def _solve(matrix: Matrix, vector: Matrix) -> Matrix:
    """``matrix⁻¹ · vector`` for a symmetric positive definite ``matrix`` (Cholesky)."""
    try:
        return np.asarray(cho_solve(cho_factor(matrix), vector), dtype=np.float64)
    except np.linalg.LinAlgError:
        return np.linalg.solve(matrix, vector)


def _inverse(matrix: Matrix) -> Matrix:
    """The inverse of a symmetric positive definite ``matrix``, by Cholesky (half the work of
    a general inverse); a general inverse if it is not positive definite."""
    factor, failed = dpotrf(matrix, lower=False, clean=True)
    if not failed:
        upper, failed = dpotri(factor, lower=False)
        if not failed:
            return np.asarray(np.triu(upper) + np.triu(upper, 1).T, dtype=np.float64)
    return np.asarray(np.linalg.inv(matrix), dtype=np.float64)


def _difference_variances(covariance: Matrix, first: Positions, second: Positions) -> Matrix:
    """``Var(θ_first - θ_second)`` for each pair of positions: the same for every anchor."""
    return np.asarray(
        covariance[first, first] + covariance[second, second] - 2 * covariance[first, second],
        dtype=np.float64,
    )


def _leverages(
    theta: Matrix, covariance: Matrix, first: Positions, second: Positions, games: Matrix
) -> Matrix:
    """The leverage of ``games[k]`` matches between ``first[k]`` and ``second[k]``: the
    share of their own result that the fit puts back into their expected score,
    ``n p (1 - p) Var(θ_a - θ_b)`` (between 0 and 1)."""
    chance = expit(theta[first] - theta[second])
    variance = _difference_variances(covariance, first, second)
    return np.asarray(games * chance * (1 - chance) * variance, dtype=np.float64)


#: The CR3 correction divides a pair's squared residual by ``(1 - leverage)²``; a leverage
#: this close to 1 (a bot known from one pair, without a prior) is held here.
_MAX_LEVERAGE = 0.9


def _pair_spread(theta: Matrix, pairs: _Pairs, covariance: Matrix | None = None) -> Matrix:
    """``Σ_c g_c g_cᵀ`` over the duplicate pairs ``c`` within the block, where ``g_c`` is
    the gradient of the pair's log-likelihood at ``theta``: the meat of the sandwich.

    A pair is between two bots ``a`` and ``b``, so ``g_c`` is ``x`` for ``a``, ``-x`` for
    ``b`` and 0 elsewhere, with ``x`` = ``a``'s wins in the pair minus the wins the fit
    expects of it; its outer product is ``x²`` on the diagonal at ``a`` and ``b`` and
    ``-x²`` off it. Given the model's ``covariance``, each ``x²`` is divided by
    ``(1 - h_c)²``, ``h_c`` the pair's leverage (the CR3 small-sample correction, a
    jackknife's): the fit has pulled ``x`` towards 0 by about that share, much of it where
    a bot has few pairs.
    """
    size = len(theta)
    a_at, b_at = pairs.first, pairs.second
    expected = pairs.decided * expit(theta[a_at] - theta[b_at])
    weight = pairs.count * (pairs.first_wins - expected) ** 2
    if covariance is not None:
        leverage = _leverages(theta, covariance, a_at, b_at, pairs.decided)
        weight = weight / (1 - np.minimum(leverage, _MAX_LEVERAGE)) ** 2
    between = np.bincount(a_at * size + b_at, weight, size * size).reshape(size, size)
    spread = -(between + between.T)
    spread[np.diag_indices(size)] += np.bincount(a_at, weight, size) + np.bincount(
        b_at, weight, size
    )
    return spread


def fit_elo(
    names: Sequence[str],
    wins: Mapping[tuple[str, str], float],
    *,
    anchor: str | None = None,
    anchor_elo: float = DEFAULT_ELO,
    virtual_draws: float = 1.0,
    confidence: float = 0.95,
    pairs: PairResults | None = None,
    prior_games: float = 0.0,
    small_sample: bool = False,
) -> RatingFit:
    """Fit Elo ratings to match results (see the module's description of the method).

    ``wins[(a, b)]`` is how many matches ``a`` won against ``b``; ``pairs``, the same matches
    by duplicate pair (:data:`PairResults`), makes the pair the unit of the intervals and the
    LOS. ``prior_games`` > 0 fits every bot with results together, each with that many
    virtual games (half won) against a virtual bot of the mean rating. ``small_sample``
    corrects for few results per bot (see the module's description). Raises ``ValueError``
    for a plain MLE (both priors 0) with results that have no finite maximum-likelihood
    estimate, and for pairs that do not add up to ``wins``.
    """
    if virtual_draws < 0 or prior_games < 0 or not 0 < confidence < 1:
        raise ValueError(
            "virtual_draws and prior_games must be >= 0 and confidence between 0 and 1"
        )
    if anchor is not None and anchor not in names:
        raise ValueError(f"anchor {anchor!r} is not one of the bots")
    position_of = {name: position for position, name in enumerate(names)}
    # Bots of the results that are not in ``names`` get positions after them, so that the
    # pairs can be checked against the wins; they are left out of the fit.
    everyone = dict(position_of)
    all_wins = _win_arrays(everyone, wins)
    all_pairs = None if pairs is None else _pair_arrays(everyone, pairs)
    if all_pairs is not None:
        _check_pairs(all_wins, all_pairs, list(everyone))
    known = len(names)
    inside = (all_wins.winner < known) & (all_wins.loser < known)
    results = _Wins(all_wins.winner[inside], all_wins.loser[inside], all_wins.count[inside])
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    groups = _groups(names, results.winner, results.loser)
    ratings = {name: Rating(name, None, None, None, None, None) for name in names}
    los = SuperiorityTable()
    match_los = SuperiorityTable()
    warnings: list[str] = []
    if len(groups) > 1 and not prior_games:
        listing = "; ".join("{" + ", ".join(group) + "}" for group in groups)
        warnings.append(
            f"the results fall into {len(groups)} groups that never played each other "
            f"({listing}): ratings compare only within a group, each anchored on its own"
        )
    blocks = (
        [tuple(name for group in groups for name in group)] if prior_games and groups else groups
    )
    block_of = np.full(known, -1, dtype=np.int64)
    local = np.full(known, -1, dtype=np.int64)
    for number, members in enumerate(blocks):
        at = _positions([position_of[name] for name in members])
        block_of[at] = number
        local[at] = np.arange(len(members))
    # Results sorted by block, so that each block takes a slice.
    order = np.argsort(block_of[results.winner], kind="stable")
    edge_blocks = block_of[results.winner][order]
    edge_bounds = np.searchsorted(edge_blocks, np.arange(len(blocks) + 1))
    pair_rows = None
    if all_pairs is not None:
        pair_rows = all_pairs.select((all_pairs.first < known) & (all_pairs.second < known))
        pair_order = np.argsort(block_of[pair_rows.first], kind="stable")
        pair_rows = pair_rows.select(pair_order)
        pair_bounds = np.searchsorted(block_of[pair_rows.first], np.arange(len(blocks) + 1))
    group_of = {name: number for number, group in enumerate(groups) for name in group}
    for number, members in enumerate(blocks):
        edges = order[edge_bounds[number] : edge_bounds[number + 1]]
        block_wins = _Wins(
            local[results.winner[edges]], local[results.loser[edges]], results.count[edges]
        )
        block = _Block(len(members), block_wins, virtual_draws, prior_games)
        if not virtual_draws and not prior_games and not block.is_strongly_connected():
            raise ValueError(
                "a bot won or lost all its matches within {"
                + ", ".join(members)
                + "}: the plain maximum-likelihood Elo is infinite (use virtual_draws > 0)"
            )
        theta = block.fit()
        _, information = block.gradient_and_information(theta)
        covariance, shift = _covariance(
            information, members, theta, anchor, anchor_elo, relative=not prior_games
        )
        if small_sample:
            # One step of Firth's bias reduction: each edge's leverage as games drawn.
            leverage = _leverages(theta, covariance, block.winner, block.loser, block.count)
            theta = block.with_draws(leverage).fit(start=theta)
            _, information = block.gradient_and_information(theta)
            covariance, shift = _covariance(
                information, members, theta, anchor, anchor_elo, relative=not prior_games
            )
        # The anchor's row and column of the covariance are zero, and with a mean anchor its
        # rows sum to zero: either way the sandwich keeps the same constraint.
        shown = covariance
        if pair_rows is not None:
            rows = pair_rows.select(
                np.arange(pair_bounds[number], pair_bounds[number + 1], dtype=np.int64)
            )
            block_pairs = _Pairs(
                local[rows.first], local[rows.second], rows.first_wins, rows.decided, rows.count
            )
            spread = _pair_spread(theta, block_pairs, covariance if small_sample else None)
            shown = covariance @ spread @ covariance
        elos = theta * ELO_PER_NATURAL_UNIT + shift
        stderrs = np.sqrt(np.clip(np.diag(shown), 0.0, None)) * ELO_PER_NATURAL_UNIT
        models = np.sqrt(np.clip(np.diag(covariance), 0.0, None)) * ELO_PER_NATURAL_UNIT
        quantiles = np.full(len(members), z)
        if small_sample and pair_rows is not None:
            # A bot's pair variance rests on its own few pairs: Student's t, one degree of
            # freedom fewer than its pairs (at least one).
            counted = np.bincount(block_pairs.first, block_pairs.count, len(members))
            counted += np.bincount(block_pairs.second, block_pairs.count, len(members))
            quantiles = stdtrit(np.maximum(counted - 1, 1), (1 + confidence) / 2)
        for name, elo, stderr, model, quantile in zip(
            members,
            elos.tolist(),
            stderrs.tolist(),
            models.tolist(),
            quantiles.tolist(),
            strict=True,
        ):
            ratings[name] = Rating(
                name,
                elo,
                elo - quantile * stderr,
                elo + quantile * stderr,
                stderr,
                group_of[name],
                elo - z * model,
                elo + z * model,
                model,
            )
        los.add(members, theta, shown)
        match_los.add(members, theta, covariance)
    unit = MATCH_UNIT if pairs is None else PAIR_UNIT
    return RatingFit(
        ratings,
        los,
        tuple(groups),
        tuple(warnings),
        virtual_draws,
        confidence,
        unit,
        prior_games,
        match_los,
    )


def _win_arrays(position_of: dict[str, int], wins: Mapping[tuple[str, str], float]) -> _Wins:
    """The positive win counts of ``wins`` as arrays; new names are added to
    ``position_of``. (The loops run in C: a million results take a fraction of a second.)"""
    if not wins:
        return _Wins(_positions([]), _positions([]), _floats([]))
    winners, losers = zip(*wins.keys(), strict=True)
    winner, loser = _to_positions(position_of, winners, losers)
    count = np.fromiter(wins.values(), dtype=np.float64, count=len(wins))
    keep = (count > 0) & (winner != loser)
    return _Wins(winner[keep], loser[keep], count[keep])


def _pair_arrays(position_of: dict[str, int], pairs: PairResults) -> _Pairs:
    """``pairs`` as arrays (rows with a count of 0 too); new names are added to
    ``position_of``."""
    if not pairs:
        return _Pairs(_positions([]), _positions([]), _floats([]), _floats([]), _floats([]))
    firsts, seconds, first_wins, second_wins = zip(*pairs.keys(), strict=True)
    first, second = _to_positions(position_of, firsts, seconds)
    won = _floats(first_wins)
    count = np.fromiter(pairs.values(), dtype=np.float64, count=len(pairs))
    return _Pairs(first, second, won, won + _floats(second_wins), count)


def _to_positions(
    position_of: dict[str, int], firsts: Sequence[str], seconds: Sequence[str]
) -> tuple[Positions, Positions]:
    """The positions of two columns of names, new names added to ``position_of`` in order
    of first appearance."""
    for name in dict.fromkeys([*firsts, *seconds]):
        if name not in position_of:
            position_of[name] = len(position_of)
    at = position_of.__getitem__
    return (
        np.fromiter(map(at, firsts), dtype=np.int64, count=len(firsts)),
        np.fromiter(map(at, seconds), dtype=np.int64, count=len(seconds)),
    )


def _covariance(
    information: Matrix,
    members: Sequence[str],
    theta: Matrix,
    anchor: str | None,
    anchor_elo: float,
    *,
    relative: bool,
) -> tuple[Matrix, float]:
    """The covariance of θ for the block's anchor, and the shift from θ to Elo.

    ``relative``: the information is singular along "everyone up by the same amount" (no
    virtual mean bot), and only θ relative to the anchor (or the mean) has a covariance.
    """
    size = len(members)
    if anchor in members:
        fixed = members.index(anchor)
        shift = anchor_elo - float(theta[fixed]) * ELO_PER_NATURAL_UNIT
        if relative:
            keep = np.array([position for position in range(size) if position != fixed])
            covariance = np.zeros((size, size))
            if len(keep):
                covariance[np.ix_(keep, keep)] = _inverse(information[np.ix_(keep, keep)])
            return covariance, shift
        # The covariance of θ_i - θ_anchor, from that of θ.
        absolute = _inverse(information)
        row = absolute[fixed]
        return absolute - row[None, :] - row[:, None] + absolute[fixed, fixed], shift
    shift = DEFAULT_ELO - float(np.mean(theta)) * ELO_PER_NATURAL_UNIT
    if relative:
        mean = 1 / size
        return _inverse(information + mean) - mean, shift
    # The covariance of θ_i - mean(θ), from that of θ.
    absolute = _inverse(information)
    row_means = absolute.mean(axis=1)
    return (
        absolute - row_means[None, :] - row_means[:, None] + float(row_means.mean()),
        shift,
    )


def _superiority_row(theta: Matrix, covariance: Matrix, position: int) -> Matrix:
    """``LOS[position, j]`` for every ``j``: Φ of the difference of θ over its standard
    deviation."""
    variance = np.diag(covariance)
    spread = variance[position] + variance - 2 * covariance[position]
    difference = theta[position] - theta
    certain = spread <= 0
    los = ndtr(difference / np.sqrt(np.where(certain, 1.0, spread)))
    ties = np.where(difference == 0, 0.5, (difference > 0).astype(float))
    return np.asarray(np.where(certain, ties, los), dtype=np.float64)


def _check_pairs(wins: _Wins, pairs: _Pairs, names: Sequence[str]) -> None:
    """Raise ``ValueError`` unless ``pairs`` hold exactly the decided matches of ``wins``."""
    second_wins = pairs.decided - pairs.first_wins
    bad = (
        (pairs.first == pairs.second)
        | (pairs.count < 0)
        | (np.minimum(pairs.first_wins, second_wins) < 0)
    )
    uneven = ~np.isin(pairs.decided, (1, 2))
    for row in np.flatnonzero(bad | uneven).tolist()[:1]:
        first, second = names[int(pairs.first[row])], names[int(pairs.second[row])]
        won, lost = int(pairs.first_wins[row]), int(second_wins[row])
        if bad[row]:
            raise ValueError(f"not a duplicate pair: {(first, second, won, lost)}")
        raise ValueError(
            f"a duplicate pair has one or two decided matches, got {won} + {lost} "
            f"between {first} and {second}"
        )
    size = len(names)
    counted_codes = np.concatenate(
        [pairs.first * size + pairs.second, pairs.second * size + pairs.first]
    )
    counted_values = np.concatenate([pairs.first_wins, second_wins]) * np.concatenate(
        [pairs.count, pairs.count]
    )
    counted_at, counted_sums = _sums(counted_codes, counted_values)
    given_at, given_sums = _sums(wins.winner * size + wins.loser, wins.count)
    if not np.array_equal(counted_at, given_at) or not np.allclose(
        counted_sums, given_sums, rtol=1e-9, atol=0.0
    ):
        raise ValueError("the pairs do not add up to the wins: they must be the same matches")


def _sums(codes: Positions, values: Matrix) -> tuple[Positions, Matrix]:
    """The distinct codes with a positive total, and their totals."""
    distinct, inverse = np.unique(codes, return_inverse=True)
    totals = np.bincount(inverse, values, len(distinct))
    positive = totals > 0
    return distinct[positive], totals[positive]
