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

import base64
import contextlib
import hashlib
import html
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from referee.records import VOID_TERMINATION
from referee.rules.actions import Bid, Exchange, Play, Stop, action_from_json
from referee.rules.cards import Card, parse_card, sort_cards
from referee.rules.errors import AegisError
from referee.rules.game import GameState, Phase, Seat, apply, killers
from referee.rules.match import MatchState, finish_game, new_match, start_game
from referee.rules.options import parse_rules_options

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
    milliseconds = _milliseconds(entry.get("ms"))
    if milliseconds is not None:
        step["ms"] = milliseconds
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
    """Each seat's decisions with a time, and their mean and slowest, in ms."""
    times: list[list[float]] = [[], []]
    for game in games:
        for step in game["steps"]:
            if "ms" in step:
                times[step["seat"]].append(step["ms"])
    return [
        {
            "decisions": len(seat),
            "mean": sum(seat) / len(seat) if seat else None,
            "max": max(seat) if seat else None,
        }
        for seat in times
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


def _hash(text: str) -> str:
    """The CSP source of an inline element's text: ``'sha256-…'``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def replay_page_policy() -> str:
    """The Content-Security-Policy of every replay page: its own script and style alone (by
    hash), no fetch, no image; a server sends it as a header too."""
    return (
        "default-src 'none'; "
        f"script-src {_hash(_SCRIPT)}; style-src {_hash(_CSS)}; "
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
    temporary = destination.with_name(f".{destination.name}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


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


_BODY = """<main id="replay">
<section id="match-info">
<h2 id="match-title"></h2>
<p id="match-meta" class="meta"></p>
<p id="outcome"></p>
<div id="problem" class="warning" hidden></div>
<table id="times" class="times"><thead><tr><th>seat</th><th>bot</th><th>decisions</th>
<th>mean ms</th><th>slowest ms</th></tr></thead><tbody></tbody></table>
<div id="faults" hidden><h3>Faults</h3><ol id="fault-list"></ol></div>
</section>
<section id="board" hidden>
<div id="game-bar"><span id="game-title"></span><span id="key"></span></div>
<div id="controls" role="toolbar" aria-label="Step through the match">
<button type="button" id="prev-game" title="Previous game (PageUp, p)">|&#x25C0; game</button>
<button type="button" id="prev-trick" title="Previous trick (&#x2191;)">&#x25C0;&#x25C0; trick
</button>
<button type="button" id="prev-action" title="Previous action (&#x2190;)">&#x25C0; action</button>
<button type="button" id="next-action" title="Next action (&#x2192;)">action &#x25B6;</button>
<button type="button" id="next-trick" title="Next trick (&#x2193;)">trick &#x25B6;&#x25B6;</button>
<button type="button" id="next-game" title="Next game (PageDown, n)">game &#x25B6;|</button>
<input type="range" id="scrub" min="0" max="0" value="0" aria-label="Position in the game">
<span id="position"></span>
</div>
<div id="table-area">
<div class="seat" id="seat-0"><div class="who"><span class="name"></span>
<span class="role"></span></div><div class="hand"></div><div class="facts"></div></div>
<div id="trick"><div id="trick-title"></div><div id="trick-cards"></div></div>
<div class="seat" id="seat-1"><div class="who"><span class="name"></span>
<span class="role"></span></div><div class="hand"></div><div class="facts"></div></div>
</div>
<p id="status"></p>
<div id="notice" hidden></div>
<div id="columns">
<div><h3>Actions</h3><ol id="actions"></ol></div>
<div><h3>Tricks</h3><table id="tricks"><thead><tr><th>#</th><th>led by</th><th>cards</th>
<th>winner</th></tr></thead><tbody></tbody></table><div id="result"></div></div>
</div>
</section>
<p id="keys" class="meta">Keys: &#x2190; &#x2192; action, &#x2191; &#x2193; trick, PageUp PageDown
(or p n) game, Home End start and end of the game; click an action to go to it. Trump cards
are shaded, killers outlined, cards just drawn marked yellow; what is still to come is
pale.</p>
</main>"""

_CSS = """
:root{color-scheme:light;--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;
--red:#c0392b;--mark:#fff3b0}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
color:var(--ink);margin:0 auto;max-width:1100px;padding:1em 2em 3em;line-height:1.4}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.2em;margin:.6em 0 .2em}
h3{font-size:1em;margin:.8em 0 .3em}
header{display:flex;flex-wrap:wrap;align-items:baseline;gap:.4em 1.2em}
nav a{margin-right:1em;color:#0969da}.meta{color:var(--muted);font-size:.92em;margin:.2em 0}
.warning,.notice{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;
padding:.4em .8em;margin:.5em 0}
#notice.fault{background:#ffebe9;border-color:#cf222e}#notice.over{background:#dafbe1;
border-color:#4ac26b}
table{border-collapse:collapse;font-size:.92em;font-variant-numeric:tabular-nums;margin:.4em 0}
th,td{border:1px solid var(--line);padding:.2em .5em;text-align:left}
thead th{background:var(--soft)}
td.num{text-align:right}
#game-bar{display:flex;flex-wrap:wrap;gap:.3em 1.5em;align-items:baseline;font-weight:600;
margin:.6em 0 .3em}#key{font-weight:400}
#controls{display:flex;flex-wrap:wrap;gap:.4em;align-items:center;margin:.4em 0}
button{font:inherit;padding:.25em .7em;border:1px solid var(--line);border-radius:6px;
background:var(--soft);cursor:pointer}button:disabled{opacity:.45;cursor:default}
#scrub{flex:1;min-width:120px}#position{font-variant-numeric:tabular-nums;color:var(--muted)}
#table-area{display:grid;grid-template-columns:1fr minmax(160px,auto) 1fr;gap:1em;
align-items:start;margin:.6em 0}
.seat{border:1px solid var(--line);border-radius:8px;padding:.5em .8em;min-height:6.5em}
.seat.to-move{border-color:#0969da;box-shadow:0 0 0 2px #0969da33}
.who{font-weight:600}.role{color:var(--muted);font-weight:400;margin-left:.4em}
.hand{margin:.4em 0;min-height:2.2em}.facts{color:var(--muted);font-size:.9em}
#trick{border:1px dashed var(--line);border-radius:8px;padding:.5em;text-align:center;
min-height:6.5em}#trick-title{color:var(--muted);font-size:.9em}
.card{display:inline-block;min-width:2.1em;padding:.15em .3em;margin:.12em;border:1px solid
#aab3bd;border-radius:5px;background:#fff;text-align:center;font-weight:600;
font-variant-numeric:tabular-nums}
.card.red{color:var(--red)}.card.trump{background:#eef5ff}.card.killer{outline:2px solid #8250df}
.card.new{background:var(--mark)}.played{display:inline-block;margin:0 .5em}
.played .by{display:block;font-size:.8em;color:var(--muted)}
.winner-mark{color:#1a7f37;font-weight:600}
#status{margin:.3em 0;font-weight:500}
#columns{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1.5em}
#actions{padding-left:2.4em;margin:.2em 0;max-height:26em;overflow-y:auto}
#actions li{padding:.1em .3em;cursor:pointer;border-radius:4px}
#actions li.current{background:var(--mark)}#actions li.fault{color:#cf222e;cursor:default}
#actions li .ms,.tail{color:var(--muted);font-size:.88em}
#actions li.deal{list-style:none;margin-left:-1.6em}
.tail{font-family:ui-monospace,monospace;white-space:pre-wrap;margin:.2em 0 .2em 1em;
padding:.2em .5em;background:var(--soft);border-radius:4px;max-height:12em;overflow:auto}
#tricks tr.current{background:var(--mark)}.future{opacity:.4}
code{font-family:ui-monospace,monospace;font-size:.92em;background:var(--soft);padding:0 .25em}
@media (max-width:760px){#table-area,#columns{grid-template-columns:1fr}}
"""

#: The page's behaviour: it draws the embedded data, only ever as text.
_SCRIPT = """
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("replay-data").textContent);
  var SUITS = {S: "\\u2660", H: "\\u2665", D: "\\u2666", C: "\\u2663"};
  var matches = DATA.matches;
  var at = {m: 0, g: 0, p: 0};

  function $(id) { return document.getElementById(id); }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return parent;
  }
  function card(code, game) {
    var suit = code.slice(-1);
    var node = el("span", "card" + (suit === "H" || suit === "D" ? " red" : ""),
      code.slice(0, -1) + (SUITS[suit] || suit));
    node.dataset.card = code;
    if (game) {
      if (suit === game.key.slice(-1)) node.classList.add("trump");
      if (game.killers.indexOf(code) >= 0) node.classList.add("killer");
    }
    return node;
  }
  function cards(codes, game, fresh) {
    var span = el("span", "cards");
    if (!codes.length) add(span, "none");
    codes.forEach(function (code) {
      var node = card(code, game);
      if (fresh && fresh.indexOf(code) >= 0) node.classList.add("new");
      span.appendChild(node);
    });
    return span;
  }
  function ms(value) { return value === null || value === undefined ? "-" : value.toFixed(1); }
  function plural(count, word) { return count + " " + word + (count === 1 ? "" : "s"); }

  function match() { return matches[at.m]; }
  function game() { var m = match(); return m ? m.games[at.g] : undefined; }
  function name(seat) { return match().players[seat]; }
  function who(seat) { return name(seat) + " (seat " + seat + ")"; }

  function describe(step, g) {
    var line = el("span", "what");
    var actor = name(step.seat);
    if (step.action === "stop") add(line, "round " + step.round + ": " + actor + " stops");
    else if (step.action === "exchange") {
      add(line, "round " + step.round + ": " + actor + " ");
      if (!step.cards.length) add(line, "keeps all cards");
      else add(line, "discards ", cards(step.cards, g), ", draws ", cards(step.drawn, g));
    } else if (step.action === "bid") add(line, actor + " bids " + step.tricks);
    else if (step.action === "pass") add(line, actor + " passes");
    else {
      add(line, actor + (step.table.length === 1 ? " leads " : " plays "), card(step.card, g));
      if (step.trick) add(line, " \\u2192 trick " + step.trick + " to " + name(step.winner));
    }
    return line;
  }
  function faultsAt(m, g, decision) {
    return m.faults.filter(function (fault) {
      return fault.game === g.number && fault.decision === decision;
    });
  }
  function faultLine(fault) {
    var item = el("li", "fault");
    var where = fault.game === null ? "before the first game" : "game " + fault.game +
      (fault.decision === null ? "" : ", decision " + fault.decision);
    add(item, (fault.forfeit ? "forfeit: " : "") + fault.bot +
      (fault.seat === null ? "" : " (seat " + fault.seat + ")") + " " + fault.fault +
      " (" + where + ")" + (fault.detail ? ": " + fault.detail : ""));
    if (fault.tail.length) add(item, el("div", "tail", fault.tail.join("\\n")));
    return item;
  }

  function drawMatch() {
    var m = match();
    $("match-title").textContent = "Match " + (m.number === null ? "?" : m.number) + ": " +
      who(0) + " vs " + who(1);
    var rules = Object.keys(m.rules).map(function (key) { return key + " " + m.rules[key]; });
    var meta = clear($("match-meta"));
    add(meta, "rules: " + (rules.join(", ") || "?") + "; seed " +
      (m.seed === null ? "none" : m.seed));
    if (m.draw.length === 2) {
      add(meta, "; first-master draw: " + name(0) + " ", card(m.draw[0]), " " + name(1) + " ",
        card(m.draw[1]));
      if (m.first_master !== null) add(meta, " \\u2192 master " + name(m.first_master));
    }
    var outcome = clear($("outcome"));
    if (m.void) {
      outcome.className = "warning";
      add(outcome, "Void: both bots failed before the first game; the match counts for nobody.");
    } else if (m.end && m.end.winner !== null) {
      outcome.className = "";
      add(outcome, el("strong", null, "Winner: " + who(m.end.winner)), " by " +
        m.end.termination + ", scores " + m.end.scores[0] + "-" + m.end.scores[1] + " after " +
        plural(m.end.games || 0, "game"));
    } else {
      outcome.className = "";
      add(outcome, "No result in the record.");
    }
    var problem = $("problem");
    problem.hidden = !m.problem;
    problem.textContent = m.problem ? "This record cannot be replayed to its end: " + m.problem +
      " (aegis-ref verify FILE checks a record)." : "";
    $("times").hidden = !m.times[0].decisions && !m.times[1].decisions;
    var body = clear($("times").tBodies[0]);
    [0, 1].forEach(function (seat) {
      var t = m.times[seat];
      var row = el("tr");
      add(row, el("td", "num", seat), el("td", "name", name(seat)),
        el("td", "num", t.decisions), el("td", "num", ms(t.mean)), el("td", "num", ms(t.max)));
      body.appendChild(row);
    });
    var list = clear($("fault-list"));
    m.faults.forEach(function (fault) { list.appendChild(faultLine(fault)); });
    $("faults").hidden = !m.faults.length;
    $("board").hidden = $("keys").hidden = !m.games.length;
  }

  function drawActions(m, g) {
    var list = clear($("actions"));
    var deal = el("li", "deal", "the deal");
    deal.dataset.position = "0";
    list.appendChild(deal);
    g.steps.forEach(function (step, index) {
      faultsAt(m, g, index + 1).forEach(function (fault) { list.appendChild(faultLine(fault)); });
      var item = el("li", "step");
      item.value = index + 1;
      item.dataset.position = String(index + 1);
      add(item, describe(step, g));
      if (step.ms !== undefined) add(item, el("span", "ms", "  " + ms(step.ms) + " ms"));
      list.appendChild(item);
    });
    faultsAt(m, g, g.steps.length + 1).forEach(function (fault) {
      list.appendChild(faultLine(fault));
    });
    var tricks = clear($("tricks").tBodies[0]);
    g.tricks.forEach(function (trick, index) {
      var row = el("tr");
      row.dataset.position = String(trick.position);
      add(row, el("td", "num", index + 1), el("td", "name", name(trick.leader)),
        add(el("td"), card(trick.cards[0], g), card(trick.cards[1], g)),
        el("td", "name winner", name(trick.winner)));
      tricks.appendChild(row);
    });
  }

  function resultText(g) {
    var r = g.result;
    return who(r.attacker) + " attacked with " + r.bid + " and " + (r.made ? "made" : "missed") +
      " it (" + r.tricks[0] + "-" + r.tricks[1] + " tricks); points " + r.points[0] + "-" +
      r.points[1] + (r.bonuses.length ? " (" + r.bonuses.join(", ") + ")" : "") +
      "; scores " + r.scores_after[0] + "-" + r.scores_after[1];
  }

  function drawPosition() {
    var m = match(), g = game();
    if (!g) return;
    var p = at.p, n = g.steps.length;
    var step = p > 0 ? g.steps[p - 1] : null;
    var hands = step ? step.hands : g.deal;
    var slave = 1 - g.master;
    $("game-title").textContent = "Game " + g.number + " (" + (at.g + 1) + " of " +
      m.games.length + ") \\u00b7 scores " + (p === n && g.result ?
      g.result.scores_after.join("-") : g.scores_before.join("-"));
    var key = clear($("key"));
    add(key, "key card ", card(g.key), " trump " + SUITS[g.key.slice(-1)] + "  killers ",
      cards(g.killers));
    var toMove = null;
    if (p < n) toMove = g.steps[p].seat;
    [0, 1].forEach(function (seat) {
      var box = $("seat-" + seat);
      box.querySelector(".name").textContent = who(seat);
      box.querySelector(".role").textContent = seat === g.master ? "master" : "slave";
      var fresh = step && step.seat === seat && step.action === "exchange" ? step.drawn : null;
      clear(box.querySelector(".hand")).appendChild(cards(hands[seat], g, fresh));
      var facts = "tricks " + (step ? step.won[seat] : 0);
      if (step && step.seat === seat && step.ms !== undefined) {
        facts += " \\u00b7 decided in " + ms(step.ms) + " ms";
      }
      box.querySelector(".facts").textContent = facts;
      box.classList.toggle("to-move", toMove === seat);
    });
    var table = step ? step.table : [];
    var title = clear($("trick-title"));
    var shown = clear($("trick-cards"));
    if (step && step.trick) add(title, "trick " + step.trick + " \\u2192 ",
      el("span", "winner-mark", name(step.winner)));
    else add(title, step ? step.phase : "the deal");
    table.forEach(function (played) {
      var spot = el("span", "played");
      add(spot, el("span", "by", name(played[0])), card(played[1], g));
      shown.appendChild(spot);
    });
    var status = clear($("status"));
    var bids = step ? step.bids : [null, null];
    var words = [step ? step.phase : "the deal", "stock " + (step ? step.stock : g.stock)];
    if (bids[0] !== null) words.push("master bid " + bids[0] + (bids[1] !== null ?
      ", slave bid " + bids[1] : ""));
    add(status, words.join(" \\u00b7 "));
    if (step) add(status, " \\u2014 ", describe(step, g));
    var notice = clear($("notice"));
    notice.className = "";
    var faults = faultsAt(m, g, p + 1);
    if (faults.length) {
      notice.className = "fault";
      faults.forEach(function (fault) { notice.appendChild(faultLine(fault)); });
    } else if (p === n && g.result) {
      notice.className = "over";
      add(notice, "Game over: " + resultText(g));
    } else if (p === n && g.problem) {
      add(notice, "The record goes on with an action the rules refuse: " + g.problem);
    } else if (p === n && !g.finished) {
      add(notice, "The game was cut short here.");
    }
    notice.hidden = !notice.firstChild;
    $("result").textContent = p === n && g.result ? resultText(g) : "";
    $("position").textContent = "action " + p + " of " + n;
    var scrub = $("scrub");
    scrub.max = String(n);
    scrub.value = String(p);
    var current = null;
    Array.prototype.forEach.call($("actions").children, function (item) {
      var here = item.dataset.position === String(p);
      item.classList.toggle("current", here);
      if (item.dataset.position) item.classList.toggle("future", Number(item.dataset.position) > p);
      if (here) current = item;
    });
    if (current && current.scrollIntoView) current.scrollIntoView({block: "nearest"});
    Array.prototype.forEach.call($("tricks").tBodies[0].rows, function (row) {
      row.classList.toggle("current", row.dataset.position === String(p));
      row.classList.toggle("future", Number(row.dataset.position) > p);
    });
    $("prev-action").disabled = $("prev-trick").disabled = p === 0 && at.g === 0;
    $("next-action").disabled = $("next-trick").disabled = p === n &&
      at.g === m.games.length - 1;
    $("prev-game").disabled = at.g === 0 && p === 0;
    $("next-game").disabled = at.g === m.games.length - 1 && p === n;
    try {
      history.replaceState(null, "", "#m" + m.number + "g" + g.number + "a" + p);
    } catch (error) { /* a page opened in some viewers cannot change its address */ }
  }

  function goGame(index, position) {
    var m = match();
    at.g = Math.max(0, Math.min(index, m.games.length - 1));
    var n = m.games[at.g].steps.length;
    at.p = position === "end" ? n : Math.max(0, Math.min(position, n));
    drawActions(m, game());
    drawPosition();
  }
  function go(position) {
    at.p = Math.max(0, Math.min(position, game().steps.length));
    drawPosition();
  }
  function stops(g) {
    var list = [0];
    g.steps.forEach(function (step, index) {
      var next = g.steps[index + 1];
      if (step.trick || (step.action === "bid" || step.action === "pass") &&
          (!next || next.action === "play")) list.push(index + 1);
    });
    if (list[list.length - 1] !== g.steps.length) list.push(g.steps.length);
    return list;
  }
  var moves = {
    nextAction: function () {
      if (at.p < game().steps.length) go(at.p + 1);
      else if (at.g < match().games.length - 1) goGame(at.g + 1, 0);
    },
    prevAction: function () {
      if (at.p > 0) go(at.p - 1);
      else if (at.g > 0) goGame(at.g - 1, "end");
    },
    nextTrick: function () {
      var later = stops(game()).filter(function (p) { return p > at.p; });
      if (later.length) go(later[0]);
      else if (at.g < match().games.length - 1) goGame(at.g + 1, 0);
    },
    prevTrick: function () {
      var earlier = stops(game()).filter(function (p) { return p < at.p; });
      if (earlier.length) go(earlier[earlier.length - 1]);
      else if (at.g > 0) goGame(at.g - 1, "end");
    },
    nextGame: function () {
      if (at.g < match().games.length - 1) goGame(at.g + 1, 0);
      else go(game().steps.length);
    },
    prevGame: function () {
      if (at.p > 0) go(0);
      else if (at.g > 0) goGame(at.g - 1, 0);
    },
    start: function () { go(0); },
    end: function () { go(game().steps.length); }
  };
  var KEYS = {
    ArrowRight: "nextAction", ArrowLeft: "prevAction", ArrowDown: "nextTrick",
    ArrowUp: "prevTrick", PageDown: "nextGame", PageUp: "prevGame", n: "nextGame",
    p: "prevGame", Home: "start", End: "end"
  };

  function showMatch(index, gameIndex, position) {
    at.m = Math.max(0, Math.min(index, matches.length - 1));
    drawMatch();
    $("match-select").value = String(at.m);
    if (match().games.length) goGame(gameIndex, position);
  }
  function fromHash() {
    var found = /^#m(-?\\d+)g(\\d+)a(\\d+)$/.exec(location.hash);
    if (!found) return null;
    var number = Number(found[1]), gameNumber = Number(found[2]);
    for (var i = 0; i < matches.length; i++) {
      if (matches[i].number === number) {
        var games = matches[i].games;
        for (var j = 0; j < games.length; j++) {
          if (games[j].number === gameNumber) return [i, j, Number(found[3])];
        }
        return [i, 0, 0];
      }
    }
    return null;
  }

  if (!matches.length) {
    $("match-title").textContent = "This record holds no match.";
    $("times").hidden = true;
    document.body.dataset.replay = "ready";
    return;
  }
  var select = $("match-select");
  matches.forEach(function (m, index) {
    var option = el("option", null, "match " + m.number + ": " + m.players[0] + " vs " +
      m.players[1] + (m.void ? " (void)" : ""));
    option.value = String(index);
    select.appendChild(option);
  });
  $("match-picker").hidden = matches.length < 2;
  select.addEventListener("change", function () { showMatch(Number(select.value), 0, 0); });
  [["prev-game", "prevGame"], ["prev-trick", "prevTrick"], ["prev-action", "prevAction"],
   ["next-action", "nextAction"], ["next-trick", "nextTrick"], ["next-game", "nextGame"]]
    .forEach(function (pair) {
      $(pair[0]).addEventListener("click", function () { moves[pair[1]](); });
    });
  $("scrub").addEventListener("input", function () { go(Number($("scrub").value)); });
  $("actions").addEventListener("click", function (event) {
    var item = event.target.closest ? event.target.closest("li[data-position]") : null;
    if (item) go(Number(item.dataset.position));
  });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target && (target.tagName === "SELECT" || target.tagName === "INPUT")) return;
    var move = KEYS[event.key];
    if (!move || !game()) return;
    event.preventDefault();
    moves[move]();
  });
  window.addEventListener("hashchange", function () {
    var place = fromHash();
    if (place) showMatch(place[0], place[1], place[2]);
  });
  var start = fromHash() || [0, 0, 0];
  showMatch(start[0], start[1], start[2]);
  document.body.dataset.replay = "ready";
})();
"""
