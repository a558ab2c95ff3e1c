"""``aegis-ref play`` driven through a pseudo-terminal, as a person would use it.

The command runs as a real process on the slave side of a pty, with its bot a real process
too; the test reads the screen from the master side (every wait bounded) and types.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from referee.record_files import verify_file
from referee.rules.actions import PASS, STOP, Exchange, bid, play
from referee.rules.cards import parse_card
from referee.rules.game import ExchangeChoices
from tests.tournaments.helpers import processes_with_marker
from tests.tournaments.terminal import PseudoTerminal
from tournaments.cli import app
from tournaments.cli.play import ChoiceError, Command, TerminalPlayer, parse_choice, read_input_line

AEGIS_REF = Path(sys.executable).parent / "aegis-ref"
RAWBOT = Path(__file__).resolve().parents[2] / "bots" / "rawbot.py"
PROMPT = re.compile(r"Your (exchange|bid|card) \(1-(\d+); r rules, q quit\): $")


class Terminal(PseudoTerminal):
    """``aegis-ref play …`` on a pseudo-terminal: read what it shows, type answers."""

    def __init__(self, *arguments: str, sigint_ignored: bool = False) -> None:
        self.marker = uuid.uuid4().hex
        env = {
            **os.environ,
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
            "AEGIS_TEST_MARKER": self.marker,  # inherited by the bot: find it afterwards
        }
        env.pop("NO_COLOR", None)
        env.pop("COLUMNS", None)
        # 120 columns, 40 rows, so that rich lays out as on a normal terminal.
        super().__init__([str(AEGIS_REF), "play", *arguments], env, sigint_ignored=sigint_ignored)


def assert_no_process_left(marker: str, timeout: float = 5.0) -> None:
    """Every process started for the test (the command, its bot) has gone."""
    deadline = time.monotonic() + timeout
    alive = processes_with_marker(marker)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = processes_with_marker(marker)
    assert alive == [], f"processes left behind: {alive}"


@contextlib.contextmanager
def running(*arguments: str, sigint_ignored: bool = False) -> Iterator[Terminal]:
    """``aegis-ref play ARGUMENTS`` on a pty; killed if need be, and checked to leave no
    process behind."""
    session = Terminal(*arguments, sigint_ignored=sigint_ignored)
    try:
        yield session
    finally:
        session.close()
        assert_no_process_left(session.marker)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    """``aegis-ref play first --seed 3 --target-score 3`` on a pty."""
    with running("first", "--seed", "3", "--target-score", "3") as session:
        yield session


def answer_one_until_the_end(terminal: Terminal) -> None:
    """Answer 1 to every prompt until the final score appears."""
    for _ in range(400):
        terminal.type("1\n")
        shown = terminal.expect(re.compile(f"{PROMPT.pattern}|Final score"))
        if shown.group(0).startswith("Final score"):
            return
    pytest.fail("the match does not end")


def test_a_whole_match_answering_choice_one(terminal: Terminal) -> None:
    prompt = terminal.expect(PROMPT)
    assert "Aegis: you (seat 0) against first (seat 1)" in terminal.screen
    # A person plays on the wall clock, and is told so.
    assert "Clock: wall time. first has 1000 ms a decision (5000 ms more for its start" in (
        " ".join(terminal.screen.split())
    )
    assert "you have no time limit." in " ".join(terminal.screen.split())
    assert "Key card" in terminal.screen
    assert "Your hand:" in terminal.screen
    choices = int(prompt.group(2))
    # Invalid answers are refused with a reason and asked again.
    for answer, reason in [
        ("abc", r"'abc' is neither a choice number nor a card"),
        ("99", rf"there is no choice 99: choose 1-{choices}"),
        ("", r"type a choice's number"),
        ("2X", r"'2X' is neither a choice number nor a card"),
        ("bid 9", r"illegal action 'bid 9' for seat 0"),  # the engine's own reason
    ]:
        terminal.type(answer + "\n")
        terminal.expect(reason)
        terminal.expect(PROMPT)
    terminal.type("?\n")
    terminal.expect("Aegis in brief")
    terminal.expect(PROMPT)
    answer_one_until_the_end(terminal)
    assert terminal.wait() == 0
    assert re.search(r"Final score: you \d+ · first \d+ after \d+ finished game", terminal.screen)
    assert re.search(
        r"(You win|first wins) the match \((target|cold|both_over_target)\)", terminal.screen
    )
    for seen in ("Trick 1:", "Game 1:", "Scores: you", "bids", "→"):
        assert seen in terminal.screen


def test_quit_asks_for_confirmation(terminal: Terminal) -> None:
    terminal.expect(PROMPT)
    terminal.type("q\n")
    terminal.expect(r"Leave the match\? The bot will be stopped\. \[y/N\]: ")
    terminal.type("n\n")
    terminal.expect(PROMPT)
    terminal.type("q\n")
    terminal.expect(r"\[y/N\]: ")
    terminal.type("y\n")
    assert terminal.wait() == 1
    assert "Match abandoned after 0 game(s)" in terminal.screen
    assert "Traceback" not in terminal.screen


def test_end_of_input_leaves_cleanly(terminal: Terminal) -> None:
    terminal.expect(PROMPT)
    terminal.type("\x04")  # Ctrl-D at the start of a line: end of input
    terminal.expect("End of input: leaving the match.")
    assert terminal.wait() == 1
    assert "Match abandoned" in terminal.screen
    assert "Traceback" not in terminal.screen


def test_ctrl_c_leaves_cleanly(terminal: Terminal) -> None:
    terminal.expect(PROMPT)
    terminal.process.send_signal(signal.SIGINT)
    assert terminal.wait() == 1
    assert "Match abandoned" in terminal.screen
    assert "Traceback" not in terminal.screen


def test_ctrl_c_leaves_cleanly_even_where_it_was_started_ignoring_it() -> None:
    """A shell without job control starts a background command with SIGINT ignored, and
    Python then leaves it ignored: play, like tournament and sprt, takes Ctrl-C itself."""
    with running("first", "--seed", "3", "--target-score", "3", sigint_ignored=True) as terminal:
        terminal.expect(PROMPT)
        terminal.process.send_signal(signal.SIGINT)
        assert terminal.wait() == 1
        assert "Match abandoned" in terminal.screen
        assert "Traceback" not in terminal.screen


def test_a_bot_fault_ends_the_match_with_a_win_by_forfeit() -> None:
    crashing = f"{sys.executable} {RAWBOT} --fault crash --at 3"
    with running(crashing, "--seed", "3", "--seat", "1") as terminal:
        terminal.expect(PROMPT)
        answer_one_until_the_end(terminal)
        assert terminal.wait() == 0
    assert re.search(
        r"rawbot \(seat 0\) crash in game 1, decision \d+: process ended", terminal.screen
    )
    assert "You win by forfeit." in terminal.screen
    assert "Final score: you 0 · rawbot 0 after 0 finished game(s)." in terminal.screen


def test_the_record_of_a_played_match_verifies(tmp_path: Path) -> None:
    record = tmp_path / "human.jsonl"
    with running(
        "first", "--seed", "8", "--target-score", "3", "--record", str(record)
    ) as terminal:
        terminal.expect(PROMPT)
        answer_one_until_the_end(terminal)
        assert terminal.wait() == 0
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["players"] == ["human", "first"]
    assert lines[-1]["type"] == "match_end"
    assert verify_file(record).disagreement is None


def test_an_unknown_bot_is_refused() -> None:
    result = CliRunner().invoke(app, ["play", "no-such-bot-here"])
    assert result.exit_code == 2
    assert "no-such-bot-here" in result.output


# -- the answers, without a terminal -----------------------------------------------------------

HAND = tuple(parse_card(code) for code in ("AS", "10S", "7H", "3D", "2C"))


def test_numbers_pick_from_the_legal_list() -> None:
    legal = ExchangeChoices(HAND, is_master=True)
    assert parse_choice("1", legal) == STOP
    assert parse_choice(" 2 ", legal) == Exchange((HAND[0],))
    assert parse_choice("32", legal) == Exchange(HAND)
    for wrong in ("0", "33", "99999999999999"):
        with pytest.raises(ChoiceError, match="there is no choice"):
            parse_choice(wrong, legal)
    with pytest.raises(ChoiceError, match="type a choice's number"):
        parse_choice("   ", legal)


def test_written_out_actions() -> None:
    exchange = ExchangeChoices(HAND, is_master=False)
    assert parse_choice("7h 2c", exchange) == Exchange((HAND[2], HAND[4]))
    assert parse_choice("exchange 2♣, 7♥", exchange) == Exchange((HAND[2], HAND[4]))
    assert parse_choice("keep", exchange) == Exchange(())
    assert parse_choice("stop", exchange) == STOP
    plays = tuple(play(card) for card in HAND)
    assert parse_choice("ts", plays) == play(HAND[1])
    assert parse_choice("play 10S", plays) == play(HAND[1])
    assert parse_choice("Q♦", plays) == play(parse_card("QD"))  # not in hand: the engine says so
    assert parse_choice("bid 3", (PASS, bid(3))) == bid(3)
    assert parse_choice("pass", (PASS, bid(3))) == PASS
    assert parse_choice("?", plays) is Command.RULES
    assert parse_choice("Q", plays) is Command.QUIT
    assert parse_choice("h", plays) is Command.HELP
    for wrong, reason in [
        ("abc", "neither a choice number nor a card"),
        ("7H 2C", "play one card"),
        ("bid x", "a bid is written"),
        ("7H 7H", "twice"),
        ("exchange 1Z", "neither a choice number nor a card"),
    ]:
        with pytest.raises(ChoiceError, match=reason):
            parse_choice(wrong, exchange if wrong == "7H 7H" else plays)


def test_plain_cards_without_unicode() -> None:
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    player = TerminalPlayer(Console(file=stream, color_system=None))
    assert player.card(parse_card("10H")).plain == "10H"
    utf8 = TerminalPlayer(Console(file=io.TextIOWrapper(io.BytesIO(), encoding="utf-8")))
    assert utf8.card(parse_card("10H")).plain == "10♥"


def test_reading_lines_from_a_pipe() -> None:
    stream = io.StringIO("7H 2C\r\n\nq")
    assert read_input_line(stream) == "7H 2C"
    assert read_input_line(stream) == ""
    assert read_input_line(stream) == "q"
    with pytest.raises(EOFError):
        read_input_line(stream)
