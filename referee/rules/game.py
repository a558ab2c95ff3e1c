"""One game of Aegis: deal, exchange, bidding, five tricks and the score.

A game is fully described by (rules options, master seat, deck order, actions). The state
is immutable: :func:`apply` returns a new state and never changes its input. Every rule
that the card leaves open cites its decision in ``RULES.md`` (D1 …).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from operator import attrgetter
from typing import NamedTuple, NoReturn, cast, overload

from mypy_extensions import mypyc_attr

from referee.rules.actions import PASS, STOP, Action, Bid, Exchange, Pass, Play, Stop, bid, play
from referee.rules.actions import PLAYS as _PLAYS
from referee.rules.cards import DECK, Card, Suit, beats_by_rank
from referee.rules.errors import IllegalActionError
from referee.rules.options import RulesOptions

__all__ = [
    "HAND_SIZE",
    "KEY_CARD_POSITION",
    "STOCK_START",
    "TRICKS_PER_GAME",
    "ExchangeChoices",
    "ExchangeRound",
    "GameResult",
    "GameState",
    "Observation",
    "Phase",
    "Role",
    "Seat",
    "Trick",
    "Turn",
    "apply",
    "attacker_points",
    "killers",
    "legal_actions",
    "new_game",
    "observation",
    "score_game",
    "shuffled_deck",
    "trick_winner",
]

HAND_SIZE = 5
TRICKS_PER_GAME = 5
#: Deck layout: positions 0-4 are the master's hand, 5-9 the slave's, 10 the key card, and
#: 11-51 the stock, drawn from position 11 upwards.
KEY_CARD_POSITION = 2 * HAND_SIZE
STOCK_START = KEY_CARD_POSITION + 1


class Seat(enum.IntEnum):
    """A player's seat in a match: seat 0 or seat 1. Roles (master, attacker) change per game."""

    FIRST = 0
    SECOND = 1

    @property
    def other(self) -> Seat:
        """The opposing seat."""
        return _OTHER_SEAT[self]

    def __str__(self) -> str:
        return f"seat {self.value}"


_OTHER_SEAT = {Seat.FIRST: Seat.SECOND, Seat.SECOND: Seat.FIRST}
_SEATS = (Seat.FIRST, Seat.SECOND)
_CARD_IDS = frozenset(map(id, DECK))


class Phase(enum.Enum):
    """The stage of a game."""

    EXCHANGE = "exchange"
    BIDDING = "bidding"
    PLAY = "play"
    OVER = "over"


class Role(enum.Enum):
    """The master deals the pace: exchanges first, bids first and leads the first trick."""

    MASTER = "master"
    SLAVE = "slave"


class ExchangeRound(NamedTuple):
    """A round of the exchange phase in which the master exchanged: the public card counts.

    ``slave_count`` is None while the slave has yet to answer in this round.
    """

    master_count: int
    slave_count: int | None


class Trick(NamedTuple):
    """A trick: who led, both cards and who won it."""

    leader: Seat
    lead: Card
    follow: Card
    winner: Seat


class Turn(NamedTuple):
    """One action in a game's history. ``drawn`` lists the cards an exchange drew from the
    stock (empty for every other action); it is private to ``seat``.

    Named tuples here and for :class:`Trick`, :class:`GameState` and :class:`Observation`:
    they are built at every action and a tuple is several times cheaper than a frozen
    dataclass, which the engine's throughput target needs. They are just as immutable."""

    seat: Seat
    action: Action
    drawn: tuple[Card, ...] = ()


@mypyc_attr(native_class=False)  # built once a game; a Python class can be deep-copied
@dataclass(frozen=True, slots=True)
class GameResult:
    """How a finished game scored.

    ``points`` and ``tricks`` are indexed by seat. ``save`` is true when the defender also
    scored through the save rule; ``promise`` and ``conquest`` name the bonuses awarded.
    """

    attacker: Seat
    bid: int
    master_bid: int
    tricks: tuple[int, int]
    points: tuple[int, int]
    attacker_won: bool
    promise: bool
    conquest: bool
    save: bool

    @property
    def defender(self) -> Seat:
        """The seat that was not the attacker."""
        return self.attacker.other

    @property
    def winner(self) -> Seat:
        """The seat that won the game: the attacker if it made its bid, else the defender."""
        return self.attacker if self.attacker_won else self.attacker.other


class GameState(NamedTuple):
    """The complete state of one game, hidden information included.

    Build the first state with :func:`new_game` and the next ones with :func:`apply`; a state
    made otherwise (``_replace``, say) must hold the annotated types, which the compiled
    build checks as it reads them (a seat as a :class:`Seat`, not an int). What a
    seat may see of it is :func:`observation`'s business alone. An immutable named tuple
    rather than a frozen dataclass: a state is built at every action, and a tuple is built
    five times faster, which the engine's throughput target needs.
    """

    options: RulesOptions
    game_number: int
    master: Seat
    deck: tuple[Card, ...]
    #: Match scores before this game, indexed by seat (public context for observations).
    scores_before: tuple[int, int]
    hands: tuple[tuple[Card, ...], tuple[Card, ...]]
    discards: tuple[tuple[Card, ...], tuple[Card, ...]]
    stock_position: int
    phase: Phase
    to_move: Seat | None
    exchange_rounds: tuple[ExchangeRound, ...]
    master_bid: int | None
    slave_bid: int | None
    tricks: tuple[Trick, ...]
    #: The card led to the current, unfinished trick.
    lead: Card | None
    leader: Seat
    tricks_won: tuple[int, int]
    history: tuple[Turn, ...]
    result: GameResult | None

    @property
    def key_card(self) -> Card:
        """The face-up card that names trump; out of play for the whole game (D2)."""
        return self.deck[KEY_CARD_POSITION]

    @property
    def trump(self) -> Suit:
        """The key card's suit."""
        return self.deck[KEY_CARD_POSITION].suit

    @property
    def slave(self) -> Seat:
        """The seat that is not the master this game."""
        return self.master.other

    @property
    def stock(self) -> tuple[Card, ...]:
        """The cards still to be drawn, top first."""
        return self.deck[self.stock_position :]

    @property
    def master_exchange_count(self) -> int:
        """Rounds in which the master exchanged; the master's bid must exceed it."""
        return len(self.exchange_rounds)

    @property
    def is_over(self) -> bool:
        """True once the fifth trick is taken."""
        return self.phase is Phase.OVER

    @property
    def attacker(self) -> Seat | None:
        """The attacker once bidding is over: the slave if it overbid, else the master."""
        if self.phase in (Phase.EXCHANGE, Phase.BIDDING):
            return None
        return self.master if self.slave_bid is None else self.master.other

    def role(self, seat: Seat) -> Role:
        """Master or slave, for this game."""
        return Role.MASTER if seat == self.master else Role.SLAVE


def killers(key_card: Card) -> tuple[Card, ...]:
    """The three cards of the key card's rank in the other suits."""
    return _KILLERS[key_card.index]


_KILLERS: tuple[tuple[Card, ...], ...] = tuple(
    tuple(card for card in DECK if card.rank == key.rank and card.suit is not key.suit)
    for key in DECK
)


def shuffled_deck(rng: random.Random) -> tuple[Card, ...]:
    """A uniformly shuffled deck drawn from ``rng``, the engine's only source of chance.

    Sorting by 52 random keys is uniform (a tie has probability below 2**-40) and several
    times faster than ``rng.shuffle``; ``Random.random`` is the same on every platform.
    """
    draw = rng.random
    return _ShuffledDeck(sorted(DECK, key=lambda _card: draw()))


@mypyc_attr(native_class=False)  # a compiled class cannot subclass tuple
class _ShuffledDeck(tuple[Card, ...]):
    """A deck made by :func:`shuffled_deck`, so known to hold each card once: :func:`new_game`
    skips re-checking it, which would cost more than the shuffle."""

    __slots__ = ()


_card_index = attrgetter("index")


def _sorted_hand(cards: Sequence[Card]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=_card_index))


def _checked_deck(cards: Sequence[object]) -> tuple[Card, ...]:
    deck = tuple(cards)
    if set(map(id, deck)) != _CARD_IDS or len(deck) != len(DECK):
        # Cards are interned, so identity is equality and this also rejects non-cards.
        distinct = len({id(card) for card in deck if isinstance(card, Card)})
        raise IllegalActionError(
            f"a deck must hold each of the 52 cards once; got {len(deck)} items, "
            f"{distinct} distinct cards"
        )
    return cast(tuple[Card, ...], deck)


def new_game(
    options: RulesOptions,
    master: Seat | int | object,
    deck: Sequence[Card] | Sequence[object],
    *,
    game_number: int = 1,
    scores_before: tuple[int, int] = (0, 0),
) -> GameState:
    """The state after the deal: ``deck`` must hold all 52 cards once, in dealing order.

    ``master`` may be a plain int; the broad annotations say that anything else is refused
    with :class:`IllegalActionError` (and keep a compiled build from a ``TypeError``).
    """
    cards = cast(tuple[Card, ...], deck) if type(deck) is _ShuffledDeck else _checked_deck(deck)
    if isinstance(master, bool) or master not in _SEATS:
        raise IllegalActionError(f"the master must be seat 0 or 1, got {master!r}")
    master = _SEATS[cast(int, master)]
    master_hand = _sorted_hand(cards[:HAND_SIZE])
    slave_hand = _sorted_hand(cards[HAND_SIZE:KEY_CARD_POSITION])
    return GameState(
        options,
        game_number,
        master,
        cards,
        (scores_before[0], scores_before[1]),
        (master_hand, slave_hand) if master == 0 else (slave_hand, master_hand),
        ((), ()),  # discards
        STOCK_START,
        _BIDDING if options.max_exchange_rounds == 0 else _EXCHANGE,
        master,  # to move
        (),  # exchange rounds
        None,  # master's bid
        None,  # slave's bid
        (),  # tricks
        None,  # card led to the current trick
        master,  # leader
        (0, 0),  # tricks won
        (),  # history
        None,  # result
    )


# Module-level aliases: a local name is ten times cheaper than an enum class attribute, and
# these are read several times per action.
_EXCHANGE = Phase.EXCHANGE
_BIDDING = Phase.BIDDING
_PLAY = Phase.PLAY
_OVER = Phase.OVER
_MASTER = Role.MASTER
_SLAVE = Role.SLAVE


# ---------------------------------------------------------------------------------------------
# Legal actions


_SUBSETS_OF_FIVE: tuple[tuple[int, ...], ...] = tuple(
    positions for size in range(HAND_SIZE + 1) for positions in combinations(range(HAND_SIZE), size)
)

# For each non-empty subset in that order: the index of the subset without its last position
# (always earlier in the order) and that last position.
_SUBSET_STEPS = tuple(
    (_SUBSETS_OF_FIVE.index(positions[:-1]), positions[-1]) for positions in _SUBSETS_OF_FIVE[1:]
)


class ExchangeChoices(Sequence[Action]):
    """The legal exchange-phase actions of a five-card hand, built lazily.

    The master may stop or discard any 1-5 cards; the slave may discard any 0-5 (D3). The
    order is fixed: ``stop`` first (master only), then discards by size, then by position in
    the hand. Indexing builds one action, so sampling uniformly does not build all 32.
    """

    __slots__ = ("_hand", "_is_master")

    def __init__(self, hand: tuple[Card, ...], is_master: bool) -> None:
        self._hand = hand
        self._is_master = is_master

    def __reduce__(self) -> tuple[type[ExchangeChoices], tuple[tuple[Card, ...], bool]]:
        # Copied and pickled by its arguments: the compiled class has no other way.
        return (ExchangeChoices, (self._hand, self._is_master))

    def __len__(self) -> int:
        return len(_SUBSETS_OF_FIVE)  # master: stop + 31 non-empty; slave: 32 subsets

    @overload
    def __getitem__(self, index: int) -> Action: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Action]: ...
    def __getitem__(self, index: int | slice) -> Action | Sequence[Action]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if self._is_master and index == 0:
            return STOP
        hand = self._hand
        # The hand is in canonical order and positions ascend, so the discard is too.
        return Exchange.from_sorted(tuple([hand[position] for position in _SUBSETS_OF_FIVE[index]]))

    def __iter__(self) -> Iterator[Action]:
        for index in range(len(self)):
            yield self[index]

    def texts(self) -> list[str]:
        """The text form of every action, in order, without building the actions."""
        spaced = [" " + card.code for card in self._hand]
        texts = ["exchange"]
        for prefix, last in _SUBSET_STEPS:  # each text extends an earlier one by a card
            texts.append(texts[prefix] + spaced[last])
        if self._is_master:
            texts[0] = "stop"  # in place of the empty exchange, which only the slave may make
        return texts

    def __contains__(self, action: object) -> bool:
        if isinstance(action, Stop):
            return self._is_master
        if not isinstance(action, Exchange):
            return False
        listed = _field_cards(action)  # read untyped: a malformed exchange may hold anything
        if type(listed) is not tuple or not _distinct_in_order(listed):
            return False
        hand = self._hand
        if any(card not in hand for card in listed):
            return False
        return bool(listed) or not self._is_master

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExchangeChoices):
            return self._hand == other._hand and self._is_master == other._is_master
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._hand, self._is_master))

    def __repr__(self) -> str:
        return f"ExchangeChoices(hand={self._hand!r}, is_master={self._is_master})"


def legal_actions(state: GameState) -> Sequence[Action]:
    """Every legal action of the seat to move, in a fixed order; empty once the game is over."""
    phase = state.phase
    seat = state.to_move
    if phase is _PLAY:
        hand = state.hands[seat]  # type: ignore[index]
        lead = state.lead
        if lead is not None:
            suit = lead.suit
            following = [card for card in hand if card.suit is suit]
            if following:
                hand = tuple(following)
        return tuple([_PLAYS[card.index] for card in hand])
    if phase is _EXCHANGE:
        return ExchangeChoices(state.hands[seat], seat == state.master)  # type: ignore[index]
    if phase is _BIDDING:
        if state.master_bid is None:
            return tuple(bid(tricks) for tricks in range(state.master_exchange_count + 1, 6))
        return (PASS, *(bid(tricks) for tricks in range(state.master_bid + 1, 6)))
    return ()


# ---------------------------------------------------------------------------------------------
# Applying actions


def apply(state: GameState, seat: Seat | int | object, action: Action | object) -> GameState:
    """The state after ``seat`` takes ``action``.

    Raises :class:`IllegalActionError`, naming the action, the seat and the reason, if it is
    not that seat's turn or the action is not legal; ``state`` is never changed. ``seat``
    may be a plain int; any other value is not the seat to move, and an ``action`` that is
    no action at all is illegal (the broad annotations say so, and keep a compiled build
    from refusing such values with a ``TypeError``).
    """
    mover = state.to_move
    if mover is None:
        raise IllegalActionError(f"illegal {_describe(action)} for {_seat_text(seat)}: game over")
    if seat != mover:
        raise IllegalActionError(
            f"illegal {_describe(action)} for {_seat_text(seat)}: "
            f"it is {_seat_text(mover)}'s turn in the {state.phase.value} phase"
        )
    if state.phase is _PLAY:
        if isinstance(action, Play):
            return _apply_play(state, mover, _field_card(action))
    elif state.phase is _EXCHANGE:
        if isinstance(action, Exchange):
            return _apply_exchange(state, mover, action)
        if isinstance(action, Stop):
            if mover != state.master:
                _illegal(state, mover, action, "only the master may stop the exchange phase")
            return _start_bidding(state, (*state.history, Turn(mover, action)))
    elif isinstance(action, Bid):
        return _apply_bid(state, mover, _field_tricks(action))
    elif isinstance(action, Pass):
        if state.master_bid is None:
            _illegal(state, mover, action, "the master must bid, passing is not allowed")
        return _start_play(state, None, (*state.history, Turn(mover, action)))
    _illegal(state, mover, action, f"not an action of the {state.phase.value} phase")


def _distinct_in_order(listed: tuple[object, ...]) -> bool:
    """Whether ``listed`` holds cards, each once, in canonical order (as an exchange must)."""
    previous = -1
    for item in listed:
        if not isinstance(item, Card) or item.index <= previous:
            return False
        previous = item.index
    return True


# A malformed action may hold anything in its field: it is read, and rebuilt for an error
# message, untyped (a compiled build would refuse a value of the wrong type outright).
_field_card: Callable[[Play], object] = attrgetter("card")
_field_cards: Callable[[Exchange], object] = attrgetter("cards")
_field_tricks: Callable[[Bid], object] = attrgetter("tricks")
_any_play = cast(Callable[[object], Play], Play)
_any_bid = cast(Callable[[object], Bid], Bid)


def _seat_text(seat: object) -> str:
    if isinstance(seat, int) and seat in _SEATS:
        return str(_SEATS[seat])
    return f"unknown seat {seat!r}"


def _describe(action: object) -> str:
    if isinstance(action, Play):
        return f"card '{_field_card(action)}'"
    if isinstance(action, Stop | Exchange | Bid | Pass):
        return f"action '{action}'"
    return f"malformed action {action!r}"


def _illegal(state: GameState, seat: Seat, action: object, reason: str) -> NoReturn:
    where = state.phase.value
    if state.phase is _PLAY:
        where = f"trick {len(state.tricks) + 1}"
    elif state.phase is _EXCHANGE:
        where = f"exchange round {len(state.exchange_rounds) + 1}"
    raise IllegalActionError(f"illegal {_describe(action)} for {seat} in {where}: {reason}")


def _apply_exchange(state: GameState, seat: Seat, action: Exchange) -> GameState:
    hand = state.hands[seat]
    listed = _field_cards(action)
    if type(listed) is not tuple:  # Exchange makes one; from_sorted trusts its caller
        _illegal(state, seat, listed, "an exchange's cards must be a tuple")
    strangers = [str(item) for item in listed if not isinstance(item, Card)]
    if strangers:
        _illegal(state, seat, action, f"not in hand: {' '.join(strangers)}")
    discarded = cast(tuple[Card, ...], listed)
    count = len(discarded)
    is_master = seat == state.master
    if is_master and count == 0:
        _illegal(state, seat, action, "the master exchanges 1-5 cards or stops")
    if not _distinct_in_order(discarded):
        _illegal(state, seat, action, "the same card twice or cards out of order")
    missing = [str(card) for card in discarded if card not in hand]
    if missing:
        _illegal(state, seat, action, f"not in hand: {' '.join(missing)}")
    start = state.stock_position
    drawn = state.deck[start : start + count]
    kept = [card for card in hand if card not in discarded]
    hands = list(state.hands)
    hands[seat] = _sorted_hand(kept + list(drawn))
    discards = list(state.discards)
    discards[seat] = discards[seat] + discarded
    history = (*state.history, Turn(seat, action, drawn))
    if is_master:
        rounds = (*state.exchange_rounds, ExchangeRound(count, None))
        to_move: Seat | None = _OTHER_SEAT[seat]
        phase = _EXCHANGE
    else:
        rounds = (
            *state.exchange_rounds[:-1],
            ExchangeRound(state.exchange_rounds[-1].master_count, count),
        )
        # D3: a slave exchanging 0 cards does not end the phase; only the round limit or the
        # master's stop does.
        if len(rounds) >= state.options.max_exchange_rounds:
            to_move, phase = state.master, _BIDDING
        else:
            to_move, phase = state.master, _EXCHANGE
    return GameState(
        state.options,
        state.game_number,
        state.master,
        state.deck,
        state.scores_before,
        (hands[0], hands[1]),
        (discards[0], discards[1]),
        start + count,
        phase,
        to_move,
        rounds,
        None,
        None,
        (),
        None,
        state.leader,
        state.tricks_won,
        history,
        None,
    )


def _start_bidding(state: GameState, history: tuple[Turn, ...]) -> GameState:
    return GameState(
        state.options,
        state.game_number,
        state.master,
        state.deck,
        state.scores_before,
        state.hands,
        state.discards,
        state.stock_position,
        _BIDDING,
        state.master,
        state.exchange_rounds,
        None,
        None,
        (),
        None,
        state.leader,
        state.tricks_won,
        history,
        None,
    )


def _apply_bid(state: GameState, seat: Seat, tricks: object) -> GameState:
    if isinstance(tricks, bool) or not isinstance(tricks, int):
        # Checked before bid(), which looks the value up and so fails on unhashable ones.
        _illegal(state, seat, _any_bid(tricks), "a bid is a whole number of tricks")
    action = bid(tricks)
    history = (*state.history, Turn(seat, action))
    if state.master_bid is None:
        floor = state.master_exchange_count + 1
        if not floor <= tricks <= TRICKS_PER_GAME:
            _illegal(
                state,
                seat,
                action,
                f"the master must bid {floor}-{TRICKS_PER_GAME} "
                f"after {state.master_exchange_count} exchange(s)",
            )
        return GameState(
            state.options,
            state.game_number,
            state.master,
            state.deck,
            state.scores_before,
            state.hands,
            state.discards,
            state.stock_position,
            _BIDDING,
            state.master.other,
            state.exchange_rounds,
            tricks,
            None,
            (),
            None,
            state.leader,
            state.tricks_won,
            history,
            None,
        )
    # D4: the slave's own exchanges do not constrain its bid; it only has to overbid.
    if not state.master_bid < tricks <= TRICKS_PER_GAME:
        reason = (
            "the master bid 5, the slave can only pass"
            if state.master_bid == TRICKS_PER_GAME
            else f"the slave must pass or bid {state.master_bid + 1}-{TRICKS_PER_GAME}"
        )
        _illegal(state, seat, action, reason)
    return _start_play(state, tricks, history)


def _start_play(state: GameState, slave_bid: int | None, history: tuple[Turn, ...]) -> GameState:
    return GameState(
        state.options,
        state.game_number,
        state.master,
        state.deck,
        state.scores_before,
        state.hands,
        state.discards,
        state.stock_position,
        _PLAY,
        state.master,  # the master leads the first trick
        state.exchange_rounds,
        state.master_bid,
        slave_bid,
        (),
        None,
        state.master,
        state.tricks_won,
        history,
        None,
    )


def trick_winner(lead: Card, follow: Card, trump: Suit, key_rank: int) -> bool:
    """True if the follower wins the trick, False if the leader does.

    1. both cards of the led suit: the stronger by rank (the Ace beats only J, Q, K);
    2. a trump played to a non-trump lead (the follower was void in the led suit);
    3. a killer (key rank, non-trump suit) played to a trump lead (the follower was void in
       trump);
    4. anything else: the leader. A killer led, or following its own suit, has its ordinary
       strength; one discarded on another non-trump lead loses like any off-suit card.
    """
    if follow.suit is lead.suit:
        return beats_by_rank(follow.rank, lead.rank)
    if follow.suit is trump:
        return True
    return lead.suit is trump and follow.rank == key_rank


def _apply_play(state: GameState, seat: Seat, played: object) -> GameState:
    hand = state.hands[seat]
    if played not in hand:
        # Play(card), not play(card): the card may be any object from a malformed action.
        _illegal(state, seat, _any_play(played), "not in hand")
    card = played  # held, so a card
    lead = state.lead
    kept = tuple([held for held in hand if held is not card])
    hands = (kept, state.hands[1]) if seat == 0 else (state.hands[0], kept)
    history = (*state.history, Turn(seat, _PLAYS[card.index]))
    if lead is None:
        return GameState(
            state.options,
            state.game_number,
            state.master,
            state.deck,
            state.scores_before,
            hands,
            state.discards,
            state.stock_position,
            _PLAY,
            _OTHER_SEAT[seat],
            state.exchange_rounds,
            state.master_bid,
            state.slave_bid,
            state.tricks,
            card,
            seat,
            state.tricks_won,
            history,
            None,
        )
    suit = lead.suit
    if card.suit is not suit and any(held.suit is suit for held in hand):
        _illegal(state, seat, play(card), f"must follow {suit.letter}")
    key = state.deck[KEY_CARD_POSITION]
    winner = seat if trick_winner(lead, card, key.suit, key.rank) else state.leader
    tricks = (*state.tricks, Trick(state.leader, lead, card, winner))
    won_0, won_1 = state.tricks_won
    tricks_won = (won_0 + 1, won_1) if winner == 0 else (won_0, won_1 + 1)
    finished = len(tricks) == TRICKS_PER_GAME
    result = None
    if finished:
        attacker = state.master if state.slave_bid is None else state.master.other
        result = score_game(
            state.options,
            attacker=attacker,
            master_bid=state.master_bid,  # type: ignore[arg-type]
            slave_bid=state.slave_bid,
            tricks_won=tricks_won,
        )
    return GameState(
        state.options,
        state.game_number,
        state.master,
        state.deck,
        state.scores_before,
        hands,
        state.discards,
        state.stock_position,
        _OVER if finished else _PLAY,
        None if finished else winner,
        state.exchange_rounds,
        state.master_bid,
        state.slave_bid,
        tricks,
        None,
        winner,
        tricks_won,
        history,
        result,
    )


# ---------------------------------------------------------------------------------------------
# Scoring


def attacker_points(bid: int, tricks: int, options: RulesOptions) -> int:
    """The attacker's points for making ``bid`` with ``tricks`` (0 if it fell short).

    The bid, +1 when tricks equal the bid at a bid of at least ``promise_min_bid`` (promise,
    D5), +1 when the attacker took all five tricks (conquest).
    """
    if tricks < bid:
        return 0
    promise = tricks == bid and bid >= options.promise_min_bid
    conquest = tricks == TRICKS_PER_GAME
    return bid + promise + conquest


def score_game(
    options: RulesOptions,
    *,
    attacker: Seat,
    master_bid: int,
    slave_bid: int | None,
    tricks_won: tuple[int, int],
) -> GameResult:
    """Score a finished game from its bids and the tricks each seat took."""
    defender = attacker.other
    contract = master_bid if slave_bid is None else slave_bid
    attacker_tricks = tricks_won[attacker]
    defender_tricks = tricks_won[defender]
    points = [0, 0]
    attacker_won = attacker_tricks >= contract
    promise = conquest = save = False
    if attacker_won:
        points[attacker] = attacker_points(contract, attacker_tricks, options)
        promise = attacker_tricks == contract and contract >= options.promise_min_bid
        conquest = attacker_tricks == TRICKS_PER_GAME
        # Save: the master opened with 2 or less and the defender took at least that many;
        # whichever seat defends scores the master's opening bid (D6: the table stands).
        if master_bid <= 2 and defender_tricks >= master_bid:
            points[defender] = master_bid
            save = True
    else:
        conquest = defender_tricks == TRICKS_PER_GAME
        points[defender] = contract + conquest
    return GameResult(
        attacker=attacker,
        bid=contract,
        master_bid=master_bid,
        tricks=tricks_won,
        points=(points[0], points[1]),
        attacker_won=attacker_won,
        promise=promise,
        conquest=conquest,
        save=save,
    )


# ---------------------------------------------------------------------------------------------
# Observation


class Observation(NamedTuple):
    """Everything one seat may know about a game, and nothing else.

    Own hand; the key card, trump and killers; per exchange round the public card counts;
    the master's exchange count; both bids; every trick played and the card led to the
    current one; tricks won and match scores; whose turn it is. Never the opponent's hand,
    any discards, the stock or its order.
    """

    seat: Seat
    game_number: int
    master: Seat
    role: Role
    hand: tuple[Card, ...]
    key_card: Card
    trump: Suit
    killers: tuple[Card, ...]
    phase: Phase
    to_move: Seat | None
    exchange_rounds: tuple[ExchangeRound, ...]
    exchange_stopped: bool
    master_exchange_count: int
    stock_remaining: int
    master_bid: int | None
    slave_bid: int | None
    slave_passed: bool
    attacker: Seat | None
    tricks: tuple[Trick, ...]
    lead: Card | None
    leader: Seat
    tricks_won: tuple[int, int]
    scores: tuple[int, int]
    opponent_hand_size: int
    result: GameResult | None


def observation(state: GameState, seat: Seat | int) -> Observation:
    """What ``seat`` (0 or 1) may see of ``state``: the only place that decides visibility."""
    seat = _SEATS[seat]
    key = state.deck[KEY_CARD_POSITION]
    phase = state.phase
    bidding_started = phase is not _EXCHANGE
    # The exchange phase ends by the round limit or by the master's stop, so a phase that
    # ended short of the limit was stopped.
    rounds = state.exchange_rounds
    stopped = bidding_started and len(rounds) < state.options.max_exchange_rounds
    passed = (phase is _PLAY or phase is _OVER) and state.slave_bid is None
    master = state.master
    slave_bid = state.slave_bid
    if passed:
        attacker: Seat | None = master
    elif slave_bid is not None:
        attacker = _OTHER_SEAT[master]
    else:
        attacker = None
    # Positional arguments: this runs at every decision and keywords cost a third more.
    return Observation(
        seat,
        state.game_number,
        master,
        _MASTER if seat == master else _SLAVE,
        state.hands[seat],
        key,
        key.suit,
        _KILLERS[key.index],
        phase,
        state.to_move,
        state.exchange_rounds,
        stopped,
        len(state.exchange_rounds),
        len(state.deck) - state.stock_position,
        state.master_bid,
        slave_bid,
        passed,
        attacker,
        state.tricks,
        state.lead,
        state.leader,
        state.tricks_won,
        state.scores_before,
        len(state.hands[_OTHER_SEAT[seat]]),
        state.result,
    )
