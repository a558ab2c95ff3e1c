"""Bytes to a message map: the one decoding step every reader shares.

Kept apart from :mod:`protocol.codec` so that bots using the SDK can decode without
importing pydantic and the message models (which would slow their start-up).
"""

from __future__ import annotations

from typing import Any

import msgpack

from protocol.errors import ProtocolError

__all__ = ["BOT_MESSAGE_DEPTH", "MAX_MESSAGE_BYTES", "decode_map"]

#: Largest message either side may send. A decision request is usually under 1.5 KiB.
MAX_MESSAGE_BYTES = 65_536
_MAX_ITEMS = 4096  # no message has more entries in one array or map
#: How deep a bot's message may nest maps and arrays (a ``hello`` needs 2): deeper values could
#: exhaust the stack of any code that walks them, even just to print them in an error.
BOT_MESSAGE_DEPTH = 16
_CONTAINERS = (dict, list)


def decode_map(payload: bytes, *, max_depth: int | None = None) -> dict[str, Any]:
    """Decode one message's bytes to a map with a string ``type``; raise ProtocolError.

    ``max_depth``: refuse maps and arrays nested deeper than this (the referee passes
    :data:`BOT_MESSAGE_DEPTH` for what bots send).
    """
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
    if max_depth is not None and _nests_deeper(data, max_depth):
        raise ProtocolError(f"a message may nest maps and arrays at most {max_depth} deep")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ProtocolError(f"a message needs a string field 'type', got {kind!r}")
    return data


def _nests_deeper(value: dict[str, Any], limit: int) -> bool:
    """Whether maps and arrays nest deeper than ``limit`` in ``value`` (itself level 1); one
    level at a time, so no depth can exhaust the stack here and each value is seen once.

    Every message is checked, however short (a 100-byte one can nest 90 deep): a map none of
    whose values is a map or an array (an act, a ready, a pong) costs one pass over its values.
    """
    for child in value.values():
        if isinstance(child, _CONTAINERS):
            break
    else:
        return limit < 1
    containers: list[Any] = [value]
    depth = 1
    while containers:
        if depth > limit:
            return True
        children: list[Any] = []
        for container in containers:
            children.extend(container.values() if type(container) is dict else container)
        containers = [child for child in children if isinstance(child, _CONTAINERS)]
        depth += 1
    return False
