"""Replay pages: one self-contained HTML page that steps through the matches of a record.

The page shows both hands, the key card, every exchange with its cards (the record has
them), the bids, each trick with its winner, the scores, the faults and the decision times,
and steps by action, trick and game with buttons and keys. Its data is built here with the
rules engine, which replays the record's deals and actions (so the hands at every step are
the engine's, never the page's own arithmetic); the page's inline script only draws it.

Everything in a record may come from a stranger (bot names, fault details, a bot's output):
the data is embedded as JSON with ``<``, ``>`` and ``&`` escaped, and the script puts text
on the page only as text, never as markup. The page's Content-Security-Policy forbids every
fetch and every script but its own (by hash), so it needs no network and could not use it.

A record the engine disagrees with is drawn up to the disagreement, which the page names;
``aegis-ref verify`` is the check. A void match (both bots failed before the first game) is
drawn as void, with its faults.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from referee.atomic import write_atomically
from referee.records import VOID_TERMINATION
from referee.rules.actions import Bid, Exchange, Play, Stop, action_from_json
from referee.rules.cards import Card, parse_card, sort_cards
from referee.rules.errors import AegisError
from referee.rules.game import GameState, Phase, Seat, apply, killers
from referee.rules.match import MatchState, finish_game, new_match, start_game
from referee.rules.options import parse_rules_options
from tournaments.report.assets import asset_text, inline_hash

__all__ = [
    "REPLAY_PAGE_VERSION",
    "RecordReadError",
    "read_record_lines",
    "record_source",
    "render_replay_page",
    "replay_data",
    "replay_page_policy",
    "write_page",
    "write_replay_page",
]

#: The version of the page and its data; a page of another version is written again.
REPLAY_PAGE_VERSION = 1

_SEATS = (Seat.FIRST, Seat.SECOND)
#: What a malformed record raises while it is read: each becomes a note on the page.
_MALFORMED = (AegisError, KeyError, TypeError, ValueError, IndexError, AttributeError)


class RecordReadError(ValueError):
    """A record file that is not JSON Lines: the message names the file and the line."""


def read_record_lines(path: Path) -> list[dict[str, Any]]:
    """The lines of a record file, parsed; blank lines skipped.

    Raises ``OSError`` if the file cannot be read and :class:`RecordReadError` for a line
    that is not a JSON object.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RecordReadError(f"{path}: not UTF-8 text (byte {error.start + 1})") from None
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as error:
            raise RecordReadError(f"{path}:{number}: not JSON: {error.msg}") from None
        except (ValueError, RecursionError) as error:  # an integer of thousands of digits
            raise RecordReadError(f"{path}:{number}: not JSON: {error}") from None
        if not isinstance(line, dict):
            raise RecordReadError(f"{path}:{number}: a record line must be a JSON object")
        lines.append(line)
    return lines


# ---------------------------------------------------------------------------------------------
# The data: the record replayed by the engine


def _codes(cards: Iterable[Card]) -> list[str]:
    return [card.code for card in cards]


def _hands(state: GameState) -> list[list[str]]:
    return [_codes(sort_cards(hand)) for hand in state.hands]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _milliseconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _show(value: object) -> str:
    """A bad value, shortened, for a message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(error: BaseException) -> str:
    if isinstance(error, KeyError):
        return f"missing field {error}"
    return str(error) or type(error).__name__


def _exchange_round(state: GameState) -> int:
    """The exchange round in progress (or about to open): the master opens each round and
    the slave answers in it."""
    rounds = state.exchange_rounds
    return len(rounds) if rounds and rounds[-1].slave_count is None else len(rounds) + 1


def _phase(state: GameState) -> str:
    """Where the game stands after an action, for people."""
    if state.result is not None:
        return "game over"
    if state.phase is Phase.EXCHANGE:
        return f"exchange, round {_exchange_round(state)}"
    if state.phase is Phase.BIDDING:
        return "bidding"
    return f"trick {len(state.tricks) + 1}"


def _step(
    before: GameState, state: GameState, seat: Seat, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """One action and the game after it."""
    action = state.history[-1].action
    step: dict[str, Any] = {"seat": int(seat), "action": "pass"}
    if isinstance(action, Exchange):
        step.update(action="exchange", cards=_codes(action.cards))
        step["drawn"] = _codes(state.history[-1].drawn)
    elif isinstance(action, Stop):
        step["action"] = "stop"
    elif isinstance(action, Bid):
        step.update(action="bid", tricks=action.tricks)
    elif isinstance(action, Play):
        step.update(action="play", card=action.card.code)
    if isinstance(action, Exchange | Stop):
        step["round"] = _exchange_round(before)
    # The wall time of the decision and, on the CPU clock, the CPU time it was charged.
    for key in ("ms", "cpu_ms"):
        milliseconds = _milliseconds(entry.get(key))
        if milliseconds is not None:
            step[key] = milliseconds
    step["hands"] = _hands(state)
    step["won"] = list(state.tricks_won)
    step["stock"] = len(state.deck) - state.stock_position
    step["phase"] = _phase(state)
    if len(state.tricks) > len(before.tricks):
        trick = state.tricks[-1]
        step["table"] = [
            [int(trick.leader), trick.lead.code],
            [int(trick.leader.other), trick.follow.code],
        ]
        step["trick"] = len(state.tricks)
        step["winner"] = int(trick.winner)
    elif state.lead is not None:
        step["table"] = [[int(state.leader), state.lead.code]]
    else:
        step["table"] = []
    step["bids"] = [state.master_bid, state.slave_bid]
    return step


def _game(line: Mapping[str, Any], match: MatchState) -> tuple[dict[str, Any], MatchState]:
    """A game line replayed: the deal, every step, the tricks and the result."""
    deck = line["deck"]
    if not isinstance(deck, list):
        raise TypeError(f"'deck' must be a list of cards, got {type(deck).__name__}")
    state = start_game(match, [parse_card(code) for code in deck])
    key = state.key_card
    game: dict[str, Any] = {
        "number": state.game_number,
        "master": int(state.master),
        "scores_before": list(state.scores_before),
        "key": key.code,
        "killers": _codes(killers(key)),
        "deal": _hands(state),
        "stock": len(state.deck) - state.stock_position,
        "steps": [],
        "tricks": [],
        "finished": False,
        "result": None,
        "problem": None,
    }
    actions = line["actions"]
    if not isinstance(actions, list):
        raise TypeError(f"'actions' must be a list, got {type(actions).__name__}")
    for index, entry in enumerate(actions, 1):
        try:
            if not isinstance(entry, dict):
                raise TypeError(f"an action must be an object, got {_show(entry)}")
            number = _int(entry.get("seat"))
            if number not in (0, 1):
                raise ValueError(f"'seat' must be 0 or 1, got {_show(entry.get('seat'))}")
            seat = _SEATS[number]
            before = state
            state = apply(state, seat, action_from_json(entry))
        except _MALFORMED as error:
            game["problem"] = f"action {index}: {_problem(error)}"
            return game, match
        step = _step(before, state, seat, entry)
        game["steps"].append(step)
        if "trick" in step:
            game["tricks"].append(
                {
                    "leader": step["table"][0][0],
                    "cards": [step["table"][0][1], step["table"][1][1]],
                    "winner": step["winner"],
                    "position": index,
                }
            )
    result = state.result
    if result is not None:
        game["finished"] = True
        game["result"] = {
            "attacker": int(result.attacker),
            "bid": result.bid,
            "master_bid": result.master_bid,
            "slave_bid": state.slave_bid,
            "tricks": list(result.tricks),
            "winner": int(result.winner),
            "made": result.attacker_won,
            "points": list(result.points),
            "bonuses": [
                name
                for name, given in (
                    ("promise", result.promise),
                    ("conquest", result.conquest),
                    ("save", result.save),
                )
                if given
            ],
            "scores_after": [
                state.scores_before[0] + result.points[0],
                state.scores_before[1] + result.points[1],
            ],
        }
        match = finish_game(match, state)
    return game, match


def _fault(entry: object, players: Sequence[str], forfeit: bool) -> dict[str, Any] | None:
    if not isinstance(entry, dict):
        return None
    seat = _int(entry.get("seat"))
    seat = seat if seat in (0, 1) else None
    tail = entry.get("stderr_tail")
    return {
        "seat": seat,
        "bot": _text(entry.get("bot")) or (players[seat] if seat is not None else ""),
        "fault": _text(entry.get("fault")) or "fault",
        "detail": _text(entry.get("detail")),
        "game": _int(entry.get("game")),
        "decision": _int(entry.get("decision")),
        "tail": [line for line in tail if isinstance(line, str)] if isinstance(tail, list) else [],
        "forfeit": forfeit,
    }


def _times(games: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each seat's decisions with a time, and their mean and slowest, in ms of wall time
    and (decisions on the CPU clock) of CPU time charged."""
    times: list[list[float]] = [[], []]
    charges: list[list[float]] = [[], []]
    for game in games:
        for step in game["steps"]:
            if "ms" in step:
                times[step["seat"]].append(step["ms"])
            if "cpu_ms" in step:
                charges[step["seat"]].append(step["cpu_ms"])
    return [
        {
            "decisions": len(seat),
            "mean": sum(seat) / len(seat) if seat else None,
            "max": max(seat) if seat else None,
            "cpu_mean": sum(charged) / len(charged) if charged else None,
            "cpu_max": max(charged) if charged else None,
        }
        for seat, charged in zip(times, charges, strict=True)
    ]


def _match(
    start: Mapping[str, Any],
    games: Sequence[Mapping[str, Any]],
    end: Mapping[str, Any] | None,
    only_game: int | None,
) -> dict[str, Any]:
    """One match replayed; what cannot be replayed is named in ``problem``."""
    players = start.get("players")
    if not (
        isinstance(players, list)
        and len(players) == 2
        and all(isinstance(name, str) for name in players)
    ):
        players = ["seat 0", "seat 1"]
    rules = start.get("rules")
    draw = start.get("first_draw")
    data: dict[str, Any] = {
        "number": _int(start.get("match")),
        "players": list(players),
        # As text: a JavaScript number cannot hold every 64-bit seed.
        "rules": {str(name): str(value) for name, value in rules.items() if _int(value) is not None}
        if isinstance(rules, dict)
        else {},
        "seed": None if _int(start.get("seed")) is None else str(start.get("seed")),
        "draw": [code for code in draw if isinstance(code, str)][:2]
        if isinstance(draw, list)
        else [],
        "first_master": None,
        "games": [],
        "end": None,
        "void": False,
        "faults": [],
        "problem": None,
    }
    replayed: list[dict[str, Any]] = []
    try:
        if not isinstance(draw, list) or len(draw) != 2:
            raise ValueError(f"'first_draw' must be two cards, got {_show(draw)}")
        match = new_match(parse_rules_options(rules), (parse_card(draw[0]), parse_card(draw[1])))
        data["first_master"] = int(match.first_master)
        for line in games:
            number = _int(line.get("game"))
            try:
                game, match = _game(line, match)
            except _MALFORMED as error:
                data["problem"] = f"game {number}: {_problem(error)}"
                break
            replayed.append(game)
            if game["problem"] is not None:
                break
    except _MALFORMED as error:
        data["problem"] = f"match_start: {_problem(error)}"
    data["games"] = [game for game in replayed if only_game is None or game["number"] == only_game]
    data["times"] = _times(replayed)
    if end is None:
        data["problem"] = data["problem"] or "the record ends before this match's match_end line"
        return data
    termination = _text(end.get("termination"))
    winner = _int(end.get("winner"))
    scores = end.get("scores")
    data["end"] = {
        "termination": termination,
        "winner": winner if winner in (0, 1) else None,
        "scores": [_int(score) or 0 for score in scores][:2]
        if isinstance(scores, list) and len(scores) == 2
        else [0, 0],
        "games": _int(end.get("games")),
    }
    data["void"] = termination == VOID_TERMINATION
    faults = [_fault(end.get("forfeit"), players, True)] if "forfeit" in end else []
    listed = end.get("faults")
    if isinstance(listed, list):
        faults += [_fault(entry, players, False) for entry in listed]
    data["faults"] = [fault for fault in faults if fault is not None]
    return data


_Line = Mapping[str, Any]


def _matches(lines: Iterable[_Line]) -> Iterator[tuple[_Line, list[_Line], _Line | None]]:
    """Each match's ``match_start`` line, game lines and ``match_end`` line (None if the
    record ends first); lines outside a match are skipped."""
    start: _Line | None = None
    games: list[_Line] = []
    for line in lines:
        kind = line.get("type")
        if kind == "match_start":
            if start is not None:
                yield start, games, None
            start, games = line, []
        elif start is None:
            continue
        elif kind == "game":
            games.append(line)
        elif kind == "match_end":
            yield start, games, line
            start, games = None, []
    if start is not None:
        yield start, games, None


def replay_data(
    lines: Iterable[Mapping[str, Any]], *, match: int | None = None, game: int | None = None
) -> list[dict[str, Any]]:
    """Every match of a record (or only ``match``, and of its games only ``game``) as the
    page draws it: players, rules, the draw, each game's deal and steps, the end, faults
    and decision times. Never raises for a malformed record: it is replayed as far as it
    goes and the rest named in ``problem``."""
    return [
        _match(start, games, end, game)
        for start, games, end in _matches(lines)
        if match is None or start.get("match") == match
    ]


# ---------------------------------------------------------------------------------------------
# The page


def _json_for_script(data: object) -> str:
    """JSON that can sit inside a ``<script>`` element: no ``<``, ``>`` or ``&`` to end it,
    and no line separators that old parsers take for line ends."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for character, escape in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(character, escape)
    return text


def replay_page_policy() -> str:
    """The Content-Security-Policy of every replay page: its own script and style alone (by
    hash), no fetch, no image; a server sends it as a header too."""
    return (
        "default-src 'none'; "
        f"script-src {inline_hash(_SCRIPT)}; style-src {inline_hash(_CSS)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )


def render_replay_page(
    matches: Sequence[Mapping[str, Any]],
    *,
    title: str,
    source: str = "",
    links: Sequence[tuple[str, str]] = (),
) -> str:
    """The page of :func:`replay_data`'s matches. ``source`` is written in a ``<meta>``
    element (what the page was made from, to know when to make it again); ``links`` are
    (label, relative href) pairs shown in the header, such as the report and the record."""
    data = {"title": title, "matches": list(matches)}
    policy = replay_page_policy()
    nav = "".join(
        f'<a href="{html.escape(href)}">{html.escape(label)}</a>' for label, href in links
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">\n'
        f'<meta name="aegis-replay" content="{html.escape(_source_mark(source))}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1 id="title">{html.escape(title)}</h1><nav id="links">{nav}</nav>'
        '<label id="match-picker" hidden>Match <select id="match-select"></select></label>'
        "</header>\n"
        '<noscript><p class="notice">This page draws the record with its own script, '
        "which is off: <code>aegis-ref replay FILE</code> prints it as text.</p></noscript>\n"
        f"{_BODY}\n"
        f'<script type="application/json" id="replay-data">{_json_for_script(data)}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def _source_mark(source: str) -> str:
    return f"{REPLAY_PAGE_VERSION} {source}".strip()


def record_source(record: Path) -> str:
    """What tells a record file's contents apart without reading it: its size, its
    modification time and its path. Raises ``OSError`` if the file cannot be read."""
    status = record.stat()
    return f"{status.st_size}:{status.st_mtime_ns}:{record.resolve()}"


def _is_current(page: Path, mark: str) -> bool:
    """True if ``page`` exists and was made from the same source by this version."""
    try:
        with page.open("r", encoding="utf-8", errors="replace") as stream:
            head = stream.read(8192)
    except OSError:
        return False
    return f'<meta name="aegis-replay" content="{html.escape(mark)}">' in head


def write_page(destination: Path, text: str) -> None:
    """Write a page atomically: a temporary file beside it, then a rename. Raises
    ``OSError``."""
    write_atomically(destination, lambda stream: stream.write(text))


def write_replay_page(
    record: Path,
    destination: Path,
    *,
    title: str | None = None,
    links: Sequence[tuple[str, str]] = (),
    reuse: bool = False,
) -> bool:
    """Write the replay page of every match of a record file to ``destination``; with
    ``reuse``, keep a page this version already made from the same record (the same path,
    size and modification time). Return True if the page was written.

    Raises ``OSError`` if the record cannot be read or the page written, and
    :class:`RecordReadError` if the record is not JSON Lines.
    """
    # The links are part of what the page was made from: a report written elsewhere needs
    # pages with other links.
    source = f"{record_source(record)} {json.dumps(list(links), ensure_ascii=False)}"
    if reuse and _is_current(destination, _source_mark(source)):
        return False
    matches = replay_data(read_record_lines(record))
    title = title or f"Replay: {record.name}"
    write_page(destination, render_replay_page(matches, title=title, source=source, links=links))
    return True


_BODY = asset_text("replay.html")

_CSS = asset_text("replay.css")

#: The page's behaviour: it draws the embedded data, only ever as text.
_SCRIPT = asset_text("replay.js")
