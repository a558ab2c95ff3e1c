"""The worked example of SPEC.md section 11: current, exact bytes, valid messages."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings

from protocol.codec import encode, parse_bot_message, parse_referee_message
from protocol.examples_gen import (
    EXAMPLE_BEGIN,
    EXAMPLE_END,
    SPEC_PATH,
    example_conversation,
    format_hex,
    format_json,
    render_example,
)
from protocol.version import PROTOCOL_VERSION

from .strategies import ANY_VALUE

SPEC = SPEC_PATH.read_text(encoding="utf-8")
REGENERATE = "regenerate with `python -m protocol.examples_gen --write` and commit SPEC.md"
CAPTION = re.compile(r"^\*\*(\d+)\. (bot → referee|referee → bot): `(\w+)`\*\*", re.MULTILINE)
BLOCK = re.compile(r"```(json|text)\n(.*?)\n```", re.DOTALL)
SIZE = re.compile(r"^msgpack, (\d+) bytes:$", re.MULTILINE)


def example_section() -> str:
    """The generated part of SPEC.md, markers included."""
    start = SPEC.index(EXAMPLE_BEGIN)
    end = SPEC.index(EXAMPLE_END, start) + len(EXAMPLE_END)
    return SPEC[start:end]


def shown_messages() -> list[dict[str, Any]]:
    """Each message of the example as shown: direction, JSON, and the hex if any."""
    section = example_section()
    captions = list(CAPTION.finditer(section))
    shown = []
    for number, caption in enumerate(captions):
        end = captions[number + 1].start() if number + 1 < len(captions) else len(section)
        part = section[caption.end() : end]
        blocks = BLOCK.findall(part)
        sizes = SIZE.findall(part)
        assert blocks[0][0] == "json", caption.group(0)
        entry: dict[str, Any] = {
            "number": int(caption.group(1)),
            "sender": caption.group(2).split()[0],
            "type": caption.group(3),
            "json": blocks[0][1],
        }
        if len(blocks) > 1:
            assert blocks[1][0] == "text", caption.group(0)
            assert len(sizes) == 1, caption.group(0)
            entry["hex"], entry["size"] = blocks[1][1], int(sizes[0])
        shown.append(entry)
    return shown


SHOWN = shown_messages()


def test_spec_example_is_current() -> None:
    assert SPEC.count(EXAMPLE_BEGIN) == SPEC.count(EXAMPLE_END) == 1
    assert example_section() == render_example(), f"SPEC.md section 11 is out of date: {REGENERATE}"


def test_spec_example_is_the_last_section() -> None:
    assert "\n## 11. Worked example\n" in example_section()
    assert SPEC.rstrip("\n").endswith(EXAMPLE_END)


def test_example_shows_a_whole_conversation() -> None:
    kinds = [entry["type"] for entry in SHOWN]
    assert [entry["number"] for entry in SHOWN] == list(range(1, len(SHOWN) + 1))
    assert kinds[:4] == ["hello", "welcome", "match_start", "ready"]
    assert kinds[-1] == "match_end"
    assert kinds[4:-1] == ["decide", "act"] * ((len(kinds) - 5) // 2)
    decisions = {
        json.loads(entry["json"])["decision"] for entry in SHOWN if entry["type"] == "decide"
    }
    assert decisions == {"exchange", "bid", "play"}
    actions = [json.loads(entry["json"])["action"] for entry in SHOWN if entry["type"] == "act"]
    assert any(action.startswith("exchange ") for action in actions)
    assert any(action.startswith("bid ") for action in actions)
    assert any(action.startswith("play ") for action in actions)


@pytest.mark.parametrize("entry", SHOWN, ids=lambda entry: f"{entry['number']}-{entry['type']}")
def test_shown_json_is_a_valid_message_from_its_sender(entry: dict[str, Any]) -> None:
    message = json.loads(entry["json"])
    assert message["type"] == entry["type"]
    assert message["version"] == PROTOCOL_VERSION
    parse = parse_bot_message if entry["sender"] == "bot" else parse_referee_message
    assert parse(encode(message)).model_dump(mode="json") == message


def test_some_messages_show_their_bytes() -> None:
    with_hex = [entry["type"] for entry in SHOWN if "hex" in entry]
    assert with_hex == ["hello", "welcome", "match_start", "ready", "act"]


@pytest.mark.parametrize(
    "entry", [entry for entry in SHOWN if "hex" in entry], ids=lambda entry: entry["type"]
)
def test_shown_hex_is_the_encoding_of_the_shown_json(entry: dict[str, Any]) -> None:
    packed = encode(json.loads(entry["json"]))
    assert bytes.fromhex(entry["hex"]) == packed
    assert entry["size"] == len(packed)
    assert entry["hex"] == format_hex(packed)


def test_example_acts_answer_the_decide_before_them() -> None:
    messages = [json.loads(entry["json"]) for entry in SHOWN]
    for before, act in itertools.pairwise(messages):
        if act["type"] == "act":
            assert before["type"] == "decide"
            assert act["reply_to"] == before["id"]
            assert act["action"] in before["legal"]
    for sender in ("bot", "referee"):
        ids = [json.loads(e["json"])["id"] for e in SHOWN if e["sender"] == sender]
        assert ids == list(range(1, len(ids) + 1))


def test_example_conversation_matches_the_spec() -> None:
    talk = example_conversation()
    assert [sent.message for sent in talk.messages] == [json.loads(e["json"]) for e in SHOWN]


@settings(max_examples=100, deadline=None)
@given(ANY_VALUE)
def test_format_json_is_json_of_the_same_value(value: Any) -> None:
    try:
        expected = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return  # bytes, NaN and infinities are not JSON
    assert json.loads(format_json(value, width=30)) == expected


def test_format_json_keeps_lines_short_when_it_can() -> None:
    for entry in SHOWN:
        for line in entry["json"].splitlines():
            assert len(line) <= 96, line
