"""SPEC.md and the models agree on the names a bot author relies on."""

from __future__ import annotations

import re
from dataclasses import fields
from typing import get_args

from protocol.examples_gen import EXAMPLE_BEGIN, SPEC_PATH
from protocol.messages import HEARTBEAT_MEANING, ErrorMessage, ObservationInfo, Reject, Welcome
from referee.conformance import REJECT_EXIT_SECONDS, SHUTDOWN_SECONDS
from referee.listeners import generate_keys
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


def flat(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as single spaces."""
    return " ".join(text.split())


def meaning(part: str, field: str) -> str:
    """The last cell of the table row of ``field`` in ``part``."""
    row = next(line for line in part.splitlines() if line.startswith(f"| `{field}` |"))
    return row.rstrip(" |").rsplit(" | ", 1)[1]


def paragraph(part: str, message: str) -> str:
    """The paragraph describing ``message`` (``**`message`**: …``), flattened."""
    return flat(part.split(f"**`{message}`**")[1].split("\n\n")[0])


def test_heartbeat_ms_means_one_thing_in_the_spec_and_the_schema() -> None:
    assert meaning(section(5), "heartbeat_ms") == HEARTBEAT_MEANING
    assert Welcome.model_fields["heartbeat_ms"].description == HEARTBEAT_MEANING
    assert "only between matches" in paragraph(section(5), "ping")
    assert "No `ping` comes between a `match_start` and its `match_end`" in flat(section(4))


def test_the_key_format_is_the_one_keys_are_made_in() -> None:
    public, secret = generate_keys()
    assert len(public) == len(secret)
    assert f"Z85 text: {len(public)} characters" in flat(section(9))


def test_the_times_to_exit_are_the_ones_check_bot_allows() -> None:
    assert f"must exit within {REJECT_EXIT_SECONDS:g} seconds" in paragraph(section(5), "reject")
    assert f"within {SHUTDOWN_SECONDS:g} second" in paragraph(section(5), "shutdown")


def test_ids_increase_and_the_referees_start_at_1() -> None:
    id_meaning = meaning(section(3), "id")
    assert "larger than the sender's previous id on the connection" in id_meaning
    assert "numbers its messages 1, 2, 3" in id_meaning
    assert "highest version the bot lists in `versions`" in meaning(section(3), "version")


def test_every_option_and_both_of_its_forms_are_named() -> None:
    transport = flat(section(1))
    for option in ("--endpoint", "--token", "--server-key", "--public-key", "--secret-key"):
        assert f"`{option}`" in transport, option
    for rule in ("(`--token TOKEN`)", "(`--token=TOKEN`", "never abbreviated", "takes no value"):
        assert rule in transport, rule


def test_fields_always_sent_are_said_to_be() -> None:
    assert "always present" in meaning(section(5), "time_control")
    for message in ("match_end", "shutdown"):
        assert "always present" in paragraph(section(5), message), message


def test_a_games_end_and_the_last_exchange_round_are_described() -> None:
    assert "before that game's `game_start`" in flat(section(4))
    assert "no `stop` event comes" in flat(section(6))
    stop = meaning(section(6), "stop")
    assert "1 to `max_exchange_rounds`" in stop
    assert "as the organiser registered it" in meaning(section(5), "opponent")
