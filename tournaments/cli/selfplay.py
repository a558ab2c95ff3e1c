"""The ``selfplay`` and ``verify`` commands.

The record format is :mod:`referee.records`' business; this module only plays, reads and
writes files and prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from referee.record_files import verify_file, write_record
from referee.rules.errors import RulesOptionsError
from referee.rules.game import Seat
from referee.rules.match import Termination
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxMode, SandboxPlan, SandboxUnavailableError, plan_sandbox
from referee.selfplay import POLICIES
from referee.selfplay_runs import SelfplaySummary, run_selfplay

__all__ = ["app", "selfplay", "verify"]

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


def _summary_text(summary: SelfplaySummary, record: Path | None = None) -> str:
    """``"200 matches, 1873 games: seat 0 won 97, seat 1 won 103; terminations target 120,
    cold 80; record r.jsonl"``: terminations that occurred, in the enum's order."""
    ended = ", ".join(
        f"{termination.value} {summary.terminations[termination]}"
        for termination in Termination
        if summary.terminations[termination]
    )
    text = (
        f"{_plural(summary.matches, 'match')}, {_plural(summary.games, 'game')}: "
        f"seat 0 won {summary.wins[Seat.FIRST]}, seat 1 won {summary.wins[Seat.SECOND]}; "
        f"terminations {ended or 'none'}"
    )
    return text if record is None else f"{text}; record {record}"


def write_record_or_exit(path: Path, lines: Iterable[str], exit_code: int) -> None:
    """:func:`write_record`, then say where; on failure say why and exit with ``exit_code``."""
    try:
        write_record(path, lines)
    except OSError as error:
        typer.echo(f"cannot write record {path}: {error.strerror or error}", err=True)
        raise typer.Exit(exit_code) from None
    typer.echo(f"record: {path}")


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
    typer.echo(_summary_text(summary, record))


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
