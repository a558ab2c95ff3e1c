"""The bundled ``greedy`` bot: a readable rule-based Aegis player, and a model for authors.

- **Hand value**: the tricks a hand should take, as a sum of per-card values (a table measured
  from self-play, see :data:`TRUMP_VALUE`): trumps are worth most, then kings and queens;
  the Ace is weak (it beats only K, Q and J), and a killer adds the chance of beating a trump
  lead.
- **Exchange**: discard the weak cards (plain cards below a queen, never a trump or a killer).
  The slave's exchanges are free, so it always does; each master exchange raises the master's
  smallest bid by one, so the master exchanges once at most, and only a poor hand.
- **Bid**: the expected tricks, within the legal range. The slave overbids only when its hand
  is clearly worth more than the master's bid.
- **Play**: second to play, win as cheaply as possible (the lowest card that takes the trick,
  a trump or a killer only when nothing cheaper wins), else throw the least useful card.
  Leading, play the card most likely to hold (counting the unseen cards that beat it and the
  chance of a ruff) if it is likely enough, else give the lead away as cheaply as possible.

Everything here is deterministic. The decision functions take plain values (cards, trump,
key rank, a bit mask of unseen cards) rather than an observation, so that the ``strong`` bot
can use them as its fast play-out policy.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from protocol.sdk import Action, Bot, Decision, MatchInfo, run
from referee.rules.actions import PASS, STOP, Exchange, bid, play
from referee.rules.cards import ACE, DECK, KING, QUEEN, Card, Suit, beats_by_rank
from referee.rules.game import Observation, Phase, Role, trick_winner

__all__ = [
    "ALL_CARDS",
    "BEATERS",
    "GreedyBot",
    "GreedyPlayer",
    "bid_choice",
    "card_mask",
    "cost",
    "exchange_choice",
    "expected_tricks",
    "play_choice",
    "weak_cards",
]

# ---------------------------------------------------------------------------------------------
# Cards

#: A rank's strength when its card is led: K 13 … 2 by number, and the Ace, which loses to
#: the nine number cards 10 … 2 and beats only K, Q and J, as a little more than a 4.
STRENGTH: dict[int, float] = {ACE: 4.5, **{rank: float(rank) for rank in range(2, 14)}}

#: Bit masks of cards (bit ``card.index``): all 52, and per card the cards of its own suit
#: that beat it (with the Ace rule).
ALL_CARDS = (1 << 52) - 1
BEATERS: tuple[int, ...] = tuple(
    sum(
        1 << other.index
        for other in DECK
        if other.suit is card.suit and beats_by_rank(other.rank, card.rank)
    )
    for card in DECK
)
_SUIT_MASK: dict[Suit, int] = {
    suit: sum(1 << card.index for card in DECK if card.suit is suit) for suit in Suit
}
_SAME_SUIT: tuple[int, ...] = tuple(_SUIT_MASK[card.suit] for card in DECK)  # by card index
_RANK_MASK: dict[int, int] = {
    rank: sum(1 << card.index for card in DECK if card.rank == rank) for rank in STRENGTH
}


def card_mask(cards: Iterable[Card]) -> int:
    """The bit mask of some cards."""
    mask = 0
    for card in cards:
        mask |= 1 << card.index
    return mask


def cost(card: Card, trump: Suit, key_rank: int) -> float:
    """What a card is worth keeping for later: trumps most, then killers (they beat a trump
    lead when we are void in trump), then by strength. Cheap cards are spent first."""
    strength = STRENGTH[card.rank]
    if card.suit is trump:
        return 40.0 + strength
    if card.rank == key_rank:
        return 20.0 + strength
    return strength


# ---------------------------------------------------------------------------------------------
# Hand value

#: Tricks a card is worth in a five-card hand, by rank (index 1 = Ace … 13 = King): fitted by
#: least squares to the tricks each seat took in 150,000 deals played out by this bot's play
#: policy on both sides (no exchange). A high trump is worth more than one trick on average:
#: it wins its own trick and, led, draws the opponent's trumps.
TRUMP_VALUE = (0.0, 1.02, 0.84, 0.85, 0.83, 0.86, 0.87, 0.9, 0.93, 0.98, 1.06, 1.08, 1.13, 1.2)
PLAIN_VALUE = (0.0, 0.32, 0.11, 0.13, 0.18, 0.2, 0.23, 0.27, 0.33, 0.43, 0.54, 0.54, 0.63, 0.71)
#: Added to a killer's plain value.
KILLER_BONUS = 0.27
#: Added for leading the first trick: a small handicap, since the second to play sees the
#: card it must beat.
LEAD_BONUS = -0.15


def expected_tricks(hand: Sequence[Card], trump: Suit, key_rank: int, leads: bool) -> float:
    """The tricks this hand should take against a typical hand; ``leads`` for the master."""
    total = LEAD_BONUS if leads else 0.0
    for card in hand:
        if card.suit is trump:
            total += TRUMP_VALUE[card.rank]
        else:
            total += PLAIN_VALUE[card.rank] + (KILLER_BONUS if card.rank == key_rank else 0.0)
    return total


# ---------------------------------------------------------------------------------------------
# Exchange and bid

#: The master exchanges only a hand worth fewer tricks than this.
MASTER_EXCHANGE_BELOW = 1.6
#: The slave overbids only when its hand is worth this much more than its bid.
OVERBID_MARGIN = 0.4


def weak_cards(hand: Sequence[Card], trump: Suit, key_rank: int) -> tuple[Card, ...]:
    """The cards worth exchanging: plain cards below a queen (never a trump or a killer)."""
    return tuple(
        card
        for card in hand
        if card.suit is not trump and card.rank != key_rank and card.rank not in (KING, QUEEN)
    )


def exchange_choice(
    hand: Sequence[Card], trump: Suit, key_rank: int, is_master: bool, master_exchanges: int
) -> tuple[Card, ...] | None:
    """The cards to discard, or None for the master's ``stop``. The slave's exchanges cost
    nothing; each of the master's raises its smallest bid, so it exchanges at most once, and
    only a poor hand with several weak cards."""
    weak = weak_cards(hand, trump, key_rank)
    if not is_master:
        return weak
    poor = expected_tricks(hand, trump, key_rank, leads=True) < MASTER_EXCHANGE_BELOW
    if master_exchanges > 0 or not poor or len(weak) < 2:
        return None
    return weak


def bid_choice(
    hand: Sequence[Card], trump: Suit, key_rank: int, floor: int, master_bid: int | None
) -> int | None:
    """The master's bid (``master_bid`` None; at least ``floor``), or the slave's overbid of
    ``master_bid`` (None to pass). Bids the tricks the hand is worth, within the legal range."""
    if master_bid is None:
        worth = expected_tricks(hand, trump, key_rank, leads=True)
        return max(floor, min(5, round(worth)))
    worth = expected_tricks(hand, trump, key_rank, leads=False)
    if master_bid >= 5 or worth < master_bid + 1 + OVERBID_MARGIN:
        return None
    return max(master_bid + 1, min(5, int(worth - OVERBID_MARGIN)))


# ---------------------------------------------------------------------------------------------
# Play

#: Leading, play a card that holds at least this likely; else give the lead away cheaply.
LEAD_IF_HOLDS = 0.55


@functools.cache  # small integers, asked for again and again by the strong bot's play-outs
def _none_held(wanted: int, unseen: int, held: int) -> float:
    """The chance that ``held`` cards drawn from ``unseen`` include none of ``wanted``."""
    chance = 1.0
    for drawn in range(held):
        if unseen - drawn <= 0:
            break
        chance *= max(0, unseen - wanted - drawn) / (unseen - drawn)
    return chance


def _holds(card: Card, trump: Suit, key_rank: int, unseen: int, opponent_cards: int) -> float:
    """Roughly how likely ``card``, led, wins the trick, given the cards the opponent may
    hold (``unseen``, a mask) and how many it holds."""
    pool = unseen.bit_count()
    beaten = _none_held((BEATERS[card.index] & unseen).bit_count(), pool, opponent_cards)
    # A void opponent takes it with a trump (a plain lead) or a killer (a trump lead).
    same_suit = _SAME_SUIT[card.index]
    void = _none_held((same_suit & unseen).bit_count(), pool, opponent_cards)
    if card.suit is trump:
        spoilers = (_RANK_MASK[key_rank] & ~same_suit & unseen).bit_count()
    else:
        spoilers = (_SUIT_MASK[trump] & unseen).bit_count()
    return beaten * (1.0 - void * (1.0 - _none_held(spoilers, pool, opponent_cards)))


def play_choice(
    hand: Sequence[Card],
    lead: Card | None,
    trump: Suit,
    key_rank: int,
    unseen: int,
    opponent_cards: int,
) -> Card:
    """The card to play: ``lead`` is the card led to this trick (None when leading),
    ``unseen`` the mask of cards the opponent may hold, ``opponent_cards`` its hand size."""
    if lead is not None:
        following = [card for card in hand if card.suit is lead.suit]
        legal = following or list(hand)
        winners = [card for card in legal if trick_winner(lead, card, trump, key_rank)]
        return min(winners or legal, key=lambda card: cost(card, trump, key_rank))
    chances = [_holds(card, trump, key_rank, unseen, opponent_cards) for card in hand]
    best = max(range(len(hand)), key=lambda at: (chances[at], -cost(hand[at], trump, key_rank)))
    if chances[best] >= LEAD_IF_HOLDS:
        return hand[best]
    return min(hand, key=lambda card: cost(card, trump, key_rank))


# ---------------------------------------------------------------------------------------------
# The player


class GreedyPlayer:
    """The greedy strategy on the engine's observations (usable in-process too).

    It remembers the cards it has held this game: the ones gone from its hand and not played
    are its own discards, which the observation never lists, and which the opponent cannot
    hold.
    """

    def __init__(self) -> None:
        self._game = 0
        #: The mask of every card held this game: in hand, discarded or played.
        self.held = 0

    def forget(self) -> None:
        """A new match: its game numbers start at 1 again."""
        self._game, self.held = 0, 0

    def note_hand(self, game: int, hand: Iterable[Card]) -> None:
        """Remember a hand held in game ``game`` (a new game forgets the previous one)."""
        if game != self._game:
            self._game, self.held = game, 0
        self.held |= card_mask(hand)

    def unseen(self, seen: Observation) -> int:
        """The mask of cards the opponent may hold: not ours (held, so in hand or discarded),
        not played, not the key card."""
        self.note_hand(seen.game_number, seen.hand)
        gone = self.held | 1 << seen.key_card.index
        for trick in seen.tricks:
            gone |= 1 << trick.lead.index | 1 << trick.follow.index
        if seen.lead is not None:
            gone |= 1 << seen.lead.index
        return ALL_CARDS & ~gone

    def decide(self, seen: Observation, legal: Sequence[Action]) -> Action:
        """The action for any decision."""
        self.note_hand(seen.game_number, seen.hand)
        trump, key_rank = seen.trump, seen.key_card.rank
        is_master = seen.role is Role.MASTER
        if seen.phase is Phase.EXCHANGE:
            count = seen.master_exchange_count
            discards = exchange_choice(seen.hand, trump, key_rank, is_master, count)
            return STOP if discards is None else Exchange(discards)
        if seen.phase is Phase.BIDDING:
            tricks = bid_choice(
                seen.hand, trump, key_rank, seen.master_exchange_count + 1, seen.master_bid
            )
            action = PASS if tricks is None else bid(tricks)
            return action if action in legal else legal[0]  # legal[0]: defensive only
        card = play_choice(
            seen.hand, seen.lead, trump, key_rank, self.unseen(seen), seen.opponent_hand_size
        )
        return play(card)

    def __call__(self, seen: Observation, legal: Sequence[Action]) -> Action:
        """As a :class:`referee.selfplay.Policy`."""
        return self.decide(seen, legal)


class GreedyBot(Bot):
    """The greedy player behind the SDK."""

    name = "greedy"
    author = "aegis-ref"

    def __init__(self) -> None:
        self.player = GreedyPlayer()

    def on_match_start(self, match: MatchInfo) -> None:
        """Forget the last match's cards."""
        self.player.forget()

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """Exchange, bid or play, by the rules above."""
        return self.player.decide(view.observation, legal)


if __name__ == "__main__":
    run(GreedyBot())
