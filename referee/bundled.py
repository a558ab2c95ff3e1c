"""Bot names on the command line: a bundled sample bot's name, or a command line."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import sample_bots
from referee.bots import BotSpec

__all__ = [
    "BotNameError",
    "bundled_bot_names",
    "resolve_bot",
    "resolve_pair",
    "sample_bots_dir",
]


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


def resolve_bot(text: str, name: str | None = None) -> BotSpec:
    """A :class:`BotSpec` for a bundled bot's name (``random``), a quoted command line
    (``"python3 my_bot.py --fast"``) or a remote bot (``remote:`` and its CurveZMQ public key
    in Z85). ``name`` overrides the name used in records."""
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
    run = sample_bots_dir() / text / "run"
    if text.isidentifier() and run.is_file():
        return BotSpec(name or text, (str(run),))
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
    """Resolve two bots that will meet; if their names clash (a bot against itself), each
    name gets its suffix so that records and summaries can tell them apart."""
    spec_first, spec_second = resolve_bot(first), resolve_bot(second)
    if spec_first.name == spec_second.name:
        spec_first = resolve_bot(first, name=spec_first.name + suffixes[0])
        spec_second = resolve_bot(second, name=spec_second.name + suffixes[1])
    return spec_first, spec_second


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
