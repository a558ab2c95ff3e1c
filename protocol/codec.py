"""The msgpack codec: bytes ↔ plain maps ↔ validated messages, with a size limit.

Malformed input of any kind raises :class:`ProtocolError` and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
from pydantic import BaseModel, ValidationError

from protocol.errors import ProtocolError, quoted
from protocol.messages import ANY_MESSAGE, BOT_MESSAGE, MAX_ID, REFEREE_MESSAGE
from protocol.wire import BOT_MESSAGE_DEPTH, MAX_MESSAGE_BYTES, decode_map

__all__ = [
    "BOT_MESSAGE_DEPTH",
    "MAX_MESSAGE_BYTES",
    "check_act",
    "decode_map",
    "encode",
    "parse_bot_message",
    "parse_message",
    "parse_referee_message",
    "validate_bot_message",
]


def encode(message: BaseModel | Mapping[str, Any]) -> bytes:
    """Encode a message (model or plain map) as one msgpack map; raise if it is too large."""
    data = message.model_dump(mode="json") if isinstance(message, BaseModel) else message
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    if len(packed) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(packed)} bytes exceeds {MAX_MESSAGE_BYTES}")
    return packed


def _validate(adapter: Any, data: Mapping[str, Any]) -> Any:
    try:
        return adapter.validate_python(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'message'}: {item['msg']}"
            for item in error.errors(include_url=False)[:5]
        )
        raise ProtocolError(f"invalid {quoted(data.get('type'))} message: {problems}") from None


def validate_bot_message(data: Mapping[str, Any]) -> Any:
    """Strictly validate an already decoded map as a message a bot may send."""
    return _validate(BOT_MESSAGE, data)


def check_act(message: dict[str, Any]) -> None:
    """Check an already decoded ``act`` as :func:`validate_bot_message` would, much faster
    (the referee's hot path); raise :class:`ProtocolError` naming the bad field."""
    get = message.get
    # Exact types first (one test each); the slow path names the field and tells bool apart.
    if (
        type(get("id")) is not int
        or type(get("reply_to")) is not int
        or type(get("version")) is not str
        or type(get("action")) is not str
    ):
        _explain_bad_act(message)
    if not 0 <= message["id"] <= MAX_ID:
        raise ProtocolError(
            f"invalid 'act' message: id: must be 0 to {MAX_ID}, got {quoted(message['id'])}"
        )
    if len(message["action"]) > 64:
        raise ProtocolError("invalid 'act' message: action: longer than 64 characters")


def _explain_bad_act(message: dict[str, Any]) -> None:
    for name, expected in (("id", int), ("reply_to", int), ("action", str), ("version", str)):
        value = message.get(name)
        if not isinstance(value, expected) or isinstance(value, bool):
            raise ProtocolError(
                f"invalid 'act' message: {name}: expected {expected.__name__}, got {quoted(value)}"
            )


def parse_bot_message(payload: bytes) -> Any:
    """Decode and strictly validate a message a bot sent."""
    return _validate(BOT_MESSAGE, decode_map(payload, max_depth=BOT_MESSAGE_DEPTH))


def parse_referee_message(payload: bytes) -> Any:
    """Decode and validate a message the referee sent."""
    return _validate(REFEREE_MESSAGE, decode_map(payload))


def parse_message(payload: bytes) -> Any:
    """Decode and validate any protocol message."""
    return _validate(ANY_MESSAGE, decode_map(payload))
