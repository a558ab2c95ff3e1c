"""The ladder's pairing policy, driven with simulated duplicate pairs of known strengths."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from statistics import NormalDist

import networkx as nx
import numpy as np
import pytest

from tournaments.stats.ladder import (
    FINAL,
    FINALIST,
    OUT,
    SWISS,
    WINDOW,
    FieldState,
    LadderSettings,
    PairOutcome,
    RoundPlan,
    check_settings,
    final_pairs,
    fit_inputs,
    perfect_matchings,
    plan_round,
    swiss_pairs,
)
from tournaments.stats.ratings import expected_score, fit_elo


def play_pair(first: str, second: str, truth: Mapping[str, float], rng: random.Random) -> int:
    """``first``'s wins in a simulated duplicate pair (two independent matches)."""
    chance = expected_score(truth[first] - truth[second])
    return sum(rng.random() < chance for _ in range(2))


def run_ladder(
    truth: Mapping[str, float], settings: LadderSettings, seed: int = 1, max_rounds: int = 200
) -> tuple[list[RoundPlan], list[PairOutcome]]:
    """Plan and play rounds until the ladder stops; every plan and every result."""
    rng = random.Random(seed)
    bots = list(truth)
    results: list[PairOutcome] = []
    plans: list[RoundPlan] = []
    for round_number in range(1, max_rounds + 1):
        plan = plan_round(
            bots, results, round_number, seed, settings, matches_played=2 * len(results)
        )
        plans.append(plan)
        if plan.stop:
            break
        for first, second in plan.pairs:
            won = play_pair(first, second, truth, rng)
            results.append(PairOutcome(first, second, won, 2 - won, round_number))
    return plans, results


def names(count: int) -> list[str]:
    return [f"bot{index:02d}" for index in range(count)]


def test_first_round_pairs_everyone_once_and_one_bye_for_an_odd_field() -> None:
    bots = names(11)
    plan = plan_round(bots, [], 1, 7, LadderSettings(), matches_played=0)
    seated = [name for pair in plan.pairs for name in pair]
    assert len(plan.pairs) == 5
    assert len(plan.byes) == 1
    assert sorted([*seated, *plan.byes]) == sorted(bots)
    assert plan.phase == SWISS
    assert not plan.stop
    assert not plan.resting


def test_a_round_depends_on_the_seed_and_not_on_the_order_of_results() -> None:
    truth = {name: 40.0 * index for index, name in enumerate(names(16))}
    _, results = run_ladder(truth, LadderSettings(rounds=3))
    settings = LadderSettings()
    played = 2 * len(results)
    plan = plan_round(list(truth), results, 4, 1, settings, matches_played=played)
    shuffled = list(results)
    random.Random(3).shuffle(shuffled)
    again = plan_round(list(truth), shuffled, 4, 1, settings, matches_played=played)
    assert again.pairs == plan.pairs
    assert again.byes == plan.byes
    others = {
        plan_round(list(truth), results, 4, seed, settings, matches_played=played).pairs
        for seed in range(2, 7)
    }
    assert others - {plan.pairs}


def test_the_bye_rotates_through_an_odd_field() -> None:
    truth = dict.fromkeys(names(9), 0.0)
    plans, _ = run_ladder(truth, LadderSettings(rounds=9))
    byes = [name for plan in plans[:9] for name in plan.byes]
    assert len(byes) == 9
    assert sorted(byes) == sorted(truth)


def test_repeats_are_avoided_while_new_opponents_remain() -> None:
    truth = dict.fromkeys(names(8), 0.0)
    distinct = {}
    for penalty in (0.0, 1000.0):
        settings = LadderSettings(rounds=7, random_share=0.0, repeat_penalty=penalty)
        _, results = run_ladder(truth, settings)
        assert len(results) == 28
        meetings = Counter(frozenset((r.first, r.second)) for r in results)
        distinct[penalty] = len(meetings)
        early = Counter(frozenset((r.first, r.second)) for r in results if r.round <= 4)
        if penalty:
            assert set(early.values()) == {1}
            assert max(meetings.values()) == 2
    # A seven-round schedule of 8 bots has 28 pairs: nearly all distinct with the penalty.
    assert distinct[1000.0] >= 26
    assert distinct[0.0] < distinct[1000.0]


def test_swiss_rounds_pair_bots_of_close_strength() -> None:
    rng = random.Random(11)
    truth = {name: rng.gauss(0, 300) for name in names(64)}
    plans, _ = run_ladder(truth, LadderSettings(rounds=10, random_share=0.0))
    first_gap = sum(abs(truth[a] - truth[b]) for a, b in plans[0].pairs) / 32
    last_gap = sum(abs(truth[a] - truth[b]) for a, b in plans[9].pairs) / 32
    # Random pairs of N(0, 300²) bots are 340 Elo apart on average.
    assert first_gap > 200
    assert last_gap < first_gap / 2


def test_random_share_draws_pairs_across_the_field() -> None:
    rng = random.Random(5)
    truth = {name: rng.gauss(0, 300) for name in names(64)}
    _, results = run_ladder(truth, LadderSettings(rounds=6, random_share=0.0))
    played = 2 * len(results)
    spread_gaps = []
    for share in (0.0, 1.0):
        plan = plan_round(
            list(truth), results, 7, 1, LadderSettings(random_share=share), matches_played=played
        )
        spread_gaps.append(sum(abs(truth[a] - truth[b]) for a, b in plan.pairs) / 32)
    assert spread_gaps[1] > 1.5 * spread_gaps[0]


def test_the_top_is_certified_after_the_rest_leave_the_race() -> None:
    # Three leaders 300 Elo apart and far above a flat field of 21.
    truth = {"ace": 1500.0, "king": 1200.0, "queen": 900.0}
    truth |= {name: 0.0 for name in names(21)}
    plans, results = run_ladder(truth, LadderSettings(top=3, finalists=8))
    last = plans[-1]
    assert last.stop
    assert last.certification.certified
    assert last.certification.ranking == ("ace", "king", "queen")
    assert last.certification.text() == "top 3 certified at 95 %"
    assert any(plan.phase == FINAL for plan in plans)
    final = next(plan for plan in plans if plan.phase == FINAL)
    finalists = {name for name, status in final.status.items() if status == FINALIST}
    assert {"ace", "king", "queen"} <= finalists
    assert all(final.status[name] == OUT for name in final.resting)
    # Bots out of the race take no more games; the ladder used far less than a round robin.
    resting = set(final.resting)
    later = [r for r in results if r.round >= final.round_number]
    assert not any(r.first in resting or r.second in resting for r in later)
    assert 2 * len(results) < 24 * 23 / 2 * 2


def test_an_open_certification_says_what_is_open() -> None:
    truth = dict.fromkeys(names(10), 0.0)
    plans, _ = run_ladder(truth, LadderSettings(top=2, rounds=3))
    text = plans[-1].certification.text()
    assert text.startswith("top 2 not certified at 95 %: ")
    assert " over " in text


def test_the_match_budget_is_never_exceeded_and_the_last_round_is_cut() -> None:
    truth = {name: 30.0 * index for index, name in enumerate(names(12))}
    plans, results = run_ladder(truth, LadderSettings(max_matches=50))
    assert 2 * len(results) == 50
    assert plans[-1].stop
    cut = plans[-2]
    assert len(cut.pairs) == 1
    assert len(cut.byes) == 10


def test_the_round_budget_stops_the_ladder() -> None:
    truth = dict.fromkeys(names(6), 0.0)
    plans, results = run_ladder(truth, LadderSettings(rounds=4))
    assert len(plans) == 5
    assert plans[-1].stop
    assert {r.round for r in results} == {1, 2, 3, 4}


def test_results_of_bots_that_left_still_count() -> None:
    results = [PairOutcome("old", "a", 2, 0, 1), PairOutcome("old", "b", 0, 2, 1)]
    plan = plan_round(["a", "b"], results, 2, 1, LadderSettings(), matches_played=4)
    assert plan.fit.ratings["b"].elo is not None
    assert plan.fit.ratings["a"].elo is not None
    assert plan.fit.ratings["b"].elo > plan.fit.ratings["a"].elo
    assert set(plan.status) == {"a", "b"}


@pytest.mark.parametrize(
    ("settings", "key", "message"),
    [
        (LadderSettings(top=80), "top", "top 80 is larger than the field of 64 bots"),
        (LadderSettings(top=0), "top", "top must be at least 1, got 0"),
        (LadderSettings(max_matches=40), "max_matches", "below one round: 40 matches, but"),
        (LadderSettings(rounds=0), "rounds", "rounds must be at least 1"),
        (LadderSettings(confidence=1.5), "confidence", "between 0.5 and 1"),
        (LadderSettings(random_share=-0.1), "random_share", "between 0 and 1"),
        (LadderSettings(prior_games=0), "prior_games", "must be > 0"),
        (LadderSettings(finalists=5), "finalists", "finalists needs top"),
        (LadderSettings(top=10, finalists=4), "finalists", "at least top (10), got 4"),
        (LadderSettings(top=10, finalists=65), "finalists", "between top (10) and the field"),
        (LadderSettings(final_share=1.0), "final_share", "at least 0 and below 1, got 1.0"),
        (LadderSettings(final_share=-0.1), "final_share", "at least 0 and below 1"),
        (LadderSettings(race_confidence=0.9), "race_confidence", "race_confidence needs top"),
        (
            LadderSettings(top=3, race_confidence=0.5, rounds=9),
            "race_confidence",
            "between 0.5 and 1, got 0.5",
        ),
        (
            LadderSettings(top=3, race_confidence=0.9),
            "race_confidence",
            "below confidence 0.95 needs a budget (max_matches or rounds)",
        ),
    ],
)
def test_bad_settings_are_named_by_key(settings: LadderSettings, key: str, message: str) -> None:
    problems = check_settings(settings, 64)
    assert [found for found, _ in problems] == [key]
    assert message in problems[0][1]


def test_a_field_not_yet_known_leaves_out_the_checks_that_need_its_size() -> None:
    """A league's settings at load: its field is known only when it runs."""
    assert check_settings(LadderSettings(top=80, finalists=90, max_matches=40), None) == []
    assert check_settings(LadderSettings(top=80, finalists=90, max_matches=40), 64) != []
    problems = check_settings(LadderSettings(max_matches=1, finalists=3), None)
    assert [key for key, _ in problems] == ["max_matches", "finalists"]
    assert "below one duplicate pair: 1 matches" in problems[0][1]


def test_good_settings_have_no_problems() -> None:
    assert check_settings(LadderSettings(top=10, max_matches=64, rounds=3), 64) == []
    # A race stricter than the certification needs no budget; a looser one has one.
    assert check_settings(LadderSettings(top=3, race_confidence=0.99), 64) == []
    assert check_settings(LadderSettings(top=3, race_confidence=0.9, rounds=9), 64) == []


def test_perfect_matchings_are_all_the_matchings() -> None:
    assert perfect_matchings(2).tolist() == [[[0, 1]]]
    assert len(perfect_matchings(6)) == 15
    matchings = perfect_matchings(10)
    assert len(matchings) == 945
    as_sets = {frozenset(frozenset(pair) for pair in matching) for matching in matchings.tolist()}
    assert len(as_sets) == 945
    assert all(sorted(matching.ravel().tolist()) == list(range(10)) for matching in matchings)


def test_window_matchings_are_as_good_as_networkx_blossom() -> None:
    """Each window's matching by trying every matching weighs as much as the blossom
    algorithm's maximum-weight perfect matching of the same bots."""
    rng = random.Random(4)
    size = 96
    bots = tuple(names(size))
    meetings: Counter[frozenset[str]] = Counter(frozenset(rng.sample(bots, 2)) for _ in range(300))
    state = FieldState(
        bots,
        np.array([rng.gauss(1500, 150) for _ in bots]),
        np.array([rng.uniform(20, 150) ** 2 for _ in bots]),
        Counter(),
        meetings,
    )
    settings = LadderSettings(random_share=0.0)
    pairs, byes = swiss_pairs(state, list(range(size)), settings, 2, random.Random(1))
    assert not byes
    assert sorted(p for pair in pairs for p in pair) == list(range(size))
    by_window = {frozenset(pair) for pair in pairs}
    ranked = sorted(range(size), key=lambda p: -float(state.elo[p]))
    # Round 2 starts with a half window: windows of 4, then of WINDOW.
    bounds = [0, 4, *range(4 + WINDOW, size, WINDOW), size]
    for low, high in itertools.pairwise(bounds):
        window = ranked[low:high]
        graph: nx.Graph[int] = nx.Graph()
        for at, first in enumerate(window):
            for second in window[at + 1 :]:
                weight = 2 * NormalDist().cdf(
                    -(
                        abs(state.elo[first] - state.elo[second])
                        + 100 * meetings[frozenset((bots[first], bots[second]))]
                    )
                    / math.sqrt(state.variance[first] + state.variance[second])
                )
                graph.add_edge(first, second, weight=weight)
        blossom = nx.max_weight_matching(graph, maxcardinality=True)
        ours = [pair for pair in by_window if pair <= set(window)]
        assert len(ours) == len(window) // 2

        assert total_weight(graph, ours) == pytest.approx(total_weight(graph, blossom), rel=1e-9)


def total_weight(graph: nx.Graph[int], matching: Iterable[Iterable[int]]) -> float:
    """The weight of a matching's edges in ``graph``."""
    return sum(float(graph.edges[tuple(pair)]["weight"]) for pair in matching)


def test_every_bot_keeps_playing_when_the_whole_field_is_ranked() -> None:
    """A league's rule: over any 10 rounds, the most and least pairs of the bots in play
    differ by at most 25 %."""
    rng = random.Random(8)
    truth = {name: rng.gauss(0, 200) for name in names(33)}
    _, results = run_ladder(truth, LadderSettings(rounds=20))
    for first_round in range(1, 12):
        window = [r for r in results if first_round <= r.round < first_round + 10]
        played = Counter(name for r in window for name in (r.first, r.second))
        assert set(played) == set(truth)
        assert max(played.values()) <= 1.25 * min(played.values())


def test_pairs_with_one_void_match_count_as_one_decided_match() -> None:
    results = [
        PairOutcome("a", "b", 1, 0, 1),
        PairOutcome("c", "d", 2, 0, 1),
        PairOutcome("a", "c", 1, 1, 2),
        PairOutcome("b", "d", 0, 0, 2),  # both void: nothing to fit
    ]
    plan = plan_round(["a", "b", "c", "d"], results, 3, 1, LadderSettings(), matches_played=8)
    assert plan.fit.ratings["a"].elo is not None
    assert (plan.fit.ratings["a"].elo or 0) > (plan.fit.ratings["b"].elo or 0)
    assert len(plan.pairs) == 2


def test_without_top_the_certification_is_about_the_whole_order() -> None:
    truth = {name: 400.0 * index for index, name in enumerate(names(4))}
    plans, _ = run_ladder(truth, LadderSettings(rounds=30))
    texts = [plan.certification.text() for plan in plans]
    assert texts[0].startswith("order of 4 not certified at 95 %: ")
    assert "order of 4 certified at 95 %" in texts
    certified = next(plan for plan in plans if plan.certification.certified)
    assert certified.stop
    assert certified.certification.ranking == ("bot03", "bot02", "bot01", "bot00")


def test_the_pair_intervals_of_an_adaptive_ladder_cover_the_truth() -> None:
    """Bots paired by rating, a dozen pairs each: the plain pair-clustered intervals run
    narrow and the ratings spread wide; the small-sample fit's intervals cover about 95 %."""
    covered = {True: 0, False: 0}
    slopes: dict[bool, list[float]] = {True: [], False: []}
    total = 0
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        truth = {name: rng.gauss(0, 200) for name in names(80)}
        _, results = run_ladder(truth, LadderSettings(rounds=12), seed=seed)
        wins, pairs = fit_inputs(results)
        mean = sum(truth.values()) / len(truth)
        for small_sample in (True, False):
            fit = fit_elo(
                list(truth),
                wins,
                pairs=pairs,
                virtual_draws=0,
                prior_games=2,
                small_sample=small_sample,
            )
            centred = {name: value - mean + 1500 for name, value in truth.items()}
            for name, rating in fit.ratings.items():
                assert rating.low is not None
                assert rating.high is not None
                covered[small_sample] += rating.low <= centred[name] <= rating.high
            errors = [(fit.ratings[n].elo or 0) - 1500 for n in truth]
            true = [centred[n] - 1500 for n in truth]
            slopes[small_sample].append(
                sum(e * t for e, t in zip(errors, true, strict=True)) / sum(t * t for t in true)
            )
        total += len(truth)
    assert 0.92 <= covered[True] / total <= 0.98
    assert covered[False] < covered[True]
    assert sum(slopes[True]) < sum(slopes[False])


def test_the_final_plays_the_comparisons_still_open() -> None:
    """Two leaders close together, far above the rest: once the final has begun, a round
    plays a pair for each comparison of two finalists still open, and other pairs of
    finalists only to fill a round up to half the finalists; two finalists whose order is
    decided meet only then."""
    truth = {"ace": 1500.0, "king": 1450.0}
    truth |= {name: 0.0 for name in names(22)}
    plans, _ = run_ladder(truth, LadderSettings(top=2, finalists=6, max_matches=3000))
    finals = [plan for plan in plans if plan.phase == FINAL and plan.pairs]
    assert finals
    skipped = 0
    for plan in finals:
        finalists = [name for name, status in plan.status.items() if status == FINALIST]
        asked = {
            frozenset(found)
            for text in plan.certification.open
            for found in re.findall(r"#\d+ (\S+) over #\d+ (\S+):", text)
            if set(found) <= set(finalists)
        }
        assert asked
        played = {frozenset(pair) for pair in plan.pairs}
        assert asked <= played
        assert len(plan.pairs) == max(len(asked), len(finalists) // 2)
        skipped += len(finalists) * (len(finalists) - 1) // 2 - len(plan.pairs)
    assert skipped > 0
    assert plans[-1].certification.certified


def test_the_budget_cut_of_a_final_round_keeps_the_open_comparisons() -> None:
    """The last round of a final cut to the budget keeps the comparisons still open before
    the pairs that only fill a round, even when those are closer (seed 5: one pair left
    for the open #1 over #2 and a fill-in pair of two bots of the flat field)."""
    truth = {"ace": 400.0, "king": 380.0} | {name: 0.0 for name in names(10)}
    settings = LadderSettings(top=2, max_matches=150, finalists=8)
    plans, results = run_ladder(truth, settings, seed=5)
    assert 2 * len(results) == 150
    last = next(plan for plan in reversed(plans) if plan.pairs)
    assert last.phase == FINAL
    asked = {
        frozenset(found)
        for text in last.certification.open
        for found in re.findall(r"#\d+ (\S+) over #\d+ (\S+):", text)
    }
    assert {frozenset(pair) for pair in last.pairs} <= asked


def test_final_pairs_fill_a_round_with_pairs_of_the_open_comparisons_bots() -> None:
    """One open comparison among six finalists: it is played, and two more pairs of
    finalists with a bot of it, the two whose order the fit knows least, rather than the
    closer pair of two decided bots; no comparison open among the finalists: a round
    robin."""
    names_ = ("a", "b", "c", "d", "e", "f")
    elo = np.array([300.0, 290.0, 200.0, 195.0, 0.0, -300.0])
    variance = np.full(6, 40.0**2)
    state = FieldState(names_, elo, variance, Counter(), Counter())
    pairs = final_pairs(state, range(6), {frozenset(("a", "b"))})
    # (a, b) asked; then b-c (90 Elo apart) and b-d (95), not c-d (5 apart, both decided).
    assert pairs == [(0, 1), (1, 2), (1, 3)]
    assert len(final_pairs(state, range(6), {frozenset(("a", "z"))})) == 15


def test_a_looser_race_confidence_rests_more_bots_on_the_same_results() -> None:
    """``race_confidence`` is the one-sided confidence of leaving the race: on the same
    results, 0.6 rests every bot the default (``1 - 0.05 / 3``) rests and more, and a
    stricter 0.999 fewer."""
    truth = {name: 15.0 * index for index, name in enumerate(names(24))}
    _, results = run_ladder(truth, LadderSettings(rounds=4))

    def resting(race_confidence: float | None) -> set[str]:
        settings = LadderSettings(top=3, race_confidence=race_confidence)
        plan = plan_round(list(truth), results, 5, 1, settings, matches_played=2 * len(results))
        return {name for name, status in plan.status.items() if status == OUT}

    default, loose, strict = resting(None), resting(0.6), resting(0.999)
    assert strict < default < loose
    assert resting(1 - 0.05 / 3) == default


def test_the_final_starts_when_only_the_final_share_of_the_budget_is_left() -> None:
    """A field the race cannot narrow in time (24 bots 20 Elo apart, top 3, 240 matches):
    once 60 % is spent, the final starts with the best five bots of that round's fit
    (``finalists`` by default: 3 and a margin of 2) and only they play; with
    ``final_share: 0`` the same field is still in its swiss rounds when the budget ends."""
    truth = {name: 20.0 * index for index, name in enumerate(names(24))}
    settings = LadderSettings(top=3, max_matches=240, final_share=0.4)
    plans, results = run_ladder(truth, settings)
    assert 2 * len(results) == 240
    played_before = 0
    for plan in plans:
        if played_before < 0.6 * 240:
            assert plan.phase == SWISS
        elif plan.pairs:
            assert plan.phase == FINAL
            finalists = {name for name, status in plan.status.items() if status == FINALIST}
            best = sorted(truth, key=lambda name: -(plan.fit.ratings[name].elo or 0.0))[:5]
            assert finalists == set(best)
            assert all({first, second} <= finalists for first, second in plan.pairs)
            assert set(plan.resting) == set(truth) - finalists
        played_before += 2 * len(plan.pairs)
    assert any(plan.phase == FINAL and plan.pairs for plan in plans)

    plans, _ = run_ladder(truth, LadderSettings(top=3, max_matches=240, final_share=0.0))
    assert all(plan.phase == SWISS for plan in plans)
    # Without a budget there is no share of it to keep: the same results, no final.
    unbounded = plan_round(
        list(truth), results, 99, 1, LadderSettings(top=3), matches_played=len(results) * 2
    )
    assert unbounded.phase == SWISS


def test_the_round_budget_counts_the_rounds_played_as_given() -> None:
    """A league's field that changed at round 22 counts its budget from there: round 25 is
    its fourth, the final starts at its eighth (70 % of 10 rounds), it stops after the tenth."""
    bots = names(10)
    settings = LadderSettings(top=2, rounds=10, final_share=0.3)

    def plan(rounds_played: int | None) -> RoundPlan:
        return plan_round(bots, [], 25, 1, settings, matches_played=0, rounds_played=rounds_played)

    assert plan(3).phase == SWISS
    assert not plan(3).stop
    assert plan(6).phase == SWISS  # 0.6 of the budget spent: the race goes on
    forced = plan(7)  # 0.7 exactly (no rounding away of the boundary)
    assert forced.phase == FINAL
    assert sum(status == FINALIST for status in forced.status.values()) == 4
    assert not plan(9).stop
    assert plan(9).phase == FINAL
    assert plan(10).stop
    # A plan that stops for the budget does not claim a final it never played.
    assert plan(10).phase == SWISS
    assert plan(None).stop  # by default every round before this one was the field's
