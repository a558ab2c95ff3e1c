"""The coordinator fits the ratings on one BLAS thread: its CPUs are the bots'."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from threadpoolctl import threadpool_info, threadpool_limits

from tests.tournaments.helpers import wait_no_processes, write_config
from tournaments.config.tournament import load_config
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import run_tournament
from tournaments.stats.standings import Standings
from tournaments.store.rows import ResultRow


def _blas_threads() -> set[int]:
    """The thread counts of the BLAS libraries loaded in this process."""
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


class BlasWatch(QuietDisplay):
    """A quiet display that notes the BLAS threads whenever the standings are computed."""

    def __init__(self) -> None:
        super().__init__(Console(file=None, quiet=True))
        self.seen: list[set[int]] = []
        self.standings: Callable[[], Standings] | None = None

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        super().start(name, total, done, standings)
        self.standings = standings

    def match_stored(self, row: ResultRow) -> None:
        super().match_stored(row)
        assert self.standings is not None
        self.standings()  # as a display refreshes them during the run
        self.seen.append(_blas_threads())


def test_the_standings_of_a_run_are_fitted_on_one_blas_thread(tmp_path: Path) -> None:
    """During a real run (bot processes, a real store) every standings computation runs
    with one BLAS thread; the process's own setting is back once the run is over."""
    import numpy  # noqa: F401  (the BLAS libraries are loaded, as the fits load them)
    import scipy.linalg  # noqa: F401

    config, marker = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=2)
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    display = BlasWatch()
    with threadpool_limits(limits=2, user_api="blas"):  # a thread per core of two, at least
        assert _blas_threads() == {2}
        summary, _standings = run_tournament(setup, display=display)
        assert _blas_threads() == {2}
    assert wait_no_processes(marker) == []
    assert summary.played == 2
    assert display.seen == [{1}, {1}]
