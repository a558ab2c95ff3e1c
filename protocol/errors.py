"""Errors of the protocol package."""

from __future__ import annotations

__all__ = ["ProtocolError"]


class ProtocolError(ValueError):
    """Bytes or a message that do not follow the protocol; the message says what and where."""
