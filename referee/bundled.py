"""Bot names on the command line: a bundled sample bot's name, a command line or a remote
bot's key, each optionally named by the organiser as ``NAME=BOT``."""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import shlex
from pathlib import Path

import sample_bots
from referee.bots import BotSpec

__all__ = [
    "BOT_NAME_PATTERN",
    "BotNameError",
    "NameOrigin",
    "bundled_bot_names",
    "name_apart",
    "needs_a_name",
    "resolve_bot",
    "resolve_pair",
    "sample_bots_dir",
    "split_name",
]

#: Bot names become parts of file names and match ids (``r0001-alpha+beta``), so they are
#: kept to letters, digits, ``_``, ``.`` and ``-``; ``+`` separates the two seats in an id.
BOT_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class BotNameError(ValueError):
    """A bot argument that is neither a bundled bot nor a usable command."""


def sample_bots_dir() -> Path:
    """The folder of the bundled sample bots: each has an executable ``run``."""
    return Path(sample_bots.__file__).resolve().parent


def bundled_bot_names() -> list[str]:
    """Names of the bundled bots, sorted."""
    return sorted(
        entry.name
        for entry in sample_bots_dir().iterdir()
        if (entry / "run").is_file() and os.access(entry / "run", os.X_OK)
    )


def split_name(text: str) -> tuple[str | None, str]:
    """``NAME=BOT`` → ``(NAME, BOT)``, the name the organiser gives a bot; any other text →
    ``(None, text)``. NAME must be a bot name (:data:`BOT_NAME_PATTERN`), so that
    ``python3 bot.py --depth=3`` stays a command line."""
    head, equals, rest = text.strip().partition("=")
    if equals and BOT_NAME_PATTERN.fullmatch(head):
        return head, rest
    return None, text


def _is_bundled(text: str) -> bool:
    return text.isidentifier() and (sample_bots_dir() / text / "run").is_file()


def needs_a_name(text: str) -> bool:
    """Whether a bot argument leaves the bot without a name of the organiser's: a command
    line without ``NAME=``, which only gives a name made up from the command (``run`` for
    ``…/run``). A bundled bot's name and a remote bot's key are the organiser's choice."""
    given, rest = split_name(text)
    rest = rest.strip()
    return given is None and not rest.startswith("remote:") and not _is_bundled(rest)


def resolve_bot(text: str, name: str | None = None) -> BotSpec:
    """A :class:`BotSpec` for a bundled bot's name (``random``), a quoted command line
    (``"python3 my_bot.py --fast"``) or a remote bot (``remote:`` and its CurveZMQ public key
    in Z85), each optionally as ``NAME=BOT``. ``name``, else NAME, is the name used in
    records; else the bundled bot's name, ``remote-`` and the key's start, or a name made
    up from the command."""
    given, text = split_name(text)
    name = name or given
    text = text.strip()
    if not text:
        raise BotNameError("empty bot: give a bundled bot's name or a command line")
    if text.startswith("remote:"):
        key = text.removeprefix("remote:")
        if len(key) != 40:
            raise BotNameError(
                f"a remote bot is 'remote:' and its 40-character Z85 public key, got {text!r}"
            )
        return BotSpec(name or f"remote-{key[:8]}", (), curve_public_key=key)
    if _is_bundled(text):
        return BotSpec(name or text, (str(sample_bots_dir() / text / "run"),))
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise BotNameError(f"cannot split bot command {text!r}: {error}") from None
    program = argv[0]
    if "/" not in program and not any(
        (Path(folder) / program).is_file() for folder in os.environ.get("PATH", "").split(":")
    ):
        known = ", ".join(bundled_bot_names()) or "none"
        raise BotNameError(f"bot {text!r} is neither a bundled bot ({known}) nor a program on PATH")
    if "/" in program and not Path(program).exists():
        raise BotNameError(f"bot program {program!r} does not exist")
    return BotSpec(name or _name_from_command(argv), tuple(argv))


def resolve_pair(
    first: str, second: str, suffixes: tuple[str, str] = ("-a", "-b")
) -> tuple[BotSpec, BotSpec]:
    """Resolve two bots that will meet, their names kept apart by :func:`name_apart`."""
    specs = (resolve_bot(first), resolve_bot(second))
    return name_apart(specs, (NameOrigin.of(first), NameOrigin.of(second)), suffixes)


class NameOrigin(enum.IntEnum):
    """Where a bot's name came from, the organiser's word weighing most."""

    #: Said by the bot itself, in its hello.
    HELLO = 0
    #: The bundled bot's name, ``remote-`` and the key, or made up from the command line.
    COMMAND = 1
    #: Given by the organiser: ``NAME=BOT``.
    GIVEN = 2

    @classmethod
    def of(cls, text: str) -> NameOrigin:
        """The origin of the name :func:`resolve_bot` gives ``text``."""
        return cls.GIVEN if split_name(text)[0] is not None else cls.COMMAND


def name_apart(
    specs: tuple[BotSpec, BotSpec],
    origins: tuple[NameOrigin, NameOrigin],
    suffixes: tuple[str, str] = ("-a", "-b"),
) -> tuple[BotSpec, BotSpec]:
    """Two bots that will meet, under names that differ so that records and summaries can
    tell them apart. If the names clash, the name of lesser origin gets its suffix (a bot
    that calls itself after its opponent cannot rename the opponent); of equal origin (a bot
    against itself), both do. Two equal given names are an error."""
    first, second = specs
    if first.name != second.name:
        return first, second
    if origins[0] == origins[1] == NameOrigin.GIVEN:
        raise BotNameError(f"both bots are named {first.name!r}: give them different names")
    if origins[0] <= origins[1]:
        first = dataclasses.replace(first, name=first.name + suffixes[0])
    if origins[1] <= origins[0]:
        second = dataclasses.replace(second, name=second.name + suffixes[1])
    return first, second


_INTERPRETERS = ("python", "node", "bash", "sh", "ruby", "perl", "java", "pypy")


def _name_from_command(argv: list[str]) -> str:
    """``./bots/alpha --fast`` → ``alpha``; ``python3 -m pkg.bot`` → ``pkg.bot``."""
    program = Path(argv[0]).name
    if program.startswith(_INTERPRETERS):
        arguments = iter(argv[1:])
        for argument in arguments:
            if argument == "-m":
                return next(arguments, program)
            if not argument.startswith("-"):
                return Path(argument).stem
    return program
