"""The golden vectors: current, exact, valid, and covering every message type and event."""

from __future__ import annotations

import json

import pytest

from protocol.codec import (
    decode_map,
    encode,
    parse_bot_message,
    parse_message,
    parse_referee_message,
)
from protocol.vectors_gen import VECTOR_DIRECTORY, build_vectors, vector_files
from protocol.version import PROTOCOL_VERSION

from .helpers import VECTORS, vector_bytes
from .strategies import BOT_TYPES, EVENT_KINDS, MESSAGE_TYPES

REGENERATE = "regenerate with `python -m protocol.vectors_gen` and commit the result"


def test_checked_in_vectors_are_current() -> None:
    expected = vector_files()
    present = {
        path.name for path in VECTOR_DIRECTORY.iterdir() if path.suffix in (".json", ".msgpack")
    }
    missing = sorted(set(expected) - present)
    stale = sorted(present - set(expected))
    differ = sorted(
        name
        for name in set(expected) & present
        if (VECTOR_DIRECTORY / name).read_bytes() != expected[name]
    )
    assert (missing, stale, differ) == ([], [], []), (
        f"protocol/vectors/ is out of date (missing {missing}, not generated {stale}, "
        f"differing {differ}): {REGENERATE}; delete files that are not generated"
    )


def test_generation_is_deterministic() -> None:
    assert build_vectors() == build_vectors()


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_msgpack_decodes_to_the_json(name: str) -> None:
    decoded = decode_map(vector_bytes(name))
    assert decoded == VECTORS[name]
    # The same key order too: the .json shows the order of the bytes.
    assert json.dumps(decoded) == json.dumps(VECTORS[name])


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_json_encodes_to_the_exact_msgpack(name: str) -> None:
    assert encode(VECTORS[name]) == vector_bytes(name)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_json_is_pretty_with_sorted_keys(name: str) -> None:
    text = (VECTOR_DIRECTORY / f"{name}.json").read_text(encoding="utf-8")
    assert text == json.dumps(VECTORS[name], indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector_is_a_valid_message_of_its_direction(name: str) -> None:
    payload = vector_bytes(name)
    message = parse_message(payload)
    assert message.type == VECTORS[name]["type"]
    if message.type in BOT_TYPES:
        assert parse_bot_message(payload) == message
    if message.type not in BOT_TYPES or message.type == "error":
        assert parse_referee_message(payload) == message


def test_vectors_cover_every_message_type() -> None:
    """The list of types comes from the models, so a new message needs a new vector."""
    assert {vector["type"] for vector in VECTORS.values()} == MESSAGE_TYPES


def test_vectors_cover_every_event() -> None:
    events = {event["event"] for vector in VECTORS.values() for event in vector.get("events", [])}
    assert events == EVENT_KINDS


def test_vectors_cover_every_decision() -> None:
    decisions = {v["decision"] for v in VECTORS.values() if v["type"] == "decide"}
    assert decisions == {"exchange", "bid", "play"}


def test_each_act_vector_answers_its_decide_with_a_legal_action() -> None:
    for kind in ("exchange", "bid", "play"):
        decide, act = VECTORS[f"decide_{kind}"], VECTORS[f"act_{kind}"]
        assert act["reply_to"] == decide["id"]
        assert act["action"] in decide["legal"]


def test_readme_describes_every_vector() -> None:
    readme = (VECTOR_DIRECTORY / "README.md").read_text(encoding="utf-8")
    for name in VECTORS:
        assert f"| `{name}` |" in readme, name
    assert "python -m protocol.vectors_gen" in readme
    assert f"of protocol version {PROTOCOL_VERSION} (" in readme
