"""The bundled ``strong`` bot: determinized Monte Carlo search over greedy play-outs.

At each decision that offers a real choice, until its time budget runs out, it samples
**worlds**: the opponent's hand drawn from the cards it may hold (not in our hand, not
played, not the key card, not among our own discards), never of a suit the opponent has
shown it lacks, and weighted by what its exchanges, bid and plays say about it; the rest of
those cards make the stock (in a random order) and the opponent's discards. In each world it
tries every candidate action and plays the game out with the ``greedy`` bot's policy for
both seats, scoring the result with the engine's own ``score_game``. The candidate with the
best mean value is chosen: the chance of winning the match after the game, from a model
of the games to come, since a point matters more near the end than at the start.

- Every candidate is tried on the same worlds (common random numbers): their *difference*
  is measured far more precisely than their values, which is all a choice needs.
- The play-outs run in a small mutable simulator rather than the engine's immutable states,
  which is several times faster; the rules it needs (``trick_winner``, ``score_game``) are
  the engine's, and the tests check it against the engine.
- Candidates: every legal card or bid; for an exchange, six of the 32 discards (none or
  stop, then the 1 to 5 least useful cards): good discards are the least useful cards.
- Time (:class:`SearchClock`): it stops at :data:`BUDGET_SHARE` of ``deadline_ms`` less
  :data:`BUDGET_MARGIN_MS` (at most :data:`MAX_BUDGET_MS`), times the share of a CPU its
  recent searches got, checking the clock before each play-out. On a busy machine the waits
  for a CPU, in the search and on the way to and from the referee, grow as that share
  shrinks; the search shrinks with it, so a loaded machine costs play-outs, not the match.
  On the CPU clock (protocol 1.2, ``time_control.clock`` ``cpu``) the referee charges CPU
  time, not the machine's load: the search takes its whole budget by this process's CPU
  clock (:func:`time.process_time`).
  Automatic garbage collection is off during a match (a full collection can take tens of
  ms) and runs between matches.

About 60 worlds per decision play as well as 200, and at a 100 ms deadline (25 ms of
search) it gets about 190 (90 for an exchange; some 640 play-outs): information, not speed,
limits it. The random choices are seeded from the match's ``seed`` (protocol 1.1; else
``AEGIS_SEED`` and the match id) and the decision's place in the match, so a decision is
reproducible except for how many worlds the clock allows. With ``AEGIS_STRONG_WORLDS=N`` it
searches exactly N worlds per decision whatever the clock says: then its play is fully
reproducible (and its time is the machine's business: keep N small for short deadlines).
"""

from __future__ import annotations

import functools
import gc
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence

from protocol.sdk import Action, Bot, Decision, MatchEndInfo, MatchInfo, run
from referee.rules.actions import STOP, Bid, Exchange, Play
from referee.rules.cards import DECK, Card, Suit
from referee.rules.game import GameResult, Observation, Phase, Role, Seat, score_game, trick_winner
from referee.rules.options import RulesOptions
from sample_bots.greedy.bot import (
    ALL_CARDS,
    GreedyPlayer,
    bid_choice,
    card_mask,
    cost,
    exchange_choice,
    expected_tricks,
    play_choice,
    weak_cards,
)

__all__ = ["SearchClock", "Simulation", "StrongBot", "StrongPlayer", "WorldSampler"]

#: Share of ``deadline_ms`` spent searching, less a margin for messaging and a slow clock.
BUDGET_SHARE = 0.3
BUDGET_MARGIN_MS = 5.0
#: Longer searches barely play better; this keeps matches at long deadlines quick.
MAX_BUDGET_MS = 100.0
#: The search time over which :class:`SearchClock` averages the CPU share, in seconds.
SHARE_MEMORY_S = 0.1

# ---------------------------------------------------------------------------------------------
# The simulator


def _index(card: Card) -> int:
    return card.index


def played_mask(seen: Observation) -> int:
    """The key card and every card played this game, as a mask."""
    mask = 1 << seen.key_card.index
    for trick in seen.tricks:
        mask |= 1 << trick.lead.index | 1 << trick.follow.index
    if seen.lead is not None:
        mask |= 1 << seen.lead.index
    return mask


class Simulation:
    """One game from the current decision on, in one world where every card is known.

    Seats are the engine's (0 and 1). ``first`` is the action to take at the current decision;
    every later decision of either seat is the greedy policy's.
    """

    __slots__ = (
        "hands",
        "held",
        "key_rank",
        "lead",
        "leader",
        "master",
        "master_bid",
        "phase",
        "played",
        "rounds",
        "rules",
        "slave_bid",
        "stock",
        "to_move",
        "tricks",
        "trump",
        "won",
    )

    def __init__(
        self,
        seen: Observation,
        rules: RulesOptions,
        hands: list[list[Card]],
        held: list[int],
        stock: list[Card],
    ) -> None:
        self.rules = rules
        self.trump: Suit = seen.trump
        self.key_rank = seen.key_card.rank
        self.master: int = seen.master
        #: Hands, and the cards each seat has ever held (a mask), by seat.
        self.hands = hands
        self.held = held
        #: The cards still to be drawn, top first.
        self.stock = stock
        self.phase = seen.phase
        self.to_move: int = seen.to_move if seen.to_move is not None else seen.master
        self.rounds = seen.master_exchange_count
        self.master_bid = seen.master_bid
        self.slave_bid = seen.slave_bid
        #: Cards no longer in anyone's hand that both seats know of: the key card and plays.
        self.played = played_mask(seen)
        self.lead = seen.lead
        self.leader: int = seen.leader
        self.tricks = len(seen.tricks)
        self.won = list(seen.tricks_won)

    def finish(self, first: Action | None) -> GameResult:
        """Play the game to its end and score it."""
        if self.phase is Phase.EXCHANGE:
            self.exchange_phase(first)
            first = None
        if self.phase is Phase.BIDDING:
            self.bidding(first)
            first = None
        self.play_phase(first)
        slave = 1 - self.master
        attacker = self.master if self.slave_bid is None else slave
        return score_game(
            self.rules,
            attacker=Seat(attacker),
            master_bid=self.master_bid or 1,
            slave_bid=self.slave_bid,
            tricks_won=(self.won[0], self.won[1]),
        )

    def exchange_phase(self, first: Action | None) -> None:
        """The exchange rounds left, then bidding begins."""
        master = self.master
        while True:
            seat = self.to_move
            is_master = seat == master
            discards: tuple[Card, ...] | None
            if first is None:
                discards = exchange_choice(
                    self.hands[seat], self.trump, self.key_rank, is_master, self.rounds
                )
            else:
                discards = first.cards if isinstance(first, Exchange) else None
                first = None
            if discards is None:  # the master stops
                break
            kept = [card for card in self.hands[seat] if card not in discards]
            drawn = self.stock[: len(discards)]
            del self.stock[: len(discards)]
            self.hands[seat] = sorted(kept + drawn, key=_index)  # as the engine keeps hands
            self.held[seat] |= card_mask(drawn)
            if is_master:
                self.rounds += 1
                self.to_move = 1 - master
            else:
                self.to_move = master
                if self.rounds >= self.rules.max_exchange_rounds:
                    break
        self.phase = Phase.BIDDING
        self.to_move = master

    def bidding(self, first: Action | None) -> None:
        """The master's bid (unless made) and the slave's answer."""
        master, slave = self.master, 1 - self.master
        trump, key_rank, floor = self.trump, self.key_rank, self.rounds + 1
        if self.master_bid is None:
            if first is None:
                self.master_bid = bid_choice(self.hands[master], trump, key_rank, floor, None)
            else:
                self.master_bid = first.tricks if isinstance(first, Bid) else floor
                first = None
        if first is None:
            answer = bid_choice(self.hands[slave], trump, key_rank, floor, self.master_bid)
        else:
            answer = first.tricks if isinstance(first, Bid) else None
        self.slave_bid = answer
        self.phase = Phase.PLAY
        self.to_move = self.leader = master

    def play_phase(self, first: Action | None) -> None:
        """The tricks left: the card ``first`` names (if any), then greedy cards."""
        hands, held, won = self.hands, self.held, self.won
        trump, key_rank = self.trump, self.key_rank
        played, lead, leader, seat = self.played, self.lead, self.leader, self.to_move
        while self.tricks < 5:
            hand = hands[seat]
            if first is None:
                unseen = ALL_CARDS & ~(held[seat] | played)
                card = play_choice(hand, lead, trump, key_rank, unseen, len(hands[1 - seat]))
            else:
                card = first.card if isinstance(first, Play) else hand[0]
                first = None
            hand.remove(card)
            played |= 1 << card.index
            if lead is None:
                lead, leader, seat = card, seat, 1 - seat
            else:
                seat = seat if trick_winner(lead, card, trump, key_rank) else leader
                won[seat] += 1
                self.tricks += 1
                lead = None
        self.played, self.lead, self.leader, self.to_move = played, lead, seat, seat


# ---------------------------------------------------------------------------------------------
# Sampling worlds


def opponent_voids(seen: Observation) -> set[Suit]:
    """Suits the opponent has shown it lacks: it did not follow a card we led. Its hand
    only shrinks during play, so a void stays a void."""
    opponent = seen.seat.other
    return {
        trick.lead.suit
        for trick in seen.tricks
        if trick.leader != opponent and trick.follow.suit is not trick.lead.suit
    }


class WorldSampler:
    """Deals the hidden cards of one decision: the opponent's hand, its discards and the
    stock, consistently with everything this seat has seen.

    ``held`` is the mask of every card this seat has held this game: in hand now, discarded
    or played. The opponent's hand is drawn from the rest (less plays and the key card),
    never with a card of a suit it is known to lack. Three soft inferences, which take the
    opponent to play roughly like the greedy policy, make the likelier hands likelier:

    - A player keeps its useful cards (trumps, killers, kings and queens) when it exchanges,
      so after discarding ``n`` cards its hand holds at least ``5 - n`` of them: those are
      drawn first from the useful cards.
    - A player bids about what its hand is worth, and plays its cards sensibly: a hand is
      accepted with the likelihood of the opponent's bid and plays with it (:meth:`fits`).
    """

    #: Fresh draws at finding a hand that fits before reusing one that fitted before.
    TRIES = 30
    #: How fast plausibility falls with the distance between a hand and its bid, in tricks.
    BID_SIGMA = 0.6
    #: The likelihood of a card the greedy policy would not have played in the world.
    MISPLAY = 0.1

    def __init__(self, seen: Observation, held: int) -> None:
        self.seen = seen
        gone = held | played_mask(seen)
        self.pool = [card for card in DECK if not gone >> card.index & 1]
        voids = opponent_voids(seen)
        self.allowed = [card for card in self.pool if card.suit not in voids]
        trump, key_rank = seen.trump, seen.key_card.rank
        weak = set(weak_cards(self.allowed, trump, key_rank))
        self.useful = [card for card in self.allowed if card not in weak]
        opponent = seen.seat.other
        self.opponent_played = [
            card
            for trick in seen.tricks
            for card, seat in ((trick.lead, trick.leader), (trick.follow, trick.leader.other))
            if seat == opponent
        ]
        if seen.lead is not None and seen.leader == opponent:
            self.opponent_played.append(seen.lead)
        self.opponent_is_master = seen.master == opponent
        #: Every card played this game, in order: (seat, card, the card it followed or None).
        self.plays: list[tuple[Seat, Card, Card | None]] = []
        for trick in seen.tricks:
            self.plays.append((trick.leader, trick.lead, None))
            self.plays.append((trick.leader.other, trick.follow, trick.lead))
        if seen.lead is not None:
            self.plays.append((seen.leader, seen.lead, None))
        #: Hands (and discards) that fitted, reused when fresh draws keep failing.
        self.accepted: list[tuple[list[Card], list[Card]]] = []
        # Useful cards the opponent's hand must hold, beyond those it has played already.
        discarded = self._last_exchange()
        useful_played = len(self.opponent_played) - len(
            weak_cards(self.opponent_played, trump, key_rank)
        )
        self.useful_needed = 0
        if discarded is not None:
            needed = 5 - discarded - useful_played
            self.useful_needed = max(0, min(needed, seen.opponent_hand_size, len(self.useful)))

    def _last_exchange(self) -> int | None:
        """How many cards the opponent discarded in its last exchange, if it made one."""
        counts = [
            round_.master_count if self.opponent_is_master else round_.slave_count
            for round_ in self.seen.exchange_rounds
        ]
        made = [count for count in counts if count is not None]
        return made[-1] if made else None

    def sample(self, rng: random.Random) -> tuple[list[Card], list[Card], list[Card]]:
        """The opponent's hand, the stock (top first) and the opponent's discards."""
        size, stock_size = self.seen.opponent_hand_size, self.seen.stock_remaining
        hand: list[Card] = []
        discards: list[Card] = []
        for _try in range(self.TRIES):
            hand = rng.sample(self.useful, self.useful_needed)
            taken = card_mask(hand)
            others = [card for card in self.allowed if not taken >> card.index & 1]
            hand += rng.sample(others, size - len(hand))
            hand.sort(key=_index)  # the engine's order: the greedy policy breaks ties by it
            taken = card_mask(hand)
            rest = [card for card in self.pool if not taken >> card.index & 1]
            discards = rng.sample(rest, len(rest) - stock_size)
            if self.fits(hand, discards, rng.random()):
                self.accepted.append((hand, discards))
                break
        else:
            if self.accepted:  # a hand that fitted before
                hand, discards = rng.choice(self.accepted)
        stock = [card for card in self.pool if card not in hand and card not in discards]
        if self.seen.phase is Phase.EXCHANGE:  # later, no one draws: its order is moot
            rng.shuffle(stock)
        return hand, stock, discards

    def fits(self, hand: list[Card], discards: list[Card], threshold: float) -> bool:
        """Whether the opponent's likelihood of playing as it did with this hand (and these
        discards) exceeds ``threshold``: its bid's :meth:`plausibility`, times
        :data:`MISPLAY` for each card it played that the greedy policy would not have."""
        likelihood = self.plausibility(hand)
        if likelihood <= threshold or not self.opponent_played:
            return likelihood > threshold
        seen = self.seen
        trump, key_rank = seen.trump, seen.key_card.rank
        opponent = seen.seat.other
        holding = sorted([*hand, *self.opponent_played], key=_index)
        held = card_mask(holding) | card_mask(discards)
        played = 1 << seen.key_card.index
        our_cards = len(holding)
        for seat, card, lead in self.plays:
            if seat == opponent:
                unseen = ALL_CARDS & ~(held | played)
                if play_choice(holding, lead, trump, key_rank, unseen, our_cards) is not card:
                    likelihood *= self.MISPLAY
                    if likelihood <= threshold:
                        return False
                holding.remove(card)
            else:
                our_cards -= 1
            played |= 1 << card.index
        return True

    def plausibility(self, hand: Sequence[Card]) -> float:
        """How well the opponent's hand, as it was before play, fits its bid: 1 for a
        perfect fit, less the further its value is from what the bid says."""
        seen = self.seen
        master_bid = seen.master_bid
        if master_bid is None:
            return 1.0
        before_play = [*hand, *self.opponent_played]
        trump, key_rank = seen.trump, seen.key_card.rank
        worth = expected_tricks(before_play, trump, key_rank, leads=self.opponent_is_master)
        if self.opponent_is_master:
            floor = seen.master_exchange_count + 1
            # Above the floor, the bid says what the hand is worth; at it, only "no more".
            low = master_bid - 0.5 if master_bid > floor else -math.inf
            high = master_bid + 0.5
        elif seen.slave_bid is not None:
            low, high = seen.slave_bid - 0.5, math.inf
        elif seen.slave_passed:
            low, high = -math.inf, master_bid + 1.0
        else:
            return 1.0
        distance = max(0.0, low - worth, worth - high)
        return math.exp(-0.5 * (distance / self.BID_SIGMA) ** 2)


# ---------------------------------------------------------------------------------------------
# The search


def candidates(seen: Observation, legal: Sequence[Action], greedy: Action) -> list[Action]:
    """The actions worth searching, the greedy choice first (it wins ties)."""
    if seen.phase is Phase.EXCHANGE:
        ranked = sorted(seen.hand, key=lambda card: cost(card, seen.trump, seen.key_card.rank))
        options: list[Action] = [greedy, STOP if seen.role is Role.MASTER else Exchange(())]
        options += [Exchange(tuple(ranked[:count])) for count in range(1, len(ranked) + 1)]
    else:
        options = [greedy, *legal]
    unique: list[Action] = []
    for action in options:
        if action not in unique and action in legal:
            unique.append(action)
    return unique


#: The points (master, slave) of a game between two greedy players and how often each came
#: up in 20,000 self-play games: the model of the games still to come.
GAME_OUTCOMES: tuple[tuple[int, int, float], ...] = (
    (0, 3, 0.2135),
    (4, 0, 0.1685),
    (3, 0, 0.1200),
    (3, 2, 0.1198),
    (0, 2, 0.0967),
    (2, 2, 0.0961),
    (0, 4, 0.0622),
    (2, 0, 0.0539),
    (5, 0, 0.0421),
    (2, 4, 0.0189),
    (0, 5, 0.0074),
    (7, 0, 0.0006),
)


class MatchOdds:
    """The chance of winning the match from given scores, if the games still to come go as
    :data:`GAME_OUTCOMES` says: the match value of a game's result. Computed by recursion
    over the scores (every game scores, so it ends), remembered for the match's rules."""

    def __init__(self, rules: RulesOptions) -> None:
        self.rules = rules
        self._chances: dict[tuple[int, int, bool], float] = {}
        total = sum(frequency for _master, _slave, frequency in GAME_OUTCOMES)
        self._outcomes = [
            (master, slave, frequency / total) for master, slave, frequency in GAME_OUTCOMES
        ]
        # Every score a match can reach, now rather than in the middle of a decision.
        self.chance(0, 0, True)
        self.chance(0, 0, False)

    def over(self, mine: int, theirs: int, won_game: bool) -> float | None:
        """1 if these scores win us the match, 0 if they lose it, None if it goes on."""
        target, margin = self.rules.target_score, self.rules.cold_margin
        if mine >= target and theirs >= target:  # D7: the game's winner takes the match
            return 1.0 if won_game else 0.0
        if mine >= target or mine - theirs >= margin:
            return 1.0
        if theirs >= target or theirs - mine >= margin:
            return 0.0
        return None

    def chance(self, mine: int, theirs: int, master_next: bool) -> float:
        """Our chance of winning from these scores, the next game's master being us or not."""
        key = (mine, theirs, master_next)
        known = self._chances.get(key)
        if known is not None:
            return known
        chance = 0.0
        for master, slave, frequency in self._outcomes:
            gain, loss = (master, slave) if master_next else (slave, master)
            over = self.over(mine + gain, theirs + loss, gain > loss)
            if over is None:
                over = self.chance(mine + gain, theirs + loss, not master_next)
            chance += frequency * over
        self._chances[key] = chance
        return chance


@functools.cache
def match_odds(rules: RulesOptions) -> MatchOdds:
    """The :class:`MatchOdds` of these rules, computed once."""
    return MatchOdds(rules)


class StrongPlayer:
    """The search on the engine's observations (usable in-process too).

    ``seed`` seeds the sampling; ``max_worlds`` caps the worlds of a decision (with a cap
    and time to reach it, play is fully deterministic: for tests).
    """

    def __init__(
        self,
        rules: RulesOptions | None = None,
        seed: str = "",
        max_worlds: int | None = None,
    ) -> None:
        self.rules = rules or RulesOptions()
        self.seed = seed
        self.max_worlds = max_worlds
        self.greedy = GreedyPlayer()
        #: What seeds the sampling of the match's decisions, with their place in it.
        self.match_key = ""
        #: Totals for the statistics line: decisions searched, worlds, rollouts.
        self.searched = self.worlds = self.rollouts = 0
        self.odds = match_odds(self.rules)

    def new_match(self, rules: RulesOptions, match_id: str, seed: int | None = None) -> None:
        """Forget the last match (game numbers start again); ``seed`` is the match's seed
        from ``match_start``, if the referee sent one."""
        self.rules = rules
        # Our own AEGIS_SEED is mixed in, so that two copies of this bot stay different.
        self.match_key = f"{self.seed}:" + (f"seed {seed}" if seed is not None else match_id)
        self.greedy.forget()
        self.odds = match_odds(rules)

    def decide(
        self,
        seen: Observation,
        legal: Sequence[Action],
        stop_at: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> Action:
        """The best candidate found by ``stop_at`` (a reading of ``clock``)."""
        greedy = self.greedy.decide(seen, legal)  # also notes our hand
        options = candidates(seen, legal, greedy)
        if len(options) < 2:
            return greedy
        rng = random.Random(self._decision_key(seen))
        sampler = WorldSampler(seen, self.greedy.held)
        me, opponent = seen.seat, seen.seat.other
        totals = [0.0] * len(options)
        worlds = 0
        while worlds != self.max_worlds and clock() < stop_at:
            opponent_hand, stock, opponent_discards = sampler.sample(rng)
            opponent_held = card_mask(opponent_hand) | card_mask(opponent_discards)
            values: list[float] = []
            for action in options:
                if clock() >= stop_at:
                    break
                hands: list[list[Card]] = [[], []]
                hands[me], hands[opponent] = list(seen.hand), list(opponent_hand)
                held = [0, 0]
                held[me], held[opponent] = self.greedy.held, opponent_held
                result = Simulation(seen, self.rules, hands, held, list(stock)).finish(action)
                values.append(self.value(seen, result))
            if len(values) < len(options):
                break  # out of time in the middle of a world: drop it, as the others lack it
            for index, value in enumerate(values):
                totals[index] += value
            worlds += 1
        self.searched += 1
        self.worlds += worlds
        self.rollouts += worlds * len(options)
        best = max(range(len(options)), key=lambda index: totals[index])
        return options[best]

    def value(self, seen: Observation, result: GameResult) -> float:
        """What a game's result is worth to us: our chance of winning the match after it.
        (Not the points: a point is worth more near the end, and a risk less when behind.)"""
        me, opponent = seen.seat, seen.seat.other
        mine = seen.scores[me] + result.points[me]
        theirs = seen.scores[opponent] + result.points[opponent]
        over = self.odds.over(mine, theirs, result.winner == me)
        if over is not None:
            return over
        return self.odds.chance(mine, theirs, seen.master != me)

    def _decision_key(self, seen: Observation) -> str:
        """The decision's place in the match, to seed its sampling reproducibly."""
        progress = (
            len(seen.exchange_rounds),
            seen.exchange_stopped,
            seen.master_bid,
            seen.slave_bid,
            len(seen.tricks),
            seen.lead,
        )
        return f"{self.match_key}:{seen.game_number}:{seen.phase.value}:{progress}"


class SearchClock:
    """How long a decision may search: :data:`BUDGET_SHARE` of the deadline less
    :data:`BUDGET_MARGIN_MS`, at most :data:`MAX_BUDGET_MS`, times the share of a CPU that
    the searches got lately (their CPU time over their wall time, the last
    :data:`SHARE_MEMORY_S` of searching weighing most).

    A deadline counts every wait for a CPU: in the search, and on the way in and out, where
    the referee and the bot each wake up to move the message. On a busy machine those waits
    grow as the share of a CPU shrinks (a process with a third of a CPU waits about twice
    as long as it runs), so the margin the deadline leaves must grow too; and the longer
    the search, the likelier a long wait lands in it. A search that got a third of a CPU is
    given a third of its time; a starved one searches next to nothing,
    and the bot answers about as fast as ``greedy`` would. An idle machine gives the whole
    budget. A searched decision measures the share; one that is not searched (a single
    candidate) does not, and a short search weighs little.
    """

    def __init__(self) -> None:
        self._cpu = 0.0
        self._wall = 0.0

    @property
    def share(self) -> float:
        """The share of a CPU the recent searches got, 1 before the first."""
        if self._wall <= 0:
            return 1.0
        return min(1.0, self._cpu / self._wall)

    def budget_ms(self, deadline_ms: int, *, cpu_clock: bool = False) -> float:
        """The search time for a decision with this deadline (0 or less: none); on the CPU
        clock the whole of it, however small a share of a CPU the searches got."""
        share = 1.0 if cpu_clock else self.share
        return min(deadline_ms * BUDGET_SHARE - BUDGET_MARGIN_MS, MAX_BUDGET_MS) * share

    def note(self, cpu_s: float, wall_s: float) -> None:
        """A search took ``wall_s`` seconds and got ``cpu_s`` of CPU time."""
        if wall_s <= 0:
            return
        past = math.exp(-wall_s / SHARE_MEMORY_S)
        self._cpu = past * self._cpu + min(cpu_s, wall_s)
        self._wall = past * self._wall + wall_s


class StrongBot(Bot):
    """The search behind the SDK, within each decision's deadline."""

    name = "strong"
    author = "aegis-ref"

    def __init__(self, seed: str, verbose: bool = False, worlds: int | None = None) -> None:
        """``worlds``: search exactly that many worlds per decision, ignoring the clock (the
        reproducible mode), instead of as many as the deadline allows."""
        self.player = StrongPlayer(seed=seed, max_worlds=worlds)
        self.fixed_budget = worlds is not None
        self.clock = SearchClock()
        self.verbose = verbose
        # The search makes no reference cycles, so nothing piles up; a collection in the
        # middle of a decision could cost it the deadline. Collected at each match's end.
        gc.disable()

    def on_match_start(self, match: MatchInfo) -> None:
        """Search under the match's rules."""
        self.player.new_match(match.rules_options, match.match_id, match.seed)

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """Search until the budget for this decision is spent."""
        player = self.player
        if self.fixed_budget:
            return player.decide(view.observation, legal, math.inf)
        if view.match is not None and view.match.time_control.clock == "cpu":
            # Charged its own CPU time (protocol 1.2): the machine's load costs it nothing,
            # so the search takes its whole budget, by the CPU clock of this process.
            budget_s = self.clock.budget_ms(view.deadline_ms, cpu_clock=True) / 1000
            return player.decide(
                view.observation, legal, time.process_time() + budget_s, time.process_time
            )
        stop_at = view.received_at + self.clock.budget_ms(view.deadline_ms) / 1000
        searched, wall, cpu = player.searched, time.monotonic(), time.thread_time()
        action = player.decide(view.observation, legal, stop_at)
        if player.searched > searched:
            self.clock.note(time.thread_time() - cpu, time.monotonic() - wall)
        return action

    def on_match_end(self, result: MatchEndInfo) -> None:
        """Collect garbage; with ``AEGIS_STRONG_VERBOSE`` set, print search statistics."""
        gc.collect()
        player = self.player
        if self.verbose and player.searched:
            print(
                f"strong: {player.searched} searches, {player.worlds / player.searched:.1f} "
                f"worlds and {player.rollouts / player.searched:.1f} rollouts per search",
                file=sys.stderr,
                flush=True,
            )


def fixed_worlds(text: str | None) -> int | None:
    """``AEGIS_STRONG_WORLDS``: a positive number of worlds, or None (search by time)."""
    if not text:
        return None
    worlds = int(text)
    if worlds < 1:
        raise ValueError(f"AEGIS_STRONG_WORLDS must be a positive integer, got {text!r}")
    return worlds


if __name__ == "__main__":
    run(
        StrongBot(
            os.environ.get("AEGIS_SEED", ""),
            bool(os.environ.get("AEGIS_STRONG_VERBOSE")),
            fixed_worlds(os.environ.get("AEGIS_STRONG_WORLDS")),
        )
    )
