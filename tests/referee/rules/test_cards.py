"""Cards: the 52 codes, the strength relation with its special Ace, and the first-master draw."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from referee.rules.cards import (
    ACE,
    DECK,
    JACK,
    KING,
    QUEEN,
    Card,
    Suit,
    beats_by_rank,
    card_from_index,
    draw_beats,
    parse_card,
    parse_cards,
    sort_cards,
)
from referee.rules.errors import AegisError, CardParseError, IllegalActionError
from referee.rules.game import Seat
from referee.rules.match import first_master

# Written out independently of the engine: suits S, H, D, C; within a suit A, K, Q, J, 10 … 2.
RANK_TEXTS = ["A", "K", "Q", "J", "10", "9", "8", "7", "6", "5", "4", "3", "2"]
ALL_CODES = [rank + suit for suit in "SHDC" for rank in RANK_TEXTS]
NUMBER_RANKS = range(2, 11)
FACE_RANKS = (JACK, QUEEN, KING)


def test_there_are_52_distinct_codes() -> None:
    assert len(ALL_CODES) == 52
    assert len(set(ALL_CODES)) == 52
    assert [card.code for card in DECK] == ALL_CODES


@pytest.mark.parametrize("code", ALL_CODES)
def test_every_code_parses_and_round_trips(code: str) -> None:
    card = parse_card(code)
    assert isinstance(card, Card)
    assert card.code == code
    assert str(card) == code
    assert parse_card(str(card)) is card
    assert eval(repr(card), {"parse_card": parse_card}) is card  # repr is valid Python
    assert RANK_TEXTS[ALL_CODES.index(code) % 13] == code[:-1]
    assert card.suit is Suit(code[-1])
    assert card_from_index(card.index) is card
    assert DECK[card.index] is card
    assert card.index == ALL_CODES.index(code)


def test_ranks_of_named_cards() -> None:
    assert parse_card("AS").rank == ACE == 1
    assert parse_card("JH").rank == JACK == 11
    assert parse_card("QD").rank == QUEEN == 12
    assert parse_card("KC").rank == KING == 13
    assert parse_card("10C").rank == 10
    assert parse_card("2S").rank == 2


@pytest.mark.parametrize(
    "bad",
    ["1H", "TH", "10h", "", None, "AX", "as", " AS", "AS ", "11S", "0S", "KSS", "K", "S", 10, "A♠"],
)
def test_bad_codes_raise_with_the_bad_value(bad: object) -> None:
    with pytest.raises(CardParseError) as caught:
        parse_card(bad)  # type: ignore[arg-type]
    assert repr(bad) in str(caught.value)
    assert isinstance(caught.value, AegisError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("index", [-1, 52, 100])
def test_card_from_index_out_of_range(index: int) -> None:
    with pytest.raises(CardParseError, match=str(index)):
        card_from_index(index)


def test_parse_cards_keeps_order_and_sort_cards_is_canonical() -> None:
    parsed = parse_cards(["2C", "AS", "10H", "KS"])
    assert [card.code for card in parsed] == ["2C", "AS", "10H", "KS"]
    assert [card.code for card in sort_cards(parsed)] == ["AS", "KS", "10H", "2C"]
    assert sort_cards(reversed(DECK)) == DECK
    assert sorted(reversed(DECK)) == list(DECK)  # __lt__ is the canonical order too


def test_parse_cards_rejects_a_bad_code() -> None:
    with pytest.raises(CardParseError, match="'ZZ'"):
        parse_cards(["AS", "ZZ"])


# --- the strength relation ------------------------------------------------------------------


@pytest.mark.parametrize("face", FACE_RANKS)
def test_ace_beats_face_cards(face: int) -> None:
    assert beats_by_rank(ACE, face) is True
    assert beats_by_rank(face, ACE) is False


@pytest.mark.parametrize("number", NUMBER_RANKS)
def test_ace_loses_to_number_cards(number: int) -> None:
    assert beats_by_rank(ACE, number) is False
    assert beats_by_rank(number, ACE) is True


def test_relation_is_not_transitive() -> None:
    assert beats_by_rank(ACE, KING)
    assert beats_by_rank(KING, 10)
    assert beats_by_rank(10, ACE)
    assert not beats_by_rank(ACE, 10)


def test_non_ace_ranks_follow_the_usual_order() -> None:
    ranks = [2, 3, 4, 5, 6, 7, 8, 9, 10, JACK, QUEEN, KING]
    for low_position, low in enumerate(ranks):
        for high in ranks[low_position + 1 :]:
            assert beats_by_rank(high, low), (high, low)
            assert not beats_by_rank(low, high), (low, high)


def test_relation_is_irreflexive_and_decides_every_pair() -> None:
    ranks = range(1, 14)
    for rank in ranks:
        assert not beats_by_rank(rank, rank)
        for other in ranks:
            if other != rank:
                assert beats_by_rank(rank, other) != beats_by_rank(other, rank), (rank, other)


@pytest.mark.parametrize("rank", RANK_TEXTS)
def test_draw_ties_break_by_suit_spades_hearts_diamonds_clubs(rank: str) -> None:
    order = [parse_card(rank + suit) for suit in "SHDC"]
    for position, stronger in enumerate(order):
        for weaker in order[position + 1 :]:
            assert draw_beats(stronger, weaker), (stronger, weaker)
            assert not draw_beats(weaker, stronger), (weaker, stronger)
        assert not draw_beats(stronger, stronger)


@pytest.mark.parametrize(
    ("card", "other"),
    [
        ("2C", "AS"),  # D1: an Ace loses to any number card, even the lowest of the lowest suit
        ("10C", "AS"),
        ("AC", "KS"),  # D1: an Ace beats a face card whatever the suits
        ("AC", "JS"),
        ("KC", "QS"),  # different ranks: the suit does not matter
        ("3C", "2S"),
    ],
)
def test_d1_draw_ignores_suit_when_ranks_differ(card: str, other: str) -> None:
    assert draw_beats(parse_card(card), parse_card(other)) is True
    assert draw_beats(parse_card(other), parse_card(card)) is False


@pytest.mark.parametrize(
    ("seat_0", "seat_1", "master"),
    [
        ("AS", "2C", Seat.SECOND),  # D1: Ace vs number card loses
        ("2C", "AS", Seat.FIRST),
        ("AH", "10D", Seat.SECOND),
        ("AC", "KS", Seat.FIRST),  # D1: Ace vs face card wins
        ("JS", "AD", Seat.SECOND),
        ("7C", "7S", Seat.SECOND),  # equal ranks: S > H > D > C
        ("AH", "AD", Seat.FIRST),
        ("KD", "QS", Seat.FIRST),
    ],
)
def test_d1_first_master_draw(seat_0: str, seat_1: str, master: Seat) -> None:
    assert first_master((parse_card(seat_0), parse_card(seat_1))) is master


def test_d1_ace_loses_draw_to_number_card_and_beats_face_card() -> None:
    ace = parse_card("AS")
    for number in NUMBER_RANKS:
        for suit in "SHDC":
            other = parse_card(f"{number}{suit}")
            assert first_master((ace, other)) is Seat.SECOND
            assert first_master((other, ace)) is Seat.FIRST
    for face in "JQK":
        for suit in "SHDC":
            other = parse_card(face + suit)
            assert first_master((ace, other)) is Seat.FIRST
            assert first_master((other, ace)) is Seat.SECOND


def test_first_master_rejects_the_same_card_twice() -> None:
    with pytest.raises(IllegalActionError, match="7H"):
        first_master((parse_card("7H"), parse_card("7H")))


# --- identity and immutability ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_returns_the_same_instance(protocol: int) -> None:
    for card in DECK:
        assert pickle.loads(pickle.dumps(card, protocol=protocol)) is card
    assert pickle.loads(pickle.dumps(DECK, protocol=protocol)) == DECK


def test_copies_return_the_same_instance() -> None:
    card = parse_card("QH")
    assert copy.copy(card) is card
    assert copy.deepcopy(card) is card
    assert copy.deepcopy([card, (card,)]) == [card, (card,)]


def test_cards_are_frozen_and_hash_by_index() -> None:
    card = parse_card("9D")
    with pytest.raises(dataclasses.FrozenInstanceError):
        card.rank = 10  # type: ignore[misc]
    assert hash(card) == card.index
    assert len(set(DECK)) == 52


def test_suit_properties() -> None:
    assert [suit.letter for suit in Suit] == ["S", "H", "D", "C"]
    assert [suit.order for suit in Suit] == [0, 1, 2, 3]
    assert [suit.is_red for suit in Suit] == [False, True, True, False]
    assert parse_card("10H").symbol == "10♥"
    assert parse_card("AS").symbol == "A♠"
