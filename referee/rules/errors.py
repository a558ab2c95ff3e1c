"""Errors raised by the rules engine. All derive from :class:`AegisError` (a ``ValueError``)."""

from __future__ import annotations

__all__ = [
    "ActionParseError",
    "AegisError",
    "CardParseError",
    "IllegalActionError",
    "RecordError",
    "RulesOptionsError",
]


class AegisError(ValueError):
    """Base class of every error the rules engine raises about bad input."""


class CardParseError(AegisError):
    """A text code that is not one of the 52 cards."""


class ActionParseError(AegisError):
    """A text or mapping that does not describe an action."""


class RulesOptionsError(AegisError):
    """A rules option with an invalid name or value."""


class IllegalActionError(AegisError):
    """An action that the rules do not allow in this state, for this seat."""


class RecordError(AegisError):
    """A game record that is malformed or disagrees with the rules."""
