"""The protocol's codes: why a message or a ``hello`` was refused, and what a bot did wrong.

Plain enums, importable without the models (the bot SDK does, and starts faster for it);
:mod:`protocol.messages` uses the same values.
"""

from __future__ import annotations

import enum

__all__ = ["ErrorCode", "FaultKind", "RejectCode"]


class ErrorCode(enum.StrEnum):
    """Why a message was refused."""

    MALFORMED = "malformed"
    UNKNOWN_TYPE = "unknown_type"
    WRONG_REPLY_ID = "wrong_reply_id"
    ILLEGAL_ACTION = "illegal_action"
    TIMEOUT = "timeout"
    VERSION = "version"
    UNEXPECTED = "unexpected"


class RejectCode(enum.StrEnum):
    """Why a ``hello`` was refused."""

    VERSION = "version"
    AUTH = "auth"
    MALFORMED = "malformed"


class FaultKind(enum.StrEnum):
    """What a bot did wrong (``match_end``'s ``forfeit.fault``, and records); each fault
    costs the offender the match."""

    TIMEOUT = "timeout"
    CRASH = "crash"
    DISCONNECT = "disconnect"
    MALFORMED = "malformed"
    WRONG_REPLY_ID = "wrong_reply_id"
    ILLEGAL_ACTION = "illegal_action"
    HANDSHAKE = "handshake"
    VERSION = "version"
    #: The bot answered a request with an ``error`` message instead of an answer.
    BOT_ERROR = "bot_error"
