"""The ``check-bot`` command: run a bot through the conformance checklist and print a report.

The checks are :mod:`referee.conformance`'s business; this module resolves the bot, prints
and chooses the exit code: 0 only if every item passed, 1 otherwise, 2 when the bot cannot
be checked at all (no command, an unknown bot, a remote bot).
"""

from __future__ import annotations

import json
import shlex
from typing import Annotated

import typer

from referee.bundled import BotNameError, resolve_bot
from referee.conformance import (
    CHECKLIST,
    CheckReport,
    CheckSettings,
    ItemResult,
    Status,
    check_bot,
)
from referee.sandbox import SandboxMode
from tournaments.cli.options import (
    DEFAULT_TIME_CONTROL,
    SandboxOption,
    decision_ms_flag,
    sandbox_from_flag,
    warmup_ms_flag,
)

__all__ = ["EXIT_FAILED", "EXIT_UNUSABLE", "app", "check_bot_command", "print_item"]

app = typer.Typer(no_args_is_help=True)

#: Exit codes: some item did not pass; the bot could not be checked at all.
EXIT_FAILED = 1
EXIT_UNUSABLE = 2

_COLOURS = {
    Status.PASS: typer.colors.GREEN,
    Status.FAIL: typer.colors.RED,
    Status.ADVICE: typer.colors.YELLOW,
}
_REMOTE_UNSUPPORTED = (
    "error: --remote is not supported yet: check-bot cannot yet wait for a bot that dials in "
    "over tcp with CurveZMQ. Check the same program as a started bot instead: "
    "aegis-ref check-bot -- CMD [ARGS...]"
)


def _checklist_help() -> str:
    return "\n\n".join(f"{item.name}: {item.description}." for item in CHECKLIST)


@app.command("check-bot", epilog=f"The checklist, in order:\n\n{_checklist_help()}")
def check_bot_command(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The bot: a bundled bot's name (random, first, …), a quoted command line, "
            "or its command line after --: aegis-ref check-bot -- python3 my_bot.py --fast",
            show_default=False,
        ),
    ] = None,
    decision_ms: Annotated[
        int, decision_ms_flag("Deadline of each decision, as in a tournament.")
    ] = DEFAULT_TIME_CONTROL.decision_ms,
    # At least 1 ms here: the check's settings refuse 0.
    warmup_ms: Annotated[
        int,
        warmup_ms_flag("Time for the start-up, each ready and a match's first move.", minimum=1),
    ] = DEFAULT_TIME_CONTROL.warmup_ms,
    matches: Annotated[
        int, typer.Option(min=1, help="Matches the bot plays in one process (several_matches).")
    ] = 3,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON, and nothing else.")
    ] = False,
    remote: Annotated[
        bool,
        typer.Option("--remote", help="Check a remote bot that dials in (not supported yet)."),
    ] = False,
    sandbox: SandboxOption = SandboxMode.AUTO,
) -> None:
    """Check that a bot speaks the protocol and plays by the rules before a tournament.

    The bot is started as the referee starts it and taken through a checklist: handshake and
    version negotiation, every decision type within the deadline, legal actions only,
    unknown fields and message types, several matches in one process, whether a match
    replays the same with the same seed, a clean shutdown and no process left behind. Each
    item prints PASS or FAIL (or ADVICE: a recommendation, which fails nothing) with the
    reason; the exit code is 0 only if no item failed or went unchecked.
    """
    if remote:
        typer.echo(_REMOTE_UNSUPPORTED, err=True)
        raise typer.Exit(EXIT_UNUSABLE)
    if not command:
        typer.echo("error: give the bot: a bundled bot's name, or -- and its command", err=True)
        raise typer.Exit(EXIT_UNUSABLE)
    # One argument may be a bundled name or a quoted command line, as for ``match``.
    text = command[0] if len(command) == 1 else shlex.join(command)
    try:
        spec = resolve_bot(text)
    except BotNameError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from None
    plan = sandbox_from_flag(sandbox, exit_code=EXIT_UNUSABLE)
    settings = CheckSettings(
        decision_ms=decision_ms, warmup_ms=warmup_ms, matches=matches, sandbox=plan
    )
    if json_output:
        report = check_bot(spec, settings)
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        typer.echo(f"Checking {spec.name}: {shlex.join(spec.command)}")
        report = check_bot(spec, settings, on_result=print_item)
        _print_summary(report)
    if not report.passed:
        raise typer.Exit(EXIT_FAILED)


def print_item(result: ItemResult, indent: str = "") -> None:
    """One line of the report: the item's status (in colour), its name and the reason."""
    status = typer.style(result.status.value, fg=_COLOURS.get(result.status), bold=True)
    typer.echo(f"{indent}{status} {result.name}: {result.reason}")


def _print_summary(report: CheckReport) -> None:
    summary = report.summary()
    if report.restarts:
        summary += f" (the bot's process was restarted {report.restarts} time(s))"
    typer.secho(summary, fg=typer.colors.GREEN if report.passed else typer.colors.RED)
