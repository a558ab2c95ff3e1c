"""The ``check-bot`` command: run a bot through the conformance checklist and print a report.

The checks are :mod:`referee.conformance`'s business; this module resolves the bot (one to
start, or with ``--remote`` one that dials in), prints and chooses the exit code: 0 only if
every item passed, 1 otherwise, 2 when the bot cannot be checked at all (no command, an
unknown bot, a remote bot without a listener).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import typer

from referee.bots import BotSpec
from referee.bundled import BotNameError, resolve_bot
from referee.conformance import (
    CHECKLIST,
    REMOTE_CHECKLIST,
    CheckReport,
    CheckSettings,
    ItemResult,
    Status,
    check_bot,
)
from referee.sandbox import SandboxMode
from tournaments.cli.exit_codes import EXIT_FAILED, EXIT_UNUSABLE
from tournaments.cli.options import (
    DEFAULT_TIME_CONTROL,
    KeyFileOption,
    ListenOption,
    SandboxOption,
    decision_ms_flag,
    listener_from_flags,
    sandbox_from_flag,
    warmup_ms_flag,
)
from tournaments.run.worker import reaped

__all__ = ["app", "check_bot_command", "print_item"]

app = typer.Typer(no_args_is_help=True)


_COLOURS = {
    Status.PASS: typer.colors.GREEN,
    Status.FAIL: typer.colors.RED,
    Status.ADVICE: typer.colors.YELLOW,
}


def _checklist_help() -> str:
    started = "\n\n".join(f"{item.name}: {item.description}." for item in CHECKLIST)
    remote = ", ".join(item.name for item in REMOTE_CHECKLIST)
    return (
        f"The checklist, in order:\n\n{started}\n\nA remote bot (--remote) goes through "
        f"{remote}: its handshake is dialling in with its key pair, and its shutdown closing "
        "its connection."
    )


@app.command("check-bot", epilog=_checklist_help())
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
        str | None,
        typer.Option(
            "--remote",
            help="Check a bot that dials in over CurveZMQ, named by its public key (40 Z85 "
            "characters) or its .pub file; with --listen and --key-file.",
            show_default=False,
        ),
    ] = None,
    listen: ListenOption = None,
    key_file: KeyFileOption = None,
    connect_timeout_s: Annotated[
        float, typer.Option(min=0.1, help="Seconds a remote bot has to dial in.")
    ] = 60.0,
    sandbox: SandboxOption = SandboxMode.AUTO,
) -> None:
    """Check that a bot speaks the protocol and plays by the rules before a tournament.

    The bot is started as the referee starts it and taken through a checklist: handshake and
    version negotiation, every decision type within the deadline, legal actions only,
    unknown fields and message types, several matches in one process, whether a match
    replays the same with the same seed, a clean shutdown and no process left behind. Each
    item prints PASS or FAIL (or ADVICE: a recommendation, which fails nothing) with the
    reason; the exit code is 0 only if no item failed or went unchecked.

    A bot that runs elsewhere dials in instead (--remote KEY --listen HOST:PORT --key-file
    referee.key, or the bot remote:KEY): the check waits for it, then takes it through every
    item that makes sense for a bot it did not start.
    """
    spec = _remote_spec(remote) if remote is not None else reaped(_started_spec(command))
    listener = listener_from_flags(listen, key_file, needed=spec.is_remote, exit_code=EXIT_UNUSABLE)
    plan = sandbox_from_flag(sandbox, exit_code=EXIT_UNUSABLE)
    settings = CheckSettings(
        decision_ms=decision_ms,
        warmup_ms=warmup_ms,
        matches=matches,
        sandbox=plan,
        connect_s=connect_timeout_s,
    )
    if json_output:
        report = check_bot(spec, settings, listener=listener)
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        if listener is not None and spec.is_remote:
            typer.echo(
                f"Checking {spec.name}: waiting {connect_timeout_s:g} s for it to dial in to "
                f"tcp://{listener.host}:{listener.port} with the key {spec.curve_public_key} "
                f"(referee public key {listener.public_key})"
            )
        else:
            how = "sandboxed" if plan.enabled else f"unsandboxed: {plan.summary}"
            typer.echo(f"Checking {shlex.join(spec.command)} ({how})")
        report = check_bot(spec, settings, listener=listener, on_result=print_item)
        _print_summary(report)
    if not report.passed:
        raise typer.Exit(EXIT_FAILED)


def _started_spec(command: list[str] | None) -> BotSpec:
    if not command:
        typer.echo("error: give the bot: a bundled bot's name, or -- and its command", err=True)
        raise typer.Exit(EXIT_UNUSABLE)
    # One argument may be a bundled name or a quoted command line, as for ``match``.
    text = command[0] if len(command) == 1 else shlex.join(command)
    try:
        return resolve_bot(text)
    except BotNameError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from None


def _remote_spec(key: str) -> BotSpec:
    """The remote bot of ``--remote``: a public key, or the .pub file that holds one."""
    path = Path(key)
    if len(key) != 40 and path.is_file():
        try:
            key = path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeError) as error:
            typer.echo(f"error: cannot read the public key in {path}: {error}", err=True)
            raise typer.Exit(EXIT_UNUSABLE) from None
    try:
        return resolve_bot(f"remote:{key}")
    except BotNameError as error:
        typer.echo(f"error: --remote: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from None


def print_item(result: ItemResult, indent: str = "") -> None:
    """One line of the report: the item's status (in colour), its name and the reason."""
    status = typer.style(result.status.value, fg=_COLOURS.get(result.status), bold=True)
    typer.echo(f"{indent}{status} {result.name}: {result.reason}")


def _print_summary(report: CheckReport) -> None:
    typer.echo(f"Clock: {report.clock_note}")
    summary = report.summary()
    if report.restarts:
        summary += f" (the bot's process was restarted {report.restarts} time(s))"
    if report.command:  # a remote bot runs where its owner runs it
        summary += "; it ran sandboxed" if report.sandboxed else "; it ran unsandboxed"
    typer.secho(summary, fg=typer.colors.GREEN if report.passed else typer.colors.RED)
