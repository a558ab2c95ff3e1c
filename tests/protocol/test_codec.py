"""The msgpack codec: round trips of every message, strict validation, and malformed input that
never raises anything but ProtocolError."""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any, get_args

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from protocol.codec import (
    BOT_MESSAGE_DEPTH,
    MAX_MESSAGE_BYTES,
    decode_map,
    encode,
    parse_bot_message,
    parse_message,
    parse_referee_message,
)
from protocol.errors import ProtocolError

from .helpers import VECTORS, vector_bytes
from .strategies import ANY_VALUE, BOT_TYPES, MESSAGE_MODELS, MESSAGE_TYPES, message_maps

PARSERS: dict[str, Callable[[bytes], Any]] = {
    "any": parse_message,
    "bot": parse_bot_message,
    "referee": parse_referee_message,
}
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pack(value: Any) -> bytes:
    """msgpack bytes of any value, without the codec's checks."""
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def refuses(payload: bytes) -> ProtocolError:
    """Assert that every parser refuses ``payload`` with ProtocolError; return one error."""
    caught: ProtocolError | None = None
    for parser in PARSERS.values():
        with pytest.raises(ProtocolError) as info:
            parser(payload)
        caught = caught or info.value
    assert caught is not None
    return caught


def only_protocol_errors(payload: bytes) -> None:
    """Every parser either accepts ``payload`` or raises ProtocolError, nothing else."""
    for parser in (decode_map, *PARSERS.values()):
        with contextlib.suppress(ProtocolError):
            parser(payload)


# --- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("model", MESSAGE_MODELS, ids=lambda model: model.__name__)
@FUZZ
@given(data=st.data())
def test_every_message_round_trips(model: type[BaseModel], data: st.DataObject) -> None:
    raw = data.draw(message_maps(model))
    message = model.model_validate(raw)
    packed = encode(message)
    assert parse_message(packed) == message
    direction = parse_bot_message if raw["type"] in BOT_TYPES else parse_referee_message
    assert direction(packed) == message
    # A plain map goes through unchanged, and validates to the same message.
    assert decode_map(encode(raw)) == raw
    assert parse_message(encode(raw)) == message


def test_round_trips_cover_every_message_type() -> None:
    covered = {str(get_args(model.model_fields["type"].annotation)[0]) for model in MESSAGE_MODELS}
    assert covered == MESSAGE_TYPES
    assert {vector["type"] for vector in VECTORS.values()} == MESSAGE_TYPES


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vectors_round_trip_through_the_models(name: str) -> None:
    vector = VECTORS[name]
    message = parse_message(encode(vector))
    assert message.model_dump(mode="json") == vector


def test_unknown_fields_are_ignored_both_ways() -> None:
    for name, vector in VECTORS.items():
        extended = vector | {"added_in_1_1": {"anything": [1, "two", None]}}
        assert parse_message(encode(extended)) == parse_message(encode(vector)), name


# --- strict validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "path", "value", "field"),
    [
        ("hello", ["id"], "1", "hello.id"),
        ("act_play", ["reply_to"], "7", "act.reply_to"),
        ("ready", ["reply_to"], 7.0, "ready.reply_to"),
        ("pong", ["reply_to"], True, "pong.reply_to"),
        ("hello", ["name"], 7, "hello.name"),
        ("hello", ["versions"], "1.0", "hello.versions"),
        ("match_start", ["seat"], "0", "match_start.seat"),
        ("match_start", ["time_control", "decision_ms"], "1000", "time_control.decision_ms"),
        ("decide_play", ["observation", "game"], "1", "decide.observation.game"),
        ("decide_play", ["events", 0, "seat"], "0", "decide.events.0.pass.seat"),
        ("act_play", ["action"], b"play 7H", "act.action"),
    ],
)
def test_strict_validation_names_the_field(
    name: str, path: list[str | int], value: Any, field: str
) -> None:
    message = json.loads(json.dumps(VECTORS[name]))
    target = message
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    error = refuses(encode(message))
    assert field in str(error)
    assert repr(message["type"]) in str(error)


def leaves(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every scalar in a message with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
        if not value:
            yield path, value
    else:
        yield path, value


_WRONG: tuple[Any, ...] = ("1", 1, 1.5, True, [1], {"a": 1}, b"\x01")


def _same_kind(left: Any, right: Any) -> bool:
    return type(left) is type(right) or (
        isinstance(left, list | dict) and isinstance(right, list | dict) and not left
    )


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_any_field_of_the_wrong_type_is_refused(name: str) -> None:
    """Each field of each vector, set to each value of another type, is refused by name."""
    vector = VECTORS[name]
    for path, original in leaves(vector):
        key = next((step for step in reversed(path) if isinstance(step, str)), None)
        if original is None or key in ("type", "event"):
            continue  # null fields may take other types; the tags select the model
        for wrong in _WRONG:
            if _same_kind(wrong, original):
                continue
            message = json.loads(json.dumps(vector))
            target = message
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = wrong
            error = refuses(encode(message))
            assert str(key) in str(error), (path, wrong, str(error))


# --- malformed bytes ------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_protocol_errors(payload: bytes) -> None:
    only_protocol_errors(payload)


@FUZZ
@given(ANY_VALUE)
def test_random_msgpack_values_raise_only_protocol_errors(value: Any) -> None:
    only_protocol_errors(pack(value))


@FUZZ
@given(
    st.sampled_from(sorted(VECTORS)),
    st.data(),
)
def test_mutated_vectors_raise_only_protocol_errors(name: str, data: st.DataObject) -> None:
    message = json.loads(json.dumps(VECTORS[name]))
    paths = [path for path, _ in leaves(message) if path]
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3)):
        target = message
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = data.draw(ANY_VALUE)
    only_protocol_errors(pack(message))


@FUZZ
@given(st.sampled_from(sorted(MESSAGE_TYPES)), st.dictionaries(st.text(max_size=12), ANY_VALUE))
def test_random_maps_of_a_known_type_raise_only_protocol_errors(
    kind: str, fields: dict[str, Any]
) -> None:
    only_protocol_errors(pack(fields | {"type": kind}))


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_truncated_vectors_are_refused(name: str) -> None:
    payload = vector_bytes(name)
    for end in range(len(payload)):
        refuses(payload[:end])
    refuses(payload + b"\xc0")  # and a trailing byte too many


@pytest.mark.parametrize("value", [None, 0, -1, 2**64 - 1, 1.5, True, "hello", b"\x00", [], [1]])
def test_msgpack_that_is_not_a_map_is_refused(value: Any) -> None:
    assert "map" in str(refuses(pack(value)))


@pytest.mark.parametrize(
    "message",
    [{}, {"version": "1.0", "id": 1}, {"type": None}, {"type": 1}, {"type": b"ping"}],
)
def test_a_map_without_a_string_type_is_refused(message: dict[str, Any]) -> None:
    assert "'type'" in str(refuses(pack(message)))


def test_an_unknown_type_is_refused_but_decodes() -> None:
    payload = pack({"version": "1.0", "id": 3, "type": "teleport"})
    assert decode_map(payload)["type"] == "teleport"
    for parser in PARSERS.values():
        with pytest.raises(ProtocolError, match="teleport"):
            parser(payload)


def test_map_keys_must_be_strings() -> None:
    refuses(pack({1: "x", "type": "ping"}))
    # Binary keys decode but never match a field, so the message lacks its fields.
    refuses(pack({b"version": "1.0", b"id": 1, "type": "ping"}))


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_each_direction_refuses_the_other_directions_messages(name: str) -> None:
    payload = vector_bytes(name)
    kind = VECTORS[name]["type"]
    if kind == "error":  # either side may send an error
        parse_bot_message(payload)
        parse_referee_message(payload)
    elif kind in BOT_TYPES:
        parse_bot_message(payload)
        with pytest.raises(ProtocolError):
            parse_referee_message(payload)
    else:
        parse_referee_message(payload)
        with pytest.raises(ProtocolError):
            parse_bot_message(payload)


@pytest.mark.parametrize("payload", ["text", None, 12, ["list"], {"type": "ping"}])
def test_only_bytes_are_decoded(payload: Any) -> None:
    for parser in (decode_map, *PARSERS.values()):
        with pytest.raises(ProtocolError, match="bytes"):
            parser(payload)


def test_bytearray_and_memoryview_are_bytes_too() -> None:
    payload = vector_bytes("ping")
    from_array = decode_map(bytearray(payload))  # type: ignore[arg-type]
    from_view = decode_map(memoryview(payload))  # type: ignore[arg-type]
    assert from_array == from_view == VECTORS["ping"]


# --- limits ---------------------------------------------------------------------------------


def padded_hello(size: int) -> bytes:
    """A valid ``hello`` of exactly ``size`` bytes, padded by an unknown field."""
    base = VECTORS["hello"] | {"padding": ""}
    overhead = len(pack(base))
    # str 8/16/32 headers grow with the padding's length: adjust until the size is exact.
    for extra in range(0, 8):
        payload = pack(base | {"padding": "x" * (size - overhead - extra)})
        if len(payload) == size:
            return payload
    raise AssertionError(f"cannot pad a hello to {size} bytes")


def test_the_largest_message_is_accepted_and_one_byte_more_is_refused() -> None:
    largest = padded_hello(MAX_MESSAGE_BYTES)
    assert parse_bot_message(largest).name == VECTORS["hello"]["name"]
    error = refuses(padded_hello(MAX_MESSAGE_BYTES + 1))
    assert str(MAX_MESSAGE_BYTES) in str(error)
    refuses(b"\x00" * (10 * MAX_MESSAGE_BYTES))


def test_encode_refuses_oversize_messages() -> None:
    with pytest.raises(ProtocolError, match="exceeds"):
        encode(VECTORS["error"] | {"message": "x" * MAX_MESSAGE_BYTES})
    encode(VECTORS["error"] | {"message": "x" * 4000})


@pytest.mark.parametrize(
    "header",
    [b"\x91", b"\x81\xa1k", b"\xdc\x00\x01", b"\x81\xa1k\x91"],
    ids=["fixarray", "fixmap", "array16", "map-then-array"],
)
def test_nesting_bombs_are_refused(header: bytes) -> None:
    depth = (MAX_MESSAGE_BYTES - 1) // len(header)
    refuses(header * depth + b"\xc0")
    # Deep, but inside a valid message: refused once it passes msgpack's depth limit.
    ping = pack(VECTORS["ping"] | {"x": None})[:-1]
    refuses(ping + header * 5000 + b"\xc0")
    only_protocol_errors(ping + header * 200 + b"\xc0")


def test_nesting_inside_a_known_field_is_refused() -> None:
    fields = {key: value for key, value in VECTORS["match_start"].items() if key != "rules"}
    start = pack(fields | {"rules": None})
    assert start.endswith(b"\xc0")  # "rules" is the last field, so its value can be replaced
    refuses(start[:-1] + b"\x91" * 900 + b"\xc0")


@pytest.mark.parametrize("marker", [b"\xdc", b"\xdd", b"\xde", b"\xdf", b"\xda", b"\xdb"])
def test_huge_length_headers_are_refused_without_allocating(marker: bytes) -> None:
    size = {b"\xdc": 2, b"\xde": 2, b"\xda": 2}.get(marker, 4)
    header = marker + b"\xff" * size
    refuses(header)
    refuses(header + b"\x00" * 100)
    # The same header as the value of a field of a valid message.
    refuses(pack(VECTORS["ping"] | {"x": None})[:-1] + header)


@pytest.mark.parametrize(
    "payload",
    [
        b"\xc4\xff" + b"\x00" * 10,  # bin 8, short
        b"\xc6\xff\xff\xff\xff",  # bin 32
        b"\xc9\xff\xff\xff\xff\x01",  # ext 32
        b"\xd6\xff" + struct.pack(">I", 1),  # timestamp extension
        b"\xd4\x01\x00",  # fixext 1
        b"\xc1",  # never used
    ],
)
def test_binary_and_extension_types_are_refused(payload: bytes) -> None:
    refuses(payload)
    refuses(pack(VECTORS["ping"] | {"x": None})[:-1] + payload)


def test_invalid_utf8_is_refused() -> None:
    refuses(b"\x81\xa4type\xa4p\xffng")
    refuses(b"\x81\xa4ty\xc3\x28" + b"\xa4ping")


def _lists(count: int) -> Any:
    """``count`` arrays nested in one another around a string."""
    value: Any = "x"
    for _ in range(count):
        value = [value]
    return value


@pytest.mark.parametrize("field", ["type", "action", "padding"])
def test_a_bot_message_nested_too_deep_is_refused(field: str) -> None:
    """Nesting is capped for bot messages: a 1000-deep value would overflow the stack of
    anything that prints it (the error naming a bad ``type`` would)."""
    message = {"type": "act", "id": 1, "reply_to": 0, "action": "play AS", field: _lists(1000)}
    with pytest.raises(ProtocolError, match="nest maps and arrays at most 16 deep"):
        parse_bot_message(msgpack.packb(message))
    with pytest.raises(ProtocolError, match="nest maps and arrays at most 16 deep"):
        decode_map(msgpack.packb(message), max_depth=BOT_MESSAGE_DEPTH)


@pytest.mark.parametrize("padding", ["", "p" * 200])
def test_nesting_up_to_the_cap_is_accepted(padding: str) -> None:
    """The message map is level 1, so a field may hold 15 nested arrays and not 16, in a
    message of any length: a short one is checked too (SPEC section 2)."""
    message = {"type": "pong", "id": 1, "reply_to": 0, "x": _lists(15), "pad": padding}
    assert decode_map(msgpack.packb(message), max_depth=BOT_MESSAGE_DEPTH)["x"] == _lists(15)
    message["x"] = _lists(16)
    with pytest.raises(ProtocolError, match="at most 16 deep"):
        decode_map(msgpack.packb(message), max_depth=BOT_MESSAGE_DEPTH)


def test_a_short_act_nested_21_deep_is_refused() -> None:
    """A 70-byte act whose unknown field holds 20 nested arrays: level 21."""
    act = {"version": "1.1", "id": 3, "type": "act", "reply_to": 3, "action": "play AS"}
    payload = msgpack.packb({**act, "x": _lists(20)})
    assert len(payload) < 100
    with pytest.raises(ProtocolError, match="at most 16 deep"):
        parse_bot_message(payload)
    assert parse_bot_message(msgpack.packb(act)).action == "play AS"
