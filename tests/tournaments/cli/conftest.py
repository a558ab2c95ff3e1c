"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tournaments.cli.helpers import selfplay


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """A fresh three-match record written by ``aegis-ref selfplay``."""
    path = tmp_path / "r.jsonl"
    selfplay(path, "--matches", "3", "--seed", "7")
    return path
