"""The ``replay`` command: readable traces of game records, for people debugging bots, or
pages that step through them in a browser (:mod:`tournaments.report.replay_page`)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from referee.record_files import find_records
from referee.records import VOID_TERMINATION
from referee.rules.cards import Suit, parse_card, sort_cards
from tournaments.cli.common import invoked_as
from tournaments.cli.exit_codes import EXIT_NOTHING_MATCHES, EXIT_UNREADABLE
from tournaments.cli.options import ColorOption, RecordPathsArgument, console_from_flag
from tournaments.report.replay_page import (
    RecordReadError,
    read_record_lines,
    record_source,
    render_replay_page,
    replay_data,
    write_page,
)

__all__ = ["app", "card_text", "render_records", "replay"]

app = typer.Typer(no_args_is_help=True)

_SUIT_BY_LETTER = {suit.letter: suit for suit in Suit}
_STYLES = {
    Suit.SPADES: "bold",
    Suit.CLUBS: "bold",
    Suit.HEARTS: "bold red",
    Suit.DIAMONDS: "bold red",
}


def card_text(code: str) -> Text:
    """A card with its suit symbol, red for hearts and diamonds."""
    card = parse_card(code)
    return Text(card.symbol, style=_STYLES[card.suit])


def _cards(codes: Iterable[str]) -> Text:
    cards = sort_cards(parse_card(code) for code in codes)
    return Text(" ").join(card_text(card.code) for card in cards) if cards else Text("—")


def _seat(players: list[str], seat: int) -> str:
    return f"{players[seat]} (seat {seat})"


def render_records(
    lines: Iterable[Mapping[str, Any]], *, match: int | None = None, game: int | None = None
) -> Iterator[Text]:
    """Yield a trace, line by line, of the chosen matches and games of a record."""
    players = ["seat 0", "seat 1"]
    for line in lines:
        if match is not None and line.get("match") != match:
            continue
        kind = line.get("type")
        if kind == "match_start":
            players = list(line["players"])
            if game is None:
                yield from _match_start(line, players)
        elif kind == "game" and (game is None or line.get("game") == game):
            yield from _game(line, players)
        elif kind == "match_end" and game is None:
            yield from _match_end(line, players)


def _match_start(line: Mapping[str, Any], players: list[str]) -> Iterator[Text]:
    yield Text(f"Match {line['match']}: {players[0]} vs {players[1]}", style="bold underline")
    rules = ", ".join(f"{name} {value}" for name, value in line["rules"].items())
    yield Text(f"  rules: {rules}; seed {line.get('seed')}")
    draw = Text("  first-master draw: ")
    for seat, code in enumerate(line["first_draw"]):
        draw.append(f"{players[seat]} ")
        draw.append_text(card_text(code))
        draw.append("  ")
    draw.append(f"→ master: {_seat(players, line['first_master'])}")
    yield draw


def _game(line: Mapping[str, Any], players: list[str]) -> Iterator[Text]:
    deck = line["deck"]
    master = line["master"]
    slave = 1 - master
    key = parse_card(deck[10])
    yield Text("")
    yield Text(
        f" Game {line['game']}  (scores {line['scores_before'][0]}-{line['scores_before'][1]})",
        style="bold reverse",
    )
    header = Text("  key card ")
    header.append_text(card_text(key.code))
    header.append(f"   trump {key.suit.symbol}   killers ")
    killers = [f"{code}{letter}" for code in [deck[10][:-1]] for letter in "SHDC"]
    header.append_text(_cards(code for code in killers if code != key.code))
    yield header
    hands = {master: deck[0:5], slave: deck[5:10]}
    for seat in (master, slave):
        role = "master" if seat == master else "slave "
        row = Text(f"  {role} {_seat(players, seat)}: ")
        row.append_text(_cards(hands[seat]))
        yield row
    exchange_round = 0
    for action in line["actions"]:
        seat = action["seat"]
        kind = action["action"]
        timing = f"  [{action['ms']:.1f} ms]" if "ms" in action else ""
        if kind in ("exchange", "stop"):
            if seat == master:
                exchange_round += 1
            row = Text(f"  round {exchange_round}: {players[seat]} ")
            if kind == "stop":
                row.append("stops")
            elif not action["cards"]:
                row.append("keeps all cards")
            else:
                row.append("discards ")
                row.append_text(_cards(action["cards"]))
                row.append(", draws ")
                row.append_text(_cards(action["drawn"]))
            row.append(timing, style="dim")
            yield row
        elif kind in ("bid", "pass"):
            said = f"bids {action['tricks']}" if kind == "bid" else "passes"
            yield Text(f"  {players[seat]} {said}") + Text(timing, style="dim")
    for number, trick in enumerate(line["tricks"], start=1):
        row = Text(f"  trick {number}: {players[trick['leader']]} leads ")
        row.append_text(card_text(trick["cards"][0]))
        row.append(", ")
        row.append_text(card_text(trick["cards"][1]))
        row.append(f" → {players[trick['winner']]}", style="bold")
        yield row
    if line.get("finished"):
        attacker = line["attacker"]
        verdict = "makes" if line["tricks_won"][attacker] >= line["bid"] else "fails"
        bonuses = [name for name, given in line["bonuses"].items() if given]
        yield Text(
            f"  {players[attacker]} attacks with {line['bid']} and {verdict} it "
            f"({line['tricks_won'][0]}-{line['tricks_won'][1]} tricks); points "
            f"{line['points'][0]}-{line['points'][1]}"
            + (f" ({', '.join(bonuses)})" if bonuses else "")
            + f"; scores {line['scores_after'][0]}-{line['scores_after'][1]}"
        )
    else:
        yield Text("  game cut short by a forfeit", style="bold red")


def _match_end(line: Mapping[str, Any], players: list[str]) -> Iterator[Text]:
    yield Text("")
    if line["termination"] == VOID_TERMINATION:
        yield Text("Void: both bots failed before the first game; no winner", style="bold red")
        for fault in line["faults"]:
            yield from _fault("fault", fault, players)
        yield Text("")
        return
    text = Text(
        f"Winner: {_seat(players, line['winner'])} by {line['termination']}, "
        f"scores {line['scores'][0]}-{line['scores'][1]} after {line['games']} games",
        style="bold green",
    )
    yield text
    forfeit = line.get("forfeit")
    if forfeit:
        yield from _fault("forfeit", forfeit, players)
    yield Text("")


def _fault(label: str, fault: Mapping[str, Any], players: list[str]) -> Iterator[Text]:
    yield Text(
        f"  {label}: {_seat(players, fault['seat'])} {fault['fault']}: {fault.get('detail', '')}",
        style="red",
    )
    for tail in fault.get("stderr_tail") or []:
        yield Text(f"    | {tail}", style="dim")


@app.command()
def replay(
    paths: RecordPathsArgument,
    match_number: Annotated[
        int | None, typer.Option("--match", min=1, help="Only this match.")
    ] = None,
    game: Annotated[int | None, typer.Option(min=1, help="Only this game.")] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write a page that steps through the record in a browser instead: this file "
            "for one record; for several, a folder with a page per record.",
        ),
    ] = None,
    color: ColorOption = None,
) -> None:
    """Print a readable trace of records: hands, exchanges, bids, tricks and points; with
    --html, write self-contained pages that step through them by action, trick and game.

    A folder stands for every record (*.jsonl) in it, at any depth.
    """
    try:
        files = find_records(paths)
    except FileNotFoundError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    if html is not None:
        _write_pages(files, html, match_number, game)
        return
    console = console_from_flag(color, highlight=False, soft_wrap=True)
    shown = 0
    failed = False
    for file in files:
        lines = _read(file)
        if lines is None:
            failed = True
            continue
        if len(files) > 1:
            console.print(Text(f"── {file} ──", style="bold"))
        try:
            for row in render_records(lines, match=match_number, game=game):
                console.print(row)
                shown += 1
        except (KeyError, TypeError, ValueError, IndexError) as error:
            typer.echo(
                f"{file}: malformed record ({type(error).__name__}: {error}); "
                f"run '{invoked_as()} verify {shlex.quote(str(file))}' to find the line",
                err=True,
            )
            failed = True
    if failed:
        raise typer.Exit(EXIT_UNREADABLE)
    if not shown:
        typer.echo("nothing matches: check --match and --game", err=True)
        raise typer.Exit(EXIT_NOTHING_MATCHES)


def _read(file: Path) -> list[dict[str, Any]] | None:
    """A record's lines, or None once the reason it cannot be read is printed."""
    try:
        return read_record_lines(file)
    except OSError as error:
        typer.echo(f"{file}: cannot read the record: {error}", err=True)
    except RecordReadError as error:
        typer.echo(str(error), err=True)
    return None


def _write_pages(files: Sequence[Path], out: Path, match: int | None, game: int | None) -> None:
    """``--html OUT``: one page per record, OUT itself for a single record (unless OUT is a
    folder), else OUT/<record name>.html."""
    if len(files) == 1 and not out.is_dir():
        targets = [(files[0], out)]
        folder = out.parent
    else:
        folder = out
        targets = []
        taken: dict[Path, Path] = {}
        for file in files:
            page = out / f"{file.stem}.html"
            if page in taken:
                typer.echo(
                    f"error: {taken[page]} and {file} would both be replayed in {page}: "
                    "replay them into different folders",
                    err=True,
                )
                raise typer.Exit(EXIT_UNREADABLE)
            taken[page] = file
            targets.append((file, page))

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        typer.echo(f"cannot make the folder {folder}: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    written = 0
    failed = empty = False
    for file, page in targets:
        lines = _read(file)
        if lines is None:
            failed = True
            continue
        matches = replay_data(lines, match=match, game=game)
        if not matches or (game is not None and not any(m["games"] for m in matches)):
            typer.echo(f"{file}: nothing matches: check --match and --game", err=True)
            empty = True
            continue
        try:
            text = render_replay_page(
                matches, title=f"Replay: {file.name}", source=record_source(file)
            )
            write_page(page, text)
        except OSError as error:
            typer.echo(f"cannot write the page {page}: {error.strerror or error}", err=True)
            failed = True
            continue
        written += 1
        if len(targets) == 1:
            typer.echo(f"replay: {page}")
    if len(targets) > 1:
        typer.echo(f"replay: {written} page{'s' if written != 1 else ''} in {out}")
    if failed:
        raise typer.Exit(EXIT_UNREADABLE)
    if empty and not written:
        raise typer.Exit(EXIT_NOTHING_MATCHES)
