"""Hypothesis properties of random playouts: random decks, random legal choices, random options.

Expectations here are recomputed independently of the engine (trick winners, points), so a
bug shared by the engine's helpers and its callers still shows.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import random
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules.actions import PASS, STOP, Action, Bid, Exchange, Pass, Play, bid, play
from referee.rules.cards import ACE, DECK, Card
from referee.rules.errors import IllegalActionError
from referee.rules.game import (
    GameState,
    Observation,
    Phase,
    Seat,
    Trick,
    apply,
    killers,
    legal_actions,
    new_game,
    observation,
    shuffled_deck,
)
from referee.rules.match import (
    MatchState,
    Termination,
    draw_first_master,
    finish_game,
    new_match,
    start_game,
)
from referee.rules.options import RulesOptions
from tests.referee.helpers import ATTACKER_TABLE, all_cards_of, cards_in

PLAYOUT_SETTINGS = settings(max_examples=150, deadline=None)
MATCH_SETTINGS = settings(max_examples=100, deadline=None)

OPTIONS = st.builds(
    RulesOptions,
    promise_min_bid=st.integers(1, 5),
    max_exchange_rounds=st.integers(0, 4),
)


@dataclass(frozen=True, repr=False)
class Playout:
    """One random game: its inputs and every state from the deal to the end."""

    options: RulesOptions
    master: Seat
    deck: tuple[Card, ...]
    actions: tuple[tuple[Seat, Action], ...]
    states: tuple[GameState, ...]

    @property
    def final(self) -> GameState:
        return self.states[-1]

    def __repr__(self) -> str:
        # Short enough for Hypothesis to print a falsifying example: the inputs only.
        deck = " ".join(str(card) for card in self.deck)
        actions = ", ".join(f"{int(seat)}:{action}" for seat, action in self.actions)
        return f"Playout({self.options}, master={self.master}, deck=[{deck}], actions=[{actions}])"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))  # Hypothesis would otherwise print every dataclass field


@st.composite
def playouts(draw: st.DrawFn) -> Playout:
    options = draw(OPTIONS)
    master = draw(st.sampled_from(Seat))
    deck = tuple(draw(st.permutations(DECK)))
    state = new_game(options, master, deck)
    states = [state]
    actions: list[tuple[Seat, Action]] = []
    while state.to_move is not None:
        legal = legal_actions(state)
        assert len(legal) > 0
        action = legal[draw(st.integers(0, len(legal) - 1))]
        seat = state.to_move
        state = apply(state, seat, action)
        states.append(state)
        actions.append((seat, action))
    return Playout(options, master, deck, tuple(actions), tuple(states))


def follower_wins(lead: Card, follow: Card, trump: Card) -> bool:
    """The trick rule of RULES-DECISIONS.md, written out again; ``trump`` is the key card."""
    if follow.suit is lead.suit:
        if follow.rank == ACE:
            return lead.rank in (11, 12, 13)
        if lead.rank == ACE:
            return follow.rank <= 10
        return follow.rank > lead.rank
    if lead.suit is not trump.suit and follow.suit is trump.suit:
        return True
    return lead.suit is trump.suit and follow.rank == trump.rank and follow.suit is not trump.suit


# --- one game -------------------------------------------------------------------------------


@PLAYOUT_SETTINGS
@given(playouts())
def test_cards_are_conserved_at_every_state(game: Playout) -> None:
    for state in game.states:
        located = all_cards_of(state)
        assert len(located) == 52
        assert set(located) == set(DECK)
        assert state.key_card is game.deck[10]
        if state.phase in (Phase.EXCHANGE, Phase.BIDDING):
            assert len(state.hands[0]) == len(state.hands[1]) == 5


@PLAYOUT_SETTINGS
@given(playouts())
def test_followers_follow_suit_whenever_able(game: Playout) -> None:
    for state, (seat, action) in zip(game.states, game.actions, strict=False):
        if state.phase is not Phase.PLAY or state.lead is None:
            continue
        assert isinstance(action, Play)
        led = state.lead.suit
        holds_led_suit = any(card.suit is led for card in state.hands[seat])
        if holds_led_suit:
            assert action.card.suit is led
            assert all(
                isinstance(legal, Play) and legal.card.suit is led for legal in legal_actions(state)
            )
        else:
            assert set(legal_actions(state)) == {play(card) for card in state.hands[seat]}


@PLAYOUT_SETTINGS
@given(playouts())
def test_each_trick_winner_leads_the_next_and_wins_by_the_rules(game: Playout) -> None:
    final = game.final
    tricks = final.tricks
    assert tricks[0].leader is game.master
    for earlier, later in itertools.pairwise(tricks):
        assert later.leader is earlier.winner
    for trick in tricks:
        follower = trick.leader.other
        wins = follower_wins(trick.lead, trick.follow, final.key_card)
        assert trick.winner is (follower if wins else trick.leader)
    for state in game.states:
        if state.phase is Phase.PLAY and state.lead is None:
            previous: Trick | None = state.tricks[-1] if state.tricks else None
            assert state.to_move is (previous.winner if previous else game.master)


@PLAYOUT_SETTINGS
@given(playouts())
def test_game_ends_after_exactly_five_tricks(game: Playout) -> None:
    final = game.final
    assert final.phase is Phase.OVER
    assert final.to_move is None
    assert len(final.tricks) == 5
    assert final.hands == ((), ())
    assert final.lead is None
    wins = [sum(trick.winner is seat for trick in final.tricks) for seat in Seat]
    assert final.tricks_won == (wins[0], wins[1])
    assert sum(final.tricks_won) == 5
    assert all(state.phase is not Phase.OVER for state in game.states[:-1])
    plays = [action for _, action in game.actions if isinstance(action, Play)]
    assert len(plays) == 10


@PLAYOUT_SETTINGS
@given(playouts())
def test_points_follow_the_table_and_rules(game: Playout) -> None:
    bids = [(seat, action) for seat, action in game.actions if isinstance(action, Bid | Pass)]
    assert len(bids) == 2
    (master_seat, master_bid), (slave_seat, slave_action) = bids
    assert master_seat is game.master
    assert slave_seat is game.master.other
    assert isinstance(master_bid, Bid)
    if isinstance(slave_action, Bid):
        attacker, contract = slave_seat, slave_action.tricks
    else:
        attacker, contract = master_seat, master_bid.tricks
    defender = attacker.other
    final = game.final
    taken = sum(trick.winner is attacker for trick in final.tricks)
    expected = {attacker: 0, defender: 0}
    if taken >= contract:
        expected[attacker] = ATTACKER_TABLE[contract, taken]
        if taken == contract and contract < game.options.promise_min_bid:
            expected[attacker] -= 1  # D5
        if master_bid.tricks <= 2 and 5 - taken >= master_bid.tricks:
            expected[defender] = master_bid.tricks  # save
    else:
        expected[defender] = contract + (1 if taken == 0 else 0)
    assert final.result is not None
    assert final.result.points == (expected[Seat.FIRST], expected[Seat.SECOND])
    assert final.result.attacker is attacker
    assert final.result.bid == contract
    assert final.result.master_bid == master_bid.tricks
    exchanges = [a for s, a in game.actions if s is game.master and isinstance(a, Exchange)]
    assert master_bid.tricks >= len(exchanges) + 1


@PLAYOUT_SETTINGS
@given(playouts())
def test_observations_hide_the_opponent_hand_discards_and_stock(game: Playout) -> None:
    for state in game.states:
        played = {card for trick in state.tricks for card in (trick.lead, trick.follow)}
        if state.lead is not None:
            played.add(state.lead)
        hidden_from = {
            seat: {*state.hands[seat.other], *state.discards[0], *state.discards[1], *state.stock}
            for seat in Seat
        }
        for seat in Seat:
            seen = observation(state, seat)
            assert isinstance(seen, Observation)
            allowed = {*state.hands[seat], state.key_card, *played}
            for name in Observation._fields:
                value = getattr(seen, name)
                if name == "killers":
                    assert value == killers(state.key_card)  # public by rule, wherever they lie
                    continue
                found = set(cards_in(value))
                assert found <= allowed, (name, found - allowed)
                assert not found & hidden_from[seat], name
            assert seen.hand == state.hands[seat]
            assert seen.opponent_hand_size == len(state.hands[seat.other])


@PLAYOUT_SETTINGS
@given(playouts())
def test_replaying_reproduces_every_state(game: Playout) -> None:
    state = new_game(game.options, game.master, list(game.deck))
    assert state == game.states[0]
    for (seat, action), expected in zip(game.actions, game.states[1:], strict=True):
        state = apply(state, seat, copy.deepcopy(action))
        assert state == expected
    assert state.result == game.final.result
    assert state.history == game.final.history


@PLAYOUT_SETTINGS
@given(playouts())
def test_apply_never_mutates_its_input(game: Playout) -> None:
    for state, (seat, action) in zip(game.states, game.actions, strict=False):
        snapshot = copy.deepcopy(state)
        hands = state.hands
        after = apply(state, seat, action)
        assert state == snapshot
        assert state.hands is hands
        assert after != state
        with contextlib.suppress(IllegalActionError):
            apply(state, seat.other, action)
        assert state == snapshot


def candidates(state: GameState, seat: Seat) -> list[Action]:
    """Actions to try in ``state``: every play, bid and pass, and exchanges legal or not."""
    tried: list[Action] = [STOP, PASS, *(bid(tricks) for tricks in range(0, 7)), Exchange(())]
    tried += [play(card) for card in DECK]
    hand = state.hands[seat]
    if hand:
        tried += [Exchange(hand), Exchange(hand[:1])]
        strangers = [state.hands[seat.other][:1], state.stock[:1], state.discards[seat][:1]]
        tried += [Exchange((*hand[1:], *stranger)) for stranger in strangers if stranger]
        tried += [Exchange((state.key_card,))]
    return tried


@settings(max_examples=100, deadline=None)
@given(playouts())
def test_legal_actions_are_exactly_the_accepted_ones(game: Playout) -> None:
    for state in game.states:
        legal = legal_actions(state)
        listed = list(legal)
        assert len(set(listed)) == len(listed)  # no duplicates
        for action in listed:  # every listed action is accepted
            assert state.to_move is not None
            apply(state, state.to_move, action)
        for seat in Seat:
            for action in candidates(state, seat):
                try:
                    apply(state, seat, action)
                except IllegalActionError:
                    accepted = False
                else:
                    accepted = True
                expected = seat is state.to_move and action in listed
                assert accepted is expected, (state.phase, seat, action)
        if state.phase is Phase.EXCHANGE:
            assert len(listed) == 32
        if state.phase is Phase.OVER:
            assert listed == []


@PLAYOUT_SETTINGS
@given(st.randoms(use_true_random=False), OPTIONS)
def test_shuffled_decks_are_decks_and_deal_the_same_way(
    rng: random.Random, options: RulesOptions
) -> None:
    deck = shuffled_deck(rng)
    assert sorted(deck) == list(DECK)
    state = new_game(options, Seat.FIRST, deck)
    assert state.phase is (Phase.BIDDING if options.max_exchange_rounds == 0 else Phase.EXCHANGE)
    assert set(state.hands[0]) == set(deck[:5])


# --- whole matches --------------------------------------------------------------------------


def random_match(options: RulesOptions, seed: int) -> tuple[MatchState, list[tuple[int, int]]]:
    """Play a match with uniformly random legal choices; return it and the score history."""
    rng = random.Random(seed)
    match = new_match(options, draw_first_master(rng))
    history = [match.scores]
    while match.result is None:
        assert match.games_played < 1000, "the match does not end"
        game = start_game(match, shuffled_deck(rng))
        while game.to_move is not None:
            legal = legal_actions(game)
            game = apply(game, game.to_move, legal[rng.randrange(len(legal))])
        match = finish_game(match, game)
        history.append(match.scores)
    return match, history


def check_scores_grow(history: list[tuple[int, int]]) -> None:
    for before, after in itertools.pairwise(history):
        assert after[0] >= before[0]
        assert after[1] >= before[1]
        assert sum(after) > sum(before)  # every game gives someone a point


@MATCH_SETTINGS
@given(st.integers(0, 2**32 - 1), OPTIONS)
def test_match_at_default_target_ends_within_49_games(seed: int, options: RulesOptions) -> None:
    match, history = random_match(options, seed)
    assert match.result is not None
    assert 1 <= match.games_played <= 49
    assert match.result.games == match.games_played
    assert match.result.scores == match.scores == history[-1]
    check_scores_grow(history)


@MATCH_SETTINGS
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 30),
    st.integers(1, 1000),
    st.integers(1, 5),
)
def test_match_ends_within_twice_the_target_less_one(
    seed: int, target: int, cold_margin: int, promise_min_bid: int
) -> None:
    options = RulesOptions(
        target_score=target, cold_margin=cold_margin, promise_min_bid=promise_min_bid
    )
    match, history = random_match(options, seed)
    assert match.result is not None
    assert 1 <= match.games_played <= 2 * target - 1
    check_scores_grow(history)
    high = max(match.scores)
    if match.result.termination is Termination.COLD:
        assert abs(match.scores[0] - match.scores[1]) >= cold_margin
        assert high < target
    else:
        assert high >= target
        assert match.scores[match.result.winner] >= target
