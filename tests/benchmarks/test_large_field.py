"""The large-field benchmark: seeded, the same figures in any worker process, within budget."""

from __future__ import annotations

import multiprocessing

from benchmarks.large_field import VARIANTS, Task, run_seed

METHODS = ("top", "whole", "random", "swiss", "neighbours")


def test_a_seed_gives_the_same_figures_in_a_worker_process() -> None:
    task = Task("planted", seed=3, size=30, share=0.3, kappa=0.68, methods=METHODS)
    here = run_seed(task)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(run_seed, [task]) == [here]
    assert set(here) == {
        "ladder, top 10",
        "ladder, whole field",
        "random",
        "swiss",
        "neighbours",
    }
    for figures in here.values():
        assert figures["share"] <= 0.3
        assert 0 <= figures["coverage"] <= 1
        assert 0 <= figures["plain_coverage"] <= 1
    # The baselines play as many matches as the whole-field ladder.
    assert here["random"]["share"] == here["ladder, whole field"]["share"]


def test_every_variant_runs() -> None:
    for variant in VARIANTS:
        figures = run_seed(
            Task(variant, seed=1, size=24, share=0.15, kappa=0.68, methods=("whole",))
        )
        assert figures["ladder, whole field"]["tau"] > 0.3
