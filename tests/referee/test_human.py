"""A human seat against a real bot process: the driver of ``aegis-ref play``, with scripted
choosers in place of a person."""

from __future__ import annotations

import dataclasses
import json
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from referee.bots import BotSpec
from referee.bundled import resolve_bot
from referee.faults import FaultKind
from referee.human import HumanMatchStart, HumanQuit, check_action, play_human_match
from referee.records import verify_lines
from referee.rules.actions import Action, parse_action
from referee.rules.game import Observation, Seat, new_game
from referee.rules.match import Termination
from referee.rules.options import RulesOptions
from referee.selfplay import FirstLegalPolicy, play_policy_match
from referee.server import BotServer
from referee.time_control import Clock, TimeControl
from tests.referee.helpers import deal

RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"
CLOCKWORK = Path(__file__).resolve().parents[1] / "bots" / "clockwork.py"
FAST = RulesOptions(target_score=5, cold_margin=3)
CONTROL = TimeControl(decision_ms=2000, warmup_ms=5000)


def rawbot(*arguments: str) -> BotSpec:
    """tests/bots/rawbot.py (first legal action unless told to misbehave)."""
    return BotSpec("rawbot", (sys.executable, str(RAWBOT), *arguments))


class Scripted:
    """A human seat that always takes the first legal action and remembers what it saw."""

    def __init__(self, quit_at: int | None = None) -> None:
        self.started: HumanMatchStart | None = None
        self.events: list[dict[str, Any]] = []
        self.decisions = 0
        self.quit_at = quit_at
        self.refused: list[str] = []

    def start(self, start: HumanMatchStart) -> None:
        self.started = start

    def show(self, seen: Observation, events: list[dict[str, Any]]) -> None:
        assert seen.seat == (self.started.human if self.started else None)
        self.events.extend(events)

    def choose(
        self, seen: Observation, legal: Sequence[Action], check: Callable[[Action], str | None]
    ) -> Action:
        self.decisions += 1
        if self.quit_at is not None and self.decisions >= self.quit_at:
            raise HumanQuit
        # The engine's reason for an action of the wrong phase, then the real choice.
        wrong = parse_action("pass") if seen.phase.value != "bidding" else parse_action("stop")
        reason = check(wrong)
        assert reason is not None
        self.refused.append(reason)
        assert check(legal[0]) is None
        return legal[0]


def _marked(marker: str) -> list[int]:
    """Live processes whose environment carries ``AEGIS_TEST_MARKER=marker``."""
    needle = f"AEGIS_TEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environment = (entry / "environ").read_bytes() if entry.name.isdigit() else b""
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] if environment else ""
        except OSError:
            continue
        if state and state != "Z" and needle in environment.split(b"\0"):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("human_seat", [Seat.FIRST, Seat.SECOND])
def test_same_match_as_in_process_first_against_first(human_seat: Seat) -> None:
    human = Scripted()
    outcome = play_human_match(
        resolve_bot("first"),
        human,
        seed=21,
        human_seat=human_seat,
        options=FAST,
        time_control=CONTROL,
    )
    assert outcome.finished
    assert not outcome.abandoned
    report = outcome.report
    assert report.faults == []
    expected = play_policy_match(FAST, 21, [FirstLegalPolicy(), FirstLegalPolicy()])
    assert report.match is not None
    assert report.match.result == expected.match.result
    assert [game.history for game in report.games] == [game.history for game in expected.games]
    assert human.refused
    assert all("illegal action" in reason for reason in human.refused)
    # The human saw every game start and end, and every trick, as events of its own seat.
    kinds = [event["event"] for event in human.events]
    assert kinds.count("game_start") == kinds.count("game_end") == len(report.games)
    assert kinds.count("trick") == 5 * len(report.games)
    # The record of a human match verifies like any other.
    lines = [json.dumps(line).encode() for line in report.record_lines()]
    assert verify_lines(enumerate(lines, 1)).disagreement is None


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("crash", FaultKind.CRASH),
        ("illegal", FaultKind.ILLEGAL_ACTION),
        ("no_hello", FaultKind.HANDSHAKE),
    ],
)
def test_a_bot_fault_is_the_humans_win_by_forfeit(fault: str, kind: FaultKind) -> None:
    outcome = play_human_match(
        rawbot("--fault", fault),
        Scripted(),
        seed=4,
        human_seat=Seat.SECOND,
        options=FAST,
        time_control=TimeControl(decision_ms=1000, warmup_ms=4000),
    )
    report = outcome.report
    assert outcome.finished
    assert report.forfeit_fault is not None
    assert report.forfeit_fault.kind is kind
    assert report.forfeit_fault.seat == Seat.FIRST
    assert report.match is not None
    assert report.match.result is not None
    assert report.match.result.termination is Termination.FORFEIT
    assert report.winner is Seat.SECOND


def test_quitting_abandons_the_match_and_stops_the_bot() -> None:
    human = Scripted(quit_at=3)
    marker = uuid.uuid4().hex
    bot = dataclasses.replace(resolve_bot("first"), env={"AEGIS_TEST_MARKER": marker})
    outcome = play_human_match(bot, human, seed=5, options=FAST, time_control=CONTROL)
    assert _marked(marker) == []
    assert outcome.abandoned
    assert not outcome.finished
    assert outcome.report.winner is None
    assert human.started is not None
    assert human.started.players == ("human", "first")


def test_a_human_match_runs_on_the_wall_clock_and_tells_the_bot_so(tmp_path: Path) -> None:
    """A person's CPU time means nothing: the bot is charged wall time, even where this
    machine keeps the CPU clock, and its match_start says so."""
    human = Scripted()
    spinner = BotSpec("clockwork", (sys.executable, str(CLOCKWORK), "spin", "0"))
    with BotServer(log_dir=tmp_path) as server:
        outcome = play_human_match(
            spinner, human, seed=5, options=FAST, time_control=CONTROL, server=server
        )
    assert outcome.finished
    assert human.started is not None
    assert human.started.time_control.clock is Clock.WALL
    assert "CLOCKWORK clock=wall" in (tmp_path / "clockwork.log").read_text()
    lines = outcome.report.record_lines()
    actions = [action for line in lines if line["type"] == "game" for action in line["actions"]]
    assert actions
    assert all("ms" in action and "cpu_ms" not in action for action in actions)


def test_a_human_match_refuses_the_cpu_clock_by_name() -> None:
    control = dataclasses.replace(CONTROL, clock=Clock.CPU)
    with pytest.raises(ValueError, match="a human match runs on the wall clock"):
        play_human_match(resolve_bot("first"), Scripted(), seed=5, time_control=control)


def test_check_action_gives_the_engines_reason() -> None:
    game = new_game(RulesOptions(), Seat.FIRST, deal("AS KS QS JS 10S", "AH KH QH JH 10H", "2C"))
    assert check_action(game, Seat.FIRST, parse_action("stop")) is None
    reason = check_action(game, Seat.FIRST, parse_action("exchange 2D"))
    assert reason is not None
    assert "not in hand: 2D" in reason
    assert "turn" in (check_action(game, Seat.SECOND, parse_action("stop")) or "")
