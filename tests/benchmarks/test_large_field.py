"""The large-field benchmark: seeded, the same figures in any worker process, within budget."""

from __future__ import annotations

import json
import multiprocessing
import re
from pathlib import Path

import pytest

from benchmarks.large_field import VARIANTS, Task, run_seed, summarise

METHODS = ("top", "whole", "random", "swiss", "neighbours")


def test_a_seed_gives_the_same_figures_in_a_worker_process() -> None:
    task = Task("planted", seed=3, size=30, share=0.3, kappa=0.68, methods=METHODS)
    echoed, here = run_seed(task)
    assert echoed == task
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.map(run_seed, [task]) == [(task, here)]
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
        _, figures = run_seed(
            Task(variant, seed=1, size=24, share=0.15, kappa=0.68, methods=("whole",))
        )
        assert figures["ladder, whole field"]["tau"] > 0.3


def test_per_seed_lines_are_summarised_by_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = []
    for seed in (1, 2):
        task, figures = run_seed(
            Task("planted", seed=seed, size=24, share=0.15, kappa=0.68, methods=("top",))
        )
        entry = {"variant": task.variant, "size": 24, "seed": seed, "share": 0.15}
        lines.append({**entry, "kappa": 0.68, "final_share": 0.3, "figures": figures})
    # A line written before final_share existed (nor final_from), grouped with a line of
    # final_share 0: the table takes the figures both have.
    older = {key: value for key, value in lines[1].items() if key != "final_share"}
    older["figures"] = {
        method: {key: value for key, value in figures.items() if key != "final_from"}
        for method, figures in older["figures"].items()
    }
    zero = {**lines[0], "final_share": 0.0}
    # A whole-field line of a seed the top-10 ladder also ran: its rows join the seed's.
    _, whole = run_seed(
        Task("planted", seed=2, size=24, share=0.15, kappa=0.68, methods=("whole",))
    )
    whole_line = {**lines[1], "figures": whole}
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(line) + "\n" for line in (*lines, whole_line)))
    second.write_text("".join(json.dumps(line) + "\n" for line in (lines[1], older, zero)))
    summarise([first, second])
    printed = capsys.readouterr().out
    # One table for the two seeds, a row for each final_share of the top-10 ladder.
    assert printed.count("24 bots, 2 seeds (1 to 2), κ = 0.68, ladder budget 15.0%\n") == 1
    assert printed.count("| ladder, top 10, final_share 0.3 |") == 1
    assert printed.count("| ladder, top 10, final_share 0.0 |") == 1
    assert printed.count("| ladder, whole field |") == 1
    # Each row counts its own seeds: top 10 set and order out of 2, or of 1.
    counted = {
        line.split(" | ")[0]: re.findall(r"\| (\d+)/(\d+) \|", line)[0][1]
        for line in printed.splitlines()
        if line.startswith("| ladder")
    }
    assert counted == {
        "| ladder, top 10, final_share 0.3": "2",
        "| ladder, top 10, final_share 0.0": "2",
        "| ladder, whole field": "1",
    }
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"variant": "planted"}\n')
    with pytest.raises(SystemExit, match=r"broken.jsonl:1: not a per-seed line"):
        summarise([broken])
