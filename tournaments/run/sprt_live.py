"""An SPRT run's status as a file, for ``aegis-ref serve`` to show while it runs and after
(``aegis-ref sprt ... --output DIR``, ``--serve HOST:PORT``).

After every pair the test writes :data:`SPRT_STATUS` (atomically) in its folder: the bots,
the hypotheses and error rates, the counts of pairs, the score, the LLR and its bounds in
force, the decision, the Elo estimates, and the LLR's path (at most :data:`MAX_PATH_POINTS`
points: every k-th pair, k doubling as the test goes on). Its ``state`` is ``running``
until the test ends; then the file is written a last time with the state it ended in
(:class:`RunState`), the verdict as the terminal printed it and the exit code, and stays.
"""

from __future__ import annotations

import json
import math
import os
from enum import Enum
from pathlib import Path
from typing import Any

from tournaments.stats.sprt import PairOutcome, SprtStatus, SprtTest
from tournaments.stats.sprt_elo import sequential_estimate

__all__ = ["MAX_PATH_POINTS", "SPRT_STATUS", "RunState", "SprtStatusFile", "read_sprt_status"]

SPRT_STATUS = "sprt.json"
MAX_PATH_POINTS = 500


class RunState(Enum):
    """Where an SPRT run is: playing, or how it ended."""

    RUNNING = "running"
    #: Ended by itself: a decision, ``--max-matches`` reached, or only void pairs.
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    #: Stopped by an error (a record that cannot be written, a bot that cannot run).
    FAILED = "failed"


def _elo(value: float) -> float | None:
    """One decimal; None for an infinite figure (JSON has none)."""
    return round(value, 1) if math.isfinite(value) else None


class SprtStatusFile:
    """Writes the status of one SPRT run into ``folder`` after each pair."""

    def __init__(self, folder: Path, test: SprtTest, names: tuple[str, str]) -> None:
        self.path = folder / SPRT_STATUS
        self.test = test
        self.names = names
        self._path: list[tuple[int, float, float, float]] = []
        self._every = 1
        self._last: tuple[int, SprtStatus] | None = None
        #: True once :meth:`finish` was called.
        self.finished = False

    def update(self, number: int, outcome: PairOutcome | None, status: SprtStatus) -> None:
        """Note pair ``number`` and write the status. Raises ``OSError``."""
        if number % self._every == 0:
            self._path.append((number, status.llr, status.lower, status.upper))
            if len(self._path) > MAX_PATH_POINTS:
                self._every *= 2
                self._path = [point for point in self._path if point[0] % self._every == 0]
        self._last = number, status
        self._write(number, status, RunState.RUNNING)

    def finish(self, state: RunState, verdict: str, exit_code: int) -> None:
        """Write the status a last time: how the run ended, its verdict (as printed) and
        exit code. Before any pair, nothing is written (there is nothing to show).
        Raises ``OSError``."""
        self.finished = True
        if self._last is not None:
            number, status = self._last
            self._write(number, status, state, verdict=verdict, exit_code=exit_code)

    def _write(
        self,
        number: int,
        status: SprtStatus,
        state: RunState,
        *,
        verdict: str | None = None,
        exit_code: int | None = None,
    ) -> None:
        counts = status.counts
        fixed = status.estimate
        document: dict[str, Any] = {
            "new": self.names[0],
            "old": self.names[1],
            "elo0": self.test.elo0,
            "elo1": self.test.elo1,
            "alpha": self.test.alpha,
            "beta": self.test.beta,
            "rule": self.test.rule.value,
            "wald_bounds": list(self.test.bounds),
            "pairs_played": number,
            "pairs": counts.pairs,
            "void_pairs": status.void_pairs,
            "won_both": counts.won_both,
            "split": counts.split,
            "lost_both": counts.lost_both,
            "score": None if not counts.pairs else round(counts.mean_score, 4),
            "llr": round(status.llr, 4),
            "lower": round(status.lower, 4),
            "upper": round(status.upper, 4),
            "decision": status.decision.value,
            "state": state.value,
            "verdict": verdict,
            "exit_code": exit_code,
            "elo": None,
            "elo_fixed": {
                "elo": _elo(fixed.elo),
                "lower": _elo(fixed.lower),
                "upper": _elo(fixed.upper),
            }
            if counts.pairs
            else None,
            "path": [
                {"pair": pair, "llr": round(llr, 4), "lower": round(low, 4), "upper": round(up, 4)}
                for pair, llr, low, up in self._path
            ],
        }
        if counts.pairs:
            estimate = sequential_estimate(self.test, counts)
            document["elo"] = {
                "elo": _elo(estimate.elo),
                "lower": _elo(estimate.lower),
                "upper": _elo(estimate.upper),
                "los": round(estimate.los, 4),
                "rough": estimate.clamped,
            }
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(json.dumps(document), encoding="utf-8")
        os.replace(temporary, self.path)


def read_sprt_status(folder: Path) -> dict[str, Any] | None:
    """The status an SPRT run wrote in ``folder``, None if there is none (or it cannot be
    read as one)."""
    try:
        document = json.loads((folder / SPRT_STATUS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None
