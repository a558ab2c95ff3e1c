"""Regenerate the golden records: ``python tests/golden/regenerate.py``.

Each file is a fixed-seed self-play record written by the same function as
``aegis-ref selfplay --record``. ``tests/tournaments/cli/test_selfplay.py`` regenerates them
into a temporary directory and compares the bytes, so a change to the record format, the
engine or the random policy shows up as a diff to review. Regenerate only when that change is
intended.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from referee.rules.options import RulesOptions
from referee.selfplay_runs import run_selfplay

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class GoldenRecord:
    """How one golden file is made: ``aegis-ref selfplay`` with these arguments."""

    matches: int
    seed: int
    options: RulesOptions
    policies: tuple[str, str] = ("random", "random")


#: The golden files by name. A new entry needs ``python tests/golden/regenerate.py`` once.
GOLDEN: dict[str, GoldenRecord] = {
    "selfplay-seed-7.jsonl": GoldenRecord(matches=3, seed=7, options=RulesOptions()),
    # The "first" policy stops, bids the floor and passes, so this one has saves, slave bids,
    # empty slave exchanges, and bids made exactly without the promise bonus (D5).
    "selfplay-seed-15-random-vs-first-promise-4.jsonl": GoldenRecord(
        matches=2,
        seed=15,
        options=RulesOptions(promise_min_bid=4),
        policies=("random", "first"),
    ),
}


def regenerate(directory: Path = HERE) -> list[Path]:
    """Write every golden record into ``directory``; return the paths written."""
    written = []
    for name, golden in GOLDEN.items():
        path = directory / name
        run_selfplay(
            matches=golden.matches,
            seed=golden.seed,
            policies=golden.policies,
            options=golden.options,
            record=path,
        )
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in regenerate():
        print(f"wrote {written_path}")
