"""The ``match`` command: play bots against each other over the protocol."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from referee.faults import explain_fault
from referee.sandbox import SandboxMode
from referee.time_control import TimeControl
from tournaments.cli.common import (
    plural,
    resolve_two_bots,
    write_record_or_exit,
)
from tournaments.cli.exit_codes import EXIT_UNREADABLE
from tournaments.cli.options import (
    BOT_HELP,
    DEFAULT_TIME_CONTROL,
    NO_RULES_FLAGS,
    BankMsOption,
    ClockOption,
    ConcurrencyOption,
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
    time_control_from_flags,
    with_rules_flags,
)
from tournaments.errors import TournamentError
from tournaments.run.headtohead import Duel, MatchPlayer, Played, Tally

__all__ = ["app", "match"]

app = typer.Typer(no_args_is_help=True)


@app.command()
@with_rules_flags
def match(
    bot_a: Annotated[
        str, typer.Argument(help=f"{BOT_HELP} Or remote:KEY, a bot that dials in (--listen).")
    ],
    bot_b: Annotated[str, typer.Argument(help="The opponent, in the same form.")],
    matches: Annotated[int, typer.Option(min=1, help="Number of matches.")] = 2,
    concurrency: ConcurrencyOption = 1,
    seed: SeedOption = 1,
    record: RecordOption = None,
    decision_ms: DecisionMsOption = DEFAULT_TIME_CONTROL.decision_ms,
    bank_ms: BankMsOption = DEFAULT_TIME_CONTROL.bank_ms,
    warmup_ms: WarmupMsOption = DEFAULT_TIME_CONTROL.warmup_ms,
    clock: ClockOption = None,
    logs: Annotated[
        Path | None,
        typer.Option(
            file_okay=False,
            help="Keep each bot's output in this folder (with --concurrency, a folder per "
            "worker process in it).",
        ),
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
    """Play matches between two bots over the protocol: each result, then the score of A
    vs B, the Elo difference with its 95 % interval and the likelihood of superiority.

    Matches come in duplicate pairs: matches 2k-1 and 2k use the same deals with the seats
    swapped, so neither bot is favoured by the cards; the Elo and the LOS are over those
    pairs.
    """
    options = rules.options()
    plan = sandbox_from_flag(sandbox, exit_code=EXIT_UNREADABLE)
    spec_a, spec_b = resolve_two_bots(
        (bot_a, bot_b), ("-a", "-b"), sandbox=plan, warmup_ms=warmup_ms, exit_code=EXIT_UNREADABLE
    )
    if keep_alive:
        spec_a, spec_b = replace(spec_a, keep_alive=True), replace(spec_b, keep_alive=True)
    remote = listener_from_flags(
        listen, key_file, needed=spec_a.is_remote or spec_b.is_remote, exit_code=EXIT_UNREADABLE
    )
    names = (spec_a.name, spec_b.name)
    control = time_control_from_flags(
        TimeControl(decision_ms=decision_ms, bank_ms=bank_ms, warmup_ms=warmup_ms, clock=clock),
        exit_code=EXIT_UNREADABLE,
    )
    try:
        duel = Duel(
            (spec_a, spec_b),
            seed,
            options,
            control,
            sandbox=plan,
            logs=logs,
            remote=remote,
            concurrency=concurrency,
        )
    except TournamentError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    typer.echo(
        f"{names[0]} vs {names[1]}: {plural(matches, 'match')}, seed {seed}"
        + (f", {concurrency} at once" if concurrency > 1 else "")
    )
    tally = Tally(names)
    lines: list[str] = []
    try:
        with MatchPlayer(duel) as player:
            if player.remote_endpoint is not None and remote is not None:
                typer.echo(
                    f"listening for remote bots on {player.remote_endpoint}, "
                    f"referee public key {remote.public_key}"
                )
            for played in player.play(range(1, matches + 1)):
                typer.echo(_describe(played))
                lines.extend(played.record)
                tally.add(played)
    except TournamentError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    typer.echo("")
    for name in names:
        typer.echo(
            f"{name}: {tally.wins[name]} of {matches} matches won, {tally.points[name]} game "
            f"points, faults: {tally.fault_text(name)}"
        )
    score = tally.score()
    typer.echo(score.score_text())
    typer.echo(score.elo_text())
    if record is not None:
        write_record_or_exit(record, lines, EXIT_UNREADABLE)


def _describe(played: Played) -> str:
    players = played.players
    if played.winner is None:
        reasons = "; ".join(explain_fault(fault) for fault in played.faults)
        return f"match {played.number}: void, both bots failed before the first game: {reasons}"
    winner, loser = played.winner, 1 - played.winner
    text = (
        f"match {played.number}: {players[winner]} beat {players[loser]} by "
        f"{played.termination}, {played.scores[winner]}-{played.scores[loser]} after "
        f"{plural(played.games, 'game')}"
    )
    if played.forfeit is not None:
        text += f" (forfeit: {explain_fault(played.forfeit)})"
    return text
