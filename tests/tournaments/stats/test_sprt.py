"""The SPRT over duplicate pairs: the LLR against a direct maximisation and fishtest's, the
two stopping rules on fixed sequences of pairs, and the test's behaviour in simulation (the
Elo estimate of a stopped test: ``test_sprt_elo.py``; the ``sprt`` command:
``tests/tournaments/cli/test_sprt.py``)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from referee.rules.options import RulesOptions
from referee.seeds import derive_seed
from referee.selfplay import POLICIES, play_policy_match
from tests.tournaments.sprt_formulas import iterative_llr, recomputed_path
from tournaments.stats.sprt import (
    PAIR_SCORES,
    ZERO_COUNT,
    Decision,
    Overshoot,
    PairCounts,
    PairOutcome,
    SprtStatus,
    SprtTest,
    StoppingRule,
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
        PairCounts(0, 0, 4),
        PairCounts(900, 0, 0),
        PairCounts(2000, 5000, 2150),
    ],
)
@pytest.mark.parametrize(("elo0", "elo1"), [(0, 20), (-10, 30), (0, 200)])
def test_llr_equals_direct_maximisation(counts: PairCounts, elo0: float, elo1: float) -> None:
    assert log_likelihood_ratio(counts, elo0, elo1) == pytest.approx(
        _direct_llr(counts, elo0, elo1), abs=1e-7
    )


# fishtest's LLRcalc.LLR_logistic(elo0, elo1, [L, D, W]) for the same counts (a trinomial of
# 0, 1/2 and 1 is a trinomial of pair scores), computed with its published code.
FISHTEST_LLR = [
    (PairCounts(27, 46, 48), 0, 50, 2.8841890569493667),
    (PairCounts(27, 46, 48), 0, 5, 0.4679187413453381),
    (PairCounts(2000, 5000, 2150), 0, 50, -158.79724263141378),
    (PairCounts(2000, 5000, 2150), 0, 5, 2.670930916389891),
]


@pytest.mark.parametrize(("counts", "elo0", "elo1", "expected"), FISHTEST_LLR)
def test_llr_equals_fishtests(
    counts: PairCounts, elo0: float, elo1: float, expected: float
) -> None:
    assert log_likelihood_ratio(counts, elo0, elo1) == pytest.approx(expected, rel=1e-10)


def test_the_closed_form_multiplier_agrees_with_the_iterative_one() -> None:
    rng = random.Random(11)
    for _ in range(300):
        counts = PairCounts(*(rng.choice([0, 1, 7, 300, 10**6]) for _ in range(3)))
        if not counts.pairs:
            continue
        elo0, elo1 = sorted(rng.sample([-300, -20, 0, 0.5, 5, 50, 600], 2))
        assert log_likelihood_ratio(counts, elo0, elo1) == pytest.approx(
            iterative_llr(counts, elo0, elo1), rel=1e-9, abs=1e-9
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


# fishtest's stat_util.get_elo([L, D, W]): (Elo, half the 95 % interval), published code.
FISHTEST_FIXED_ELO = [
    (PairCounts(0, 1, 0), 0.0, 30.470609188782277),
    (PairCounts(0, 5, 0), 0.0, 6.088890426925046),
    (PairCounts(0, 0, 3), 1199.8261952903777, 276.4785047458733),
    (PairCounts(2, 0, 0), -1199.826195290393, 312.7085441045939),
]


@pytest.mark.parametrize(("counts", "elo", "margin"), FISHTEST_FIXED_ELO)
def test_fixed_sample_estimate_is_finite_and_regularised_at_the_edges(
    counts: PairCounts, elo: float, margin: float
) -> None:
    estimate = elo_estimate(counts)
    assert estimate.elo == pytest.approx(elo, abs=1e-9)
    assert estimate.margin == pytest.approx(margin, rel=1e-9)
    assert all(map(math.isfinite, (estimate.elo, estimate.lower, estimate.upper)))
    # The score is kept within 0.001 of 0 and 1: ±1200 Elo at most.
    assert -1200 < estimate.lower <= estimate.elo <= estimate.upper < 1200


def test_edges_print_finite_figures() -> None:
    assert elo_estimate(PairCounts(0, 1, 0)).text() == "+0.0 ± 30.5"
    assert elo_estimate(PairCounts(0, 0, 3)).text() == "+1199.8 ± 276.5"
    assert elo_estimate(PairCounts()).text() == "+0.0 ± 1199.8"


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
            result = play_policy_match(FAST_RULES, pair_seed, policies).match.result
            assert result is not None
            won += result.winner == new_seat
        return PairOutcome(won)

    return play_pair


def test_first_against_itself_accepts_h0_in_simulation() -> None:
    status = run_sprt(SprtTest(0, 20), _in_process_pair("first", "first", seed=3))
    assert status.decision is Decision.ACCEPT_H0
    # A deterministic bot against itself: the same deals with seats swapped split every pair.
    assert status.counts == PairCounts(0, status.counts.pairs, 0)


def test_overshoot_keeps_the_ladder_heights_of_the_path() -> None:
    overshoot = Overshoot()
    for llr in (-0.5, -0.3, -0.9, 0.4, 0.2, 1.0, 0.7):
        overshoot = overshoot.after(llr)
    # New minima at -0.5 and -0.9 (heights 0.5, 0.4); new maxima at 0.4 and 1.0 (0.4, 0.6).
    assert (overshoot.low, overshoot.high) == (-0.9, 1.0)
    assert overshoot.lower == pytest.approx((0.5**2 + 0.4**2) / (2 * (0.5 + 0.4)))
    assert overshoot.upper == pytest.approx((0.4**2 + 0.6**2) / (2 * (0.4 + 0.6)))
    assert Overshoot().lower == Overshoot().upper == 0


def test_the_dynamic_rule_is_strict_and_wald_is_not() -> None:
    dynamic, wald = (SprtTest(0, 20, rule=rule) for rule in StoppingRule)
    assert dynamic.rule is StoppingRule.DYNAMIC  # the default
    assert dynamic.decide(2.5, -2.5, 2.5) is Decision.CONTINUE
    assert dynamic.decide(-2.5, -2.5, 2.5) is Decision.CONTINUE
    assert dynamic.decide(2.5 + 1e-12, -2.5, 2.5) is Decision.ACCEPT_H1
    assert wald.decide(2.5, -2.5, 2.5) is Decision.ACCEPT_H1
    assert wald.decide(-2.5, -2.5, 2.5) is Decision.ACCEPT_H0
    heights = Overshoot().after(-0.2).after(0.3)
    lower, upper = wald.bounds
    assert wald.bounds_in_force(heights) == (lower, upper)
    assert dynamic.bounds_in_force(heights) == (lower + 0.1, upper - 0.15)


def _run(test: SprtTest, sequence: str) -> tuple[SprtStatus, list[SprtStatus]]:
    seen: list[SprtStatus] = []
    status = run_sprt(
        test,
        lambda number: PairOutcome(int(sequence[number - 1])),
        max_pairs=len(sequence),
        on_pair=lambda _number, _outcome, status: seen.append(status),
    )
    return status, seen


# Pairs, new bot's matches won (0-2 = "0", 1-1 = "1", 2-0 = "2"), at (0, 50). Fed one pair at a
# time to fishtest's stat_util.update_SPRT (published code; [L, D, W] = pair counts), they
# stop as the expected values say.
SEQUENCES = {
    # The dynamic rule accepts H1 one pair before Wald's does.
    "earlier": "11121121211121111111211",
    # The dynamic rule accepts H1 at pair 89; Wald's goes on and accepts H0 at pair 162.
    "h1-then-h0": (
        "10012201120102201122201011212121111012211121202110121222110112212210212101111111"
        "21112112200110020012111011000101021222010200020111101110111122011121211000011101"
        "01"
    ),
    # The dynamic rule accepts H0 at pair 66, 0.0008 below its bound; Wald's accepts H1 at 193.
    "h0-then-h1": (
        "11110110211010121120101111112202101212010010111212111010111220110112202012110222"
        "11121101101122212212012022021212121112211021212011102111121111011120121211120110"
        "102112101021111222112222022012222"
    ),
}
# For each sequence: where each rule stops, its verdict, the counts and LLR there, and for the
# dynamic rule the overshoot estimates o0 and o1, all as fishtest's update_SPRT computes them.
FISHTEST_STOPS = {
    "earlier": (
        (22, Decision.ACCEPT_H1, PairCounts(0, 17, 5), 2.900503031785008),
        (0.07609510810756664, 0.11087177388713276),
        (23, Decision.ACCEPT_H1, PairCounts(0, 18, 5), 2.9972844381023847),
    ),
    "h1-then-h0": (
        (89, Decision.ACCEPT_H1, PairCounts(14, 45, 30), 2.8472250428792765),
        (0.07294648818484713, 0.10153570303981839),
        (162, Decision.ACCEPT_H0, PairCounts(41, 79, 42), -2.9580462965563363),
    ),
    "h0-then-h1": (
        (66, Decision.ACCEPT_H0, PairCounts(16, 38, 12), -2.8773190148322247),
        (0.06788715277197752, 0.0),
        (193, Decision.ACCEPT_H1, PairCounts(36, 97, 60), 2.9627700907971044),
    ),
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_the_rules_decide_apart_as_fishtest_and_wald_do(name: str) -> None:
    sequence = SEQUENCES[name]
    (
        (dynamic_stop, verdict, counts, llr),
        (o0, o1),
        (wald_stop, wald_verdict, wald_counts, wald_llr),
    ) = FISHTEST_STOPS[name]
    dynamic, wald = (SprtTest(0, 50, rule=rule) for rule in StoppingRule)
    ended, path = _run(dynamic, sequence)
    assert (len(path), ended.decision, ended.counts) == (dynamic_stop, verdict, counts)
    assert ended.llr == pytest.approx(llr, rel=1e-10)
    assert (ended.overshoot.lower, ended.overshoot.upper) == pytest.approx((o0, o1), rel=1e-9)
    # Inside Wald's bounds, yet past the ones in force.
    lower, upper = wald.bounds
    assert lower < ended.llr < upper
    ended_wald, path_wald = _run(wald, sequence)
    assert path_wald[dynamic_stop - 1].decision is Decision.CONTINUE
    assert (len(path_wald), ended_wald.decision, ended_wald.counts) == (
        wald_stop,
        wald_verdict,
        wald_counts,
    )
    assert ended_wald.llr == pytest.approx(wald_llr, rel=1e-10)
    # Every status on the way against the published formulas, recomputed here; the LLR at
    # the stop also by direct maximisation.
    outcomes = [PairOutcome(int(outcome)) for outcome in sequence[:dynamic_stop]]
    recomputed = recomputed_path(0, 50, outcomes)
    for status, (direct_llr, direct_lower, direct_upper) in zip(path, recomputed, strict=True):
        assert status.llr == pytest.approx(direct_llr, abs=1e-9)
        assert status.lower == pytest.approx(direct_lower, abs=1e-9)
        assert status.upper == pytest.approx(direct_upper, abs=1e-9)
    assert [s.decision for s in path[:-1]] == [Decision.CONTINUE] * (dynamic_stop - 1)
    assert ended.llr == pytest.approx(_direct_llr(ended.counts, 0, 50), abs=1e-7)


def test_a_void_pair_leaves_the_path_where_it_was() -> None:
    test = SprtTest(0, 50)
    status = test.advance(test.advance(test.start(), PairOutcome.WON_BOTH), PairOutcome.SPLIT)
    after_void = test.advance(status, None)
    assert (after_void.llr, after_void.overshoot) == (status.llr, status.overshoot)
    assert (after_void.void_pairs, after_void.void_in_a_row) == (1, 1)
    assert test.advance(after_void, PairOutcome.SPLIT).void_in_a_row == 0


def test_a_first_look_at_counts_has_no_overshoot_correction() -> None:
    test = SprtTest(0, 50)
    status = test.status(PairCounts(14, 45, 30))  # accepted H1 at the end of its own path
    assert (status.lower, status.upper) == test.bounds
    assert status.decision is Decision.CONTINUE
    assert status.overshoot.low == status.overshoot.high == status.llr


def test_the_dynamic_rule_never_stops_later_than_walds_in_simulation() -> None:
    # Its bounds lie inside Wald's, so on the same pairs it decides no later.
    dynamic, wald = (SprtTest(0, 50, rule=rule) for rule in StoppingRule)
    rng = random.Random(12)
    earlier = 0
    for _ in range(30):
        play = _sampler(25.0, 0.5, rng)
        outcomes = [play(0) for _ in range(1500)]
        dynamic_end, wald_end = (
            run_sprt(test, lambda number, fixed=outcomes: fixed[number - 1], max_pairs=1500)
            for test in (dynamic, wald)
        )
        assert Decision.CONTINUE not in (dynamic_end.decision, wald_end.decision)
        assert dynamic_end.counts.pairs <= wald_end.counts.pairs
        earlier += dynamic_end.counts.pairs < wald_end.counts.pairs
    assert earlier > 0
