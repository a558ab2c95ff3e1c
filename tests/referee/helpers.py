"""Shared builders for the rules-engine tests: crafted decks, scripted games, card sets."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence

from referee.rules.actions import Action, parse_action
from referee.rules.cards import DECK, Card, parse_card
from referee.rules.game import GameState, Seat, apply, new_game
from referee.rules.options import RulesOptions

__all__ = [
    "ATTACKER_TABLE",
    "DEFAULTS",
    "all_cards_of",
    "cards",
    "cards_in",
    "crafted_deck",
    "deal",
    "run",
    "subsets_of",
    "to_play_phase",
]

DEFAULTS = RulesOptions()

#: The attacker table of RULES-DECISIONS.md, copied cell by cell: (bid, tricks) -> points.
ATTACKER_TABLE = {
    (1, 1): 2, (1, 2): 1, (1, 3): 1, (1, 4): 1, (1, 5): 2,
    (2, 2): 3, (2, 3): 2, (2, 4): 2, (2, 5): 3,
    (3, 3): 4, (3, 4): 3, (3, 5): 4,
    (4, 4): 5, (4, 5): 5,
    (5, 5): 7,
}  # fmt: skip


def cards(codes: str) -> tuple[Card, ...]:
    """Cards from space-separated codes, in the given order: ``cards("AS 10H")``."""
    return tuple(parse_card(code) for code in codes.split())


def crafted_deck(placements: Mapping[int, Card | str]) -> tuple[Card, ...]:
    """A deck with the chosen cards at the chosen positions and the rest in canonical order."""
    placed = {
        position: parse_card(card) if isinstance(card, str) else card
        for position, card in placements.items()
    }
    assert len(set(placed.values())) == len(placed), "a card placed twice"
    assert all(0 <= position < len(DECK) for position in placed), "position out of range"
    rest = iter(card for card in DECK if card not in placed.values())
    deck = tuple(placed[position] if position in placed else next(rest) for position in range(52))
    assert len(set(deck)) == 52
    return deck


def deal(master_hand: str, slave_hand: str, key_card: str, stock: str = "") -> tuple[Card, ...]:
    """A deck dealing these hands (positions 0-4 and 5-9), this key card (position 10) and
    these cards on top of the stock (positions 11 …); the rest in canonical order."""
    placements: dict[int, Card | str] = {}
    for offset, codes in ((0, master_hand), (5, slave_hand)):
        hand = cards(codes)
        assert len(hand) == 5, codes
        placements.update({offset + position: card for position, card in enumerate(hand)})
    placements[10] = key_card
    placements.update({11 + position: card for position, card in enumerate(cards(stock))})
    return crafted_deck(placements)


def run(state: GameState, *actions: str | Action) -> GameState:
    """Apply actions in order, each by the seat to move; text actions are parsed first."""
    for action in actions:
        parsed = parse_action(action) if isinstance(action, str) else action
        assert state.to_move is not None, f"game over before {action}"
        state = apply(state, state.to_move, parsed)
    return state


def to_play_phase(
    deck: Sequence[Card],
    *,
    master: Seat = Seat.FIRST,
    master_bid: int = 1,
    slave_bid: int | None = None,
    options: RulesOptions = DEFAULTS,
) -> GameState:
    """The state at the first lead after the master stops at once and both seats bid."""
    state = run(new_game(options, master, deck), "stop", f"bid {master_bid}")
    return run(state, "pass" if slave_bid is None else f"bid {slave_bid}")


def cards_in(value: object) -> list[Card]:
    """Every :class:`Card` reachable from ``value`` through tuples, dataclasses and mappings.

    Fails on a type it does not know, so a new kind of field cannot hide cards from a test.
    """
    if isinstance(value, Card):
        return [value]
    if value is None or isinstance(value, str | int | enum.Enum):  # bool and Seat are ints
        return []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            card
            for field in dataclasses.fields(value)
            for card in cards_in(getattr(value, field.name))
        ]
    if isinstance(value, tuple | list | set | frozenset):
        return [card for item in value for card in cards_in(item)]
    if isinstance(value, Mapping):
        return [card for item in value.items() for card in cards_in(item)]
    raise AssertionError(f"cards_in does not know {type(value).__name__}: {value!r}")


def all_cards_of(state: GameState) -> list[Card]:
    """Every card's location in ``state``: hands, tricks, current lead, discards, stock, key."""
    located: list[Card] = [*state.hands[0], *state.hands[1]]
    for trick in state.tricks:
        located += [trick.lead, trick.follow]
    if state.lead is not None:
        located.append(state.lead)
    located += [*state.discards[0], *state.discards[1], *state.stock, state.key_card]
    return located


def subsets_of(hand: Iterable[Card]) -> set[frozenset[Card]]:
    """Every subset of ``hand``, as frozensets."""
    subsets: set[frozenset[Card]] = {frozenset()}
    for card in hand:
        subsets |= {subset | {card} for subset in subsets}
    return subsets
