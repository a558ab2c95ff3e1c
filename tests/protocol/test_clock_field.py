"""Protocol 1.2's ``match_start.time_control.clock``: sent to bots that speak 1.2 only, read
by the SDK, and absent (the wall clock) from older referees."""

from __future__ import annotations

import pytest

from protocol import builders
from protocol.errors import ProtocolError
from protocol.messages import MatchStart
from protocol.sdk_views import parse_match_start
from protocol.version import CLOCK_VERSION, PROTOCOL_VERSION
from referee.rules.game import Seat
from referee.rules.options import RulesOptions

CONTROL = {"decision_ms": 100, "bank_ms": None, "warmup_ms": 500}


def start(clock: str | None) -> dict[str, object]:
    """A ``match_start`` as the referee builds it, with its envelope's id."""
    message = builders.match_start("m", Seat.FIRST, "other", RulesOptions(), CONTROL, 5, clock)
    return {**message, "version": PROTOCOL_VERSION, "id": 2}


def test_the_clock_is_told_from_1_2_on_and_never_before() -> None:
    assert CLOCK_VERSION == PROTOCOL_VERSION == "1.2"
    assert builders.clock_for("1.2", "cpu") == "cpu"
    assert builders.clock_for(None, "wall") == "wall"  # before the handshake: the newest
    assert builders.clock_for("1.1", "cpu") is None
    assert builders.clock_for("1.0", "cpu") is None
    assert "clock" not in start(None)["time_control"]  # type: ignore[operator]


@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_the_sdk_and_the_schema_read_the_clock(clock: str) -> None:
    message = start(clock)
    assert parse_match_start(message).time_control.clock == clock
    assert MatchStart.model_validate(message).time_control.clock == clock


def test_a_match_start_without_a_clock_is_the_wall_clock() -> None:
    message = start(None)
    assert parse_match_start(message).time_control.clock == "wall"
    assert MatchStart.model_validate(message).time_control.clock is None


def test_an_unknown_clock_is_a_protocol_error_that_names_it() -> None:
    with pytest.raises(ProtocolError, match=r"match_start.*time_control\.clock.*'cpu' or 'wall'"):
        parse_match_start(start("x"))
