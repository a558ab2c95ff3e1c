"""Fixtures of the tournament tests: a real tournament, played once for the tests that read
a tournament's output (the report, its replay pages, the standings by duplicate pair,
``verify`` and ``replay`` on a folder).

Tests read the output and may add files to it (a report, replay pages), never change a
record: a test that damages records copies them first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tournaments.played import play_tournament


@pytest.fixture(scope="session")
def tournament_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output directory of :func:`~tests.tournaments.played.play_tournament`."""
    return play_tournament(tmp_path_factory.mktemp("tournament"))
