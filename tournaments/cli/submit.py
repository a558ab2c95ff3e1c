"""The ``submit`` and ``submissions`` commands: send a bot to a league, list what it holds.

``submit`` exit codes: 0 accepted (or queued, with ``--no-wait``); 1 rejected, with the
reasons; 2 the league cannot be used (no config, no sandbox) or the arguments are wrong.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from referee.conformance import ItemResult
from tournaments.cli.check_bot import print_item
from tournaments.cli.exit_codes import EXIT_REJECTED, EXIT_USAGE
from tournaments.config.tournament import TournamentSetup
from tournaments.errors import SubmissionRejectedError, TournamentError
from tournaments.league.runner import describe_verdict
from tournaments.league.submissions import State, Submission, SubmissionStore, load_league
from tournaments.web.client import TOKEN_VARIABLE, get_status, read_token, upload

__all__ = ["app", "submissions", "submit"]

app = typer.Typer(no_args_is_help=True)

_WAIT_SECONDS = 0.2
#: Seconds between two looks at a submission's state on a server.
_REMOTE_WAIT_SECONDS = 1.0

LeagueOption = Annotated[
    Path,
    typer.Option(
        "--league",
        help="The league: its folder (holding league.yaml) or its config file.",
        show_default=False,
    ),
]


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code)


def _print_item(result: ItemResult) -> None:
    print_item(result, indent="  ")


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count / 1024:.1f} KiB"


def _wait_for_league(store: SubmissionStore, submission: Submission) -> Submission | None:
    """Wait while a league builds and checks it; None if no one is at it any more (the
    league stopped), so that this process takes over."""
    seen = submission.state
    while True:
        current = store.reload(submission)
        if current.state.is_final:
            return current
        if current.state is not seen:
            typer.echo(f"  {current.state.value}")
            seen = current.state
        if store.league_running() is None and store.reload(submission).state is seen:
            return None
        time.sleep(_WAIT_SECONDS)


@app.command()
def submit(
    path: Annotated[
        Path,
        typer.Argument(
            help="The bot: its folder, with aegis-bot.toml at the root, or a .tar.gz, .tgz, "
            ".tar or .zip of it.",
            show_default=False,
        ),
    ],
    league: Annotated[
        Path | None,
        typer.Option(
            "--league",
            help="The league on this machine: its folder (holding league.yaml) or its config.",
            show_default=False,
        ),
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="Store it and return: the league builds and checks it between matches.",
        ),
    ] = False,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            metavar="URL",
            help="Submit over the network to the league served at URL (aegis-ref serve), "
            f"with your token from --token-file or {TOKEN_VARIABLE}.",
            show_default=False,
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="The file holding your token (with --server)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Try it here as the league would (its checks, its build, check-bot's "
            "checklist, with the league's settings) and store nothing in the league.",
        ),
    ] = False,
) -> None:
    """Submit a bot to a league: store it, build it in a sandbox (no network), take it
    through check-bot's checklist, and accept or reject it with the reasons.

    A submission never changes: a new version (in aegis-bot.toml) is a new submission of
    the same name, and the latest accepted version of each name plays. While the league
    runs (aegis-ref league), it builds and checks the submission between matches, and this
    command waits for its verdict. With --dry-run, the same happens in a scratch store
    (removed after) and the league keeps nothing: a way to try a build before submitting.
    """
    if (league is None) == (server is None):
        raise _fail("give --league LEAGUE (on this machine) or --server URL (over the network)")
    if server is not None:
        if dry_run:
            raise _fail("--dry-run tries a bot on this machine: give it --league, not --server")
        submit_over_network(path, server, token_file, wait=not no_wait)
        return
    assert league is not None
    try:
        setup = load_league(league)
    except TournamentError as error:
        raise _fail(str(error)) from None
    if dry_run:
        if no_wait:
            raise _fail("--dry-run and --no-wait: a dry run builds and checks at once")
        _dry_run(path, setup, league)
        return
    store = SubmissionStore(setup)
    try:
        submission = store.receive(path)
    except SubmissionRejectedError as error:
        lines = [f"Rejected {path}:", *(f"  - {reason}" for reason in error.reasons)]
        raise _fail("\n".join(lines), EXIT_REJECTED) from None
    typer.echo(
        f"Received {submission.name} {submission.version} ({submission.files} files, "
        f"{_size(submission.bytes)}) as {submission.folder}"
    )
    running = store.league_running()
    if no_wait:
        who = f"the league running here (pid {running})" if running else "the league, when it runs,"
        typer.echo(f"Queued: {who} builds and checks it; see aegis-ref submissions {league}")
        return
    final: Submission | None = None
    if running:
        typer.echo(f"The league running here (pid {running}) builds and checks it; waiting")
        final = _wait_for_league(store, submission)
    while final is None:
        try:
            final = store.process(submission, say=typer.echo, on_item=_print_item)
        except TournamentError as error:
            raise _fail(f"{error}\nIt stays queued for the league.") from None
        if final is None:  # another process is at it
            final = _wait_for_league(store, submission)
    typer.echo(describe_verdict(final))
    if final.state is State.REJECTED:
        typer.echo("Fix it, raise its version in aegis-bot.toml and submit it again.")
        raise typer.Exit(EXIT_REJECTED)
    current = store.current().get(final.name)
    if current is not None and current.player == final.player:
        typer.echo(f"{final.player} plays in the league from its next round.")
    else:
        shown = current.player if current is not None else "another version"
        typer.echo(f"{shown} was submitted after it: that one plays.")


def submit_over_network(path: Path, server: str, token_file: Path | None, *, wait: bool) -> None:
    """Upload the bot to the league served at ``server``, then (with ``wait``) follow it
    until it is accepted or rejected, and print its verdict, check and build's last lines."""
    try:
        token = read_token(token_file)
        answer = upload(server, token, path)
    except TournamentError as error:
        raise _fail(str(error)) from None
    if answer.status != 201:
        reasons = answer.document.get("reasons") or [answer.document.get("error", "refused")]
        lines = [f"Refused {path} ({answer.status}):", *(f"  - {reason}" for reason in reasons)]
        raise _fail("\n".join(lines), EXIT_REJECTED if answer.status == 422 else EXIT_USAGE)
    status = answer.document
    typer.echo(f"Received {status['name']} {status['version']} by {server}")
    if not wait:
        typer.echo(f"Queued: the league builds and checks it; its state: {status['status']}")
        return
    seen = status["state"]
    while status["state"] not in (State.ACCEPTED.value, State.REJECTED.value):
        time.sleep(_REMOTE_WAIT_SECONDS)
        try:
            answer = get_status(server, token, status["status"])
        except TournamentError as error:
            raise _fail(str(error)) from None
        if answer.status != 200:
            raise _fail(f"{status['status']}: {answer.status} {answer.document.get('error')}")
        status = answer.document
        if status["state"] != seen:
            seen = status["state"]
            typer.echo(f"  {seen}")
    title = f"{status['name']} {status['version']}"
    if status["state"] == State.ACCEPTED.value:
        typer.echo(f"Accepted {title}: {status.get('check_summary') or ''}".rstrip(": "))
        typer.echo(f"{status['player']} plays in the league from its next round.")
        return
    typer.echo(f"Rejected {title}:")
    for reason in status["reasons"]:
        typer.echo(f"  - {reason}")
    for line in status["build_tail"]:
        typer.echo(f"    | {line}")
    typer.echo("Fix it, raise its version in aegis-bot.toml and submit it again.")
    raise typer.Exit(EXIT_REJECTED)


def _dry_run(path: Path, setup: TournamentSetup, league: Path) -> None:
    """Receive, build and check ``path`` in a scratch copy of the league's store: removed
    after, unless the bot was rejected after its build (its build.log is there then)."""
    assert setup.submissions is not None
    real = SubmissionStore(setup)
    scratch = Path(tempfile.mkdtemp(prefix="aegis-ref-dry-run-"))
    keep = False
    try:
        settings = dataclasses.replace(setup.submissions, folder=scratch / "submissions")
        store = SubmissionStore(dataclasses.replace(setup, submissions=settings))
        try:
            submission = store.receive(path)
        except SubmissionRejectedError as error:
            lines = [f"Rejected {path}:", *(f"  - {reason}" for reason in error.reasons)]
            lines.append(f"(a dry run: nothing was stored in {league})")
            raise _fail("\n".join(lines), EXIT_REJECTED) from None
        typer.echo(
            f"Dry run of {submission.name} {submission.version} ({submission.files} files, "
            f"{_size(submission.bytes)}) with the settings of {league}; nothing is stored there"
        )
        if any(
            (known.name, known.version) == (submission.name, submission.version)
            for known in real.submissions()
        ):
            typer.echo(
                f"Note: {submission.name} {submission.version} is in the league already: "
                "submitting it needs a new version"
            )
        final = store.process(submission, say=typer.echo, on_item=_print_item)
        assert final is not None  # a scratch store: no other process is at it
        typer.echo(describe_verdict(final))
        if final.state is State.REJECTED:
            keep = final.build_log.exists()
            if keep:
                typer.echo(f"(a dry run: its scratch store stays in {scratch} until you remove it)")
            raise typer.Exit(EXIT_REJECTED)
        typer.echo(f"A dry run: submit it with aegis-ref submit {path} --league {league}")
    except TournamentError as error:
        raise _fail(str(error)) from None
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


class ListFormat(enum.StrEnum):
    """The forms of ``aegis-ref submissions``."""

    TABLE = "table"
    JSON = "json"


@app.command()
def submissions(
    league: Annotated[
        Path,
        typer.Argument(help="The league: its folder (holding league.yaml) or its config file."),
    ],
    format: Annotated[
        ListFormat, typer.Option("--format", "-f", help="Output form.")
    ] = ListFormat.TABLE,
) -> None:
    """List a league's submissions, oldest first: each one's state, which version of each
    bot plays, and why a rejected one was rejected."""
    try:
        setup = load_league(league)
    except TournamentError as error:
        raise _fail(str(error)) from None
    store = SubmissionStore(setup)
    found = store.submissions()
    for problem in store.problems:
        typer.echo(f"warning: {problem}", err=True)
    playing = {submission.player for submission in store.current().values()}
    if format is ListFormat.JSON:
        rows = [
            {
                "name": submission.name,
                "version": submission.version,
                "player": submission.player,
                "playing": submission.player in playing,
                "folder": str(submission.folder),
                **submission.to_json(),
            }
            for submission in found
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{setup.name}: {len(found)} submission(s) in {store.folder}")
    for column in ("bot", "version", "author", "language", "submitted", "state", "why"):
        table.add_column(column)
    for submission in found:
        state = submission.state.value
        if submission.state is State.ACCEPTED:
            state = "playing" if submission.player in playing else "accepted, replaced"
        why = submission.reasons[0] if submission.reasons else submission.check_summary or ""
        table.add_row(
            submission.name,
            submission.version,
            submission.manifest.author,
            submission.manifest.language,
            submission.submitted_at,
            state,
            why,
        )
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    console.print(table)
