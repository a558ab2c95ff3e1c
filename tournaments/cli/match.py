"""The ``match`` command: play bots against each other over the protocol."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from referee.bundled import BotNameError, resolve_pair
from referee.faults import FaultKind
from referee.records import dumps_line
from referee.runner import MatchReport, MatchRunner, TimeControl
from referee.sandbox import SandboxMode
from referee.selfplay import derive_seed
from tournaments.cli.common import EXIT_UNREADABLE, write_record_or_exit
from tournaments.cli.options import (
    BOT_HELP,
    DEFAULT_TIME_CONTROL,
    NO_RULES_FLAGS,
    BankMsOption,
    DecisionMsOption,
    KeyFileOption,
    ListenOption,
    RecordOption,
    RulesFlags,
    SandboxOption,
    SeedOption,
    WarmupMsOption,
    listener_from_flags,
    sandbox_from_flag,
    with_rules_flags,
)

__all__ = ["app", "match"]

app = typer.Typer(no_args_is_help=True)


@app.command()
@with_rules_flags
def match(
    bot_a: Annotated[str, typer.Argument(help=BOT_HELP)],
    bot_b: Annotated[str, typer.Argument(help="The opponent, in the same form.")],
    matches: Annotated[int, typer.Option(min=1, help="Number of matches.")] = 2,
    seed: SeedOption = 1,
    record: RecordOption = None,
    decision_ms: DecisionMsOption = DEFAULT_TIME_CONTROL.decision_ms,
    bank_ms: BankMsOption = DEFAULT_TIME_CONTROL.bank_ms,
    warmup_ms: WarmupMsOption = DEFAULT_TIME_CONTROL.warmup_ms,
    logs: Annotated[
        Path | None, typer.Option(file_okay=False, help="Keep each bot's output in this folder.")
    ] = None,
    listen: ListenOption = None,
    key_file: KeyFileOption = None,
    rules: RulesFlags = NO_RULES_FLAGS,
    sandbox: SandboxOption = SandboxMode.AUTO,
    keep_alive: Annotated[
        bool,
        typer.Option(
            "--keep-alive",
            help="One process per bot for every match (trusted bots: it remembers); by "
            "default each match starts the bots afresh.",
        ),
    ] = False,
) -> None:
    """Play matches between two bots over the protocol and print each result.

    Matches come in duplicate pairs: matches 2k-1 and 2k use the same deals with the seats
    swapped, so neither bot is favoured by the cards.
    """
    options = rules.options()
    try:
        spec_a, spec_b = resolve_pair(bot_a, bot_b)
    except BotNameError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    if keep_alive:
        spec_a, spec_b = replace(spec_a, keep_alive=True), replace(spec_b, keep_alive=True)
    plan = sandbox_from_flag(sandbox, exit_code=EXIT_UNREADABLE)
    control = TimeControl(decision_ms=decision_ms, bank_ms=bank_ms, warmup_ms=warmup_ms)
    names = (spec_a.name, spec_b.name)
    remote = listener_from_flags(
        listen, key_file, needed=spec_a.is_remote or spec_b.is_remote, exit_code=EXIT_UNREADABLE
    )
    wins: Counter[str] = Counter()
    points: Counter[str] = Counter()
    faults: Counter[tuple[str, FaultKind]] = Counter()
    lines: list[str] = []
    with MatchRunner(
        options=options, time_control=control, log_dir=logs, remote=remote, sandbox=plan
    ) as runner:
        if remote is not None:
            typer.echo(
                f"listening for remote bots on {runner.server.remote_endpoint}, "
                f"referee public key {remote.public_key}"
            )
        for number in range(1, matches + 1):
            swapped = number % 2 == 0
            specs = [spec_b, spec_a] if swapped else [spec_a, spec_b]
            report = runner.play(specs, derive_seed(seed, "match", (number + 1) // 2), str(number))
            typer.echo(_describe(number, report))
            lines.extend(dumps_line(line) for line in report.record_lines(number))
            if report.winner is not None:
                wins[report.players[report.winner]] += 1
            for game in report.games:
                if game.result is not None:
                    for seat in (0, 1):
                        points[report.players[seat]] += game.result.points[seat]
            for fault in report.faults:
                faults[(fault.bot, fault.kind)] += 1
    typer.echo("")
    for name in names:
        kinds = ", ".join(
            f"{kind.value} {count}" for (bot, kind), count in sorted(faults.items()) if bot == name
        )
        typer.echo(
            f"{name}: {wins[name]} of {matches} matches won, {points[name]} game points, "
            f"faults: {kinds or 'none'}"
        )
    if record is not None:
        write_record_or_exit(record, lines, EXIT_UNREADABLE)


def _describe(number: int, report: MatchReport) -> str:
    players = report.players
    if report.void:
        reasons = "; ".join(fault.describe() for fault in report.faults)
        return f"match {number}: void, both bots failed before the first game: {reasons}"
    result = report.match.result if report.match is not None else None
    assert result is not None
    winner, loser = players[result.winner], players[result.loser]
    text = (
        f"match {number}: {winner} beat {loser} by {result.termination.value}, "
        f"{result.scores[result.winner]}-{result.scores[result.loser]} after {result.games} games"
    )
    if report.forfeit_fault is not None:
        text += f" (forfeit: {report.forfeit_fault.describe()})"
    return text
