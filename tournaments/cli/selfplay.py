"""The ``selfplay`` command: matches between built-in policies, in-process.

The playing is :mod:`referee.selfplay_runs`' business; this module only reads the flags and
prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from referee.rules.game import Seat
from referee.rules.match import Termination
from referee.selfplay import POLICIES
from referee.selfplay_runs import SelfplaySummary, run_selfplay
from tournaments.cli.common import plural
from tournaments.cli.exit_codes import EXIT_UNREADABLE
from tournaments.cli.options import NO_RULES_FLAGS, RulesFlags, record_flag, with_rules_flags

__all__ = ["app", "selfplay"]

app = typer.Typer(no_args_is_help=True)


def _summary_text(summary: SelfplaySummary, record: Path | None = None) -> str:
    """``"200 matches, 1873 games: seat 0 won 97, seat 1 won 103; terminations target 120,
    cold 80; record r.jsonl"``: terminations that occurred, in the enum's order."""
    ended = ", ".join(
        f"{termination.value} {summary.terminations[termination]}"
        for termination in Termination
        if summary.terminations[termination]
    )
    text = (
        f"{plural(summary.matches, 'match')}, {plural(summary.games, 'game')}: "
        f"seat 0 won {summary.wins[Seat.FIRST]}, seat 1 won {summary.wins[Seat.SECOND]}; "
        f"terminations {ended or 'none'}"
    )
    return text if record is None else f"{text}; record {record}"


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
@with_rules_flags
def selfplay(
    matches: Annotated[int, typer.Option(min=1, help="Number of matches to play.")] = 10,
    seed: Annotated[int, typer.Option(help="Master seed: same seed, same record.")] = 1,
    record: Annotated[
        Path | None, record_flag("Write the JSON Lines record here (docs/records.md).")
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
    rules: RulesFlags = NO_RULES_FLAGS,
) -> None:
    """Play whole matches in-process between built-in policies; print a one-line summary."""
    policies = _policy_pair(policy)
    options = rules.options()
    try:
        summary = run_selfplay(
            matches=matches, seed=seed, policies=policies, options=options, record=record
        )
    except OSError as error:
        typer.echo(f"cannot write record {record}: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    typer.echo(_summary_text(summary, record))
