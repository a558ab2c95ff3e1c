"""Running ``aegis-ref`` in-process, and reading and writing the records it makes."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from referee.records import dumps_line
from tests.tournaments.helpers import FAST_RULES, RAWBOT
from tournaments.cli import app

Line = dict[str, Any]

runner = CliRunner()

#: The rules flags of short matches.
FAST = [f"--{key.replace('_', '-')}={value}" for key, value in FAST_RULES.items()]


def invoke(*arguments: str | Path) -> Result:
    """Run ``aegis-ref`` with these arguments, in-process."""
    return runner.invoke(app, [str(argument) for argument in arguments])


def selfplay(path: Path, *arguments: str) -> Result:
    """``aegis-ref selfplay --record PATH ARGUMENTS``, which must succeed."""
    result = invoke("selfplay", "--record", path, *arguments)
    assert result.exit_code == 0, result.output
    return result


def read_lines(path: Path) -> list[Line]:
    """The lines of a record, parsed."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_lines(path: Path, lines: list[Line]) -> None:
    """Write record lines as the referee writes them."""
    path.write_text("".join(dumps_line(line) + "\n" for line in lines), encoding="utf-8")


def run_script(folder: Path, command: str) -> Path:
    """An executable ``folder/run`` that starts ``command``: a bot whose command names it
    nothing better than ``run``."""
    folder.mkdir(parents=True)
    path = folder / "run"
    path.write_text(f"#!/bin/sh\nexec {command}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def rawbot(*arguments: str) -> str:
    """The command line of ``tests/bots/rawbot.py`` with these arguments."""
    return shlex.join([sys.executable, str(RAWBOT), *arguments])
