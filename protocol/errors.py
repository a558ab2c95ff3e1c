"""Errors of the protocol package."""

from __future__ import annotations

__all__ = ["ProtocolError", "quoted"]


class ProtocolError(ValueError):
    """Bytes or a message that do not follow the protocol; the message says what and where."""


def quoted(value: object, limit: int = 80) -> str:
    """A value a peer sent, as an error message quotes it: its repr, cut to ``limit``
    characters (a bot's value may be 64 KiB long)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
