"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tournaments.cli.helpers import invoke, read_lines, selfplay


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """A fresh three-match record written by ``aegis-ref selfplay``."""
    path = tmp_path / "r.jsonl"
    selfplay(path, "--matches", "3", "--seed", "7")
    return path


@pytest.fixture
def void_record(tmp_path: Path) -> Path:
    """A record of two void matches, played by ``aegis-ref match`` between two real
    processes that exit before their handshake."""
    path = tmp_path / "void.jsonl"
    result = invoke(
        "match", "false", "false", "--matches", "2", "--warmup-ms", "1000", "--record", path
    )
    assert result.exit_code == 0, result.output
    assert [line["termination"] for line in read_lines(path) if line["type"] == "match_end"] == [
        "void",
        "void",
    ]
    return path
