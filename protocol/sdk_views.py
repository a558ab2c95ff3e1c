"""What the Python bot SDK hands a bot: typed, immutable views of the referee's messages.

The converters here run at every decision, so they are hand-written rather than pydantic:
plain dictionary look-ups (cards from a table of the 52 codes), exact type checks and the
engine's own value types. An observation becomes a :class:`referee.rules.game.Observation`, the
very type the in-process self-play policies receive, so one policy can play both ways.
Unknown fields are ignored, as the spec says; a missing or mistyped field raises
:class:`~protocol.errors.ProtocolError`, worded by the pydantic models of
:mod:`protocol.messages` when they can say more (they are imported only then, and in the
SDK's debug mode, which validates every message with them). This module does no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType
from typing import Any, NamedTuple, overload

from protocol.errors import ProtocolError
from protocol.wire import MAX_MESSAGE_BYTES, decode_map
from referee.rules.actions import (
    PASS,
    PLAYS,
    STOP,
    Action,
    Bid,
    Exchange,
    Pass,
    Play,
    Stop,
    bid,
    parse_action,
)
from referee.rules.cards import DECK, Card, Suit
from referee.rules.errors import ActionParseError, AegisError
from referee.rules.game import ExchangeRound, Observation, Phase, Role, Seat, Trick
from referee.rules.options import RulesOptions

__all__ = [
    "DECISION_KINDS",
    "MAX_MESSAGE_BYTES",
    "MAX_MESSAGE_ID",
    "BidMade",
    "CardPlayed",
    "Decision",
    "Event",
    "ExchangeMade",
    "ExchangeStopped",
    "ForfeitInfo",
    "GameEnded",
    "GameStarted",
    "LegalActions",
    "MatchEndInfo",
    "MatchInfo",
    "SlavePassed",
    "TimeControlInfo",
    "TrickTaken",
    "UnknownEvent",
    "decode_message",
    "format_action",
    "is_message_id",
    "parse_action_text",
    "parse_decide",
    "parse_events",
    "parse_match_end",
    "parse_match_start",
    "parse_observation",
    "read_bot_action",
    "validate_strictly",
]

#: The values of a ``decide`` message's ``decision`` field.
DECISION_KINDS = ("exchange", "bid", "play")
#: Largest message id (ids stay exact in JavaScript numbers).
MAX_MESSAGE_ID = 2**53 - 1

_CARDS: dict[str, Card] = {str(card): card for card in DECK}
_SEATS: dict[int, Seat] = {0: Seat.FIRST, 1: Seat.SECOND}
_PHASES: dict[str, Phase] = {phase.value: phase for phase in Phase}
_ROLES: dict[str, Role] = {role.value: role for role in Role}
_SUITS: dict[str, Suit] = {suit.value: suit for suit in Suit}
_KINDS = frozenset(DECISION_KINDS)


class _FieldError(ValueError):
    """A field of the wrong type or value, found by the fast converters."""


# ---------------------------------------------------------------------------------------------
# Field readers: exact types, because msgpack gives exact types (a bool is not an integer here)


def _int(value: Any, name: str) -> int:
    if type(value) is not int:
        raise _FieldError(f"{name} must be an integer, got {value!r}")
    return value


def _message_id(value: Any, name: str = "id") -> int:
    if type(value) is not int or not 0 <= value <= MAX_MESSAGE_ID:
        raise _FieldError(f"{name} must be an integer from 0 to 2**53 - 1, got {value!r}")
    return value


def is_message_id(value: Any) -> bool:
    """True for a valid message id: an integer from 0 to 2**53 - 1."""
    return type(value) is int and 0 <= value <= MAX_MESSAGE_ID


def _optional_int(value: Any, name: str) -> int | None:
    if value is not None and type(value) is not int:
        raise _FieldError(f"{name} must be an integer or nil, got {value!r}")
    return value


def _bool(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise _FieldError(f"{name} must be a boolean, got {value!r}")
    return value


def _text(value: Any, name: str) -> str:
    if type(value) is not str:
        raise _FieldError(f"{name} must be a string, got {value!r}")
    return value


def _seat(value: Any, name: str) -> Seat:
    if type(value) is int:
        seat = _SEATS.get(value)
        if seat is not None:
            return seat
    raise _FieldError(f"{name} must be a seat (0 or 1), got {value!r}")


def _optional_seat(value: Any, name: str) -> Seat | None:
    return None if value is None else _seat(value, name)


def _card(value: Any, name: str) -> Card:
    card = _CARDS.get(value) if type(value) is str else None
    if card is None:
        raise _FieldError(f"{name} must be a card code such as '10H', got {value!r}")
    return card


def _cards(value: Any, name: str) -> tuple[Card, ...]:
    if type(value) is list:
        try:
            return tuple([_CARDS[code] for code in value])
        except (KeyError, TypeError):
            pass
    raise _FieldError(f"{name} must be an array of card codes, got {value!r}")


def _pair(value: Any, name: str) -> tuple[int, int]:
    if type(value) is list and len(value) == 2:
        first, second = value
        if type(first) is int and type(second) is int:
            return first, second
    raise _FieldError(f"{name} must be an array of two integers, got {value!r}")


def _list(value: Any, name: str) -> list[Any]:
    if type(value) is not list:
        raise _FieldError(f"{name} must be an array, got {value!r}")
    return value


def _map(value: Any, name: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _FieldError(f"{name} must be a map, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# Decoding and error reports


def decode_message(payload: bytes) -> dict[str, Any]:
    """Decode one message's bytes to a map with a string ``type``; raise ProtocolError."""
    return decode_map(payload)


def _describe(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"missing field {error.args[0]!r}"
    return str(error) or type(error).__name__


def _pydantic_problems(data: Mapping[str, Any]) -> str | None:
    """What the pydantic models find wrong with a referee message, or None if nothing."""
    from pydantic import ValidationError  # only on the error and debug paths: pydantic loads slowly

    from protocol.messages import REFEREE_MESSAGE

    try:
        REFEREE_MESSAGE.validate_python(data)
    except ValidationError as error:
        return "; ".join(
            f"{'.'.join(str(part) for part in item['loc'][1:]) or 'message'}: {item['msg']}"
            for item in error.errors(include_url=False)[:5]
        )
    return None


def _malformed(data: Mapping[str, Any], error: Exception) -> ProtocolError:
    """A clear error for a message the fast converter refused."""
    problems = _pydantic_problems(data) if isinstance(data, dict) else None
    kind = data.get("type") if isinstance(data, dict) else None
    return ProtocolError(f"invalid {kind!r} message: {problems or _describe(error)}")


# Errors a converter may raise on malformed input: its own, KeyError for a missing field,
# TypeError/AttributeError for a value of the wrong shape, and the engine's parse errors.
_CONVERSION_ERRORS = (_FieldError, KeyError, TypeError, ValueError, IndexError, AttributeError)


def validate_strictly(data: Mapping[str, Any]) -> None:
    """Validate a referee message with the pydantic models (the SDK's debug mode).

    Raise ProtocolError naming the problems. Slow (tens of microseconds): not for every
    decision of a production bot.
    """
    problems = _pydantic_problems(data)
    if problems is not None:
        raise ProtocolError(f"invalid {data.get('type')!r} message: {problems}")


# ---------------------------------------------------------------------------------------------
# Actions


def _build_action_table() -> dict[str, Action]:
    table: dict[str, Action] = {"stop": STOP, "pass": PASS, "exchange": Exchange(())}
    table.update({f"bid {tricks}": bid(tricks) for tricks in range(1, 6)})
    table.update({str(action): action for action in PLAYS})
    return table


_ACTIONS: dict[str, Action] = _build_action_table()


def parse_action_text(text: str) -> Action:
    """Parse an action string from a ``legal`` list; raise ProtocolError if it is not one.

    A table look-up for every action but a discard, which is parsed card by card. Stricter
    than :func:`referee.rules.actions.parse_action`: exactly the spec's form (lower case, single
    spaces), which is how the referee writes its ``legal`` lists.
    """
    action = _ACTIONS.get(text)
    if action is not None:
        return action
    words = text.split(" ") if type(text) is str else ()
    if len(words) > 1 and words[0] == "exchange":
        try:
            cards = tuple([_CARDS[code] for code in words[1:]])
            if all(left.index < right.index for left, right in pairwise(cards)):
                return Exchange.from_sorted(cards)
            return Exchange(cards)  # sorts, and refuses a card named twice
        except (KeyError, AegisError):
            pass
    raise ProtocolError(f"not an action string: {text!r}")


def read_bot_action(text: str) -> Action:
    """The action a bot's ``act`` names, read exactly as SPEC section 2 writes actions (lower
    case, one space between words, nothing around them, cards in any order); raise
    :class:`~referee.rules.errors.ActionParseError` saying what is wrong.

    The referee and ``check-bot`` read every answer with it, so a bot that passes the check
    writes actions as any conforming referee reads them. Whether the action is legal is the
    rules' business: ``bid 7`` is read, and then refused by the rules.
    """
    if not isinstance(text, str):
        raise ActionParseError(f"an action must be text, got {type(text).__name__}")
    known = _ACTIONS.get(text)
    if known is not None:
        return known
    action = parse_action(text)  # what is no action at all is refused here, with the reason
    if isinstance(action, Exchange):
        try:
            return parse_action_text(text)
        except ProtocolError:
            pass
    elif str(action) == text:
        return action
    raise ActionParseError(
        f"{text!r} is not written as actions are (SPEC section 2: lower-case words, one space "
        f"between words, nothing before or after): {str(action)!r} is"
    )


_ACTION_TYPES = (Play, Bid, Exchange, Stop, Pass)


def format_action(action: Action | str) -> str:
    """The text form of an action a bot chose: an Action object or an action string.

    Raise ``TypeError`` for anything else. Strings are sent as they are: the referee is the
    one that checks them.
    """
    if type(action) is str:
        return action
    if isinstance(action, _ACTION_TYPES):
        return str(action)
    raise TypeError(
        f"a bot must return an Action or an action string, got {type(action).__name__}: {action!r}"
    )


class LegalActions(Sequence[Action]):
    """The legal actions of a decision, as :mod:`referee.rules.actions` objects, in the referee's
    order; ``text`` keeps the strings as received.

    Built lazily: an action is parsed the first time it is read, so a bot that picks one of
    thirty-two exchange actions parses one. A string that does not parse raises
    :class:`~protocol.errors.ProtocolError` when it is read.
    """

    __slots__ = ("_actions", "text")

    def __init__(self, text: Sequence[str]) -> None:
        #: The legal actions as the referee wrote them.
        self.text: tuple[str, ...] = tuple(text)
        self._actions: list[Action | None] = [None] * len(self.text)

    def __len__(self) -> int:
        return len(self.text)

    @overload
    def __getitem__(self, index: int) -> Action: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Action]: ...
    def __getitem__(self, index: int | slice) -> Action | Sequence[Action]:
        if isinstance(index, slice):
            return tuple(self[position] for position in range(len(self.text))[index])
        action = self._actions[index]
        if action is None:
            action = parse_action_text(self.text[index])
            self._actions[index] = action
        return action

    def __iter__(self) -> Iterator[Action]:
        for position in range(len(self.text)):
            yield self[position]

    def __contains__(self, action: object) -> bool:
        if isinstance(action, str):
            return action in self.text
        return any(action == candidate for candidate in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LegalActions):
            return self.text == other.text
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"LegalActions({list(self.text)!r})"


# ---------------------------------------------------------------------------------------------
# Events


class GameStarted(NamedTuple):
    """A game was dealt: its number, the master's seat, the key card, own hand as dealt and
    the match scores before it."""

    game: int
    master: Seat
    key_card: Card
    hand: tuple[Card, ...]
    scores: tuple[int, int]


class ExchangeMade(NamedTuple):
    """A seat exchanged ``card_count`` cards (which ones is private) in exchange round
    ``round`` (the wire's ``count``)."""

    seat: Seat
    round: int
    card_count: int


class ExchangeStopped(NamedTuple):
    """The master ended the exchange phase instead of exchanging in round ``round``."""

    seat: Seat
    round: int


class BidMade(NamedTuple):
    """A seat bid ``tricks``."""

    seat: Seat
    tricks: int


class SlavePassed(NamedTuple):
    """The slave passed."""

    seat: Seat


class CardPlayed(NamedTuple):
    """A seat played a card."""

    seat: Seat
    card: Card


class TrickTaken(NamedTuple):
    """Trick ``number`` (from 1) was completed: who led, both cards and who won it."""

    number: int
    leader: Seat
    lead: Card
    follow: Card
    winner: Seat


class GameEnded(NamedTuple):
    """A game was scored: ``points`` this game and ``scores`` after it, by seat."""

    game: int
    attacker: Seat
    bid: int
    tricks_won: tuple[int, int]
    points: tuple[int, int]
    scores: tuple[int, int]
    promise: bool
    conquest: bool
    save: bool


class UnknownEvent(NamedTuple):
    """An event of a kind this SDK does not know (a newer minor version): kept as received."""

    kind: str
    data: Mapping[str, Any]


Event = (
    GameStarted
    | ExchangeMade
    | ExchangeStopped
    | BidMade
    | SlavePassed
    | CardPlayed
    | TrickTaken
    | GameEnded
    | UnknownEvent
)


def _game_started(data: dict[str, Any]) -> GameStarted:
    return GameStarted(
        _int(data["game"], "game"),
        _seat(data["master"], "master"),
        _card(data["key_card"], "key_card"),
        _cards(data["hand"], "hand"),
        _pair(data["scores"], "scores"),
    )


def _exchange_made(data: dict[str, Any]) -> ExchangeMade:
    return ExchangeMade(
        _seat(data["seat"], "seat"), _int(data["round"], "round"), _int(data["count"], "count")
    )


def _exchange_stopped(data: dict[str, Any]) -> ExchangeStopped:
    return ExchangeStopped(_seat(data["seat"], "seat"), _int(data["round"], "round"))


def _bid_made(data: dict[str, Any]) -> BidMade:
    return BidMade(_seat(data["seat"], "seat"), _int(data["tricks"], "tricks"))


def _slave_passed(data: dict[str, Any]) -> SlavePassed:
    return SlavePassed(_seat(data["seat"], "seat"))


def _card_played(data: dict[str, Any]) -> CardPlayed:
    return CardPlayed(_seat(data["seat"], "seat"), _card(data["card"], "card"))


def _trick_taken(data: dict[str, Any]) -> TrickTaken:
    cards = _cards(data["cards"], "cards")
    if len(cards) != 2:
        raise _FieldError(f"cards must hold the card led and the card that followed: {cards}")
    return TrickTaken(
        _int(data["number"], "number"),
        _seat(data["leader"], "leader"),
        cards[0],
        cards[1],
        _seat(data["winner"], "winner"),
    )


def _game_ended(data: dict[str, Any]) -> GameEnded:
    return GameEnded(
        _int(data["game"], "game"),
        _seat(data["attacker"], "attacker"),
        _int(data["bid"], "bid"),
        _pair(data["tricks_won"], "tricks_won"),
        _pair(data["points"], "points"),
        _pair(data["scores"], "scores"),
        _bool(data["promise"], "promise"),
        _bool(data["conquest"], "conquest"),
        _bool(data["save"], "save"),
    )


_EVENT_READERS: dict[str, Callable[[dict[str, Any]], Event]] = {
    "game_start": _game_started,
    "exchange": _exchange_made,
    "stop": _exchange_stopped,
    "bid": _bid_made,
    "pass": _slave_passed,
    "play": _card_played,
    "trick": _trick_taken,
    "game_end": _game_ended,
}


def _events(value: Any) -> tuple[Event, ...]:
    events: list[Event] = []
    for position, data in enumerate(_list(value, "events")):
        kind = _text(_map(data, f"events[{position}]").get("event"), f"events[{position}].event")
        reader = _EVENT_READERS.get(kind)
        try:
            events.append(
                UnknownEvent(kind, MappingProxyType(data)) if reader is None else reader(data)
            )
        except KeyError as error:
            raise _FieldError(f"events[{position}] ({kind}): missing field {error}") from None
        except _FieldError as error:
            raise _FieldError(f"events[{position}] ({kind}): {error}") from None
    return tuple(events)


def parse_events(value: Any) -> tuple[Event, ...]:
    """Events from their wire maps (the ``events`` array of a ``decide`` or ``match_end``).

    An event of an unknown kind becomes an :class:`UnknownEvent`; raise ProtocolError for a
    malformed one.
    """
    try:
        return _events(value)
    except _CONVERSION_ERRORS as error:
        raise ProtocolError(f"invalid events: {_describe(error)}") from None


# ---------------------------------------------------------------------------------------------
# The observation


def _exchange_rounds(value: Any) -> tuple[ExchangeRound, ...]:
    return tuple(
        [
            ExchangeRound(
                _int(round_["master"], "exchange_rounds.master"),
                _optional_int(round_["slave"], "exchange_rounds.slave"),
            )
            for round_ in _list(value, "exchange_rounds")
        ]
    )


def _tricks(value: Any) -> tuple[Trick, ...]:
    tricks = []
    for trick in _list(value, "tricks"):
        cards = trick["cards"]
        if type(cards) is not list or len(cards) != 2:
            raise _FieldError(f"tricks.cards must hold two cards, got {cards!r}")
        tricks.append(
            Trick(
                _seat(trick["leader"], "tricks.leader"),
                _card(cards[0], "tricks.cards"),
                _card(cards[1], "tricks.cards"),
                _seat(trick["winner"], "tricks.winner"),
            )
        )
    return tuple(tricks)


def _observation(data: Any) -> Observation:
    data = _map(data, "observation")
    role = _ROLES.get(data["role"])
    if role is None:
        raise _FieldError(f"role must be 'master' or 'slave', got {data['role']!r}")
    trump = _SUITS.get(data["trump"])
    if trump is None:
        raise _FieldError(f"trump must be a suit letter S, H, D or C, got {data['trump']!r}")
    phase = _PHASES.get(data["phase"])
    if phase is None:
        raise _FieldError(f"phase must be exchange, bidding, play or over, got {data['phase']!r}")
    lead = data["lead"]
    # Positional arguments, in Observation's field order: this runs at every decision.
    return Observation(
        _seat(data["seat"], "seat"),
        _int(data["game"], "game"),
        _seat(data["master"], "master"),
        role,
        _cards(data["hand"], "hand"),
        _card(data["key_card"], "key_card"),
        trump,
        _cards(data["killers"], "killers"),
        phase,
        _optional_seat(data["to_move"], "to_move"),
        _exchange_rounds(data["exchange_rounds"]),
        _bool(data["exchange_stopped"], "exchange_stopped"),
        _int(data["master_exchange_count"], "master_exchange_count"),
        _int(data["stock_remaining"], "stock_remaining"),
        _optional_int(data["master_bid"], "master_bid"),
        _optional_int(data["slave_bid"], "slave_bid"),
        _bool(data["slave_passed"], "slave_passed"),
        _optional_seat(data["attacker"], "attacker"),
        _tricks(data["tricks"]),
        None if lead is None else _card(lead, "lead"),
        _seat(data["leader"], "leader"),
        _pair(data["tricks_won"], "tricks_won"),
        _pair(data["scores"], "scores"),
        _int(data["opponent_hand_size"], "opponent_hand_size"),
        None,  # the game's result: never part of a decision (game_end events carry it)
    )


def parse_observation(data: Any) -> Observation:
    """The engine's :class:`~referee.rules.game.Observation` from a wire ``observation`` map.

    ``result`` is always None: a game's result travels in its ``game_end`` event.
    """
    try:
        return _observation(data)
    except _CONVERSION_ERRORS as error:
        raise ProtocolError(f"invalid observation: {_describe(error)}") from None


# ---------------------------------------------------------------------------------------------
# Match information


@dataclass(frozen=True, slots=True)
class TimeControlInfo:
    """The clock of a match: ms per decision, the match's time bank (None if none) and the
    extra time allowed for the handshake and the first decision; ``clock`` says what a
    decision is charged (protocol 1.2): ``"cpu"``, the CPU time of all the bot's processes
    and threads (then a decision's ms are CPU ms), or ``"wall"`` (as from every older
    referee)."""

    decision_ms: int
    bank_ms: int | None
    warmup_ms: int
    clock: str = "wall"


@dataclass(frozen=True, slots=True)
class MatchInfo:
    """A match, as ``match_start`` announced it."""

    match_id: str
    seat: Seat
    opponent: str
    #: The rules options as sent, e.g. ``{"target_score": 25, …}``.
    rules: Mapping[str, int]
    time_control: TimeControlInfo
    #: The id of the ``match_start`` message.
    request_id: int
    #: The bot's own seed for this match (protocol 1.1; None from a 1.0 referee). The SDK
    #: reseeds :attr:`Bot.rng <protocol.sdk.Bot.rng>` with it before ``on_match_start``.
    seed: int | None = None

    @property
    def rules_options(self) -> RulesOptions:
        """The rules options as the engine's type (options this SDK does not know are left
        out), e.g. to simulate games with :mod:`referee.rules.game`."""
        known = RulesOptions.__dataclass_fields__
        return RulesOptions(**{name: value for name, value in self.rules.items() if name in known})


def parse_match_start(data: Mapping[str, Any]) -> MatchInfo:
    """A :class:`MatchInfo` from a decoded ``match_start`` message; raise ProtocolError."""
    try:
        rules = _map(data["rules"], "rules")
        for name, value in rules.items():
            _int(value, f"rules.{name}")
        clock = _map(data["time_control"], "time_control")
        return MatchInfo(
            _text(data["match_id"], "match_id"),
            _seat(data["seat"], "seat"),
            _text(data["opponent"], "opponent"),
            MappingProxyType(dict(rules)),
            TimeControlInfo(
                _int(clock["decision_ms"], "time_control.decision_ms"),
                _optional_int(clock.get("bank_ms"), "time_control.bank_ms"),
                _int(clock["warmup_ms"], "time_control.warmup_ms"),
                _clock(clock.get("clock")),
            ),
            _message_id(data["id"]),
            _seed(data.get("seed")),
        )
    except _CONVERSION_ERRORS as error:
        raise _malformed(data, error) from None


def _clock(value: Any) -> str:
    if value is None:
        return "wall"
    if value not in ("cpu", "wall"):
        raise _FieldError(f"time_control.clock must be 'cpu' or 'wall', got {value!r}")
    return str(value)


def _seed(value: Any) -> int | None:
    seed = _optional_int(value, "seed")
    if seed is not None and not 0 <= seed < 2**53:
        raise _FieldError(f"seed must be 0 to 2**53 - 1, got {seed}")
    return seed


@dataclass(frozen=True, slots=True)
class ForfeitInfo:
    """Why a match was forfeited: the offending seat, the fault kind and an explanation."""

    seat: Seat
    fault: str
    detail: str


@dataclass(frozen=True, slots=True)
class MatchEndInfo:
    """The end of a match: the rest of the last game's events and the result."""

    match_id: str
    #: What happened since this bot's last decision (the last game's end, usually).
    events: tuple[Event, ...]
    winner: Seat
    #: ``target``, ``both_over_target``, ``cold`` or ``forfeit``.
    termination: str
    scores: tuple[int, int]
    #: Finished games.
    games: int
    forfeit: ForfeitInfo | None
    #: The match as announced, or None if this connection never saw its ``match_start``.
    match: MatchInfo | None

    @property
    def is_win(self) -> bool | None:
        """True if this bot won, False if it lost, None if its seat is unknown."""
        return None if self.match is None else self.winner == self.match.seat


def parse_match_end(data: Mapping[str, Any], match: MatchInfo | None = None) -> MatchEndInfo:
    """A :class:`MatchEndInfo` from a decoded ``match_end`` message; raise ProtocolError."""
    try:
        result = _map(data["result"], "result")
        forfeit = result.get("forfeit")
        if forfeit is not None:
            forfeit = _map(forfeit, "result.forfeit")
            forfeit = ForfeitInfo(
                _seat(forfeit["seat"], "result.forfeit.seat"),
                _text(forfeit["fault"], "result.forfeit.fault"),
                _text(forfeit.get("detail", ""), "result.forfeit.detail"),
            )
        return MatchEndInfo(
            _text(data["match_id"], "match_id"),
            _events(data["events"]),
            _seat(result["winner"], "result.winner"),
            _text(result["termination"], "result.termination"),
            _pair(result["scores"], "result.scores"),
            _int(result["games"], "result.games"),
            forfeit,
            match,
        )
    except _CONVERSION_ERRORS as error:
        raise _malformed(data, error) from None


# ---------------------------------------------------------------------------------------------
# Decisions


class Decision(NamedTuple):
    """One ``decide`` request, ready to use: what to decide, the seat's complete view of the
    game, the legal actions, what happened since the last decision and the clock.

    Immutable (a named tuple, the cheapest immutable record to build at every decision).
    """

    #: The ``decide`` message's id (the ``act`` names it in ``reply_to``).
    request_id: int
    match_id: str
    #: ``exchange``, ``bid`` or ``play``.
    decision: str
    #: Everything this seat may know of the game; the engine's own type, cards as Card.
    observation: Observation
    #: The legal actions (lazily parsed); ``legal.text`` keeps the strings.
    legal: LegalActions
    #: What happened since this seat's last decision, oldest first.
    events: tuple[Event, ...]
    #: Time for this decision, in ms, measured by the referee from when it sent the request.
    deadline_ms: int
    #: The match's time bank left, in ms, or None if it has none.
    bank_ms: int | None
    #: The match as announced by ``match_start``, or None if this connection never saw it.
    match: MatchInfo | None
    #: :func:`time.monotonic` when the request arrived.
    received_at: float
    #: The decoded message itself, with any fields newer than this SDK.
    raw: Mapping[str, Any]
    #: :func:`time.process_time` (this process's CPU time, all its threads) when the SDK read
    #: the request; None if unknown (then :meth:`time_left` counts wall time whatever the
    #: clock).
    received_cpu: float | None = None

    @property
    def seat(self) -> Seat:
        """This bot's seat."""
        return self.observation.seat

    @property
    def hand(self) -> tuple[Card, ...]:
        """This bot's hand, in canonical order."""
        return self.observation.hand

    @property
    def lead(self) -> Card | None:
        """The card led to the current trick, when this bot plays second."""
        return self.observation.lead

    @property
    def trump(self) -> Suit:
        """The trump suit."""
        return self.observation.trump

    @property
    def legal_text(self) -> tuple[str, ...]:
        """The legal actions as the referee wrote them."""
        return self.legal.text

    @property
    def clock(self) -> str:
        """What this decision is charged, as ``match_start`` said: ``"cpu"`` or ``"wall"``
        (``"wall"`` when this connection never saw the match start)."""
        return self.match.time_control.clock if self.match is not None else "wall"

    def time_left(self) -> float:
        """Seconds left of ``deadline_ms`` (the bank not counted), in the unit the referee
        charges: under the CPU clock, this process's CPU time (all its threads) used since
        the request arrived, so waiting for a busy machine's CPU costs nothing; under the
        wall clock, wall time.

        The referee's clock started earlier, transport counts, and under the CPU clock so
        does the CPU of any process the bot started (not counted here): keep a margin.
        """
        if self.received_cpu is not None and self.clock == "cpu":
            return self.received_cpu + self.deadline_ms / 1000 - time.process_time()
        return self.received_at + self.deadline_ms / 1000 - time.monotonic()


def _decision(data: dict[str, Any], match: MatchInfo | None, received_at: float) -> Decision:
    kind = data["decision"]
    if kind not in _KINDS:
        raise _FieldError(f"decision must be exchange, bid or play, got {kind!r}")
    legal = _list(data["legal"], "legal")
    if not legal or not all(type(text) is str for text in legal):
        raise _FieldError(f"legal must be a non-empty array of action strings, got {legal!r}")
    try:
        observation = _observation(data["observation"])
    except KeyError as error:
        raise _FieldError(f"observation: missing field {error}") from None
    return Decision(
        _message_id(data["id"]),
        _text(data["match_id"], "match_id"),
        kind,
        observation,
        LegalActions(legal),
        _events(data["events"]),
        _int(data["deadline_ms"], "deadline_ms"),
        _optional_int(data["bank_ms"], "bank_ms"),
        match,
        received_at,
        MappingProxyType(data),
        time.process_time(),
    )


def parse_decide(
    data: dict[str, Any], match: MatchInfo | None = None, received_at: float | None = None
) -> Decision:
    """A :class:`Decision` from a decoded ``decide`` message; raise ProtocolError.

    ``match`` is the match's :class:`MatchInfo` if known; ``received_at`` defaults to now.
    """
    try:
        return _decision(data, match, time.monotonic() if received_at is None else received_at)
    except _CONVERSION_ERRORS as error:
        raise _malformed(data, error) from None
