"""The JSON Schema of the protocol, generated from the pydantic models in :mod:`protocol.messages`.

The checked-in files in ``protocol/schema/`` are this module's output; a test regenerates them
in memory and fails if they differ. Regenerate with ``aegis-ref schema --out protocol/schema``
(or ``python -m protocol.schema_gen``).

The schemas describe what a receiver accepts (pydantic's validation mode): fields with a
default may be left out, and unknown fields are allowed because receivers ignore them.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from protocol.messages import ANY_MESSAGE, BOT_MESSAGE, REFEREE_MESSAGE
from protocol.version import PROTOCOL_VERSION

__all__ = [
    "SCHEMA_DIRECTORY",
    "Direction",
    "schema_file_name",
    "schema_files",
    "schema_for",
    "schema_text",
    "write_schema_files",
]

#: Where the generated schema files are checked in.
SCHEMA_DIRECTORY = Path(__file__).resolve().parent / "schema"
_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class Direction(enum.StrEnum):
    """Which messages a schema covers."""

    #: Messages a bot sends to the referee.
    BOT = "bot"
    #: Messages the referee sends to a bot.
    REFEREE = "referee"
    #: Every message, either way.
    ALL = "all"


_ADAPTERS: dict[Direction, TypeAdapter[Any]] = {
    Direction.BOT: BOT_MESSAGE,
    Direction.REFEREE: REFEREE_MESSAGE,
    Direction.ALL: ANY_MESSAGE,
}
_TITLES = {
    Direction.BOT: "messages a bot sends to the referee",
    Direction.REFEREE: "messages the referee sends to a bot",
    Direction.ALL: "every message, either way",
}
_FILE_PARTS = {Direction.BOT: ".bot-to-referee", Direction.REFEREE: ".referee-to-bot"}


def schema_file_name(direction: Direction) -> str:
    """The file name of one direction's schema, e.g. ``aegis-protocol-1.0.schema.json``."""
    return f"aegis-protocol-{PROTOCOL_VERSION}{_FILE_PARTS.get(direction, '')}.schema.json"


def schema_for(direction: Direction) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one direction's messages, as a plain map."""
    generated = _ADAPTERS[direction].json_schema(mode="validation")
    header: dict[str, Any] = {
        "$schema": _DIALECT,
        "title": f"Aegis bot protocol {PROTOCOL_VERSION}: {_TITLES[direction]}",
        "description": (
            f"One msgpack map per message; protocol version {PROTOCOL_VERSION}. Generated from "
            "protocol/messages.py by protocol/schema_gen.py; see protocol/SPEC.md. Receivers "
            "ignore unknown fields."
        ),
    }
    return header | generated


def schema_text(direction: Direction) -> str:
    """One direction's schema as deterministic JSON: sorted keys, indent 2, final newline."""
    return json.dumps(schema_for(direction), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_files() -> dict[str, str]:
    """Every schema file's name and text, as checked in under ``protocol/schema/``."""
    return {schema_file_name(direction): schema_text(direction) for direction in Direction}


def write_schema_files(directory: Path = SCHEMA_DIRECTORY) -> list[Path]:
    """Write every schema file into ``directory`` (created if needed); return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, text in schema_files().items():
        path = directory / name
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


def main() -> None:
    """``python -m protocol.schema_gen [DIR]``: regenerate the checked-in schema files."""
    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIRECTORY
    for path in write_schema_files(directory):
        print(path)


if __name__ == "__main__":
    main()
