"""The ``schema`` command: prints one schema or every message's, or writes the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.schema_gen import Direction, schema_files, schema_text
from tests.tournaments.cli.helpers import invoke


@pytest.mark.parametrize("direction", list(Direction))
def test_schema_command_prints_one_schema(direction: Direction) -> None:
    result = invoke("schema", "--direction", direction.value)
    assert result.exit_code == 0, result.output
    assert result.stdout == schema_text(direction)


def test_schema_command_prints_every_message_by_default() -> None:
    result = invoke("schema")
    assert result.exit_code == 0, result.output
    assert result.stdout == schema_text(Direction.ALL)


def test_schema_command_writes_the_files(tmp_path: Path) -> None:
    out = tmp_path / "schema"
    result = invoke("schema", "--out", out)
    assert result.exit_code == 0, result.output
    written = {path.name: path.read_text(encoding="utf-8") for path in out.iterdir()}
    assert written == schema_files()


def test_schema_command_refuses_an_unknown_direction() -> None:
    result = invoke("schema", "--direction", "sideways")
    assert result.exit_code == 2
