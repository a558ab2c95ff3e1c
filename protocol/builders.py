"""Every message the referee sends a bot, built in one place.

Each builder returns the message's body as a plain map, without the envelope (``version``
and ``id``), which the sender adds when the message goes out. What a seat is told about a
game comes from the engine's observation of that seat alone (:mod:`protocol.views`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from protocol.codes import ErrorCode, FaultKind, RejectCode
from protocol.version import CLOCK_VERSION, PROTOCOL_VERSION, SEED_VERSION, at_least
from protocol.views import decision_kind, legal_to_wire, observation_to_wire
from referee.rules.actions import Action
from referee.rules.game import Observation, Seat
from referee.rules.match import MatchResult
from referee.rules.options import RulesOptions

__all__ = [
    "BOT_SEED_LIMIT",
    "ForfeitCause",
    "bot_seed",
    "bot_seed_for",
    "clock_for",
    "decide",
    "error",
    "match_end",
    "match_start",
    "ping",
    "reject",
    "shutdown",
    "welcome",
]


class ForfeitCause(Protocol):
    """What ``match_end`` tells of a forfeit: the seat at fault, the kind, the detail."""

    @property
    def seat(self) -> int: ...
    @property
    def kind(self) -> FaultKind: ...
    @property
    def detail(self) -> str: ...


#: Bot seeds (protocol 1.1) are below this: exact in a JavaScript number.
BOT_SEED_LIMIT = 2**53


def bot_seed(match_seed: int, seat: int) -> int:
    """The seed of the bot in ``seat`` for its own randomness in the match dealt from
    ``match_seed`` (``match_start``'s ``seed``): a keyed hash, so the two seats' seeds differ
    and neither reveals the match seed, and so the deal, it was made from."""
    width = max(8, (match_seed.bit_length() + 8) // 8)  # room for a sign: any int is a seed
    key = match_seed.to_bytes(width, "big", signed=True)
    if len(key) > hashlib.blake2b.MAX_KEY_SIZE:
        key = hashlib.blake2b(key).digest()
    digest = hashlib.blake2b(
        bytes([seat]), key=key, person=b"aegis bot seed", digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") % BOT_SEED_LIMIT


def clock_for(protocol: str | None, clock: str) -> str | None:
    """The ``time_control.clock`` of ``match_start`` for a bot speaking ``protocol`` (None
    before the handshake: the newest), or None if that version does not say it (1.0, 1.1)."""
    return clock if at_least(protocol or PROTOCOL_VERSION, CLOCK_VERSION) else None


def bot_seed_for(protocol: str | None, match_seed: int, seat: int) -> int | None:
    """The ``seed`` of ``match_start`` for the bot in ``seat`` speaking ``protocol`` (None
    before the handshake: the newest), or None if that version has no seed (1.0)."""
    if not at_least(protocol or PROTOCOL_VERSION, SEED_VERSION):
        return None
    return bot_seed(match_seed, seat)


def welcome(
    reply_to: int, protocol: str, referee: str, heartbeat_ms: int, max_message_bytes: int
) -> dict[str, Any]:
    """The answer to an accepted ``hello``."""
    return {
        "type": "welcome",
        "reply_to": reply_to,
        "protocol": protocol,
        "referee": referee,
        "heartbeat_ms": heartbeat_ms,
        "max_message_bytes": max_message_bytes,
    }


def reject(
    reply_to: int | None, code: RejectCode, reason: str, supported_versions: Sequence[str]
) -> dict[str, Any]:
    """The answer to a refused ``hello`` (``reply_to`` None if its id could not be read)."""
    return {
        "type": "reject",
        "reply_to": reply_to,
        "code": code.value,
        "reason": reason,
        "supported_versions": list(supported_versions),
    }


def match_start(
    match_id: str,
    seat: Seat,
    opponent: str,
    options: RulesOptions,
    time_control: Mapping[str, int | None],
    seed: int | None = None,
    clock: str | None = None,
) -> dict[str, Any]:
    """The ``match_start`` request to the bot in ``seat``; ``time_control`` holds
    ``decision_ms``, ``bank_ms`` and ``warmup_ms``; ``seed`` (protocol 1.1 on) is the bot's
    own seed for the match, left out when None; ``clock`` (protocol 1.2 on, ``cpu`` or
    ``wall``) goes in ``time_control``, left out when None."""
    message: dict[str, Any] = {
        "type": "match_start",
        "match_id": match_id,
        "seat": int(seat),
        "opponent": opponent,
        "rules": options.to_dict(),
        "time_control": dict(time_control) if clock is None else {**time_control, "clock": clock},
    }
    if seed is not None:
        message["seed"] = seed
    return message


def decide(
    match_id: str,
    seen: Observation,
    legal: Sequence[Action],
    events: list[dict[str, Any]],
    deadline_ms: int,
    bank_ms: int | None,
    observation_map: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``decide`` request for one decision, built from the seat's observation only.

    ``observation_map`` is ``observation_to_wire(seen)`` when the caller has it already
    (:meth:`~protocol.views.EventTracker.observation_map` builds it faster).
    """
    return {
        "type": "decide",
        "match_id": match_id,
        "decision": decision_kind(seen),
        "events": events,
        "observation": observation_to_wire(seen) if observation_map is None else observation_map,
        "legal": legal_to_wire(legal),
        "deadline_ms": deadline_ms,
        "bank_ms": bank_ms,
    }


def match_end(
    match_id: str,
    events: list[dict[str, Any]],
    result: MatchResult,
    forfeit: ForfeitCause | None,
) -> dict[str, Any]:
    """The ``match_end`` notice: the last events, the result and the forfeit if any."""
    return {
        "type": "match_end",
        "match_id": match_id,
        "events": events,
        "result": {
            "winner": int(result.winner),
            "termination": result.termination.value,
            "scores": list(result.scores),
            "games": result.games,
            "forfeit": None
            if forfeit is None
            else {"seat": forfeit.seat, "fault": forfeit.kind.value, "detail": forfeit.detail},
        },
    }


def ping() -> dict[str, Any]:
    """Are you alive? (answered with ``pong``)."""
    return {"type": "ping"}


def shutdown(reason: str) -> dict[str, Any]:
    """Exit now."""
    return {"type": "shutdown", "reason": reason}


def error(reply_to: int | None, code: ErrorCode, message: str) -> dict[str, Any]:
    """A message could not be accepted: ``reply_to`` names it where its id is known."""
    return {"type": "error", "reply_to": reply_to, "code": code.value, "message": message}
