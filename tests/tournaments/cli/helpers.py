"""Running ``aegis-ref`` in-process, and reading and writing the records it makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from referee.records import dumps_line
from tournaments.cli import app

Line = dict[str, Any]

runner = CliRunner()


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
