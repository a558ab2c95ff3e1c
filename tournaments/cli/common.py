"""What several commands share besides their flags: the record file they write at the end,
the counts they print, and the two bots of ``match`` and ``sprt``."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import typer

from referee.bots import BotSpec
from referee.bundled import (
    BOT_NAME_PATTERN,
    BotNameError,
    NameOrigin,
    name_apart,
    needs_a_name,
    resolve_bot,
)
from referee.faults import explain_fault, printable
from referee.preflight import preflight_bots
from referee.record_files import write_record
from referee.sandbox import SandboxPlan

__all__ = ["invoked_as", "plural", "resolve_two_bots", "write_record_or_exit"]


def invoked_as() -> str:
    """How to type this program again, for a hint that must work as printed.

    ``aegis-ref`` when that is what the shell finds on ``PATH``; otherwise the path it was
    started by (``.venv/bin/aegis-ref`` after the README's quick start, whose venv is not on
    ``PATH``), relative to the working directory when it lies below it.
    """
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is None or started.name != "aegis-ref" or not started.exists():
        return "aegis-ref"  # not the console script (a test calling main(), python -m …)
    on_path = shutil.which("aegis-ref")
    if on_path is not None and Path(on_path).resolve() == started.resolve():
        return "aegis-ref"
    absolute = started.absolute()
    try:
        typed = absolute.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(absolute))
    return shlex.quote(str(typed) if os.sep in str(typed) else f".{os.sep}{typed}")


def plural(count: int, noun: str) -> str:
    """``"1 match"``, ``"3 matches"``, ``"2 games"``."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun}es" if noun.endswith("ch") else f"{count} {noun}s"


def write_record_or_exit(path: Path, lines: Iterable[str], exit_code: int) -> None:
    """:func:`write_record`, then say where; on failure say why and exit with ``exit_code``."""
    try:
        write_record(path, lines)
    except OSError as error:
        typer.echo(f"cannot write record {path}: {error.strerror or error}", err=True)
        raise typer.Exit(exit_code) from None
    typer.echo(f"record: {path}")


def resolve_two_bots(
    texts: tuple[str, str],
    suffixes: tuple[str, str],
    *,
    sandbox: SandboxPlan,
    warmup_ms: int,
    exit_code: int,
) -> tuple[BotSpec, BotSpec]:
    """The two bots of ``match`` or ``sprt``, named: ``NAME=BOT`` by NAME; a bundled bot by
    its name; a command line without a name by the name the bot gives in its ``hello`` (it
    is started once, as a match would, to hear it), else by its command. Names that clash
    get ``suffixes`` (:func:`~referee.bundled.name_apart`). A bot that resolves to nothing
    is an error: say why, exit."""
    try:
        specs = [resolve_bot(text) for text in texts]
        origins = [NameOrigin.of(text) for text in texts]
        for index, text in enumerate(texts):
            if needs_a_name(text):
                specs[index], origins[index] = _named_by_hello(specs[index], sandbox, warmup_ms)
        return name_apart((specs[0], specs[1]), (origins[0], origins[1]), suffixes)
    except BotNameError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code) from None


def _named_by_hello(
    spec: BotSpec, sandbox: SandboxPlan, warmup_ms: int
) -> tuple[BotSpec, NameOrigin]:
    """``spec`` under the name its bot says in its hello, if it says a usable one: it is
    started once, as its matches will start it (:func:`referee.preflight.preflight_bots`)."""
    command = printable(" ".join(spec.command))
    result = preflight_bots([spec], warmup_ms=warmup_ms, sandbox=sandbox)[0]
    if result.fault is not None:
        typer.echo(
            f"warning: {command!r} did not say hello, so it is called {spec.name!r}: "
            f"{explain_fault(result.fault, spec.command)}",
            err=True,
        )
        return spec, NameOrigin.COMMAND
    said = result.said or ""
    if not BOT_NAME_PATTERN.fullmatch(said):
        typer.echo(
            f"warning: {command!r} calls itself {said!r}, which is no bot name (1 to 64 "
            f"letters, digits, '_', '.' or '-', from a letter or digit), so it is called "
            f"{spec.name!r}; give it one as NAME=COMMAND",
            err=True,
        )
        return spec, NameOrigin.COMMAND
    return dataclasses.replace(spec, name=said), NameOrigin.HELLO
