"""The referee's fast check of an ``act`` reply accepts what the ``Act`` model accepts and
names the field of anything else."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.codec import check_act
from protocol.errors import ProtocolError

GOOD = {"version": "1.0", "id": 7, "type": "act", "reply_to": 3, "action": "play 10H"}


def test_a_well_formed_act_passes() -> None:
    check_act(dict(GOOD))


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("id", True, "id: expected int, got True"),
        ("id", 1.0, "id: expected int, got 1.0"),
        ("reply_to", None, "reply_to: expected int, got None"),
        ("reply_to", False, "reply_to: expected int, got False"),
        ("action", 5, "action: expected str, got 5"),
        ("action", b"play 10H", "action: expected str, got b'play 10H'"),
        ("version", 1, "version: expected str, got 1"),
    ],
)
def test_a_field_of_the_wrong_type_is_named(field: str, value: Any, expected: str) -> None:
    message = dict(GOOD, **{field: value})
    with pytest.raises(ProtocolError, match=f"invalid 'act' message: {expected}"):
        check_act(message)


def test_a_missing_field_is_named() -> None:
    message = dict(GOOD)
    del message["action"]
    with pytest.raises(ProtocolError, match="action: expected str, got None"):
        check_act(message)


def test_an_overlong_action_is_refused() -> None:
    with pytest.raises(ProtocolError, match="longer than 64 characters"):
        check_act(dict(GOOD, action="play " + "X" * 60))


@pytest.mark.parametrize("value", [-1, 2**53, 2**64 - 1])
def test_an_id_out_of_range_is_refused(value: int) -> None:
    """Ids fit in 53 bits (SPEC section 2), as the Act model says."""
    with pytest.raises(ProtocolError, match="id: must be 0 to 9007199254740991"):
        check_act(dict(GOOD, id=value))


def test_a_long_value_is_quoted_short() -> None:
    with pytest.raises(ProtocolError) as caught:
        check_act(dict(GOOD, id="x" * 10_000))
    assert len(str(caught.value)) < 200
    assert str(caught.value).endswith("...")
