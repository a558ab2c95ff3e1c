"""Actions: text and JSON forms, round trips, malformed input, and the Exchange invariants."""

from __future__ import annotations

import dataclasses
import json
from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    action_from_json,
    action_to_json,
    bid,
    parse_action,
    play,
)
from referee.rules.cards import DECK, parse_card
from referee.rules.errors import ActionParseError
from tests.referee.helpers import cards

EXAMPLES: list[tuple[str, dict[str, Any], Action]] = [
    ("stop", {"action": "stop"}, Stop()),
    ("pass", {"action": "pass"}, Pass()),
    ("exchange", {"action": "exchange", "cards": []}, Exchange(())),
    ("exchange 10H", {"action": "exchange", "cards": ["10H"]}, Exchange(cards("10H"))),
    (
        "exchange 2S 7H",
        {"action": "exchange", "cards": ["2S", "7H"]},
        Exchange(cards("2S 7H")),
    ),
    (
        "exchange AS KS QS JS 10S",
        {"action": "exchange", "cards": ["AS", "KS", "QS", "JS", "10S"]},
        Exchange(cards("AS KS QS JS 10S")),
    ),
    ("bid 1", {"action": "bid", "tricks": 1}, Bid(1)),
    ("bid 5", {"action": "bid", "tricks": 5}, Bid(5)),
    ("play 10H", {"action": "play", "card": "10H"}, Play(parse_card("10H"))),
    ("play AC", {"action": "play", "card": "AC"}, Play(parse_card("AC"))),
]


@pytest.mark.parametrize(("text", "data", "action"), EXAMPLES)
def test_text_form(text: str, data: dict[str, Any], action: Action) -> None:
    assert str(action) == text
    assert parse_action(text) == action
    assert parse_action(str(action)) == action


@pytest.mark.parametrize(("text", "data", "action"), EXAMPLES)
def test_json_form(text: str, data: dict[str, Any], action: Action) -> None:
    assert action_to_json(action) == data
    assert action_from_json(data) == action
    assert action_from_json(json.loads(json.dumps(action_to_json(action)))) == action


def every_action() -> list[Action]:
    hand = cards("AS 10H 7D 2C KC")
    exchanges = [Exchange(subset) for size in range(6) for subset in combinations(hand, size)]
    return [STOP, PASS, *(bid(tricks) for tricks in range(1, 6)), *PLAYS, *exchanges]


def test_every_action_round_trips_through_text_and_json() -> None:
    actions = every_action()
    assert len(actions) == 2 + 5 + 52 + 32
    for action in actions:
        assert parse_action(str(action)) == action, action
        assert action_from_json(action_to_json(action)) == action, action


def test_parsing_is_lenient_about_case_of_the_verb_and_spacing_only() -> None:
    assert parse_action("STOP") == STOP
    assert parse_action("  play   10H ") == play(parse_card("10H"))
    assert parse_action("Exchange 7H\t2S") == Exchange(cards("2S 7H"))


def test_shared_instances() -> None:
    assert parse_action("stop") is STOP
    assert parse_action("pass") is PASS
    assert parse_action("bid 3") is bid(3)
    for card in DECK:
        assert play(card) is PLAYS[card.index]
        assert PLAYS[card.index].card is card
        assert parse_action(f"play {card}") is play(card)
    assert bid(7) == Bid(7)  # outside 1-5 still builds; apply rejects it


MALFORMED_TEXT: list[object] = [
    "",
    "   ",
    "jump",
    "stop now",
    "pass 1",
    "bid",
    "bid x",
    "bid 3 4",
    "bid -1",
    "bid 2.5",
    "bid ²",  # a digit character that int() refuses
    "bid ٣٣٣٣٣٣٣٣٣٣",
    "bid " + "1" * 5000,  # too many digits for int()
    "play",
    "play 1H",
    "play AS KS",
    "play 10h",
    "exchange 7H TH",
    "exchange 7H 7H",
    "exchange,7H",
    None,
    5,
    b"stop",
    ["stop"],
]


@pytest.mark.parametrize("text", MALFORMED_TEXT)
def test_malformed_text_raises_action_parse_error(text: object) -> None:
    with pytest.raises(ActionParseError):
        parse_action(text)  # type: ignore[arg-type]


def test_parse_error_names_the_bad_text_and_card() -> None:
    with pytest.raises(ActionParseError, match=r"'play 1H'.*'1H'"):
        parse_action("play 1H")
    with pytest.raises(ActionParseError, match="'jump'"):
        parse_action("jump")


MALFORMED_JSON: list[object] = [
    {},
    {"action": "jump"},
    {"action": None},
    {"action": ["stop"]},
    {"Action": "stop"},
    {"action": "bid"},
    {"action": "bid", "tricks": "3"},
    {"action": "bid", "tricks": True},
    {"action": "bid", "tricks": 3.0},
    {"action": "bid", "tricks": None},
    {"action": "play"},
    {"action": "play", "card": "1H"},
    {"action": "play", "card": ["AS"]},
    {"action": "play", "card": 10},
    {"action": "exchange"},
    {"action": "exchange", "cards": "7H"},
    {"action": "exchange", "cards": ["7H", "7H"]},
    {"action": "exchange", "cards": ["ZZ"]},
    {"action": "exchange", "cards": [["7H"]]},
    {"action": "exchange", "cards": None},
    "stop",
    ["stop"],
    None,
    3,
]


@pytest.mark.parametrize("data", MALFORMED_JSON)
def test_malformed_json_raises_action_parse_error(data: object) -> None:
    with pytest.raises(ActionParseError):
        action_from_json(data)  # type: ignore[arg-type]


def test_json_error_names_the_problem() -> None:
    with pytest.raises(ActionParseError, match="'jump'"):
        action_from_json({"action": "jump"})
    with pytest.raises(ActionParseError, match=r"tricks.*'3'"):
        action_from_json({"action": "bid", "tricks": "3"})
    with pytest.raises(ActionParseError, match="1H"):
        action_from_json({"action": "play", "card": "1H"})


def test_json_ignores_unknown_fields() -> None:
    assert action_from_json({"action": "bid", "tricks": 2, "comment": "x"}) == bid(2)


# --- Exchange -------------------------------------------------------------------------------


def test_exchange_sorts_cards_canonically() -> None:
    exchange = Exchange(cards("2C 7H AS 10H KS"))
    assert [str(card) for card in exchange.cards] == ["AS", "KS", "10H", "7H", "2C"]
    assert str(exchange) == "exchange AS KS 10H 7H 2C"
    assert exchange == Exchange(cards("AS KS 10H 7H 2C"))
    assert hash(exchange) == hash(Exchange(cards("KS AS 2C 7H 10H")))
    assert parse_action("exchange 2C 7H AS 10H KS") == exchange
    assert action_to_json(exchange)["cards"] == ["AS", "KS", "10H", "7H", "2C"]


def test_exchange_accepts_any_iterable_and_stores_a_tuple() -> None:
    exchange = Exchange([parse_card("7H"), parse_card("2S")])  # type: ignore[arg-type]
    assert exchange.cards == cards("2S 7H")
    assert isinstance(exchange.cards, tuple)
    generated = Exchange(card for card in cards("7H 2S"))  # type: ignore[arg-type]
    assert generated.cards == cards("2S 7H")


@pytest.mark.parametrize("codes", ["7H 7H", "AS 7H AS", "2C AS 2C", "KD KD KD"])
def test_exchange_rejects_duplicates(codes: str) -> None:
    with pytest.raises(ActionParseError, match="twice"):
        Exchange(cards(codes))
    with pytest.raises(ActionParseError, match="twice"):
        parse_action(f"exchange {codes}")
    with pytest.raises(ActionParseError, match="twice"):
        action_from_json({"action": "exchange", "cards": codes.split()})


def test_actions_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        bid(3).tricks = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        play(DECK[0]).card = DECK[1]  # type: ignore[misc]
    assert bid(3) is bid(3)
    assert bid(3) == Bid(3)
    assert bid(3) != bid(4)
    assert Stop() == STOP
    assert Pass() == PASS
    assert len({STOP, PASS, Stop(), Pass()}) == 2


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_action_on_any_text_returns_an_action_or_raises_parse_error(text: str) -> None:
    try:
        action = parse_action(text)
    except ActionParseError:
        return
    assert parse_action(str(action)) == action


WORDS = st.sampled_from(["stop", "pass", "bid", "play", "exchange", "10H", "AS", "7H", "3", "0"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS | st.text(max_size=4), max_size=4))
def test_parse_action_on_word_salad(words: list[str]) -> None:
    text = " ".join(words)
    try:
        action = parse_action(text)
    except ActionParseError:
        return
    assert parse_action(str(action)) == action


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"action": st.sampled_from(["stop", "pass", "bid", "play", "exchange"]) | JSON_VALUES},
        optional={"cards": JSON_VALUES, "card": JSON_VALUES, "tricks": JSON_VALUES},
    )
    | JSON_VALUES
)
def test_action_from_json_on_any_json_returns_an_action_or_raises_parse_error(data: Any) -> None:
    try:
        action = action_from_json(data)
    except ActionParseError:
        return
    assert action_from_json(action_to_json(action)) == action
