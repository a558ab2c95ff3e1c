"""Configs written to a folder and loaded, for the tests of the config and its formats."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tournaments.config.tournament import TournamentSetup, load_config
from tournaments.errors import ConfigError


def load(tmp_path: Path, text: str) -> TournamentSetup:
    """Write ``text`` as config.yaml in ``tmp_path`` and load it."""
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return load_config(path)


def errors(tmp_path: Path, text: str) -> list[str]:
    """The error lines of a config that must fail, without the directory."""
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return [str(issue).removeprefix(f"{tmp_path}/") for issue in caught.value.issues]
