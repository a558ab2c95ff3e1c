"""The protocol version: one constant, shown by the spec and carried by every example."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.examples_gen import SPEC_PATH
from protocol.version import (
    PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
    negotiate_version,
    parse_version,
)

from .helpers import VECTORS

SPEC = SPEC_PATH.read_text(encoding="utf-8")


def test_spec_states_the_protocol_version() -> None:
    stated = re.findall(r"^\*\*Protocol version: ([^*]+)\*\*$", SPEC, flags=re.MULTILINE)
    assert stated == [PROTOCOL_VERSION]


def test_spec_envelope_names_the_version() -> None:
    assert f'`"{PROTOCOL_VERSION}"` for this spec' in SPEC


def test_every_vector_carries_the_version() -> None:
    for name, vector in VECTORS.items():
        assert vector["version"] == PROTOCOL_VERSION, name
    assert VECTORS["hello"]["versions"] == [PROTOCOL_VERSION]
    assert VECTORS["welcome"]["protocol"] == PROTOCOL_VERSION


def test_every_message_of_the_worked_example_carries_the_version() -> None:
    versions = re.findall(r'"version": "([^"]*)"', SPEC)
    assert versions
    assert set(versions) == {PROTOCOL_VERSION}


def test_the_current_version_is_supported_and_well_formed() -> None:
    assert SUPPORTED_VERSIONS[0] == PROTOCOL_VERSION
    assert parse_version(PROTOCOL_VERSION)[0] >= 1


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("1.0", (1, 0)), ("0.7", (0, 7)), ("12.34", (12, 34)), ("9999.0", (9999, 0))],
)
def test_parse_version(text: str, parsed: tuple[int, int]) -> None:
    assert parse_version(text) == parsed


@pytest.mark.parametrize(
    "text",
    ["", "1", "1.", ".1", "1.0.0", "01.0", "1.00", "v1.0", " 1.0", "1.0\n", "10000.0", "¹.0"],
)
def test_parse_version_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="not a protocol version"):
        parse_version(text)


def test_parse_version_refuses_non_text() -> None:
    with pytest.raises(ValueError, match="not a protocol version"):
        parse_version(1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("offered", "supported", "chosen"),
    [
        (["1.0"], ("1.0",), "1.0"),
        (["1.3"], ("1.1",), "1.1"),  # same major: the lower minor
        (["1.1"], ("1.3",), "1.1"),
        (["1.0", "1.2"], ("1.5",), "1.2"),
        (["2.0", "1.4"], ("1.2", "2.1"), "2.0"),  # the highest shared major wins
        (["1.4", "2.3"], ("2.1", "1.2"), "2.1"),
        (["2.0"], ("1.0",), None),  # unknown major
        (["0.9", "3.0"], ("1.0", "2.0"), None),
        ([], ("1.0",), None),
        (["", "x", "1", "1.0.0", "01.0", "1.0 ", "1.0"], ("1.0",), "1.0"),  # garbage skipped
        (["garbage", "1.x"], ("1.0",), None),
    ],
)
def test_negotiate_version(
    offered: list[str], supported: tuple[str, ...], chosen: str | None
) -> None:
    assert negotiate_version(offered, supported) == chosen


def test_negotiate_version_defaults_to_the_supported_versions() -> None:
    assert negotiate_version([PROTOCOL_VERSION]) == PROTOCOL_VERSION
    assert negotiate_version(VECTORS["hello"]["versions"]) == VECTORS["welcome"]["protocol"]


def test_negotiate_version_skips_offers_that_are_not_text() -> None:
    assert negotiate_version([None, 1.0, 1, ["1.0"], "1.0"]) == "1.0"  # type: ignore[list-item]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=8) | st.from_regex(r"\A[0-9]{1,2}\.[0-9]{1,2}\Z"), max_size=8))
def test_negotiate_version_never_raises_and_picks_a_shared_major(offered: list[str]) -> None:
    chosen = negotiate_version(offered, ("1.2", "3.0"))
    if chosen is None:
        return
    major, minor = parse_version(chosen)
    offers = []
    for text in offered:
        try:
            offers.append(parse_version(text))
        except ValueError:
            continue
    assert (major, minor) in {(1, 2), (3, 0)} | {(m, n) for m, n in offers}
    assert any(m == major and n >= minor for m, n in offers)
    assert major in (1, 3)
