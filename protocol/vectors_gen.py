"""Golden vectors: one example of every message type as JSON and as its exact msgpack bytes.

The vectors are taken from a real match played by the rules engine (see
:func:`protocol.examples_gen.conversation`) and written to ``protocol/vectors/``: for each
name, ``NAME.json`` (indent 2, keys sorted, final newline) and ``NAME.msgpack``, the bytes of
:func:`protocol.codec.encode` of the same map with its keys sorted at every level, so that the
JSON and the bytes have the same key order. A test regenerates them in memory and fails if the
checked-in files differ. Regenerate with ``python -m protocol.vectors_gen``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol import builders
from protocol.codec import encode
from protocol.codes import ErrorCode, FaultKind, RejectCode
from protocol.examples_gen import Conversation, Sent, conversation
from protocol.messages import ANY_MESSAGE
from protocol.version import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from referee.rules.actions import play
from referee.rules.errors import IllegalActionError
from referee.rules.game import GameState, Seat, apply
from referee.rules.match import MatchResult, Termination
from referee.rules.options import RulesOptions

__all__ = [
    "VECTOR_DIRECTORY",
    "VECTOR_SEED",
    "build_vectors",
    "sorted_keys",
    "vector_files",
    "write_vectors",
]

#: Where the vectors are checked in.
VECTOR_DIRECTORY = Path(__file__).resolve().parent / "vectors"
#: The seed of the match the vectors come from (default rules; the bot is seat 0).
VECTOR_SEED = 20260101
_MATCH_ID = "m-000042"


def sorted_keys(value: Any) -> Any:
    """A copy of ``value`` with the keys of every map, at every level, in sorted order."""
    if isinstance(value, Mapping):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value


def _first(
    talk: Conversation, kind: str, accept: Callable[[dict[str, Any]], bool] = lambda _: True
) -> int:
    """The position in ``talk`` of the first message of type ``kind`` that ``accept`` takes."""
    for position, sent in enumerate(talk.messages):
        if sent.kind == kind and accept(sent.message):
            return position
    raise LookupError(f"the vector match has no {kind!r} message of the kind wanted")


def _answer(talk: Conversation, position: int) -> dict[str, Any]:
    answer = talk.messages[position + 1]
    if answer.kind != "act" or answer.message["reply_to"] != talk.messages[position].message["id"]:
        raise LookupError(f"message {position + 1} does not answer message {position}")
    return answer.message


def _illegal_play_text(state: GameState) -> str:
    """The engine's explanation of why it refuses a play in ``state``: an off-suit card if the
    seat must follow suit, else the key card, which is never in a hand."""
    seat = state.to_move
    if seat is None:
        raise ValueError(f"game {state.game_number} is over: nobody can play")
    hand = state.hands[seat]
    lead = state.lead
    off_suit = [card for card in hand if lead is not None and card.suit is not lead.suit]
    candidates = off_suit if len(off_suit) < len(hand) and off_suit else [state.key_card]
    action = play(candidates[0])
    try:
        apply(state, Seat(seat), action)
    except IllegalActionError as error:
        return str(error)
    raise AssertionError(f"{action} was unexpectedly legal")


def build_vectors() -> dict[str, dict[str, Any]]:
    """Every vector by name, as a message map with sorted keys, validated against the models."""
    talk = conversation(RulesOptions(), VECTOR_SEED, Seat.FIRST, match_id=_MATCH_ID)
    messages: list[Sent] = talk.messages

    exchange = _first(
        talk,
        "decide",
        lambda m: (
            m["decision"] == "exchange" and any(e["event"] == "game_end" for e in m["events"])
        ),
    )
    bid = _first(talk, "decide", lambda m: m["decision"] == "bid" and m["legal"][0] == "pass")
    play_ = _first(
        talk,
        "decide",
        # The first trick, second to play after passing, bound to follow suit with a choice.
        lambda m: (
            m["decision"] == "play"
            and m["observation"]["lead"] is not None
            and 1 < len(m["legal"]) < len(m["observation"]["hand"])
            and any(event["event"] == "pass" for event in m["events"])
        ),
    )
    decide_play = messages[play_].message
    match_end = messages[-1].message
    next_referee_id = match_end["id"] + 1
    next_bot_id = max(sent.message["id"] for sent in messages if sent.sender == "bot") + 1
    reason = _illegal_play_text(talk.states[decide_play["id"]])
    envelope = {"version": PROTOCOL_VERSION}
    vectors: dict[str, dict[str, Any]] = {
        "hello": messages[_first(talk, "hello")].message,
        "welcome": messages[_first(talk, "welcome")].message,
        "reject": envelope
        | {"id": 1}
        | builders.reject(
            1,
            RejectCode.VERSION,
            "no common protocol version: the bot offers 2.0, the referee speaks "
            + ", ".join(SUPPORTED_VERSIONS),
            SUPPORTED_VERSIONS,
        ),
        "match_start": messages[_first(talk, "match_start")].message,
        "ready": messages[_first(talk, "ready")].message,
        "decide_exchange": messages[exchange].message,
        "act_exchange": _answer(talk, exchange),
        "decide_bid": messages[bid].message,
        "act_bid": _answer(talk, bid),
        "decide_play": decide_play,
        "act_play": _answer(talk, play_),
        "error": envelope
        | {"id": decide_play["id"] + 1}
        | builders.error(_answer(talk, play_)["id"], ErrorCode.ILLEGAL_ACTION, reason),
        "match_end": match_end,
        "match_end_forfeit": envelope
        | {"id": 3}
        | builders.match_end(
            "m-000043",
            [],
            MatchResult(Seat.FIRST, Termination.FORFEIT, (0, 0), 0),
            _Cause(1, FaultKind.TIMEOUT, "no act within 1000 ms and no time bank left (decide 3)"),
        ),
        "ping": envelope | {"id": next_referee_id} | builders.ping(),
        "pong": envelope | {"id": next_bot_id, "type": "pong", "reply_to": next_referee_id},
        "shutdown": envelope
        | {"id": next_referee_id + 1}
        | builders.shutdown("tournament finished"),
    }
    for message in vectors.values():
        ANY_MESSAGE.validate_python(message)  # raises if a vector is not a valid message
    return {name: sorted_keys(vectors[name]) for name in sorted(vectors)}


@dataclass(frozen=True, slots=True)
class _Cause:
    """The forfeit of the example ``match_end``."""

    seat: int
    kind: FaultKind
    detail: str


def vector_files() -> dict[str, bytes]:
    """Every vector file's name and exact content, as checked in under ``protocol/vectors/``."""
    files: dict[str, bytes] = {}
    for name, message in build_vectors().items():
        text = json.dumps(message, indent=2, ensure_ascii=False) + "\n"
        files[f"{name}.json"] = text.encode("utf-8")
        files[f"{name}.msgpack"] = encode(message)
    return files


def write_vectors(directory: Path = VECTOR_DIRECTORY) -> list[Path]:
    """Write every vector file into ``directory`` (created if needed); return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, content in vector_files().items():
        path = directory / name
        path.write_bytes(content)
        written.append(path)
    return written


def main() -> None:
    """``python -m protocol.vectors_gen [DIR]``: regenerate the checked-in vectors."""
    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else VECTOR_DIRECTORY
    for path in write_vectors(directory):
        print(path)


if __name__ == "__main__":
    main()
