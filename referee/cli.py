"""Command-line commands of the referee: ``selfplay`` and ``verify``.

The record format is :mod:`referee.records`' business; this module only plays, reads and
writes files and prints.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, TextIO

import typer

from referee.records import VerifyReport, dumps_line, match_lines, verify_lines
from referee.rules.errors import RulesOptionsError
from referee.rules.game import Seat
from referee.rules.match import Termination
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxMode, SandboxPlan, SandboxUnavailableError, plan_sandbox
from referee.selfplay import POLICIES, PlayedMatch, derive_seed, play_match

__all__ = [
    "SelfplaySummary",
    "app",
    "play_selfplay",
    "run_selfplay",
    "selfplay",
    "verify",
    "verify_file",
    "write_record",
]

app = typer.Typer(no_args_is_help=True)

# Exit codes of ``verify``: 1 when the record disagrees with the engine, 2 when it cannot be read.
EXIT_DISAGREEMENT = 1
EXIT_UNREADABLE = 2


# Rules options as command-line flags, shared by every command that plays matches.
TargetScoreOption = Annotated[
    int | None, typer.Option(help="Rules option: points that win the match.")
]
ColdMarginOption = Annotated[
    int | None, typer.Option(help="Rules option: a lead that wins the match early.")
]
PromiseMinBidOption = Annotated[
    int | None, typer.Option(help="Rules option: smallest bid earning the promise bonus.")
]
MaxExchangeRoundsOption = Annotated[
    int | None, typer.Option(help="Rules option: exchange rounds before bidding (0-4).")
]


# How started bots are contained, shared by every command that starts bots.
SandboxOption = Annotated[
    SandboxMode,
    typer.Option(
        "--sandbox",
        help="auto: run each bot in a bubblewrap sandbox where bubblewrap works, else "
        "unsandboxed with a warning; required: refuse to run without it; off: never.",
        case_sensitive=False,
    ),
]


def sandbox_from_flag(mode: SandboxMode, *, exit_code: int = 2) -> SandboxPlan:
    """The sandbox plan for ``--sandbox``: exits with ``exit_code`` and a message naming
    what is missing for ``required``; warns on stderr when bots will run unsandboxed."""
    try:
        plan = plan_sandbox(mode)
    except SandboxUnavailableError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code) from None
    if not plan.enabled and mode is not SandboxMode.OFF:
        typer.echo(f"warning: {plan.summary}", err=True)
    return plan


def rules_from_flags(
    target_score: int | None,
    cold_margin: int | None,
    promise_min_bid: int | None,
    max_exchange_rounds: int | None,
) -> RulesOptions:
    """Rules options from the command-line flags; defaults where a flag is absent."""
    given = {
        "target_score": target_score,
        "cold_margin": cold_margin,
        "promise_min_bid": promise_min_bid,
        "max_exchange_rounds": max_exchange_rounds,
    }
    try:
        return RulesOptions(**{name: value for name, value in given.items() if value is not None})
    except RulesOptionsError as error:
        raise typer.BadParameter(str(error)) from None


def _plural(count: int, noun: str) -> str:
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun}es" if noun.endswith("ch") else f"{count} {noun}s"


@dataclass(slots=True)
class SelfplaySummary:
    """Counts over a self-play run, for its one-line report."""

    matches: int = 0
    games: int = 0
    wins: Counter[Seat] = field(default_factory=Counter)
    terminations: Counter[Termination] = field(default_factory=Counter)

    def add(self, played: PlayedMatch) -> None:
        """Count one finished match."""
        result = played.match.result
        if result is None:
            raise ValueError("a self-play match always ends")
        self.matches += 1
        self.games += len(played.games)
        self.wins[result.winner] += 1
        self.terminations[result.termination] += 1

    def text(self, record: Path | None = None) -> str:
        """``"200 matches, 1873 games: seat 0 won 97, seat 1 won 103; terminations target 120,
        cold 80; record r.jsonl"``: terminations that occurred, in the enum's order."""
        ended = ", ".join(
            f"{termination.value} {self.terminations[termination]}"
            for termination in Termination
            if self.terminations[termination]
        )
        text = (
            f"{_plural(self.matches, 'match')}, {_plural(self.games, 'game')}: "
            f"seat 0 won {self.wins[Seat.FIRST]}, seat 1 won {self.wins[Seat.SECOND]}; "
            f"terminations {ended or 'none'}"
        )
        return text if record is None else f"{text}; record {record}"


def play_selfplay(
    *, matches: int, seed: int, policies: Sequence[str], options: RulesOptions
) -> Iterator[PlayedMatch]:
    """Play ``matches`` whole matches between built-in policies (seat 0's name first).

    Match k deals from ``derive_seed(seed, "match", k)`` and seat s's policy draws from
    ``derive_seed(seed, "policy", k, s)``, so each match is reproducible on its own.
    """
    for number in range(1, matches + 1):
        players = [
            POLICIES[name](derive_seed(seed, "policy", number, seat))
            for seat, name in enumerate(policies)
        ]
        yield play_match(options, derive_seed(seed, "match", number), players)


def write_record(path: Path, lines: Iterable[str]) -> None:
    """Write record lines to ``path`` atomically: a temporary file beside it, then a rename.

    An interrupted or failed run leaves the old file (or none), never half a record. A path
    that is not a regular file (``/dev/stdout``, a pipe) is written to directly; through a
    symbolic link, the file it points to is replaced and the link kept.
    """
    try:
        mode = os.stat(path).st_mode  # follows links
    except FileNotFoundError:
        mode = stat.S_IFREG  # a new file
    if not stat.S_ISREG(mode):
        # Renaming over a device or a pipe would replace it with a plain file.
        with path.open("w", encoding="utf-8", newline="\n") as stream:
            _write_lines(stream, lines)
        return
    target = Path(os.path.realpath(path))
    temporary, descriptor = _create_temporary(target)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as stream:
            _write_lines(stream, lines)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:  # Ctrl-C included: remove the partial file, then re-raise
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _write_lines(stream: TextIO, lines: Iterable[str]) -> None:
    for line in lines:
        stream.write(line)
        stream.write("\n")


def write_record_or_exit(path: Path, lines: Iterable[str], exit_code: int) -> None:
    """:func:`write_record`, then say where; on failure say why and exit with ``exit_code``."""
    try:
        write_record(path, lines)
    except OSError as error:
        typer.echo(f"cannot write record {path}: {error.strerror or error}", err=True)
        raise typer.Exit(exit_code) from None
    typer.echo(f"record: {path}")


def _create_temporary(path: Path) -> tuple[Path, int]:
    # In the target's directory so that os.replace is a rename on one file system; O_EXCL so
    # that two runs never share one; mode 0o666 so the record gets the umask's usual mode.
    # The .jsonl.tmp suffix is in .gitignore.
    while True:
        temporary = path.with_name(f"{path.stem}.{secrets.token_hex(4)}.jsonl.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            return temporary, os.open(temporary, flags, 0o666)
        except FileExistsError:
            continue


def run_selfplay(
    *,
    matches: int,
    seed: int,
    policies: Sequence[str],
    options: RulesOptions,
    record: Path | None = None,
) -> SelfplaySummary:
    """Play self-play matches, write their record to ``record`` if given, and count them."""
    summary = SelfplaySummary()
    played_matches = play_selfplay(matches=matches, seed=seed, policies=policies, options=options)
    if record is None:
        for played in played_matches:
            summary.add(played)
        return summary

    def lines() -> Iterator[str]:
        for number, played in enumerate(played_matches, 1):
            summary.add(played)
            for line in match_lines(played, policies, number):
                yield dumps_line(line)

    write_record(record, lines())
    return summary


def verify_file(path: Path) -> VerifyReport:
    """Verify the record in ``path``; raise ``OSError`` if it cannot be read."""
    with path.open("rb") as stream:
        return verify_lines(enumerate(stream, 1))


def _policy_pair(names: list[str] | None) -> tuple[str, str]:
    names = names or ["random"]
    unknown = [name for name in names if name not in POLICIES]
    if unknown:
        raise typer.BadParameter(
            f"unknown policy {unknown[0]!r}; choose from {', '.join(sorted(POLICIES))}",
            param_hint="'--policy'",
        )
    if len(names) > 2:
        raise typer.BadParameter(
            "give one policy for both seats or two, seat 0 first", param_hint="'--policy'"
        )
    return (names[0], names[-1])


@app.command()
def selfplay(
    matches: Annotated[int, typer.Option(min=1, help="Number of matches to play.")] = 10,
    seed: Annotated[int, typer.Option(help="Master seed: same seed, same record.")] = 1,
    record: Annotated[
        Path | None,
        typer.Option(dir_okay=False, help="Write the JSON Lines record here (docs/records.md)."),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            help=f"Built-in policy ({', '.join(sorted(POLICIES))}); give it twice for "
            "different policies per seat, seat 0 first.",
            show_default="random",
            metavar="NAME",
        ),
    ] = None,
    target_score: TargetScoreOption = None,
    cold_margin: ColdMarginOption = None,
    promise_min_bid: PromiseMinBidOption = None,
    max_exchange_rounds: MaxExchangeRoundsOption = None,
) -> None:
    """Play whole matches in-process between built-in policies; print a one-line summary."""
    policies = _policy_pair(policy)
    options = rules_from_flags(target_score, cold_margin, promise_min_bid, max_exchange_rounds)
    try:
        summary = run_selfplay(
            matches=matches, seed=seed, policies=policies, options=options, record=record
        )
    except OSError as error:
        typer.echo(f"cannot write record {record}: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    typer.echo(summary.text(record))


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="A JSON Lines record (docs/records.md).")],
) -> None:
    """Re-simulate every game of a record with the engine; report the first disagreement."""
    try:
        report = verify_file(file)
    except OSError as error:
        typer.echo(f"{file}: cannot read the record: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    disagreement = report.disagreement
    if disagreement is not None:
        where = f"{file}:{disagreement.line}" if disagreement.line else str(file)
        typer.echo(f"{where}: {disagreement}")
        raise typer.Exit(EXIT_DISAGREEMENT)
    typer.echo(
        f"OK: {_plural(report.matches, 'match')}, {_plural(report.games, 'game')}, "
        f"{_plural(report.actions, 'action')} verified"
    )
