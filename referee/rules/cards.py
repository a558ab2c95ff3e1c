"""Cards, suits, ranks and the Aegis strength relation.

Every card has one canonical text code: the rank (``A``, ``2`` … ``10``, ``J``, ``Q``, ``K``)
followed by the suit letter (``S``, ``H``, ``D``, ``C``), e.g. ``"AS"``, ``"10H"``, ``"KD"``.
:func:`parse_card` is the only place that reads a code. There are exactly 52 :class:`Card`
objects; parsing or indexing always returns the same instance, so cards compare by identity
as cheaply as by value.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from referee.rules.errors import CardParseError

__all__ = [
    "ACE",
    "DECK",
    "JACK",
    "KING",
    "QUEEN",
    "RANK_CODES",
    "Card",
    "Suit",
    "beats_by_rank",
    "card_from_index",
    "draw_beats",
    "parse_card",
    "parse_cards",
    "sort_cards",
]


class Suit(enum.Enum):
    """A suit. The declaration order S > H > D > C is the tie-break order of the first draw."""

    SPADES = "S"
    HEARTS = "H"
    DIAMONDS = "D"
    CLUBS = "C"

    @property
    def letter(self) -> str:
        """The one-letter code used in card codes."""
        return self.value

    @property
    def symbol(self) -> str:
        """The Unicode suit symbol, for human-readable output."""
        return _SUIT_SYMBOLS[self]

    @property
    def is_red(self) -> bool:
        """True for hearts and diamonds."""
        return self in (Suit.HEARTS, Suit.DIAMONDS)

    @property
    def order(self) -> int:
        """0 for spades … 3 for clubs: lower is stronger in the first-master tie-break."""
        return _SUIT_ORDER[self]


_SUIT_SYMBOLS = {Suit.SPADES: "♠", Suit.HEARTS: "♥", Suit.DIAMONDS: "♦", Suit.CLUBS: "♣"}
_SUIT_ORDER = {suit: position for position, suit in enumerate(Suit)}

ACE = 1
JACK = 11
QUEEN = 12
KING = 13
RANK_CODES: dict[int, str] = {ACE: "A", JACK: "J", QUEEN: "Q", KING: "K"} | {
    number: str(number) for number in range(2, 11)
}
_RANK_BY_CODE = {code: rank for rank, code in RANK_CODES.items()}
# Display and canonical sort order within a suit: strongest first, the Ace between K and 10
# would be wrong since the relation is not an order; we list A, K, Q, J, 10 … 2 as the card does.
_RANK_SORT = {rank: position for position, rank in enumerate([ACE, 13, 12, 11, *range(10, 1, -1)])}


def beats_by_rank(rank: int, other: int) -> bool:
    """True if a card of ``rank`` beats a card of ``other`` rank in the same suit.

    K > Q > J > 10 > … > 2, and the Ace beats K, Q and J but loses to every number card.
    The relation is not transitive (A > K > 10 > A); a trick only compares two cards.
    """
    if rank == other:
        return False
    if rank == ACE:
        return other >= JACK
    if other == ACE:
        return rank < JACK
    return rank > other


@dataclass(frozen=True, slots=True, eq=False)
class Card:
    """One of the 52 cards. Obtain cards from :data:`DECK` or :func:`parse_card`.

    There is one instance per card (unpickling returns it too), so equality is identity.
    """

    rank: int
    suit: Suit
    #: Position in the canonical order (S, H, D, C; within a suit A, K, Q, J, 10 … 2).
    index: int
    #: The canonical text code, e.g. ``"10H"`` (a plain attribute: it is read very often).
    code: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", RANK_CODES[self.rank] + self.suit.value)

    @property
    def symbol(self) -> str:
        """The card with a suit symbol, e.g. ``"10♥"``."""
        return RANK_CODES[self.rank] + self.suit.symbol

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"parse_card({self.code!r})"

    def __hash__(self) -> int:
        return self.index

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return card_from_index, (self.index,)

    def __lt__(self, other: Card) -> bool:
        """Canonical display order (not trick strength): by suit, then A, K, Q … 2."""
        return self.index < other.index


def _build_deck() -> tuple[Card, ...]:
    ordered = sorted(
        ((suit, rank) for suit in Suit for rank in RANK_CODES),
        key=lambda pair: (pair[0].order, _RANK_SORT[pair[1]]),
    )
    return tuple(Card(rank, suit, index) for index, (suit, rank) in enumerate(ordered))


#: The 52 cards in canonical order.
DECK: tuple[Card, ...] = _build_deck()
_CODES: tuple[str, ...] = tuple(RANK_CODES[card.rank] + card.suit.letter for card in DECK)
_CARD_BY_CODE: dict[str, Card] = {code: card for code, card in zip(_CODES, DECK, strict=True)}


def parse_card(code: object) -> Card:
    """Return the card with this text code; raise :class:`CardParseError` if there is none.

    Parsing is exact: upper-case rank and suit letter, ``10`` for ten (``T`` is not accepted).
    """
    card = _CARD_BY_CODE.get(code) if isinstance(code, str) else None
    if card is None:
        raise CardParseError(
            f"not a card code: {code!r} (expected rank A,2-10,J,Q,K then suit S,H,D,C, e.g. '10H')"
        )
    return card


def parse_cards(codes: Iterable[str]) -> tuple[Card, ...]:
    """Parse several card codes, keeping their order."""
    return tuple(parse_card(code) for code in codes)


def card_from_index(index: int) -> Card:
    """The card at ``index`` in the canonical order (0 … 51)."""
    if not 0 <= index < len(DECK):
        raise CardParseError(f"card index out of range 0-51: {index}")
    return DECK[index]


def sort_cards(cards: Iterable[Card]) -> tuple[Card, ...]:
    """The cards in canonical order."""
    return tuple(sorted(cards, key=_card_index))


def _card_index(card: Card) -> int:
    return card.index


def draw_beats(card: Card, other: Card) -> bool:
    """True if ``card`` beats ``other`` in the draw for the first master.

    Ranks compare by :func:`beats_by_rank` whatever the suits (D1: an Ace loses to a number
    card and beats a face card); equal ranks are broken by suit order S > H > D > C.
    """
    if card.rank == other.rank:
        return card.suit.order < other.suit.order
    return beats_by_rank(card.rank, other.rank)
