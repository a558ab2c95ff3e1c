"""A person against a bot: a match in which one seat is chosen in-process (by a person at a
terminal, in practice) and the other is a bot process speaking the protocol.

The bot is treated exactly as :class:`~referee.runner.MatchRunner` treats it: the same player
(:class:`~referee.runner.BotPlayer`) in the same match loop, so the same messages, the same
clock with its warm-up and bank, and every failure a fault that forfeits the match. The
human seat has no clock and is never blamed for anything: it may only leave, by raising
:class:`HumanQuit`. What the human is shown comes from the engine's ``observation`` of its
seat alone, as protocol events, fed after every action so that play appears as it happens.

A human match runs on the wall clock: a person's CPU time means nothing, so the person's
decisions are timed by the wall clock (for the record only: a person has no deadline), and
the bot is charged wall time too (its ``match_start`` says ``wall``), the time the person
waits for it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from protocol.views import EventTracker
from referee.bots import BotSpec
from referee.faults import Fault
from referee.rules.actions import Action
from referee.rules.cards import Card
from referee.rules.errors import AegisError
from referee.rules.game import GameState, Observation, Seat, apply, legal_actions, observation
from referee.rules.match import draw_first_master, new_match
from referee.rules.options import RulesOptions
from referee.rules.play import InProcessPlayer, Player, play_match
from referee.runner import BotPlayer, MatchReport
from referee.sandbox import SandboxPlan
from referee.server import BotServer
from referee.session import BotSession
from referee.time_control import Clock, TimeControl

__all__ = [
    "HumanMatch",
    "HumanMatchStart",
    "HumanPlayer",
    "HumanQuit",
    "HumanSeat",
    "check_action",
    "play_human_match",
]


class HumanQuit(Exception):  # noqa: N818 (a request to leave, not an error)
    """The person leaves the match before its end (quit, end of input)."""


@dataclass(frozen=True, slots=True)
class HumanMatchStart:
    """What the human is told before the first game: who plays where, under which rules."""

    match_id: str
    players: tuple[str, str]
    human: Seat
    seed: int
    options: RulesOptions
    time_control: TimeControl
    first_draw: tuple[Card, Card]
    first_master: Seat

    @property
    def bot(self) -> Seat:
        """The bot's seat."""
        return self.human.other


class HumanSeat(Protocol):
    """The in-process side of a human match: told what happens, asked for its actions."""

    def start(self, start: HumanMatchStart) -> None:
        """The match is about to begin (the bot may still be starting)."""

    def show(self, seen: Observation, events: list[dict[str, Any]]) -> None:
        """Something happened: the protocol events since the last call and the seat's view."""

    def choose(
        self, seen: Observation, legal: Sequence[Action], check: Callable[[Action], str | None]
    ) -> Action:
        """The seat's action. ``check`` returns the engine's reason if an action is illegal,
        else None. Raise :class:`HumanQuit` to leave the match."""


@dataclass(slots=True)
class HumanMatch:
    """A finished or abandoned human match."""

    report: MatchReport
    #: The human left before the end; ``report.match.result`` is then None.
    abandoned: bool = False

    @property
    def finished(self) -> bool:
        """True if the match has a result (by play or by the bot's forfeit)."""
        return self.report.match is not None and self.report.match.result is not None


def check_action(game: GameState, seat: Seat, action: Action) -> str | None:
    """The engine's reason for refusing ``action`` by ``seat``, or None if it is legal."""
    try:
        apply(game, seat, action)
    except AegisError as error:
        return str(error)
    return None


def play_human_match(
    bot: BotSpec,
    human: HumanSeat,
    *,
    seed: int,
    human_seat: Seat = Seat.FIRST,
    human_name: str = "human",
    options: RulesOptions | None = None,
    time_control: TimeControl | None = None,
    match_id: str = "1",
    server: BotServer | None = None,
    sandbox: SandboxPlan | None = None,
) -> HumanMatch:
    """Play one match between ``human`` in ``human_seat`` and the bot process ``bot``.

    The match runs on the wall clock (``time_control.clock`` ``cpu`` raises ValueError). All
    chance comes from ``seed``, as in :meth:`MatchRunner.play`, so the deals are those of
    a bot match with the same seed. The bot is started here and always stopped before
    returning, also when the human quits or Ctrl-C interrupts; ``server`` (closed by its
    owner) is made and closed here if not given, starting the bot as ``sandbox`` says.
    """
    options = options or RulesOptions()
    control = time_control or TimeControl()
    if control.clock is Clock.CPU:
        raise ValueError(
            "a human match runs on the wall clock (a person's CPU time means nothing): "
            "time_control.clock cpu cannot apply"
        )
    control = dataclasses.replace(control, clock=Clock.WALL)
    human_seat = Seat(human_seat)
    names = [human_name, human_name]
    names[human_seat.other] = bot.name
    players = (names[0], names[1])
    rng = random.Random(seed)
    match = new_match(options, draw_first_master(rng))
    outcome = HumanMatch(MatchReport(match_id, players, seed, match))
    own_server = server is None
    active = server or BotServer(sandbox=sandbox)
    session: BotSession | None = None
    farewell = "match over"
    try:
        human.start(
            HumanMatchStart(
                match_id,
                players,
                human_seat,
                seed,
                options,
                control,
                match.first_draw,
                match.first_master,
            )
        )
        session = active.start_bot(bot)
        if session.handshake_fault is None:
            active.handshake(session, control.warmup_ms / 1000)
        bot_player = BotPlayer(
            active, session, match_id, human_seat.other, human_name, control, seed, Clock.WALL
        )
        human_player = HumanPlayer(human, human_seat)
        seats: list[Player[Fault]] = [human_player, bot_player]
        if human_seat is Seat.SECOND:
            seats.reverse()
        play_match(outcome.report, rng, seats)
    except (HumanQuit, KeyboardInterrupt):
        outcome.abandoned = True
        farewell = "the human left the match"
    finally:
        if session is not None:
            active.stop_bot(session, farewell)
        if own_server:
            active.close()
    return outcome


class HumanPlayer(InProcessPlayer):
    """The in-process seat of a human match as a player of the match loop: shown every
    position as it happens, asked for its actions, never at fault and without a clock."""

    watches = True

    def __init__(self, human: HumanSeat, seat: Seat) -> None:
        self.human = human
        self.seat = seat
        self.events = EventTracker()
        self.last_ms = 0.0

    def decide(self, game: GameState, seat: Seat) -> Action:
        """The person's choice, timed for the record."""
        started = time.monotonic()

        def check(action: Action) -> str | None:
            return check_action(game, seat, action)

        action = self.human.choose(observation(game, seat), legal_actions(game), check)
        self.last_ms = round((time.monotonic() - started) * 1000, 3)
        return action

    def watch(self, game: GameState) -> None:
        """Show the position and the events that led to it."""
        seen = observation(game, self.seat)
        self.events.observe(seen)
        self.human.show(seen, self.events.take())
