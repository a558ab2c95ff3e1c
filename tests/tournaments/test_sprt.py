"""The SPRT over duplicate pairs: the LLR against a direct maximisation and its behaviour in
simulation (the ``sprt`` command: ``tests/tournaments/cli/test_sprt.py``)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from referee.rules.options import RulesOptions
from referee.selfplay import POLICIES, derive_seed, play_match
from tournaments.sprt import (
    PAIR_SCORES,
    ZERO_COUNT,
    Decision,
    PairCounts,
    PairOutcome,
    SprtTest,
    constrained_mle,
    elo_estimate,
    elo_to_score,
    log_likelihood_ratio,
    run_sprt,
    score_to_elo,
    sprt_bounds,
)

FAST_RULES = RulesOptions(target_score=5, cold_margin=3)


def _max_log_likelihood(counts: tuple[float, float, float], mean: float) -> float:
    """max Σ n_i log q_i over trinomials q on the scores 0, 1/2, 1 with expected score
    ``mean``, by brute force: with q = (1 - 2·mean + t, 2·(mean - t), t) the one free
    parameter t runs over an interval; a grid finds the best cell, golden sections refine it
    (the log-likelihood is concave in t)."""
    low, high = max(0.0, 2 * mean - 1), mean

    def log_likelihood(t: float) -> float:
        q = (1 - 2 * mean + t, 2 * (mean - t), t)
        if min(q) <= 0:
            return -math.inf
        return sum(n * math.log(p) for n, p in zip(counts, q, strict=True))

    steps = 2000
    grid = [low + (high - low) * (k + 0.5) / steps for k in range(steps)]
    best = max(range(steps), key=lambda k: log_likelihood(grid[k]))
    left = grid[max(best - 1, 0)] if best else low
    right = grid[min(best + 1, steps - 1)] if best < steps - 1 else high
    golden = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        first = right - golden * (right - left)
        second = left + golden * (right - left)
        if log_likelihood(first) < log_likelihood(second):
            left = first
        else:
            right = second
    return log_likelihood((left + right) / 2)


def _direct_llr(counts: PairCounts, elo0: float, elo1: float) -> float:
    weights = tuple(float(n) if n else ZERO_COUNT for n in counts.as_tuple())
    assert len(weights) == 3
    return _max_log_likelihood(weights, elo_to_score(elo1)) - _max_log_likelihood(
        weights, elo_to_score(elo0)
    )


@pytest.mark.parametrize(
    "counts",
    [
        PairCounts(10, 30, 15),
        PairCounts(3, 4, 5),
        PairCounts(1, 1, 1),
        PairCounts(40, 10, 2),
        PairCounts(7, 90, 13),
        PairCounts(0, 12, 5),  # an empty count: regularised the same way on both sides
    ],
)
@pytest.mark.parametrize(("elo0", "elo1"), [(0, 20), (-10, 30), (0, 200)])
def test_llr_equals_direct_maximisation(counts: PairCounts, elo0: float, elo1: float) -> None:
    assert log_likelihood_ratio(counts, elo0, elo1) == pytest.approx(
        _direct_llr(counts, elo0, elo1), abs=1e-7
    )


def test_constrained_mle_meets_its_constraints() -> None:
    frequencies = (0.2, 0.5, 0.3)
    for mean in (0.1, 0.45, 0.55, 0.9):
        fitted = constrained_mle(frequencies, PAIR_SCORES, mean)
        assert sum(fitted) == pytest.approx(1, abs=1e-12)
        assert sum(q * a for q, a in zip(fitted, PAIR_SCORES, strict=True)) == pytest.approx(
            mean, abs=1e-12
        )
        assert min(fitted) > 0
    # At the observed mean the fit is the observation itself.
    assert constrained_mle(frequencies, PAIR_SCORES, 0.55) == pytest.approx(frequencies)


def test_constrained_mle_rejects_impossible_means() -> None:
    with pytest.raises(ValueError, match="strictly inside"):
        constrained_mle((0.5, 0.5), (0.0, 1.0), 1.0)
    with pytest.raises(ValueError, match="positive"):
        constrained_mle((0.0, 1.0), (0.0, 1.0), 0.5)


@pytest.mark.parametrize("counts", [PairCounts(5, 0, 5), PairCounts(3, 20, 3), PairCounts(0, 7, 0)])
@pytest.mark.parametrize("elo1", [5, 20, 200])
def test_symmetric_counts_never_favour_h1(counts: PairCounts, elo1: float) -> None:
    assert log_likelihood_ratio(counts, 0, elo1) <= 0


def test_llr_grows_with_the_new_bots_wins() -> None:
    values = [log_likelihood_ratio(PairCounts(10 - wins, 10, wins), 0, 20) for wins in range(11)]
    assert values == sorted(values)
    assert values[0] < 0 < values[-1]
    assert log_likelihood_ratio(PairCounts(), 0, 20) == 0


def test_bounds_and_logistic_elo() -> None:
    lower, upper = sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(math.log(0.05 / 0.95))
    assert upper == pytest.approx(math.log(0.95 / 0.05))
    assert sprt_bounds(0.05, 0.1) == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    assert elo_to_score(0) == 0.5
    assert elo_to_score(400) == pytest.approx(10 / 11)
    assert score_to_elo(elo_to_score(123.4)) == pytest.approx(123.4)
    assert score_to_elo(1.0) == math.inf
    assert score_to_elo(0.0) == -math.inf
    with pytest.raises(ValueError, match="alpha"):
        sprt_bounds(0.6, 0.5)
    with pytest.raises(ValueError, match="elo0 < elo1"):
        SprtTest(10, 0)


def test_elo_estimate_from_pair_scores() -> None:
    counts = PairCounts(10, 20, 30)
    estimate = elo_estimate(counts)
    mean = (20 * 0.5 + 30) / 60
    variance = (10 * mean**2 + 20 * (0.5 - mean) ** 2 + 30 * (1 - mean) ** 2) / 60
    margin = 1.959963984540054 * math.sqrt(variance / 60)
    assert estimate.elo == pytest.approx(score_to_elo(mean))
    assert estimate.lower == pytest.approx(score_to_elo(mean - margin))
    assert estimate.upper == pytest.approx(score_to_elo(mean + margin))
    assert estimate.text().startswith("+")
    even = elo_estimate(PairCounts(4, 8, 4))
    assert even.elo == pytest.approx(0)
    assert even.lower == pytest.approx(-even.upper)
    assert elo_estimate(PairCounts(0, 5, 0)).text() == "+0.0 ± 0.0"
    assert elo_estimate(PairCounts(0, 0, 3)).text() == "+inf [+inf, +inf]"


def _sampler(elo: float, split: float, rng: random.Random) -> Callable[[int], PairOutcome]:
    """Pairs from bots ``elo`` apart: ``split`` of the pairs 1-1, the rest 2-0 or 0-2 so that
    the expected score is the logistic one."""
    score = elo_to_score(elo)
    won_both = score - split / 2
    assert 0 <= won_both <= 1 - split

    def play_pair(_number: int) -> PairOutcome:
        draw = rng.random()
        if draw < won_both:
            return PairOutcome.WON_BOTH
        if draw < won_both + split:
            return PairOutcome.SPLIT
        return PairOutcome.LOST_BOTH

    return play_pair


def _decisions(true_elo: float, runs: int, seed: int) -> list[Decision]:
    test = SprtTest(elo0=0, elo1=40)
    rng = random.Random(seed)
    return [run_sprt(test, _sampler(true_elo, 0.5, rng)).decision for _ in range(runs)]


def test_equal_bots_accept_h0_in_simulation() -> None:
    decisions = _decisions(0.0, runs=200, seed=7)
    assert Decision.CONTINUE not in decisions
    assert decisions.count(Decision.ACCEPT_H0) >= 0.9 * len(decisions)


def test_a_clearly_stronger_bot_accepts_h1_in_simulation() -> None:
    decisions = _decisions(100.0, runs=100, seed=8)
    assert decisions.count(Decision.ACCEPT_H1) >= 0.9 * len(decisions)


def test_void_pairs_are_skipped_and_max_pairs_stops_undecided() -> None:
    outcomes = iter([None, PairOutcome.WON_BOTH, None, PairOutcome.SPLIT])
    seen: list[int] = []
    status = run_sprt(
        SprtTest(0, 20),
        lambda _number: next(outcomes),
        max_pairs=4,
        on_pair=lambda number, _outcome, _status: seen.append(number),
    )
    assert seen == [1, 2, 3, 4]
    assert status.decision is Decision.CONTINUE
    assert status.counts == PairCounts(0, 1, 1)
    assert status.void_pairs == 2
    only_void = run_sprt(SprtTest(0, 20), lambda _number: None, max_void_in_a_row=3)
    assert only_void.void_pairs == only_void.void_in_a_row == 3


def _in_process_pair(new: str, old: str, seed: int) -> Callable[[int], PairOutcome]:
    """Duplicate pairs between built-in policies, as ``sprt`` plays them between processes."""

    def play_pair(number: int) -> PairOutcome:
        pair_seed = derive_seed(seed, "match", number)
        won = 0
        for new_seat in (0, 1):
            names = (new, old) if new_seat == 0 else (old, new)
            policies = [
                POLICIES[name](derive_seed(seed, "policy", number, seat))
                for seat, name in enumerate(names)
            ]
            result = play_match(FAST_RULES, pair_seed, policies).match.result
            assert result is not None
            won += result.winner == new_seat
        return PairOutcome(won)

    return play_pair


def test_first_against_itself_accepts_h0_in_simulation() -> None:
    status = run_sprt(SprtTest(0, 20), _in_process_pair("first", "first", seed=3))
    assert status.decision is Decision.ACCEPT_H0
    # A deterministic bot against itself: the same deals with seats swapped split every pair.
    assert status.counts == PairCounts(0, status.counts.pairs, 0)
