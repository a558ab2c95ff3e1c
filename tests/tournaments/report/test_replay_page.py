"""Replay pages: what the engine makes of a record (good, damaged, void), the page's escaping
and policy, ``aegis-ref replay --html`` and the report's pages, and the page itself in
headless Chromium, stepped by keys and buttons."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from referee.cgroups import detect_cgroups
from referee.rules.cards import parse_card
from tests.tournaments.chromium import devtools_page, png_size, require_chromium
from tests.tournaments.cli.helpers import invoke, read_lines, write_lines
from tests.tournaments.helpers import RAWBOT
from tests.tournaments.played import CRASHER_OUTPUT
from tournaments.report.replay_page import render_replay_page, replay_data

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
#: Two matches between a random policy and ``first``, with exchanges.
EXCHANGES = GOLDEN / "selfplay-seed-15-random-vs-first-promise-4.jsonl"
#: A bot name that would run a script if a page took it for markup.
HOSTILE_NAME = "</script><img src=x onerror=alert(1)>"

Line = dict[str, Any]


def games_of(lines: Sequence[Line], match: int) -> list[Line]:
    return [line for line in lines if line["type"] == "game" and line["match"] == match]


# ---------------------------------------------------------------------------------------------
# The data: the engine's replay of the record


def test_the_engine_replays_every_step_of_a_record() -> None:
    lines = read_lines(EXCHANGES)
    matches = replay_data(lines)
    assert [match["number"] for match in matches] == [1, 2]
    for match in matches:
        assert match["problem"] is None
        assert match["players"] == ["random", "first"]
        end = next(
            line
            for line in lines
            if line["type"] == "match_end" and line["match"] == match["number"]
        )
        assert (match["end"]["winner"], match["end"]["scores"]) == (end["winner"], end["scores"])
        recorded = games_of(lines, match["number"])
        assert [game["number"] for game in match["games"]] == [line["game"] for line in recorded]
        for game, line in zip(match["games"], recorded, strict=True):
            deck = line["deck"]
            master, slave = line["master"], 1 - line["master"]
            assert game["key"] == deck[10]
            assert sorted(game["deal"][master]) == sorted(deck[0:5])
            assert sorted(game["deal"][slave]) == sorted(deck[5:10])
            assert len(game["steps"]) == len(line["actions"])
            hands = [set(hand) for hand in game["deal"]]
            for step, action in zip(game["steps"], line["actions"], strict=True):
                seat = action["seat"]
                assert (step["seat"], step["action"]) == (seat, action["action"])
                if action["action"] == "exchange":
                    # The page's exchange holds the record's cards, in the engine's order.
                    assert sorted(step["cards"]) == sorted(action["cards"])
                    assert step["drawn"] == action["drawn"]
                    hands[seat] = (hands[seat] - set(action["cards"])) | set(action["drawn"])
                if action["action"] == "play":
                    assert step["card"] == action["card"]
                    hands[seat].discard(action["card"])
                # The hands at every step are the cards held: none lost, none made up.
                assert [set(hand) for hand in step["hands"]] == hands
                assert all(len(hand) <= 5 for hand in step["hands"])
            assert [
                {key: trick[key] for key in ("leader", "cards", "winner")}
                for trick in game["tricks"]
            ] == line["tricks"]
            completed = [step["trick"] for step in game["steps"] if "trick" in step]
            assert completed == list(range(1, len(line["tricks"]) + 1))
            result = game["result"]
            assert result["points"] == line["points"]
            assert result["scores_after"] == line["scores_after"]
            assert result["tricks"] == line["tricks_won"]
            assert game["steps"][-1]["hands"] == [[], []]


def test_each_step_keeps_its_wall_and_cpu_time_and_each_seat_their_means() -> None:
    lines = read_lines(EXCHANGES)
    timed = next(line for line in lines if line["type"] == "game" and line["match"] == 1)
    for number, action in enumerate(timed["actions"]):
        action["ms"] = 10.0 + number
        if action["seat"] == 0:
            action["cpu_ms"] = 1.5 * number  # seat 1 on the wall clock: no charge
    timed["actions"][0]["cpu_ms"] = -1  # a bad value is left out, not shown
    (match,) = replay_data(lines, match=1, game=timed["game"])
    steps = match["games"][0]["steps"]
    assert [step["ms"] for step in steps] == [action["ms"] for action in timed["actions"]]
    assert [step.get("cpu_ms") for step in steps] == [
        None if number == 0 or action["seat"] == 1 else 1.5 * number
        for number, action in enumerate(timed["actions"])
    ]
    charged = [
        1.5 * number
        for number, action in enumerate(timed["actions"])
        if number > 0 and action["seat"] == 0
    ]
    first, second = match["times"]
    assert (first["cpu_mean"], first["cpu_max"]) == (sum(charged) / len(charged), max(charged))
    assert (second["cpu_mean"], second["cpu_max"]) == (None, None)


def test_only_the_chosen_match_and_game() -> None:
    lines = read_lines(EXCHANGES)
    matches = replay_data(lines, match=2, game=6)
    assert [match["number"] for match in matches] == [2]
    # Game 6 is replayed after the five before it: its scores come from them.
    (game,) = matches[0]["games"]
    assert game["number"] == 6
    assert game["scores_before"] == [9, 10]
    assert game["result"]["bonuses"] == ["save"]
    assert replay_data(lines, match=9) == []


def test_a_damaged_record_is_replayed_up_to_the_damage(tmp_path: Path) -> None:
    lines = read_lines(EXCHANGES)
    second = games_of(lines, 1)[1]
    plays = [n for n, action in enumerate(second["actions"]) if action["action"] == "play"]
    actions = second["actions"]
    actions[plays[0]], actions[plays[0] + 1] = actions[plays[0] + 1], actions[plays[0]]
    (match, *_) = replay_data(lines)
    first_game, damaged = match["games"][:2]
    assert first_game["problem"] is None
    assert damaged["problem"].startswith(f"action {plays[0] + 1}: illegal card ")
    assert len(damaged["steps"]) == plays[0]
    assert len(match["games"]) == 2  # nothing after the damage
    assert not damaged["finished"]

    del games_of(lines, 2)[0]["deck"]
    assert replay_data(lines)[1]["problem"] == "game 1: missing field 'deck'"
    cut = read_lines(EXCHANGES)[:-1]
    assert replay_data(cut)[1]["problem"] == "the record ends before this match's match_end line"
    # Lines that are no record at all make no match.
    assert replay_data([{"type": "game"}, {"kind": 1}]) == []


@pytest.fixture(scope="module")
def void_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The record of a void match: two real bots that never say hello."""
    directory = tmp_path_factory.mktemp("void")
    path = directory / "void.jsonl"
    silent = f"{sys.executable} {RAWBOT} --fault no_hello"
    result = invoke(
        "match", silent, silent, "--matches", "1", "--warmup-ms", "300", "--record", path
    )
    assert result.exit_code == 0, result.output
    assert "void" in result.output
    return path


def test_a_void_match_is_replayed_as_void(void_record: Path) -> None:
    (match,) = replay_data(read_lines(void_record))
    assert match["void"] is True
    assert match["games"] == []
    assert match["end"]["winner"] is None
    assert match["problem"] is None
    assert [fault["fault"] for fault in match["faults"]] == ["handshake", "handshake"]
    assert [fault["seat"] for fault in match["faults"]] == [0, 1]


# ---------------------------------------------------------------------------------------------
# The page: escaped, self-contained, a script allowed by hash only


class _Scripts(HTMLParser):
    """The page's elements by tag, and each script's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._open: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        self.tags.append((tag, attributes))
        if tag == "script":
            self._open = attributes
            self.scripts.append((attributes, ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            attributes, text = self.scripts[-1]
            self.scripts[-1] = (attributes, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


def _hostile_lines() -> list[Line]:
    lines = read_lines(EXCHANGES)[:3]  # match 1: match_start and its first two games
    lines[0]["players"] = [HOSTILE_NAME, "b & <b>"]
    lines.append(
        {
            "type": "match_end",
            "match": 1,
            "winner": 1,
            "termination": "forfeit",
            "scores": [0, 0],
            "games": 2,
            "forfeit": {
                "seat": 0,
                "bot": HOSTILE_NAME,
                "fault": "crash<script>",
                "detail": "</script><script>alert(2)</script>",
                "game": 3,
                "decision": 1,
                "stderr_tail": ["<!--", HOSTILE_NAME, "\u2028line"],
            },
        }
    )
    return lines


def test_the_page_holds_a_strangers_text_as_data_only() -> None:
    text = render_replay_page(replay_data(_hostile_lines()), title="Replay: <i>x</i>")
    assert "</script><img" not in text
    assert "<i>x</i>" not in text
    assert "alert(2)</script>" not in text
    parser = _Scripts()
    parser.feed(text)
    parser.close()
    # Two scripts: the data (not run) and the page's own; no other element came in.
    assert [attributes.get("type") for attributes, _ in parser.scripts] == [
        "application/json",
        None,
    ]
    assert not [tag for tag, _ in parser.tags if tag in ("img", "iframe", "object", "link")]
    data = json.loads(parser.scripts[0][1])
    assert data["matches"][0]["players"][0] == HOSTILE_NAME
    assert data["matches"][0]["faults"][0]["tail"][1] == HOSTILE_NAME
    # The policy: nothing may be fetched, and only the page's own script and style run.
    policy = next(
        attributes["content"]
        for tag, attributes in parser.tags
        if tag == "meta" and attributes.get("http-equiv") == "Content-Security-Policy"
    )
    own = parser.scripts[1][1]
    digest = base64.b64encode(hashlib.sha256(own.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in policy
    assert policy.startswith("default-src 'none';")
    assert "unsafe-inline" not in policy
    assert "http" not in text.replace("http-equiv", "")


# ---------------------------------------------------------------------------------------------
# The command line


def test_replay_html_writes_a_page(tmp_path: Path) -> None:
    page = tmp_path / "game.html"
    result = invoke("replay", EXCHANGES, "--html", page)
    assert result.exit_code == 0, result.output
    assert result.output == f"replay: {page}\n"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<title>Replay: selfplay-seed-15-random-vs-first-promise-4.jsonl</title>" in text
    result = invoke("replay", EXCHANGES, "--match", "9", "--html", tmp_path / "none.html")
    assert result.exit_code == 1
    assert "nothing matches" in result.output
    assert not (tmp_path / "none.html").exists()


def test_replay_html_of_a_folder_writes_a_page_per_record(
    tournament_output: Path, tmp_path: Path
) -> None:
    pages = tmp_path / "pages"
    result = invoke("replay", tournament_output / "records", "--html", pages)
    assert result.exit_code == 0, result.output
    records = sorted((tournament_output / "records").glob("*.jsonl"))
    assert result.output == f"replay: {len(records)} pages in {pages}\n"
    assert sorted(page.name for page in pages.iterdir()) == sorted(
        record.stem + ".html" for record in records
    )
    # Two records of the same name in two folders cannot share a page.
    twin = tmp_path / "twin"
    twin.mkdir()
    shutil.copy(records[0], twin / records[0].name)
    result = invoke("replay", tournament_output / "records", twin, "--html", tmp_path / "both")
    assert result.exit_code == 2
    assert "would both be replayed in" in result.output


def test_the_report_writes_a_replay_page_per_match(tournament_output: Path, tmp_path: Path) -> None:
    destination = tmp_path / "site" / "index.html"
    result = invoke("report", tournament_output, "-o", destination)
    assert result.exit_code == 0, result.output
    pages = sorted((destination.parent / "replays").iterdir())
    records = sorted((tournament_output / "records").glob("*.jsonl"))
    assert [page.name for page in pages] == [record.stem + ".html" for record in records]
    text = pages[0].read_text(encoding="utf-8")
    assert '<a href="../index.html">report</a>' in text
    relative = os.path.relpath(records[0], pages[0].parent)
    assert f'<a href="{relative}">record</a>' in text
    # A second report keeps the pages of records that did not change, and redoes a page
    # whose record did.
    written = {page.name: page.stat().st_mtime_ns for page in pages}
    os.utime(records[0], ns=(records[0].stat().st_atime_ns, records[0].stat().st_mtime_ns + 1))
    result = invoke("report", tournament_output, "-o", destination)
    assert result.exit_code == 0, result.output
    again = {page.name: page.stat().st_mtime_ns for page in pages}
    assert [name for name in written if again[name] != written[name]] == [pages[0].name]


# ---------------------------------------------------------------------------------------------
# The page in headless Chromium


def _text(page: Any, selector: str) -> str:
    found = page.evaluate(
        f"(function () {{ var n = document.querySelector({json.dumps(selector)}); "
        "return n ? n.textContent : null; })()"
    )
    assert found is not None, selector
    return str(found)


def _symbols(code: str) -> str:
    return parse_card(code).symbol


def _hand(page: Any, seat: int) -> list[str]:
    cards = page.evaluate(
        f"Array.prototype.map.call(document.querySelectorAll('#seat-{seat} .hand .card'), "
        "function (node) { return node.dataset.card; })"
    )
    return list(cards)


def _stops(line: Line) -> list[int]:
    """Where the page's trick steps stop: the deal, the end of the bidding, each trick."""
    actions = line["actions"]
    stops = [0]
    for index, action in enumerate(actions, 1):
        following = actions[index] if index < len(actions) else None
        if action["action"] in ("bid", "pass") and (
            following is None or following["action"] == "play"
        ):
            stops.append(index)
    plays = [index for index, action in enumerate(actions, 1) if action["action"] == "play"]
    stops += plays[1::2]
    if stops[-1] != len(actions):
        stops.append(len(actions))
    return sorted(set(stops))


def test_a_tournament_match_steps_in_chromium(tournament_output: Path, tmp_path: Path) -> None:
    """Load a replay the report made, step it by key and by button, and read the screen."""
    require_chromium()
    result = invoke("report", tournament_output)
    assert result.exit_code == 0, result.output
    record = tournament_output / "records" / "match-r0001-alpha+rnd.jsonl"
    lines = read_lines(record)
    games = games_of(lines, 1)
    first = games[0]
    players = lines[0]["players"]
    master = first["master"]
    url = (tournament_output / "replays" / "match-r0001-alpha+rnd.html").resolve().as_uri()
    with devtools_page(tmp_path / "profile", 1200, 1000) as page:
        page.open(url)
        assert page.evaluate("document.body.dataset.replay") == "ready"
        assert (
            _text(page, "#match-title")
            == f"Match 1: {players[0]} (seat 0) vs {players[1]} (seat 1)"
        )
        assert _text(page, "#position") == f"action 0 of {len(first['actions'])}"
        assert f"seed {lines[0]['seed']};" in _text(page, "#match-meta")  # all 64 bits
        assert sorted(_hand(page, master)) == sorted(first["deck"][0:5])
        assert sorted(_hand(page, 1 - master)) == sorted(first["deck"][5:10])
        assert _text(page, "#seat-0 .role") == ("master" if master == 0 else "slave")
        key = first["deck"][10]
        assert _symbols(key) in _text(page, "#key")
        # One action with the right arrow: the first action of the record is on screen.
        page.press("ArrowRight", key_code=39)
        assert _text(page, "#position") == f"action 1 of {len(first['actions'])}"
        action = first["actions"][0]
        status = _text(page, "#status")
        assert players[action["seat"]] in status
        assert {"stop": "stops", "exchange": "round 1", "bid": "bids"}[action["action"]] in status
        # Its time: wall, and on the CPU clock (where this machine keeps it) the CPU charge.
        assert ("cpu_ms" in action) == (detect_cgroups().cpu_clock_problem() is None)
        told = f"{action['ms']:.1f} ms" + (
            f", CPU {action['cpu_ms']:.1f} ms" if "cpu_ms" in action else ""
        )
        assert f"decided in {told}" in _text(page, f"#seat-{action['seat']}")
        assert _text(page, "#actions li.step .ms").strip() == told
        seat_times = page.evaluate(
            f"Array.prototype.map.call(document.querySelectorAll('#times tbody tr:nth-child("
            f"{action['seat'] + 1}) td'), function (node) {{ return node.textContent; }})"
        )
        charges = [
            step["cpu_ms"]
            for game in games
            for step in game["actions"]
            if step["seat"] == action["seat"] and "cpu_ms" in step
        ]
        assert seat_times[5:] == (
            [f"{sum(charges) / len(charges):.1f}", f"{max(charges):.1f}"] if charges else ["-", "-"]
        )
        # Trick by trick with the down arrow: each trick's cards and winner, as recorded.
        stops = _stops(first)
        shown_tricks = 0
        for stop in stops[1:]:
            page.press("ArrowDown", key_code=40)
            assert _text(page, "#position") == f"action {stop} of {len(first['actions'])}"
            if first["actions"][stop - 1]["action"] == "play":
                trick = first["tricks"][shown_tricks]
                shown_tricks += 1
                title = _text(page, "#trick-title")
                assert title == f"trick {shown_tricks} \u2192 {players[trick['winner']]}"
                table = _text(page, "#trick-cards")
                assert all(_symbols(card) in table for card in trick["cards"])
        assert shown_tricks == len(first["tricks"])
        # At the end of the game: its result, as the record scores it.
        notice = _text(page, "#notice")
        assert notice.startswith("Game over: ")
        assert f"points {first['points'][0]}-{first['points'][1]}" in notice
        assert page.evaluate("location.hash") == f"#m1g1a{len(first['actions'])}"
        # A button: back one action.
        page.click("#prev-action")
        assert (
            _text(page, "#position")
            == f"action {len(first['actions']) - 1} of {len(first['actions'])}"
        )
        assert page.requested() == [url]
        assert page.problems() == []
        # Game by game, in a record of many games (the tournament's matches are short).
        many = tmp_path / "many.html"
        assert invoke("replay", EXCHANGES, "--html", many).exit_code == 0
        games = games_of(read_lines(EXCHANGES), 2)
        count = len(games)
        page.open(f"{many.resolve().as_uri()}#m2g1a0")  # match 2: nine games
        assert _text(page, "#game-title").startswith(f"Game 1 (1 of {count})")
        page.click("#next-game")
        assert _text(page, "#game-title").startswith(f"Game 2 (2 of {count})")
        assert sorted(_hand(page, games[1]["master"])) == sorted(games[1]["deck"][0:5])
        page.press("End", key_code=35)
        steps = len(games[1]["actions"])
        assert _text(page, "#position") == f"action {steps} of {steps}"
        page.press("n", "KeyN", 78)
        assert _text(page, "#game-title").startswith(f"Game 3 (3 of {count})")
        page.press("PageUp", key_code=33)
        assert _text(page, "#game-title").startswith(f"Game 2 (2 of {count})")
        page.press("ArrowLeft", key_code=37)  # before the deal of game 2: the end of game 1
        steps = len(games[0]["actions"])
        assert _text(page, "#game-title").startswith(f"Game 1 (1 of {count})")
        assert _text(page, "#position") == f"action {steps} of {steps}"
        # An address names a moment: game 7, after its third action (an exchange); the page
        # follows a change of address too.
        page.open(f"{many.resolve().as_uri()}#m2g7a3")
        page.wait_until("document.getElementById('position').textContent.startsWith('action 3 ')")
        seventh = games[6]
        assert _text(page, "#game-title").startswith("Game 7 (7 of ")
        assert _text(page, "#position") == f"action 3 of {len(seventh['actions'])}"
        exchange = seventh["actions"][2]
        assert exchange["action"] == "exchange"
        marked = page.evaluate(
            f"Array.prototype.map.call(document.querySelectorAll('#seat-{exchange['seat']} "
            ".hand .card.new'), function (node) { return node.dataset.card; })"
        )
        assert sorted(marked) == sorted(exchange["drawn"])  # the cards just drawn
        # The tricks still to come are listed, pale.
        future = page.evaluate("document.querySelectorAll('#tricks tbody tr.future').length")
        assert future == len(seventh["tricks"])
        screenshot = tmp_path / "replay.png"
        page.screenshot(screenshot)
        assert page.problems() == []
    assert png_size(screenshot)[0] == 1200
    assert screenshot.stat().st_size > 30_000  # a blank page compresses to a few KB


def test_hostile_names_faults_and_void_matches_in_chromium(
    tournament_output: Path, void_record: Path, tmp_path: Path
) -> None:
    """A bot name, a fault and a bot's output made to run a script show as text; a fault
    shows at its moment; a void match shows as void; several matches can be picked."""
    require_chromium()
    record = tmp_path / "hostile.jsonl"
    lines = read_lines(tournament_output / "records" / "match-r0001-crasher+alpha.jsonl")
    lines[0]["players"][0] = HOSTILE_NAME
    forfeit = lines[-1]["forfeit"]
    assert CRASHER_OUTPUT in forfeit["stderr_tail"]  # the bot's own output, as recorded
    forfeit["bot"] = HOSTILE_NAME
    void_lines = read_lines(void_record)
    for line in void_lines:
        line["match"] = 2
    write_lines(record, [*lines, *void_lines])
    page_file = tmp_path / "hostile.html"
    result = invoke("replay", record, "--html", page_file)
    assert result.exit_code == 0, result.output
    url = page_file.resolve().as_uri()
    game, decision = forfeit["game"], forfeit["decision"]
    with devtools_page(tmp_path / "profile") as page:
        page.open(f"{url}#m1g{game}a{decision - 1}")
        assert page.evaluate("document.body.dataset.replay") == "ready"
        assert _text(page, "#seat-0 .name") == f"{HOSTILE_NAME} (seat 0)"
        assert HOSTILE_NAME in _text(page, "#match-title")
        assert page.evaluate("document.querySelectorAll('img, iframe, object').length") == 0
        # The fault at its moment, with the bot's output as text.
        notice = _text(page, "#notice")
        assert f"forfeit: {HOSTILE_NAME} (seat 0) {forfeit['fault']}" in notice
        assert CRASHER_OUTPUT in _text(page, "#notice .tail")
        assert CRASHER_OUTPUT in _text(page, "#faults")
        # Match 2, picked in the list: void, with both faults and no board.
        options = page.evaluate(
            "Array.prototype.map.call(document.querySelectorAll('#match-select option'), "
            "function (node) { return node.textContent; })"
        )
        assert options == [
            f"match 1: {HOSTILE_NAME} vs alpha",
            f"match 2: {void_lines[0]['players'][0]} vs {void_lines[0]['players'][1]} (void)",
        ]
        page.evaluate(
            "(function () { var s = document.getElementById('match-select'); s.value = '1'; "
            "s.dispatchEvent(new Event('change')); })()"
        )
        assert _text(page, "#outcome").startswith("Void: both bots failed before the first game")
        assert page.evaluate("document.getElementById('board').hidden") is True
        assert _text(page, "#fault-list").count("handshake") == 2
        assert page.requested() == [url]
        assert page.problems() == []
