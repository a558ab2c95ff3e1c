"""Rules options: defaults, validation and parsing from a mapping."""

from __future__ import annotations

import dataclasses

import pytest

from referee.rules.errors import RulesOptionsError
from referee.rules.options import MAX_EXCHANGE_ROUNDS_LIMIT, RulesOptions, parse_rules_options


def test_defaults() -> None:
    options = RulesOptions()
    assert options.target_score == 25
    assert options.cold_margin == 10
    assert options.promise_min_bid == 1  # D5: the card's table is the default
    assert options.max_exchange_rounds == 4
    assert options.to_dict() == {
        "target_score": 25,
        "cold_margin": 10,
        "promise_min_bid": 1,
        "max_exchange_rounds": 4,
    }
    assert MAX_EXCHANGE_ROUNDS_LIMIT == 4


def test_missing_mapping_or_names_take_defaults() -> None:
    assert parse_rules_options(None) == RulesOptions()
    assert parse_rules_options({}) == RulesOptions()
    assert parse_rules_options({"promise_min_bid": 4}) == RulesOptions(promise_min_bid=4)


def test_parse_round_trips_to_dict() -> None:
    options = RulesOptions(target_score=11, cold_margin=5, promise_min_bid=4, max_exchange_rounds=0)
    assert parse_rules_options(options.to_dict()) == options


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("target_score", 1),
        ("target_score", 1000),
        ("cold_margin", 1),
        ("cold_margin", 1000),
        ("promise_min_bid", 1),
        ("promise_min_bid", 5),
        ("max_exchange_rounds", 0),
        ("max_exchange_rounds", 4),
    ],
)
def test_boundary_values_are_accepted(name: str, value: int) -> None:
    assert getattr(parse_rules_options({name: value}), name) == value
    assert getattr(RulesOptions(**{name: value}), name) == value


INVALID = [
    ("target_score", 0),
    ("target_score", -25),
    ("target_score", 1001),
    ("target_score", "25"),
    ("target_score", 25.0),
    ("target_score", None),
    ("target_score", True),
    ("cold_margin", 0),
    ("cold_margin", 1001),
    ("cold_margin", False),
    ("cold_margin", [10]),
    ("promise_min_bid", 0),
    ("promise_min_bid", 6),
    ("promise_min_bid", True),
    ("promise_min_bid", 4.0),
    ("max_exchange_rounds", -1),
    ("max_exchange_rounds", 5),
    ("max_exchange_rounds", True),
    ("max_exchange_rounds", "4"),
]


@pytest.mark.parametrize(("name", "value"), INVALID)
def test_invalid_value_raises_naming_the_option(name: str, value: object) -> None:
    with pytest.raises(RulesOptionsError) as caught:
        RulesOptions(**{name: value})  # type: ignore[arg-type]
    assert name in str(caught.value)
    assert repr(value) in str(caught.value) or str(value) in str(caught.value)


@pytest.mark.parametrize(("name", "value"), INVALID)
def test_invalid_value_in_mapping_raises_naming_the_option(name: str, value: object) -> None:
    with pytest.raises(RulesOptionsError, match=name):
        parse_rules_options({name: value})


def test_max_exchange_rounds_5_is_rejected_as_out_of_range() -> None:
    with pytest.raises(RulesOptionsError, match=r"max_exchange_rounds must be between 0 and 4"):
        RulesOptions(max_exchange_rounds=5)


def test_bool_is_not_an_integer_option() -> None:
    with pytest.raises(RulesOptionsError, match="target_score must be an integer, got True"):
        RulesOptions(target_score=True)


@pytest.mark.parametrize("unknown", ["target", "maxExchangeRounds", "seed", ""])
def test_unknown_option_raises_naming_it(unknown: str) -> None:
    with pytest.raises(RulesOptionsError) as caught:
        parse_rules_options({"target_score": 25, unknown: 1})
    message = str(caught.value)
    assert f"unknown rules option(s) {unknown}" in message
    assert "target_score" in message  # the known names are listed


def test_several_unknown_options_are_all_named() -> None:
    with pytest.raises(RulesOptionsError, match="alpha, beta"):
        parse_rules_options({"beta": 1, "alpha": 2})


@pytest.mark.parametrize("not_a_mapping", [[("target_score", 25)], "target_score=25", 25])
def test_options_must_be_a_mapping(not_a_mapping: object) -> None:
    with pytest.raises(RulesOptionsError, match="must be a mapping"):
        parse_rules_options(not_a_mapping)  # type: ignore[arg-type]


def test_options_are_frozen_and_hashable() -> None:
    options = RulesOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.target_score = 30  # type: ignore[misc]
    assert hash(options) == hash(RulesOptions())
    assert RulesOptions(target_score=30) != options
