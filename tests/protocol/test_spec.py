"""SPEC.md and the models agree on the names a bot author relies on."""

from __future__ import annotations

import re
from dataclasses import fields
from typing import get_args

from protocol.examples_gen import EXAMPLE_BEGIN, SPEC_PATH
from protocol.messages import ErrorMessage, ObservationInfo, Reject
from referee.rules.options import RulesOptions

from .strategies import EVENT_KINDS, MESSAGE_TYPES

SPEC = SPEC_PATH.read_text(encoding="utf-8").split(EXAMPLE_BEGIN)[0]  # the normative part


def section(number: int) -> str:
    """The text of one numbered section of the spec."""
    start = SPEC.index(f"\n## {number}. ")
    end = SPEC.find("\n## ", start + 1)
    return SPEC[start : end if end >= 0 else len(SPEC)]


def test_every_message_type_is_described() -> None:
    described = set(re.findall(r"^\*\*`(\w+)`\*\*", section(5), flags=re.MULTILINE))
    assert described == MESSAGE_TYPES


def test_every_event_is_described() -> None:
    described = set(re.findall(r"^\| `(\w+)` \|", section(6), flags=re.MULTILINE))
    assert described == EVENT_KINDS


def test_every_observation_field_is_described() -> None:
    described = set(re.findall(r"^\| `(\w+)` \|", section(7), flags=re.MULTILINE))
    assert described == set(ObservationInfo.model_fields)


def test_error_and_reject_codes_are_listed() -> None:
    error_line = section(5).split("**`error`**")[1].split("\n\n")[0]
    for code in get_args(ErrorMessage.model_fields["code"].annotation):
        assert f"`{code}`" in error_line, code
    reject_part = section(5).split("**`reject`**")[1].split("\n\n")[0]
    for code in get_args(Reject.model_fields["code"].annotation):
        assert f"`{code}`" in reject_part, code


def test_rules_options_are_listed() -> None:
    rules_row = next(line for line in section(5).splitlines() if line.startswith("| `rules` |"))
    for option in fields(RulesOptions):
        assert f"`{option.name}`" in rules_row, option.name
