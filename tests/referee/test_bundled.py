"""Bot names on the command line: NAME=BOT, what needs a hello name, and names kept apart."""

from __future__ import annotations

import sys

import pytest

from referee.bots import BotSpec
from referee.bundled import (
    BotNameError,
    NameOrigin,
    name_apart,
    needs_a_name,
    resolve_bot,
    resolve_pair,
    split_name,
)

KEY = "0" * 40


def test_a_name_is_given_before_an_equals_sign() -> None:
    assert split_name("mine=python3 my_bot.py") == ("mine", "python3 my_bot.py")
    assert split_name("v2.1=strong") == ("v2.1", "strong")
    # An option's '=' or a shell's variable is no name: the text before it is no bot name.
    assert split_name("python3 bot.py --depth=3") == (None, "python3 bot.py --depth=3")
    assert split_name("./bot --x=1") == (None, "./bot --x=1")
    assert split_name("-x=strong") == (None, "-x=strong")
    spec = resolve_bot(f"alpha={sys.executable} -c pass")
    assert (spec.name, spec.command) == ("alpha", (sys.executable, "-c", "pass"))
    assert resolve_bot(f"far=remote:{KEY}").name == "far"
    with pytest.raises(BotNameError, match="empty bot"):
        resolve_bot("alpha=")


def test_only_a_command_line_without_a_name_needs_its_hello_name() -> None:
    assert needs_a_name("python3 my_bot.py")
    assert needs_a_name("./bots/run")
    assert not needs_a_name("mine=python3 my_bot.py")
    assert not needs_a_name("strong")  # a bundled bot's name is the organiser's choice
    assert not needs_a_name(f"remote:{KEY}")


def spec(name: str) -> BotSpec:
    return BotSpec(name, ("bot",))


def test_clashing_names_are_kept_apart_the_organiser_s_word_first() -> None:
    def names(first: NameOrigin, second: NameOrigin) -> tuple[str, str]:
        one, two = name_apart((spec("x"), spec("x")), (first, second))
        return one.name, two.name

    assert names(NameOrigin.COMMAND, NameOrigin.COMMAND) == ("x-a", "x-b")  # itself
    assert names(NameOrigin.HELLO, NameOrigin.HELLO) == ("x-a", "x-b")
    # A bot that calls itself after its opponent does not rename the opponent.
    assert names(NameOrigin.HELLO, NameOrigin.COMMAND) == ("x-a", "x")
    assert names(NameOrigin.GIVEN, NameOrigin.HELLO) == ("x", "x-b")
    assert names(NameOrigin.COMMAND, NameOrigin.GIVEN) == ("x-a", "x")
    with pytest.raises(BotNameError, match="both bots are named 'x'"):
        names(NameOrigin.GIVEN, NameOrigin.GIVEN)
    assert name_apart((spec("x"), spec("y")), (NameOrigin.HELLO,) * 2) == (spec("x"), spec("y"))
    assert [one.name for one in resolve_pair("strong", "strong", ("-new", "-old"))] == [
        "strong-new",
        "strong-old",
    ]
    assert [one.name for one in resolve_pair("a=strong", "strong")] == ["a", "strong"]
