"""One game: deal, exchange, bidding, play, trick winners, legality and error messages."""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable

import pytest

from referee.rules.actions import PASS, STOP, Action, Bid, Exchange, Play, bid, parse_action, play
from referee.rules.cards import DECK, Card, Suit, parse_card
from referee.rules.errors import IllegalActionError
from referee.rules.game import (
    HAND_SIZE,
    KEY_CARD_POSITION,
    STOCK_START,
    ExchangeChoices,
    ExchangeRound,
    GameState,
    Phase,
    Role,
    Seat,
    Trick,
    Turn,
    apply,
    killers,
    legal_actions,
    new_game,
    observation,
    shuffled_deck,
    trick_winner,
)
from referee.rules.options import RulesOptions
from tests.referee.helpers import (
    DEFAULTS,
    cards,
    crafted_deck,
    deal,
    run,
    subsets_of,
    to_play_phase,
)

SHUFFLED = shuffled_deck(random.Random(20240611))


def play_out(state: GameState) -> GameState:
    """Play the first legal action until the game is over."""
    while state.to_move is not None:
        state = apply(state, state.to_move, legal_actions(state)[0])
    return state


def codes(items: tuple[Card, ...]) -> list[str]:
    return [str(card) for card in items]


# --- deal -----------------------------------------------------------------------------------


@pytest.mark.parametrize("master", [Seat.FIRST, Seat.SECOND])
def test_deck_layout(master: Seat) -> None:
    state = new_game(DEFAULTS, master, SHUFFLED)
    slave = master.other
    assert state.master is master
    assert state.slave is slave
    assert set(state.hands[master]) == set(SHUFFLED[0:5])
    assert set(state.hands[slave]) == set(SHUFFLED[5:10])
    assert state.hands[master] == tuple(sorted(SHUFFLED[0:5]))  # hands in canonical order
    assert state.key_card is SHUFFLED[10]
    assert state.trump is SHUFFLED[10].suit
    assert state.stock == SHUFFLED[11:]
    assert len(state.stock) == 41
    assert state.deck == SHUFFLED
    assert (KEY_CARD_POSITION, STOCK_START, HAND_SIZE) == (10, 11, 5)
    assert state.discards == ((), ())
    assert state.phase is Phase.EXCHANGE
    assert state.to_move is master
    assert state.leader is master
    assert state.exchange_rounds == ()
    assert state.master_bid is None
    assert state.slave_bid is None
    assert state.tricks == ()
    assert state.tricks_won == (0, 0)
    assert state.history == ()
    assert state.result is None
    assert state.attacker is None
    assert state.role(master) is Role.MASTER
    assert state.role(slave) is Role.SLAVE
    assert state.game_number == 1
    assert state.scores_before == (0, 0)


def test_deal_from_a_crafted_deck() -> None:
    deck = deal("AS KS QS JS 10S", "AH KH QH JH 10H", "7D", stock="2C 3C")
    state = new_game(DEFAULTS, Seat.SECOND, deck)
    assert codes(state.hands[Seat.SECOND]) == ["AS", "KS", "QS", "JS", "10S"]
    assert codes(state.hands[Seat.FIRST]) == ["AH", "KH", "QH", "JH", "10H"]
    assert str(state.key_card) == "7D"
    assert state.trump is Suit.DIAMONDS
    assert codes(state.stock[:3]) == ["2C", "3C", "9S"]  # then the rest in canonical order


def test_new_game_records_game_number_and_scores() -> None:
    state = new_game(DEFAULTS, Seat.FIRST, DECK, game_number=7, scores_before=(12, 3))
    assert state.game_number == 7
    assert state.scores_before == (12, 3)
    assert observation(state, Seat.SECOND).scores == (12, 3)


@pytest.mark.parametrize(
    "bad_deck",
    [
        DECK[:51],
        (*DECK, DECK[0]),
        (*DECK[:51], DECK[0]),
        (*DECK[:51], "2C"),
        tuple(str(card) for card in DECK),
        (),
    ],
    ids=["51 cards", "53 cards", "duplicate", "a string", "codes", "empty"],
)
def test_new_game_rejects_a_bad_deck(bad_deck: tuple[object, ...]) -> None:
    with pytest.raises(IllegalActionError, match="each of the 52 cards once"):
        new_game(DEFAULTS, Seat.FIRST, bad_deck)  # type: ignore[arg-type]


@pytest.mark.parametrize("master", [2, -1, "0", None])
def test_new_game_rejects_a_bad_master(master: object) -> None:
    with pytest.raises(IllegalActionError, match="master must be seat 0 or 1"):
        new_game(DEFAULTS, master, DECK)  # type: ignore[arg-type]


def test_new_game_accepts_int_seats() -> None:
    state = new_game(DEFAULTS, 1, DECK)  # type: ignore[arg-type]
    assert state.master is Seat.SECOND
    assert state.to_move is Seat.SECOND


# --- killers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [("7H", "7S 7D 7C"), ("AS", "AH AD AC"), ("10C", "10S 10H 10D"), ("KD", "KS KH KC")],
)
def test_killers_are_the_other_suits_of_the_key_rank(key: str, expected: str) -> None:
    assert killers(parse_card(key)) == cards(expected)


def test_every_key_card_has_three_killers() -> None:
    for key in DECK:
        found = killers(key)
        assert len(found) == 3
        assert all(card.rank == key.rank for card in found)
        assert {card.suit for card in found} == set(Suit) - {key.suit}


def test_state_and_observation_name_the_killers() -> None:
    state = new_game(DEFAULTS, Seat.FIRST, deal("AS KS QS JS 10S", "AH KH QH JH 10H", "9C"))
    assert observation(state, Seat.FIRST).killers == cards("9S 9H 9D")
    assert observation(state, Seat.SECOND).trump is Suit.CLUBS


# --- legal actions: exchange ----------------------------------------------------------------


def exchange_sets(actions: list[Action]) -> list[frozenset[Card]]:
    assert all(isinstance(action, Exchange) for action in actions)
    return [frozenset(action.cards) for action in actions if isinstance(action, Exchange)]


def test_master_may_stop_or_exchange_any_non_empty_subset() -> None:
    state = new_game(DEFAULTS, Seat.FIRST, SHUFFLED)
    legal = list(legal_actions(state))
    assert len(legal) == 32
    assert legal[0] == STOP
    discards = exchange_sets(legal[1:])
    assert len(set(discards)) == 31
    assert set(discards) == subsets_of(state.hands[Seat.FIRST]) - {frozenset()}
    for action in legal[1:]:
        assert isinstance(action, Exchange)
        assert action.cards == tuple(sorted(action.cards))  # canonical order


def test_slave_may_exchange_any_subset_including_none() -> None:
    state = run(new_game(DEFAULTS, Seat.SECOND, SHUFFLED), "exchange " + str(SHUFFLED[0]))
    assert state.to_move is Seat.FIRST
    legal = list(legal_actions(state))
    assert len(legal) == 32
    assert STOP not in legal
    discards = exchange_sets(legal)
    assert len(set(discards)) == 32
    assert set(discards) == subsets_of(state.hands[Seat.FIRST])
    assert Exchange(()) in legal


def test_exchange_texts_are_the_text_of_each_choice_in_order() -> None:
    # texts() builds the wire list without building the actions; it must say the same.
    for seed in range(50):
        hand = tuple(sorted(shuffled_deck(random.Random(seed))[:5]))
        for is_master in (True, False):
            choices = ExchangeChoices(hand, is_master)
            assert choices.texts() == [str(action) for action in choices]
            assert [parse_action(text) for text in choices.texts()] == list(choices)


def test_exchange_choices_support_sequence_protocol() -> None:
    state = new_game(DEFAULTS, Seat.FIRST, SHUFFLED)
    legal = legal_actions(state)
    assert legal[-1] == Exchange(state.hands[Seat.FIRST])
    assert list(legal[1:3]) == [Exchange((card,)) for card in state.hands[Seat.FIRST][:2]]
    assert STOP in legal
    assert Exchange(()) not in legal
    assert Exchange((SHUFFLED[5],)) not in legal  # the slave's card
    assert bid(1) not in legal
    with pytest.raises(IndexError):
        legal[32]
    assert legal == legal_actions(state)


# --- exchange phase (D2, D3) ----------------------------------------------------------------


def test_master_exchange_draws_from_the_top_of_the_stock() -> None:
    deck = deal("AS KS QS JS 10S", "AH KH QH JH 10H", "7D", stock="2C 3C 4C 5C 6C 7C")
    state = run(new_game(DEFAULTS, Seat.FIRST, deck), "exchange KS 10S")
    assert codes(state.hands[Seat.FIRST]) == ["AS", "QS", "JS", "3C", "2C"]  # canonical order
    assert codes(state.discards[Seat.FIRST]) == ["KS", "10S"]
    assert state.stock_position == 13
    assert codes(state.stock[:2]) == ["4C", "5C"]
    assert state.exchange_rounds == (ExchangeRound(2, None),)
    assert state.to_move is Seat.SECOND
    assert state.phase is Phase.EXCHANGE
    assert state.history == (Turn(Seat.FIRST, Exchange(cards("KS 10S")), cards("2C 3C")),)
    state = run(state, "exchange AH KH QH")
    assert codes(state.hands[Seat.SECOND]) == ["JH", "10H", "6C", "5C", "4C"]
    assert codes(state.discards[Seat.SECOND]) == ["AH", "KH", "QH"]
    assert state.exchange_rounds == (ExchangeRound(2, 3),)
    assert state.history[-1] == Turn(Seat.SECOND, Exchange(cards("AH KH QH")), cards("4C 5C 6C"))
    assert state.to_move is Seat.FIRST
    assert state.master_exchange_count == 1


def test_d3_slave_exchanging_nothing_does_not_end_the_phase() -> None:
    state = run(new_game(DEFAULTS, Seat.FIRST, SHUFFLED), f"exchange {SHUFFLED[0]}", "exchange")
    assert state.phase is Phase.EXCHANGE
    assert state.to_move is Seat.FIRST
    assert state.exchange_rounds == (ExchangeRound(1, 0),)
    assert state.stock_position == 12
    assert state.discards[Seat.SECOND] == ()
    assert set(state.hands[Seat.SECOND]) == set(SHUFFLED[5:10])
    assert state.history[-1] == Turn(Seat.SECOND, Exchange(()), ())
    assert legal_actions(state)[0] == STOP  # round 2: the master again stops or exchanges


def exchange_one_each_round(state: GameState, rounds: int, slave_count: int = 0) -> GameState:
    for _ in range(rounds):
        state = apply(state, state.master, Exchange(state.hands[state.master][:1]))
        state = apply(state, state.slave, Exchange(state.hands[state.slave][:slave_count]))
    return state


@pytest.mark.parametrize("limit", [1, 2, 3, 4])
def test_d3_phase_ends_after_max_exchange_rounds(limit: int) -> None:
    options = RulesOptions(max_exchange_rounds=limit)
    state = new_game(options, Seat.FIRST, SHUFFLED)
    state = exchange_one_each_round(state, limit - 1)
    assert state.phase is Phase.EXCHANGE
    state = exchange_one_each_round(state, 1)
    assert state.phase is Phase.BIDDING
    assert state.to_move is Seat.FIRST
    assert state.master_exchange_count == limit
    assert state.exchange_rounds == (ExchangeRound(1, 0),) * limit
    assert list(legal_actions(state)) == [bid(tricks) for tricks in range(limit + 1, 6)]
    assert observation(state, Seat.SECOND).exchange_stopped is False


@pytest.mark.parametrize("rounds_before_stop", [0, 1, 2, 3])
def test_master_stop_ends_the_phase_at_once(rounds_before_stop: int) -> None:
    state = new_game(DEFAULTS, Seat.SECOND, SHUFFLED)
    state = exchange_one_each_round(state, rounds_before_stop, slave_count=2)
    state = apply(state, Seat.SECOND, STOP)
    assert state.phase is Phase.BIDDING
    assert state.to_move is Seat.SECOND
    assert state.master_exchange_count == rounds_before_stop
    assert state.history[-1] == Turn(Seat.SECOND, STOP)
    assert observation(state, Seat.FIRST).exchange_stopped is True
    bids = list(legal_actions(state))
    assert bids == [bid(tricks) for tricks in range(rounds_before_stop + 1, 6)]


def test_zero_exchange_rounds_skips_straight_to_bidding() -> None:
    state = new_game(RulesOptions(max_exchange_rounds=0), Seat.FIRST, SHUFFLED)
    assert state.phase is Phase.BIDDING
    assert state.to_move is Seat.FIRST
    assert list(legal_actions(state)) == [bid(tricks) for tricks in range(1, 6)]
    assert observation(state, Seat.FIRST).exchange_stopped is False
    for action in (STOP, Exchange(state.hands[Seat.FIRST][:1])):
        with pytest.raises(IllegalActionError, match="not an action of the bidding phase"):
            apply(state, Seat.FIRST, action)


@pytest.mark.parametrize("master", [Seat.FIRST, Seat.SECOND])
def test_d2_four_full_exchange_rounds_use_40_of_41_stock_cards(master: Seat) -> None:
    state = new_game(DEFAULTS, master, SHUFFLED)
    for round_number in range(4):
        for seat in (master, master.other):
            position = state.stock_position
            state = apply(state, seat, Exchange(state.hands[seat]))
            assert state.history[-1].drawn == SHUFFLED[position : position + 5]
            assert set(state.hands[seat]) == set(SHUFFLED[position : position + 5])
        assert state.exchange_rounds[round_number] == ExchangeRound(5, 5)
    assert state.phase is Phase.BIDDING
    assert state.stock_position == 51
    assert state.stock == (SHUFFLED[51],)
    assert len(state.discards[0]) == len(state.discards[1]) == 20
    assert state.key_card is SHUFFLED[10]  # D2: never drawn
    held = {*state.hands[0], *state.hands[1], *state.discards[0], *state.discards[1]}
    assert state.key_card not in held
    assert len(held) == 50
    assert observation(state, master).stock_remaining == 1
    assert list(legal_actions(state)) == [bid(5)]


# --- bidding (D4) ---------------------------------------------------------------------------


@pytest.mark.parametrize("exchanges", [0, 1, 2, 3, 4])
def test_master_bid_range_is_exchange_count_plus_one_to_five(exchanges: int) -> None:
    state = exchange_one_each_round(new_game(DEFAULTS, Seat.FIRST, SHUFFLED), exchanges)
    if state.phase is Phase.EXCHANGE:
        state = run(state, "stop")
    assert list(legal_actions(state)) == [bid(tricks) for tricks in range(exchanges + 1, 6)]
    for tricks in range(0, 7):
        if exchanges + 1 <= tricks <= 5:
            assert apply(state, Seat.FIRST, bid(tricks)).master_bid == tricks
        else:
            with pytest.raises(IllegalActionError, match=f"must bid {exchanges + 1}-5"):
                apply(state, Seat.FIRST, bid(tricks))


@pytest.mark.parametrize("master_bid", [1, 2, 3, 4, 5])
def test_slave_may_pass_or_overbid(master_bid: int) -> None:
    state = run(new_game(DEFAULTS, Seat.FIRST, SHUFFLED), "stop", f"bid {master_bid}")
    assert state.to_move is Seat.SECOND
    assert state.master_bid == master_bid
    expected = [PASS, *(bid(tricks) for tricks in range(master_bid + 1, 6))]
    assert list(legal_actions(state)) == expected
    for tricks in range(0, 7):
        if master_bid < tricks <= 5:
            after = apply(state, Seat.SECOND, bid(tricks))
            assert after.slave_bid == tricks
            assert after.attacker is Seat.SECOND
        else:
            with pytest.raises(IllegalActionError):
                apply(state, Seat.SECOND, bid(tricks))


def test_master_bid_five_leaves_the_slave_only_pass() -> None:
    state = run(new_game(DEFAULTS, Seat.FIRST, SHUFFLED), "stop", "bid 5")
    assert list(legal_actions(state)) == [PASS]
    with pytest.raises(IllegalActionError, match="the master bid 5, the slave can only pass"):
        apply(state, Seat.SECOND, bid(5))
    assert run(state, "pass").attacker is Seat.FIRST


@pytest.mark.parametrize("slave_count", [0, 5])
def test_d4_slave_exchanges_do_not_constrain_its_bid(slave_count: int) -> None:
    state = new_game(DEFAULTS, Seat.FIRST, SHUFFLED)
    state = exchange_one_each_round(state, 2, slave_count=slave_count)
    state = run(state, "stop", "bid 3")
    assert state.exchange_rounds == (ExchangeRound(1, slave_count),) * 2
    assert list(legal_actions(state)) == [PASS, bid(4), bid(5)]
    assert apply(state, Seat.SECOND, bid(4)).slave_bid == 4


def test_slave_pass_makes_the_master_attacker() -> None:
    state = run(new_game(DEFAULTS, Seat.SECOND, SHUFFLED), "stop", "bid 2", "pass")
    assert state.phase is Phase.PLAY
    assert state.attacker is Seat.SECOND
    assert state.slave_bid is None
    seen = observation(state, Seat.FIRST)
    assert seen.slave_passed is True
    assert seen.attacker is Seat.SECOND


def test_slave_overbid_makes_the_slave_attacker() -> None:
    state = run(new_game(DEFAULTS, Seat.SECOND, SHUFFLED), "stop", "bid 2", "bid 4")
    assert state.attacker is Seat.FIRST
    assert (state.master_bid, state.slave_bid) == (2, 4)
    assert observation(state, Seat.SECOND).slave_passed is False
    assert observation(state, Seat.SECOND).attacker is Seat.FIRST


# --- play -----------------------------------------------------------------------------------

# Trump clubs, key card 5C: the killers are 5S, 5H and 5D.
FOLLOW_DECK = deal("KS 3D 4D 6D 7D", "2S 3H 4H 6H 7H", "5C")


@pytest.mark.parametrize("master", [Seat.FIRST, Seat.SECOND])
def test_master_leads_the_first_trick(master: Seat) -> None:
    state = to_play_phase(FOLLOW_DECK, master=master, master_bid=1, slave_bid=3)
    assert state.phase is Phase.PLAY
    assert state.to_move is master
    assert state.leader is master
    assert state.lead is None
    assert list(legal_actions(state)) == [play(card) for card in state.hands[master]]


def test_follower_must_follow_suit_when_able() -> None:
    state = run(to_play_phase(FOLLOW_DECK), "play KS")
    assert state.lead is parse_card("KS")
    assert state.to_move is Seat.SECOND
    assert list(legal_actions(state)) == [play(parse_card("2S"))]
    with pytest.raises(IllegalActionError, match="must follow S"):
        apply(state, Seat.SECOND, play(parse_card("3H")))


def test_follower_void_in_the_led_suit_may_play_anything() -> None:
    state = run(to_play_phase(FOLLOW_DECK), "play 3D")
    assert state.hands[Seat.SECOND] == cards("2S 7H 6H 4H 3H")  # canonical order
    assert list(legal_actions(state)) == [play(card) for card in state.hands[Seat.SECOND]]
    for card in state.hands[Seat.SECOND]:
        after = apply(state, Seat.SECOND, play(card))
        assert after.tricks[-1].winner is Seat.FIRST  # any discard loses; clubs are trump


def test_trick_winner_leads_the_next_trick() -> None:
    state = run(to_play_phase(FOLLOW_DECK), "play KS", "play 2S")
    assert state.tricks == (Trick(Seat.FIRST, parse_card("KS"), parse_card("2S"), Seat.FIRST),)
    assert state.tricks_won == (1, 0)
    assert state.to_move is Seat.FIRST
    assert state.leader is Seat.FIRST
    state = run(state, "play 3D", "play 3H")  # seat 1 void in diamonds, no trump: loses
    assert state.tricks_won == (2, 0)
    # Now make seat 1 win: it leads the next trick.
    deck = deal("2S 3D 4D 6D 7D", "KS 3H 4H 6H 7H", "5C")
    state = run(to_play_phase(deck), "play 2S", "play KS")
    assert state.tricks[-1].winner is Seat.SECOND
    assert state.to_move is Seat.SECOND
    assert state.leader is Seat.SECOND
    assert list(legal_actions(state)) == [play(card) for card in cards("7H 6H 4H 3H")]
    state = run(state, "play 3H")
    assert state.to_move is Seat.FIRST
    assert state.lead is parse_card("3H")


def test_a_whole_game_ends_after_five_tricks() -> None:
    state = play_out(to_play_phase(FOLLOW_DECK))
    assert state.phase is Phase.OVER
    assert state.is_over
    assert state.to_move is None
    assert len(state.tricks) == 5
    assert state.hands == ((), ())
    assert sum(state.tricks_won) == 5
    assert state.result is not None
    assert state.result.tricks == state.tricks_won
    assert legal_actions(state) == ()


# --- trick winner ---------------------------------------------------------------------------

TRICKS = [
    # (lead, follow, trump, key rank, does the follower win?, why)
    ("KS", "QS", "C", 5, False, "same suit: K beats Q"),
    ("QS", "KS", "C", 5, True, "same suit: K beats Q"),
    ("AS", "KS", "C", 5, False, "same suit: the Ace beats a face card"),
    ("JS", "AS", "C", 5, True, "same suit: the Ace beats a face card"),
    ("AS", "10S", "C", 5, True, "same suit: a number card beats the Ace"),
    ("AS", "2S", "C", 5, True, "same suit: even the 2 beats the Ace"),
    ("2S", "AS", "C", 5, False, "same suit: the Ace loses to the 2"),
    ("10H", "JH", "C", 5, True, "same suit: J beats 10"),
    ("AS", "2C", "C", 5, True, "trump on a non-trump lead wins"),
    ("KH", "2C", "C", 5, True, "trump on a non-trump lead wins"),
    ("3C", "2C", "C", 5, False, "trump lead, trump follow: by rank"),
    ("2C", "3C", "C", 5, True, "trump lead, trump follow: by rank"),
    ("KC", "AC", "C", 5, True, "trump lead, trump follow: Ace beats K"),
    ("KC", "5H", "C", 5, True, "killer on a trump lead wins"),
    ("AC", "5S", "C", 5, True, "killer on a trump lead wins, even against the trump Ace"),
    ("2C", "5D", "C", 5, True, "killer on a trump lead wins"),
    ("2C", "6H", "C", 5, False, "a non-killer discard on a trump lead loses"),
    ("2C", "AH", "C", 5, False, "a non-killer discard on a trump lead loses"),
    ("5H", "6H", "C", 5, True, "a killer led has ordinary strength"),
    ("5H", "4H", "C", 5, False, "a killer led has ordinary strength"),
    ("5H", "AH", "C", 5, False, "a killer led has ordinary strength: 5 beats the Ace"),
    ("5H", "2C", "C", 5, True, "a killer led loses to a trump"),
    ("5H", "KS", "C", 5, False, "a killer led beats a discard"),
    ("9H", "5H", "C", 5, False, "a killer following its own suit has ordinary strength"),
    ("3H", "5H", "C", 5, True, "a killer following its own suit has ordinary strength"),
    ("2D", "5H", "C", 5, False, "a killer discarded on a non-trump lead loses"),
    ("KD", "5S", "C", 5, False, "a killer discarded on a non-trump lead loses"),
    ("5H", "5D", "C", 5, False, "a killer discarded on a killer lead loses"),
    ("2D", "KH", "C", 5, False, "any other discard loses"),
    ("2D", "AS", "C", 5, False, "any other discard loses"),
    ("QD", "AH", "H", 1, True, "trump on a non-trump lead wins"),
    ("QH", "AD", "H", 1, True, "killer Ace on a trump lead wins"),
]


@pytest.mark.parametrize(("lead", "follow", "trump", "key_rank", "expected", "why"), TRICKS)
def test_trick_winner(
    lead: str, follow: str, trump: str, key_rank: int, expected: bool, why: str
) -> None:
    assert trick_winner(parse_card(lead), parse_card(follow), Suit(trump), key_rank) is expected


def test_trick_winner_king_killer_on_trump_lead() -> None:
    # Key card KH: trump hearts, the killers are KS, KD and KC.
    assert trick_winner(parse_card("AH"), parse_card("KC"), Suit.HEARTS, 13) is True
    assert trick_winner(parse_card("2H"), parse_card("KS"), Suit.HEARTS, 13) is True
    assert trick_winner(parse_card("2H"), parse_card("QS"), Suit.HEARTS, 13) is False


# Crafted games: trump clubs, key 5C, killers 5S, 5H, 5D; seat 0 is master and leads.
PLAYED_TRICKS = [
    # (master hand, slave hand, lead, follow, winner, why)
    ("KS 3D 4D 6D 7D", "2C 3H 4H 6H 7H", "KS", "2C", Seat.SECOND, "trump on a non-trump lead"),
    ("AS 3D 4D 6D 7D", "2C 3H 4H 6H 7H", "AS", "3H", Seat.FIRST, "other discard"),
    ("KC 3D 4D 6D 7D", "5H 3H 4H 6H 7H", "KC", "5H", Seat.SECOND, "killer on a trump lead"),
    ("KC 3D 4D 6D 7D", "5H 3H 4H 6H 7H", "KC", "6H", Seat.FIRST, "non-killer on a trump lead"),
    ("5H 3D 4D 6D 7D", "6H 2C 8S 9S 10S", "5H", "6H", Seat.SECOND, "killer led: ordinary"),
    ("5H 3D 4D 6D 7D", "4H 2C 8S 9S 10S", "5H", "4H", Seat.FIRST, "killer led: ordinary"),
    ("5H 3D 4D 6D 7D", "2C 8S 9S 10S JS", "5H", "2C", Seat.SECOND, "killer led: trump wins"),
    ("9H 3D 4D 6D 7D", "5H 2C 8S 9S 10S", "9H", "5H", Seat.FIRST, "killer follows: ordinary"),
    ("3H 4D 6D 7D 8D", "5H 2C 8S 9S 10S", "3H", "5H", Seat.SECOND, "killer follows: ordinary"),
    ("2D 3S 4S 6S 7S", "5H 6H 7H 8H 2C", "2D", "5H", Seat.FIRST, "killer discarded loses"),
    ("2D 3S 4S 6S 7S", "5H 6H 7H 8H 2C", "2D", "8H", Seat.FIRST, "other discard loses"),
    ("AS 3D 4D 6D 7D", "2S 3H 4H 6H 7H", "AS", "2S", Seat.SECOND, "the 2 beats the Ace"),
    ("AS 3D 4D 6D 7D", "KS 3H 4H 6H 7H", "AS", "KS", Seat.FIRST, "the Ace beats the K"),
]


@pytest.mark.parametrize(("master", "slave", "lead", "follow", "winner", "why"), PLAYED_TRICKS)
def test_trick_winner_in_played_games(
    master: str, slave: str, lead: str, follow: str, winner: Seat, why: str
) -> None:
    state = run(to_play_phase(deal(master, slave, "5C")), f"play {lead}")
    assert play(parse_card(follow)) in legal_actions(state)
    state = run(state, f"play {follow}")
    assert state.tricks == (Trick(Seat.FIRST, parse_card(lead), parse_card(follow), winner),)
    assert state.to_move is winner
    assert state.tricks_won == ((1, 0) if winner is Seat.FIRST else (0, 1))


def test_follower_holding_the_led_suit_cannot_trump_or_kill() -> None:
    # Seat 1 holds a heart, so on a heart lead it must follow and cannot use its trump.
    state = run(to_play_phase(deal("AH 3D 4D 6D 7D", "2H 2C 5S 9S 10S", "5C")), "play AH")
    assert list(legal_actions(state)) == [play(parse_card("2H"))]
    # Seat 1 holds a trump, so on a trump lead it must follow and cannot play its killer.
    state = run(to_play_phase(deal("AC 3D 4D 6D 7D", "2C 5H 5S 9S 10S", "5C")), "play AC")
    assert list(legal_actions(state)) == [play(parse_card("2C"))]
    with pytest.raises(IllegalActionError, match="must follow C"):
        apply(state, Seat.SECOND, play(parse_card("5H")))


# --- illegal actions ------------------------------------------------------------------------


def states() -> dict[str, GameState]:
    start = new_game(DEFAULTS, Seat.FIRST, FOLLOW_DECK)
    bidding = run(start, "stop")
    slave_bids = run(bidding, "bid 2")
    playing = run(slave_bids, "pass")
    return {
        "exchange": start,
        "slave exchange": run(start, "exchange KS"),
        "master bids": bidding,
        "master bids after 2": run(
            start, "exchange KS", "exchange", "exchange 3D", "exchange 2S", "stop"
        ),
        "slave bids": slave_bids,
        "slave bids after 5": run(bidding, "bid 5"),
        "lead": playing,
        "follow": run(playing, "play KS"),
        "over": play_out(playing),
    }


ILLEGAL: list[tuple[str, int, object, list[str]]] = [
    ("exchange", 1, STOP, ["action 'stop'", "seat 1", "it is seat 0's turn"]),
    ("slave exchange", 0, Exchange(cards("3D")), ["'exchange 3D'", "seat 0", "seat 1's turn"]),
    ("lead", 1, play(parse_card("2S")), ["card '2S'", "seat 1", "it is seat 0's turn"]),
    ("follow", 0, play(parse_card("3D")), ["card '3D'", "seat 0", "it is seat 1's turn"]),
    ("master bids", 1, bid(3), ["'bid 3'", "seat 1", "seat 0's turn"]),
    (
        "exchange",
        0,
        bid(3),
        ["'bid 3'", "seat 0", "exchange round 1", "not an action of the exchange phase"],
    ),
    ("exchange", 0, PASS, ["'pass'", "seat 0", "not an action of the exchange phase"]),
    (
        "exchange",
        0,
        play(parse_card("KS")),
        ["card 'KS'", "seat 0", "not an action of the exchange phase"],
    ),
    (
        "master bids",
        0,
        play(parse_card("KS")),
        ["card 'KS'", "seat 0", "not an action of the bidding phase"],
    ),
    ("master bids", 0, STOP, ["'stop'", "seat 0", "not an action of the bidding phase"]),
    (
        "master bids",
        0,
        Exchange(cards("KS")),
        ["'exchange KS'", "not an action of the bidding phase"],
    ),
    ("lead", 0, STOP, ["'stop'", "seat 0", "trick 1", "not an action of the play phase"]),
    ("lead", 0, bid(3), ["'bid 3'", "seat 0", "not an action of the play phase"]),
    ("lead", 0, PASS, ["'pass'", "seat 0", "not an action of the play phase"]),
    ("lead", 0, play(parse_card("AS")), ["card 'AS'", "seat 0", "trick 1", "not in hand"]),
    ("lead", 0, play(parse_card("2S")), ["card '2S'", "seat 0", "not in hand"]),  # slave's
    ("follow", 1, play(parse_card("KS")), ["card 'KS'", "seat 1", "not in hand"]),  # just led
    ("exchange", 0, Exchange(cards("AS")), ["'exchange AS'", "seat 0", "not in hand: AS"]),
    ("exchange", 0, Exchange(cards("KS 2S")), ["'exchange KS 2S'", "not in hand: 2S"]),
    ("slave exchange", 1, Exchange(cards("3D")), ["seat 1", "not in hand: 3D"]),
    ("follow", 1, play(parse_card("3H")), ["card '3H'", "seat 1", "trick 1", "must follow S"]),
    ("master bids", 0, PASS, ["'pass'", "seat 0", "the master must bid"]),
    ("master bids", 0, bid(0), ["'bid 0'", "seat 0", "the master must bid 1-5"]),
    ("master bids", 0, bid(6), ["'bid 6'", "seat 0", "the master must bid 1-5"]),
    ("master bids after 2", 0, bid(2), ["'bid 2'", "seat 0", "must bid 3-5 after 2 exchange"]),
    ("slave bids", 1, bid(2), ["'bid 2'", "seat 1", "the slave must pass or bid 3-5"]),
    ("slave bids", 1, bid(1), ["'bid 1'", "seat 1", "the slave must pass or bid 3-5"]),
    ("slave bids", 1, bid(6), ["'bid 6'", "seat 1", "the slave must pass or bid 3-5"]),
    ("slave bids after 5", 1, bid(5), ["'bid 5'", "seat 1", "the slave can only pass"]),
    ("slave bids after 5", 1, bid(6), ["'bid 6'", "seat 1", "the slave can only pass"]),
    ("exchange", 0, Exchange(()), ["action 'exchange'", "seat 0", "1-5 cards or stops"]),
    ("slave exchange", 1, STOP, ["'stop'", "seat 1", "only the master may stop"]),
    ("over", 0, play(parse_card("KS")), ["card 'KS'", "seat 0", "game over"]),
    ("over", 1, PASS, ["'pass'", "seat 1", "game over"]),
    (
        "exchange",
        0,
        "stop",
        ["malformed action 'stop'", "seat 0", "not an action of the exchange phase"],
    ),
    ("exchange", 0, None, ["malformed action None", "seat 0"]),
    ("master bids", 0, {"action": "bid", "tricks": 2}, ["malformed action {", "seat 0"]),
    (
        "lead",
        0,
        "play KS",
        ["malformed action 'play KS'", "seat 0", "not an action of the play phase"],
    ),
    ("lead", 0, Play("KS"), ["card 'KS'", "seat 0", "not in hand"]),  # type: ignore[arg-type]
    ("master bids", 0, Bid("3"), ["seat 0", "a bid is a whole number"]),  # type: ignore[arg-type]
    ("master bids", 0, Bid(2.0), ["'bid 2.0'", "a bid is a whole number"]),  # type: ignore[arg-type]
    ("master bids", 0, Bid(True), ["'bid True'", "a bid is a whole number"]),
    ("master bids", 0, Bid([3]), ["'bid [3]'", "a bid is a whole number"]),  # type: ignore[arg-type]
    ("lead", 0, Play(None), ["card 'None'", "seat 0", "not in hand"]),  # type: ignore[arg-type]
    ("lead", 0, Play(["KS"]), ["card '['KS']'", "not in hand"]),  # type: ignore[arg-type]
    ("exchange", 2, STOP, ["'stop'", "unknown seat 2", "seat 0's turn"]),
    # An exchange holding a value that is no card (it can hold only one: see Exchange).
    ("exchange", 0, Exchange(("AS",)), ["'exchange AS'", "not in hand: AS"]),  # type: ignore[arg-type]
    ("exchange", 0, Exchange((None,)), ["'exchange None'", "not in hand: None"]),  # type: ignore[arg-type]
    # from_sorted trusts its caller; apply does not.
    ("exchange", 0, Exchange.from_sorted(list(cards("KS"))), ["malformed action", "a tuple"]),  # type: ignore[arg-type]
    ("exchange", 0, Exchange.from_sorted(cards("3D 7D")), ["out of order"]),
    ("exchange", "0", STOP, ["'stop'", "unknown seat '0'", "seat 0's turn"]),  # type: ignore[list-item]
]


@pytest.mark.parametrize(("name", "seat", "action", "expected"), ILLEGAL)
def test_apply_rejects_illegal_actions_naming_action_seat_and_reason(
    name: str, seat: int, action: object, expected: list[str]
) -> None:
    state = states()[name]
    snapshot = copy.deepcopy(state)
    with pytest.raises(IllegalActionError) as caught:
        apply(state, seat, action)  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("illegal ")
    for part in expected:
        assert part in message, (part, message)
    assert state == snapshot


def test_illegal_actions_are_not_legal_actions() -> None:
    built = states()
    for name, seat, action, _ in ILLEGAL:
        state = built[name]
        if isinstance(action, Bid) and type(action.tricks) is not int:
            continue  # Bid(2.0) and Bid(True) equal bid 2 and bid 1, yet apply wants an int
        if seat == state.to_move:
            assert action not in legal_actions(state), (name, action)


@pytest.mark.parametrize("name", ["exchange", "slave exchange", "master bids", "lead", "follow"])
def test_legal_actions_can_be_copied_and_pickled(name: str) -> None:
    """A caller may keep or send what legal_actions returns (the compiled build too)."""
    legal = legal_actions(states()[name])
    for copied in (copy.copy(legal), copy.deepcopy(legal), pickle.loads(pickle.dumps(legal))):
        assert list(copied) == list(legal)
        assert len(copied) == len(legal)


# --- immutability ---------------------------------------------------------------------------


def test_apply_never_mutates_its_input() -> None:
    state = new_game(DEFAULTS, Seat.FIRST, SHUFFLED)
    script: list[Callable[[GameState], Action]] = [
        lambda s: Exchange(s.hands[s.master][:2]),
        lambda s: Exchange(s.hands[s.slave][:3]),
        lambda s: Exchange(s.hands[s.master][:1]),
        lambda s: Exchange(()),
        lambda s: STOP,
        lambda s: bid(3),
        lambda s: bid(4),
    ] + [lambda s: legal_actions(s)[-1]] * 10
    seen: list[GameState] = []
    for choose in script:
        before = copy.deepcopy(state)
        hands_before = state.hands
        after = apply(state, state.to_move, choose(state))  # type: ignore[arg-type]
        assert state == before
        assert state.hands is hands_before
        assert after != state
        seen.append(state)
        state = after
    assert state.is_over
    for earlier in seen:  # every earlier state still describes its own moment
        assert earlier.result is None
        assert earlier.phase is not Phase.OVER


def test_game_state_is_a_value() -> None:
    first = new_game(DEFAULTS, Seat.FIRST, SHUFFLED)
    second = new_game(DEFAULTS, Seat.FIRST, list(SHUFFLED))
    assert first == second
    assert hash(first) == hash(second)
    with pytest.raises(AttributeError):
        first.phase = Phase.OVER  # type: ignore[misc]


# --- observation ----------------------------------------------------------------------------


def test_observation_at_the_deal() -> None:
    state = new_game(DEFAULTS, Seat.SECOND, SHUFFLED, game_number=3, scores_before=(4, 9))
    for seat in Seat:
        seen = observation(state, seat)
        assert seen.seat is seat
        assert seen.game_number == 3
        assert seen.master is Seat.SECOND
        assert seen.role is (Role.MASTER if seat is Seat.SECOND else Role.SLAVE)
        assert seen.hand == state.hands[seat]
        assert seen.key_card is SHUFFLED[10]
        assert seen.killers == killers(SHUFFLED[10])
        assert seen.phase is Phase.EXCHANGE
        assert seen.to_move is Seat.SECOND
        assert seen.stock_remaining == 41
        assert seen.opponent_hand_size == 5
        assert seen.scores == (4, 9)
        assert seen.exchange_stopped is False
        assert seen.master_exchange_count == 0
        assert seen.attacker is None
        assert seen.slave_passed is False
        assert seen.result is None
        assert seen.lead is None


def test_observation_shows_public_exchange_counts_only() -> None:
    state = run(new_game(DEFAULTS, Seat.FIRST, SHUFFLED), f"exchange {SHUFFLED[0]} {SHUFFLED[1]}")
    seen = observation(state, Seat.SECOND)
    assert seen.exchange_rounds == (ExchangeRound(2, None),)
    assert seen.stock_remaining == 39
    assert SHUFFLED[0] not in seen.hand
    assert seen.hand == tuple(sorted(SHUFFLED[5:10]))


def test_observation_accepts_int_seats() -> None:
    state = new_game(DEFAULTS, Seat.FIRST, SHUFFLED)
    assert observation(state, 1) == observation(state, Seat.SECOND)  # type: ignore[arg-type]
    assert observation(state, 0).hand == state.hands[0]  # type: ignore[arg-type]


def test_observation_of_a_trick_in_progress() -> None:
    state = run(to_play_phase(FOLLOW_DECK), "play KS")
    seen = observation(state, Seat.SECOND)
    assert seen.lead is parse_card("KS")
    assert seen.leader is Seat.FIRST
    assert seen.opponent_hand_size == 4
    assert seen.hand == cards("2S 7H 6H 4H 3H")


def test_bid_instances_are_accepted_by_value() -> None:
    state = run(new_game(DEFAULTS, Seat.FIRST, SHUFFLED), "stop")
    assert apply(state, Seat.FIRST, Bid(2)) == apply(state, Seat.FIRST, bid(2))


def test_crafted_deck_helper_places_cards() -> None:
    deck = crafted_deck({0: "2C", 10: "AS", 51: "KD"})
    assert (str(deck[0]), str(deck[10]), str(deck[51])) == ("2C", "AS", "KD")
    assert deck[1] is parse_card("KS")  # the rest in canonical order, AS skipped
    assert sorted(deck) == list(DECK)
