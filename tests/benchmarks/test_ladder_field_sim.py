"""The simulated sparring field: its Elo curve, its references and its ladder runs."""

from __future__ import annotations

import itertools

import numpy as np

from benchmarks.ladder_field import strengths
from benchmarks.ladder_field_sim import CURVE, Task, elo_of, make_field, run
from benchmarks.large_field import run_ladder


def test_a_larger_share_of_random_actions_is_never_stronger() -> None:
    shares = [share for share, _ in CURVE]
    assert shares == sorted(shares)
    assert shares[0] == 0.0
    assert shares[-1] == 1.0
    elos = [elo_of(index / 100) for index in range(101)]
    assert all(later <= earlier for earlier, later in itertools.pairwise(elos))
    assert elo_of(0.05) == (elo_of(0.0) + elo_of(0.1)) / 2


def test_the_references_and_the_ladder_on_a_small_field() -> None:
    chances = tuple(strengths(16, 3, 0.3, 0.8))
    references = run(Task(chances, top=3, share=0.3, kappa=0.68, seed=1, final_share=None))
    assert set(references) == {
        "uniform random pairs",
        "oracle: round robins of the true top 5",
        "oracle: neighbours in the true top 5",
    }
    # Three bots 200 Elo and more apart, all played against each other: found in order.
    assert references["oracle: round robins of the true top 5"][:2] == (True, True)
    assert references["oracle: neighbours in the true top 5"][:2] == (True, True)
    # A budget of a round robin's matches: the three strongest (255 Elo apart, the third 105
    # clear of the rest) are found in order in 6 of seeds 1 to 10 (166 of seeds 1 to 200),
    # seed 1 among them.
    task = Task(chances, top=3, share=1.0, kappa=0.68, seed=1, final_share=0.3)
    ladder = run(task)
    assert list(ladder) == ["ladder, final_share 0.3"]
    assert run(task) == ladder  # the seed decides everything
    assert ladder["ladder, final_share 0.3"][:2] == (True, True)
    # race_confidence reaches the ladder: a looser race narrows the field to the final
    # sooner on the same draws (at matches 16 to 22 rather than 64, seeds 1 to 5), and the
    # label names it.
    field = make_field(chances)
    finals = [
        run_ladder(field, 0.3, 2, 0.68, np.random.default_rng([2, 64]), 3, 0.3, race).final_from
        for race in (None, 0.6)
    ]
    assert finals[0] is not None
    assert finals[1] is not None
    assert finals[1] < finals[0]
    loose = Task(
        chances, top=3, share=0.3, kappa=0.68, seed=2, final_share=0.3, race_confidence=0.6
    )
    assert list(run(loose)) == ["ladder, final_share 0.3, race_confidence 0.6"]
