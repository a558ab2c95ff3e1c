"""The flags several commands share: each command that plays lists the rules flags where it
always did, and a bad value is a usage error that names it."""

from __future__ import annotations

import pytest
import typer
from typer.core import TyperGroup, TyperOption

from tests.tournaments.cli.helpers import invoke
from tournaments.cli import app

RULES_FLAGS = ["--target-score", "--cold-margin", "--promise-min-bid", "--max-exchange-rounds"]


def _flags(command: str) -> list[str]:
    """The command's options in the order of its ``--help``."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return [
        parameter.opts[0]
        for parameter in group.commands[command].params
        if isinstance(parameter, TyperOption)
    ]


@pytest.mark.parametrize(
    ("command", "before", "after"),
    [
        ("selfplay", "--policy", None),
        ("match", "--key-file", "--sandbox"),
        ("sprt", "--warmup-ms", "--sandbox"),
        ("play", "--color", "--sandbox"),
    ],
)
def test_the_rules_flags_stand_in_one_place(command: str, before: str, after: str | None) -> None:
    flags = _flags(command)
    at = flags.index(RULES_FLAGS[0])
    assert flags[at - 1 : at + len(RULES_FLAGS)] == [before, *RULES_FLAGS]
    assert flags[at + len(RULES_FLAGS) :][:1] == ([after] if after else [])


@pytest.mark.parametrize("command", [["selfplay"], ["match", "first", "first"]])
def test_a_bad_rules_value_is_a_usage_error(command: list[str]) -> None:
    result = invoke(*command, "--cold-margin", "0")
    assert result.exit_code == 2
    assert "rules option cold_margin must be between" in " ".join(
        result.output.replace("│", " ").split()
    )


def test_the_policy_is_checked_before_the_rules() -> None:
    result = invoke("selfplay", "--policy", "clever", "--cold-margin", "0")
    assert result.exit_code == 2
    assert "unknown policy 'clever'" in result.output
