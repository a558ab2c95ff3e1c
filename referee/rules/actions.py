"""The actions a seat can take, with one text form and one JSON form each.

Text forms: ``stop``, ``exchange 7H 2S`` (``exchange`` alone discards nothing), ``bid 3``,
``pass``, ``play 10H``. JSON forms: ``{"action": "exchange", "cards": ["7H", "2S"]}``,
``{"action": "bid", "tricks": 3}``, ``{"action": "play", "card": "10H"}``, ``{"action": "stop"}``,
``{"action": "pass"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from referee.rules.cards import DECK, Card, parse_card, sort_cards
from referee.rules.errors import ActionParseError, CardParseError

__all__ = [
    "PASS",
    "PLAYS",
    "PLAY_TEXTS",
    "STOP",
    "Action",
    "Bid",
    "Exchange",
    "Pass",
    "Play",
    "Stop",
    "action_from_json",
    "action_to_json",
    "bid",
    "parse_action",
    "play",
]


@dataclass(frozen=True, slots=True)
class Stop:
    """The master ends the exchange phase instead of exchanging."""

    def __str__(self) -> str:
        return "stop"


@dataclass(frozen=True, slots=True)
class Exchange:
    """Discard these cards face down and draw as many from the stock (none is allowed for the
    slave). Cards are kept in canonical order so that equal discards give equal actions."""

    cards: tuple[Card, ...]

    def __post_init__(self) -> None:
        given: object = self.cards  # callers may pass any iterable of cards
        if not isinstance(given, tuple):
            object.__setattr__(self, "cards", tuple(self.cards))
        if any(
            left.index >= right.index
            for left, right in zip(self.cards, self.cards[1:], strict=False)
        ):
            ordered = sort_cards(self.cards)
            if len(set(ordered)) != len(ordered):
                raise ActionParseError(
                    f"exchange names a card twice: {' '.join(str(c) for c in self.cards)}"
                )
            object.__setattr__(self, "cards", ordered)

    @classmethod
    def from_sorted(cls, cards: tuple[Card, ...]) -> Exchange:
        """Build from distinct cards already in canonical order, skipping the checks."""
        exchange = object.__new__(cls)
        object.__setattr__(exchange, "cards", cards)
        return exchange

    def __str__(self) -> str:
        return " ".join(["exchange", *(str(card) for card in self.cards)])


@dataclass(frozen=True, slots=True)
class Bid:
    """Bid to take at least this many of the five tricks."""

    tricks: int

    def __str__(self) -> str:
        return f"bid {self.tricks}"


@dataclass(frozen=True, slots=True)
class Pass:
    """The slave declines to overbid the master."""

    def __str__(self) -> str:
        return "pass"


@dataclass(frozen=True, slots=True)
class Play:
    """Play this card to the current trick."""

    card: Card

    def __str__(self) -> str:
        return f"play {self.card}"


Action = Stop | Exchange | Bid | Pass | Play

STOP = Stop()
PASS = Pass()
_BIDS = {tricks: Bid(tricks) for tricks in range(1, 6)}
#: The play action of each card, by canonical index.
PLAYS = tuple(Play(card) for card in DECK)


#: The text of each play action, by canonical card index (``"play 10H"``).
PLAY_TEXTS = tuple(str(action) for action in PLAYS)
_PLAY_BY_TEXT = dict(zip(PLAY_TEXTS, PLAYS, strict=True))


def bid(tricks: int) -> Bid:
    """The bid action for ``tricks`` (shared instances for 1 … 5)."""
    return _BIDS.get(tricks) or Bid(tricks)


def play(card: Card) -> Play:
    """The (shared) play action for ``card``."""
    return PLAYS[card.index]


def parse_action(text: str) -> Action:
    """Parse an action's text form, e.g. ``"play 10H"``; raise :class:`ActionParseError`."""
    if not isinstance(text, str):
        raise ActionParseError(f"an action must be text, got {type(text).__name__}")
    known = _PLAY_BY_TEXT.get(text)  # most actions are plays in canonical form
    if known is not None:
        return known
    words = text.split()
    if not words:
        raise ActionParseError("empty action text")
    verb, arguments = words[0].lower(), words[1:]
    try:
        if verb == "stop" and not arguments:
            return STOP
        if verb == "pass" and not arguments:
            return PASS
        if verb == "exchange":
            return Exchange(tuple(parse_card(code) for code in arguments))
        if verb == "play" and len(arguments) == 1:
            return play(parse_card(arguments[0]))
        # ASCII digits, and few of them: int() raises a bare ValueError on some Unicode digits
        # ('²') and on text of more than 4,300 digits.
        count = arguments[0] if len(arguments) == 1 else ""
        if verb == "bid" and count.isascii() and count.isdigit() and len(count) < 10:
            return bid(int(count))
    except CardParseError as error:
        raise ActionParseError(f"bad card in action {text!r}: {error}") from None
    raise ActionParseError(
        f"not an action: {text!r} (expected stop, pass, exchange CARD..., bid N or play CARD)"
    )


def action_to_json(action: Action) -> dict[str, Any]:
    """The JSON form of an action, as written in records."""
    if isinstance(action, Exchange):
        return {"action": "exchange", "cards": [str(card) for card in action.cards]}
    if isinstance(action, Bid):
        return {"action": "bid", "tricks": action.tricks}
    if isinstance(action, Play):
        return {"action": "play", "card": str(action.card)}
    if isinstance(action, Stop):
        return {"action": "stop"}
    return {"action": "pass"}


def action_from_json(data: Mapping[str, Any]) -> Action:
    """Parse the JSON form of an action; raise :class:`ActionParseError` naming the problem."""
    if not isinstance(data, Mapping):
        raise ActionParseError(f"an action must be a mapping, got {type(data).__name__}")
    kind = data.get("action")
    try:
        if kind == "stop":
            return STOP
        if kind == "pass":
            return PASS
        if kind == "exchange":
            cards = data.get("cards")
            if not isinstance(cards, list):
                raise ActionParseError(f"exchange needs a list 'cards', got {cards!r}")
            return Exchange(tuple(parse_card(code) for code in cards))
        if kind == "bid":
            tricks = data.get("tricks")
            if isinstance(tricks, bool) or not isinstance(tricks, int):
                raise ActionParseError(f"bid needs an integer 'tricks', got {tricks!r}")
            return bid(tricks)
        if kind == "play":
            return play(parse_card(data.get("card")))
    except CardParseError as error:
        raise ActionParseError(f"bad card in {kind} action: {error}") from None
    raise ActionParseError(f"unknown action {kind!r} (expected stop, pass, exchange, bid or play)")
