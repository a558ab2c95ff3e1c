"""The generated JSON Schema: checked in and current (the ``aegis-ref schema`` command:
``tests/tournaments/cli/test_schema.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocol.schema_gen import (
    SCHEMA_DIRECTORY,
    Direction,
    schema_file_name,
    schema_files,
    schema_for,
    schema_text,
)
from protocol.version import PROTOCOL_VERSION
from referee.rules.options import MAX_EXCHANGE_ROUNDS_LIMIT

from .helpers import VECTORS
from .strategies import BOT_TYPES, MESSAGE_TYPES, REFEREE_TYPES

REGENERATE = "regenerate with `aegis-ref schema --out protocol/schema` and commit the result"
TYPES = {Direction.BOT: BOT_TYPES, Direction.REFEREE: REFEREE_TYPES, Direction.ALL: MESSAGE_TYPES}


def test_checked_in_schema_is_current() -> None:
    expected = schema_files()
    present = {path.name for path in SCHEMA_DIRECTORY.glob("*.json")}
    missing = sorted(set(expected) - present)
    stale = sorted(present - set(expected))
    differ = sorted(
        name
        for name in set(expected) & present
        if (SCHEMA_DIRECTORY / name).read_text(encoding="utf-8") != expected[name]
    )
    assert (missing, stale, differ) == ([], [], []), (
        f"protocol/schema/ is out of date (missing {missing}, not generated {stale}, "
        f"differing {differ}): {REGENERATE}; delete files that are not generated"
    )


def test_schema_text_is_deterministic_json() -> None:
    for direction in Direction:
        text = schema_text(direction)
        assert text == schema_text(direction)
        assert text.endswith("}\n")
        assert (
            text
            == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )


@pytest.mark.parametrize("direction", list(Direction))
def test_schema_covers_exactly_its_directions_messages(direction: Direction) -> None:
    schema = schema_for(direction)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert PROTOCOL_VERSION in schema["title"]
    assert PROTOCOL_VERSION in schema_file_name(direction)
    assert schema["discriminator"]["propertyName"] == "type"
    assert set(schema["discriminator"]["mapping"]) == TYPES[direction]
    assert len(schema["oneOf"]) == len(TYPES[direction])


def _definition(schema: dict[str, Any], reference: str) -> dict[str, Any]:
    name = reference.removeprefix("#/$defs/")
    found: dict[str, Any] = schema["$defs"][name]
    return found


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vectors_match_the_schemas_fields(name: str) -> None:
    """Each vector has every required field of its schema definition and no field it lacks."""
    schema = schema_for(Direction.ALL)
    vector = VECTORS[name]
    definition = _definition(schema, schema["discriminator"]["mapping"][vector["type"]])
    assert set(definition["required"]) <= set(vector)
    assert set(vector) <= set(definition["properties"])
    assert definition["properties"]["type"]["const"] == vector["type"]


def test_schema_keeps_the_models_descriptions() -> None:
    schema = schema_for(Direction.REFEREE)
    observation = schema["$defs"]["ObservationInfo"]["properties"]
    assert "canonical order" in observation["hand"]["description"]
    assert observation["key_card"]["pattern"] == "^(A|[2-9]|10|J|Q|K)[SHDC]$"


@pytest.mark.parametrize(
    ("definition", "field"),
    [
        ("TimeControl", "bank_ms"),
        ("MatchOutcome", "forfeit"),
        ("Shutdown", "reason"),
        ("Forfeit", "detail"),
    ],
)
def test_fields_the_referee_always_sends_are_required(definition: str, field: str) -> None:
    """SPEC section 5 lists these fields in every such message (nil where it says so): the
    schema requires them too, so a bot may rely on them."""
    for direction in (Direction.REFEREE, Direction.ALL):
        assert field in schema_for(direction)["$defs"][definition]["required"]


@pytest.mark.parametrize("event", ["StopEvent", "ExchangeEvent"])
def test_exchange_rounds_are_bounded_as_the_rules_bound_them(event: str) -> None:
    """A game has at most MAX_EXCHANGE_ROUNDS_LIMIT exchange rounds (RULES-DECISIONS.md,
    exchange phase); the master stops in one of them or not at all, so no event names a
    later round."""
    round_field = schema_for(Direction.REFEREE)["$defs"][event]["properties"]["round"]
    assert (round_field["minimum"], round_field["maximum"]) == (1, MAX_EXCHANGE_ROUNDS_LIMIT)
