"""Every command's help reads well: in the order a user meets the commands, metavariables in
capitals, no value shown for a flag, an example that parses, nothing "not supported yet"."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tournaments.cli import app
from tournaments.cli.help import COMMAND_ORDER, EXAMPLES, TYPER_INTERNALS, HelpGroup

CONSOLE_SCRIPT = Path(sys.executable).with_name("aegis-ref")
GROUP = typer.main.get_command(app)
assert isinstance(GROUP, HelpGroup)
COMMANDS = sorted(GROUP.commands)


def _help(*arguments: str) -> str:
    """The help as the console script prints it to a terminal 100 columns wide."""
    run = subprocess.run(
        [str(CONSOLE_SCRIPT), *arguments, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


pytestmark = pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="aegis-ref not installed")


def test_the_commands_are_listed_in_the_order_a_user_meets_them() -> None:
    assert sorted(COMMAND_ORDER) == COMMANDS, "a command is missing from help.COMMAND_ORDER"
    commands_panel = _help().split("Commands")[1]
    listed = re.findall(r"^│ ([a-z-]+) ", commands_panel, flags=re.MULTILINE)
    assert listed == list(COMMAND_ORDER)


def _help_in_process(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "100"}, color=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_commands_help_reads_the_same_in_process() -> None:
    assert _help("match") == _help_in_process("match")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_commands_help_names_its_values_in_capitals_and_ends_with_an_example(
    command: str,
) -> None:
    text = _help_in_process(command)
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage, usage
    assert not re.search(r"\[[a-z_]+\]|\b[a-z]+_[a-z_]+\b", usage.split("[OPTIONS]")[-1]), usage
    assert "<bool>" not in text
    assert not re.search(r"<[a-z][a-z |\[\]]*>", text), "a lower-case type label"
    assert "not supported" not in text.lower()
    assert len(re.findall(r"^ *Examples?:", text, flags=re.MULTILINE)) == 1, text
    for example in EXAMPLES[command]:
        assert example in " ".join(text.split()), example


@pytest.mark.parametrize(
    ("command", "example"),
    [(command, example) for command in COMMANDS for example in EXAMPLES.get(command, ())],
)
def test_every_example_parses(command: str, example: str) -> None:
    words = shlex.split(example)
    assert words[:2] == ["aegis-ref", command]
    parsed, arguments = GROUP.commands[command], words[2:]
    subcommands = getattr(parsed, "commands", None)
    if subcommands:  # a family of commands (aegis-ref authors add ...): the one named
        parsed, arguments = subcommands[arguments[0]], arguments[1:]
    # Parsing checks every option's name and type, without running the command.
    context = parsed.make_context(command, arguments, resilient_parsing=True)
    assert context.params


#: Run where tournaments.cli is not imported, so that typer's own functions are read, not the
#: help's replacements: the parameters of each, or None where typer has no such function.
_READ_TYPER = """
import importlib, inspect, json, sys
found = {}
for dotted in sys.argv[1:]:
    parts = dotted.split(".")
    owner = importlib.import_module(".".join(parts[:2]))
    for name in parts[2:]:
        owner = getattr(owner, name, None)
    function = owner.fget if isinstance(owner, property) else owner
    found[dotted] = list(inspect.signature(function).parameters) if callable(function) else None
print(json.dumps(found))
"""


@functools.cache
def _typer_functions() -> dict[str, list[str] | None]:
    read = subprocess.run(
        [sys.executable, "-c", _READ_TYPER, *TYPER_INTERNALS],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found: dict[str, list[str] | None] = json.loads(read.stdout)
    return found


@pytest.mark.parametrize("dotted", sorted(TYPER_INTERNALS))
def test_the_typer_internals_that_the_help_replaces_are_there(dotted: str) -> None:
    """cli/help.py replaces private parts of typer: a typer that renamed or reshaped one
    must fail here, by name, rather than show a help that silently changed."""
    parameters = _typer_functions()[dotted]
    assert parameters is not None, (
        f"typer {typer.__version__} has no {dotted}: update tournaments/cli/help.py for it, or "
        "keep typer below this version in pyproject.toml"
    )
    assert tuple(parameters) == TYPER_INTERNALS[dotted], (
        f"typer {typer.__version__}: {dotted} takes {parameters}, not the "
        f"{TYPER_INTERNALS[dotted]} that tournaments/cli/help.py replaces it with"
    )


def test_a_missing_typer_internal_would_be_found() -> None:
    read = subprocess.run(
        [sys.executable, "-c", _READ_TYPER, "typer.core.TyperOption.no_such_function"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(read.stdout) == {"typer.core.TyperOption.no_such_function": None}
