"""The ``authors`` commands: the organiser makes the accounts of a league's authors, who
then submit over the network (``aegis-ref submit PATH --server URL``).

Exit codes: 0 done; 2 the league or the name cannot be used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tournaments.cli.exit_codes import EXIT_USAGE
from tournaments.cli.submit import LeagueOption
from tournaments.errors import TournamentError
from tournaments.league.accounts import DEFAULT_MAX_UPLOAD_MB, DEFAULT_PER_DAY, Authors
from tournaments.league.submissions import SubmissionStore, load_league

__all__ = ["add", "app", "list_authors"]

app = typer.Typer(no_args_is_help=True)
authors = typer.Typer(
    no_args_is_help=True,
    help="Make and list the accounts of a league's authors (submitting over the network).",
)
app.add_typer(authors, name="authors")


def _accounts(league: Path) -> Authors:
    try:
        setup = load_league(league)
    except TournamentError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    return Authors(SubmissionStore(setup).folder)


@authors.command()
def add(
    name: Annotated[str, typer.Argument(help="The author's name (letters, digits, _ and -).")],
    league: LeagueOption,
    days: Annotated[
        float | None, typer.Option(min=0.0, help="The token expires after this many days.")
    ] = None,
    per_day: Annotated[
        int, typer.Option(min=1, help="Submissions the author may make in 24 hours.")
    ] = DEFAULT_PER_DAY,
    max_upload_mb: Annotated[
        float, typer.Option(min=0.001, help="The largest upload the author may send, in MiB.")
    ] = DEFAULT_MAX_UPLOAD_MB,
    organiser: Annotated[
        bool,
        typer.Option(
            "--organiser",
            help="The organiser's account: it sees every submission, its build log and its "
            "check report, over the network.",
        ),
    ] = False,
) -> None:
    """Make an author (or give an author a new token, which ends the old one) and print the
    token, once: only its salted hash is kept. Give it to the author, who keeps it in a file
    or in AEGIS_TOKEN."""
    accounts = _accounts(league)
    try:
        token = accounts.add(
            name, days=days, per_day=per_day, max_upload_mb=max_upload_mb, organiser=organiser
        )
    except TournamentError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    typer.echo(token)
    typer.echo(
        f"The token of {name}: shown this once (kept in {accounts.path} as a salted hash).",
        err=True,
    )


@authors.command("list")
def list_authors(league: LeagueOption) -> None:
    """List a league's authors and their limits (never their tokens)."""
    accounts = _accounts(league)
    try:
        found = accounts.all()
    except TournamentError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    for author in found:
        expires = f", expires {author.expires_at}" if author.expires_at else ""
        expires += ", the organiser" if author.organiser else ""
        typer.echo(
            f"{author.name}: {author.per_day} per day, uploads up to "
            f"{author.max_upload_bytes / 2**20:g} MiB, since {author.created_at}{expires}"
        )
