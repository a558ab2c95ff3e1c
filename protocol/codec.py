"""The msgpack codec: bytes ↔ plain maps ↔ validated messages, with a size limit.

Malformed input of any kind raises :class:`ProtocolError` and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
from pydantic import BaseModel, ValidationError

from protocol.errors import ProtocolError
from protocol.messages import ANY_MESSAGE, BOT_MESSAGE, REFEREE_MESSAGE

__all__ = [
    "MAX_MESSAGE_BYTES",
    "decode",
    "decode_map",
    "encode",
    "parse_bot_message",
    "parse_message",
    "parse_referee_message",
    "validate_bot_message",
]

#: Largest message either side may send. A decision request is usually under 1.5 KiB.
MAX_MESSAGE_BYTES = 65_536
_MAX_ITEMS = 4096  # no message has more entries in one array or map


def encode(message: BaseModel | Mapping[str, Any]) -> bytes:
    """Encode a message (model or plain map) as one msgpack map; raise if it is too large."""
    data = message.model_dump(mode="json") if isinstance(message, BaseModel) else message
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    if len(packed) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(packed)} bytes exceeds {MAX_MESSAGE_BYTES}")
    return packed


def decode_map(payload: bytes) -> dict[str, Any]:
    """Decode one message's bytes to a map with a string ``type``; raise ProtocolError."""
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise ProtocolError(f"a message must be bytes, got {type(payload).__name__}")
    if len(payload) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(payload)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        data = msgpack.unpackb(
            payload,
            raw=False,
            strict_map_key=True,
            max_array_len=_MAX_ITEMS,
            max_map_len=_MAX_ITEMS,
            max_str_len=MAX_MESSAGE_BYTES,
            max_bin_len=MAX_MESSAGE_BYTES,
            max_ext_len=0,
        )
    except Exception as error:  # msgpack raises many types (ValueError, ExtraData, …)
        raise ProtocolError(f"not a msgpack message: {type(error).__name__}: {error}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"a message must be a msgpack map, got {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ProtocolError(f"a message needs a string field 'type', got {kind!r}")
    return data


def decode(payload: bytes) -> dict[str, Any]:
    """Alias of :func:`decode_map`."""
    return decode_map(payload)


def _validate(adapter: Any, data: Mapping[str, Any]) -> Any:
    try:
        return adapter.validate_python(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'message'}: {item['msg']}"
            for item in error.errors(include_url=False)[:5]
        )
        raise ProtocolError(f"invalid {data.get('type')!r} message: {problems}") from None


def validate_bot_message(data: Mapping[str, Any]) -> Any:
    """Strictly validate an already decoded map as a message a bot may send."""
    return _validate(BOT_MESSAGE, data)


def parse_bot_message(payload: bytes) -> Any:
    """Decode and strictly validate a message a bot sent."""
    return _validate(BOT_MESSAGE, decode_map(payload))


def parse_referee_message(payload: bytes) -> Any:
    """Decode and validate a message the referee sent."""
    return _validate(REFEREE_MESSAGE, decode_map(payload))


def parse_message(payload: bytes) -> Any:
    """Decode and validate any protocol message."""
    return _validate(ANY_MESSAGE, decode_map(payload))
