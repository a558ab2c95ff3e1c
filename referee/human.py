"""A person against a bot: a match in which one seat is chosen in-process (by a person at a
terminal, in practice) and the other is a bot process speaking the protocol.

The bot is treated exactly as :class:`~referee.runner.MatchRunner` treats it: the same
``match_start``, ``decide`` and ``match_end`` messages (the runner's own builders), the same
clock with its warm-up and bank, and every failure a fault that forfeits the match. The
human seat has no clock and is never blamed for anything: it may only leave, by raising
:class:`HumanQuit`. What the human is shown comes from the engine's ``observation`` of its
seat alone, as protocol events, fed after every action so that play appears as it happens.
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
from referee.rules.game import (
    GameState,
    Observation,
    Seat,
    apply,
    legal_actions,
    observation,
    shuffled_deck,
)
from referee.rules.match import draw_first_master, finish_game, forfeit, new_match, start_game
from referee.rules.options import RulesOptions
from referee.runner import (
    MatchReport,
    TimeControl,
    apply_bot_reply,
    decide_message,
    match_end_message,
    match_start_message,
)
from referee.sandbox import SandboxPlan
from referee.server import BotServer, BotSession, Reply

__all__ = [
    "HumanMatch",
    "HumanMatchStart",
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

    All chance comes from ``seed``, as in :meth:`MatchRunner.play`, so the deals are those of
    a bot match with the same seed. The bot is started here and always stopped before
    returning, also when the human quits or Ctrl-C interrupts; ``server`` (closed by its
    owner) is made and closed here if not given, starting the bot as ``sandbox`` says.
    """
    options = options or RulesOptions()
    control = time_control or TimeControl()
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
        driver = _Driver(active, session, human, outcome.report, options, control, human_seat, rng)
        driver.play()
    except (HumanQuit, KeyboardInterrupt):
        outcome.abandoned = True
        farewell = "the human left the match"
    finally:
        if session is not None:
            active.stop_bot(session, farewell)
        if own_server:
            active.close()
    return outcome


class _Driver:
    """One human match in progress: the loop of :meth:`MatchRunner._play_games` with one
    seat asked in-process."""

    def __init__(
        self,
        server: BotServer,
        session: BotSession,
        human: HumanSeat,
        report: MatchReport,
        options: RulesOptions,
        control: TimeControl,
        human_seat: Seat,
        rng: random.Random,
    ) -> None:
        self.server = server
        self.session = session
        self.human = human
        self.report = report
        self.options = options
        self.control = control
        self.human_seat = human_seat
        self.bot_seat = human_seat.other
        self.rng = rng
        self.bot_events = EventTracker()
        self.human_events = EventTracker()
        self.bank = control.bank_ms
        self.first_decision = True

    def play(self) -> None:
        """Start the bot's match, play every game, tell the bot the result."""
        fault = self._start()
        if fault is not None:
            self._forfeit(self._blame(fault, None, None))
            return
        match = self.report.match
        assert match is not None
        while match.result is None:
            game = start_game(match, shuffled_deck(self.rng))
            self.report.games.append(game)
            self.report.timings.append([])
            self._show(game)
            while game.to_move is not None:
                played = self._turn(game)
                if isinstance(played, Fault):
                    self._forfeit(played)
                    return
                game = played
                self.report.games[-1] = game
                self._show(game)
            self.bot_events.observe(observation(game, self.bot_seat))
            match = finish_game(match, game)
            self.report.match = match
        self._notify_end()

    def _start(self) -> Fault | None:
        """The handshake and ``match_start``; the fault if the bot fails either."""
        session = self.session
        warmup = self.control.warmup_ms / 1000
        if session.handshake_fault is not None:
            return session.handshake_fault
        fault = self.server.handshake(session, warmup)
        if fault is not None:
            return fault
        players = self.report.players
        message = match_start_message(
            self.report.match_id,
            self.bot_seat,
            players[self.human_seat],
            self.options,
            self.control,
        )
        reply = self.server.request(session, message, "ready", warmup)
        return reply if isinstance(reply, Fault) else None

    def _show(self, game: GameState) -> None:
        seen = observation(game, self.human_seat)
        self.human_events.observe(seen)
        self.human.show(seen, self.human_events.take())

    def _turn(self, game: GameState) -> GameState | Fault:
        """The next action of the game, whoever's turn it is."""
        seat = game.to_move
        assert seat is not None
        seen = observation(game, seat)
        legal = legal_actions(game)
        timings = self.report.timings[-1]
        if seat == self.human_seat:
            started = time.monotonic()

            def check(action: Action) -> str | None:
                return check_action(game, seat, action)

            action = self.human.choose(seen, legal, check)
            after = apply(game, seat, action)  # a chooser that ignores ``check`` fails here
            timings.append(round((time.monotonic() - started) * 1000, 3))
            return after
        return self._bot_turn(game, seat, seen, legal)

    def _bot_turn(
        self, game: GameState, seat: Seat, seen: Observation, legal: Sequence[Action]
    ) -> GameState | Fault:
        control = self.control
        self.bot_events.observe(seen)
        allowance = control.decision_ms + (self.bank or 0)
        if self.first_decision:
            allowance += control.warmup_ms
            self.first_decision = False
        message = decide_message(
            self.report.match_id, seen, legal, self.bot_events.take(), control, self.bank
        )
        reply = self.server.request(self.session, message, "act", allowance / 1000)
        decision = len(game.history) + 1
        if not isinstance(reply, Reply):
            return self._blame(reply, game.game_number, decision)
        if self.bank is not None and reply.elapsed_ms > control.decision_ms:
            self.bank = max(0, self.bank - int(reply.elapsed_ms - control.decision_ms))
        applied = apply_bot_reply(self.server, game, seat, reply, self.session)
        if isinstance(applied, Fault):
            return self._blame(applied, game.game_number, decision)
        self.report.timings[-1].append(round(reply.elapsed_ms, 3))
        return applied

    def _blame(self, fault: Fault, game: int | None, decision: int | None) -> Fault:
        return dataclasses.replace(fault, seat=int(self.bot_seat), game=game, decision=decision)

    def _forfeit(self, fault: Fault) -> None:
        assert self.report.match is not None
        self.report.match = forfeit(self.report.match, self.bot_seat)
        self.report.faults.append(fault)
        self.report.forfeit_fault = fault
        self._notify_end()

    def _notify_end(self) -> None:
        match = self.report.match
        if not self.session.connected or match is None or match.result is None:
            return
        self.server.notify(
            self.session,
            match_end_message(
                self.report.match_id,
                self.bot_events.take(),
                match.result,
                self.report.forfeit_fault,
            ),
        )
