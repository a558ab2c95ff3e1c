"""The match runner: plays matches between bot processes over the protocol.

The rules engine decides everything about the game; this module only moves messages, keeps
the clock and turns every bot failure into a fault that forfeits the match. Nothing a bot
does can raise out of :meth:`MatchRunner.play`.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from protocol import builders
from protocol.codes import ErrorCode
from protocol.sdk_views import read_bot_action
from protocol.views import EventTracker
from referee.bots import BotSpec
from referee.cgroups import detect_cgroups
from referee.cpu_clock import resolve_clock
from referee.faults import Fault, FaultKind
from referee.listeners import RemoteLink, RemoteListener
from referee.records import VOID_TERMINATION, game_line, match_end_line, match_start_line
from referee.rules.actions import Action
from referee.rules.errors import ActionParseError, AegisError, IllegalActionError
from referee.rules.game import GameState, Seat, legal_actions, observation
from referee.rules.match import MatchState, draw_first_master, new_match
from referee.rules.options import RulesOptions
from referee.rules.play import MatchCourse, play_match
from referee.sandbox import SandboxPlan
from referee.server import BotServer, Reply
from referee.session import BotSession
from referee.time_control import Clock, TimeControl

__all__ = ["BotPlayer", "MatchReport", "MatchRunner"]

_SEATS = (Seat.FIRST, Seat.SECOND)
#: Seconds a worker waits for its hub's answer beyond the wait it asked the hub for.
_HUB_MARGIN_S = 5.0


class MatchReport(MatchCourse[Fault]):
    """Everything about one played match: the outcome, every game, timings and faults."""

    __slots__ = ()

    def record_lines(self, match_number: int = 1) -> list[dict[str, Any]]:
        """The match in the record format (``docs/records.md``), with timings and faults.

        A void match (both bots failed before the first game) has a ``match_start`` line and
        a ``match_end`` line with termination ``void`` and no winner.
        """
        assert self.match is not None
        lines = [match_start_line(match_number, self.match, self.players, self.seed)]
        lines.extend(
            game_line(match_number, game, timings, charges)
            for game, timings, charges in zip(self.games, self.timings, self.charges, strict=True)
        )
        if self.void or self.match.result is None:
            lines.append(
                {
                    "type": "match_end",
                    "match": match_number,
                    "winner": None,
                    "termination": VOID_TERMINATION,
                    "scores": [0, 0],
                    "games": 0,
                    "faults": [fault.to_json() for fault in self.faults],
                }
            )
            return lines
        forfeit_fault = self.forfeit_fault.to_json() if self.forfeit_fault else None
        others = [fault.to_json() for fault in self.faults if fault is not self.forfeit_fault]
        lines.append(match_end_line(match_number, self.match.result, forfeit_fault, others))
        return lines


class MatchRunner:
    """Plays matches. Every match starts its bots afresh, both at once, and stops them at
    its end, so no memory carries from one match to the next; a bot with ``keep_alive``
    plays match after match in one process instead (restarted if it crashed)."""

    def __init__(
        self,
        *,
        options: RulesOptions | None = None,
        time_control: TimeControl | None = None,
        log_dir: Path | None = None,
        heartbeat_ms: int = 5000,
        remote: RemoteListener | None = None,
        remote_connect_s: float | None = None,
        sandbox: SandboxPlan | None = None,
        remote_link: RemoteLink | None = None,
        log_budget_dir: Path | None = None,
    ) -> None:
        """``log_dir``: keep each bot's output there; ``log_budget_dir``: share the bots' log
        caps through ledgers there with the other runners of a run (default: each bot's
        cap holds over this runner's processes of it); ``remote``: listen for remote bots
        there; ``remote_link``: or have a tournament's hub (:mod:`referee.hub`) lend them, one
        match at a time; ``remote_connect_s``: how long a match waits for a remote bot that is
        not connected (default: the warm-up allowance); ``sandbox``: how bots are started
        (:func:`referee.sandbox.plan_sandbox`; default unsandboxed)."""
        self.options = options or RulesOptions()
        self.time_control = time_control or TimeControl()
        #: The clock of the bots this runner starts, and why it is not the CPU clock if it
        #: fell back (raises ClockUnavailableError if the CPU clock is required and missing).
        self.clock, self.clock_warning = resolve_clock(self.time_control, detect_cgroups())
        self.heartbeat_ms = heartbeat_ms
        self.remote_connect_s = remote_connect_s
        self.server = BotServer(
            heartbeat_ms=heartbeat_ms,
            log_dir=log_dir,
            remote=remote,
            sandbox=sandbox,
            remote_link=remote_link,
            log_budget_dir=log_budget_dir,
        )
        #: Sessions kept from match to match (keep-alive and remote bots), by bot name.
        self._sessions: dict[str, list[BotSession]] = {}
        #: Sessions started for the match being played, stopped at its end.
        self._fresh: list[BotSession] = []
        #: Per bot name: faults by kind, restarts, matches.
        self.counters: dict[str, Counter[str]] = {}
        #: Remote bots the match being played does not wait for (the tournament gave up).
        self._absent: frozenset[str] = frozenset()

    # -- bot processes -----------------------------------------------------------------------

    def _session(self, spec: BotSpec, taken: Sequence[BotSession]) -> tuple[BotSession, bool]:
        """A session for ``spec`` not in ``taken``, and whether it was just started (and so
        still owes its hello): a new process unless the bot is kept alive (or remote) and
        its process is healthy. A bot playing itself gets two processes."""
        counters = self.counters.setdefault(spec.name, Counter())
        # A remote bot lent by a hub is borrowed for the match and given back at its end.
        if not spec.keep_alive and (not spec.is_remote or self.server.links_remote):
            fresh = self._launch(spec)
            self._fresh.append(fresh)
            return fresh, True
        pool = self._sessions.setdefault(spec.name, [])
        for index, session in enumerate(pool):
            if session in taken:
                continue
            if session.remote:
                # A remote bot cannot be restarted by us, and a shutdown would end it for
                # good. Keep a connection that works, even if the bot was slow (forget the
                # fault); await the bot again if its connection is gone.
                if session.connected and self._remote_is_there(session):
                    return session, False
                self.server.forget(session)
            else:
                healthy = (
                    session.connected and not session.exited() and session.pending_fault is None
                )
                if healthy and self._answers_ping(session):
                    return session, False
                self.server.stop_bot(session, "restart", grace=0.2)
                counters["restarts"] += 1
            fresh = self._launch(spec)
            pool[index] = fresh
            return fresh, True
        fresh = self._launch(spec)
        pool.append(fresh)
        return fresh, True

    def _launch(self, spec: BotSpec) -> BotSession:
        """Start a bot's process (or await a remote bot); its hello comes later."""
        if not spec.is_remote:
            return self.server.start_bot(spec)
        if not self.server.links_remote:
            return self.server.expect_remote(spec)
        wait_s = self._remote_wait_s()
        absent_s = 0.0 if spec.name in self._absent else wait_s
        return self.server.expect_remote(spec, absent_wait_s=absent_s, busy_wait_s=wait_s)

    def _remote_wait_s(self) -> float:
        if self.remote_connect_s is not None:
            return self.remote_connect_s
        return self.time_control.warmup_ms / 1000

    def _handshake(self, session: BotSession) -> None:
        timeout_s = self.time_control.warmup_ms / 1000
        if session.spec.is_remote:
            timeout_s = self._remote_wait_s()  # it dials in when its owner starts it
            if self.server.links_remote:
                timeout_s += _HUB_MARGIN_S  # the hub keeps the time, and answers

        if session.handshake_fault is None:
            self.server.handshake(session, timeout_s)

    def _retire(self, sessions: Sequence[BotSession]) -> None:
        """At a match's end: thaw its bots, and stop those started for it alone."""
        self.server.thaw_all(sessions)
        ending = [session for session in sessions if session in self._fresh]
        self._fresh = [session for session in self._fresh if session not in ending]
        self.server.stop_bots(ending, "match over")

    def _remote_is_there(self, session: BotSession) -> bool:
        """False if a remote bot's connection is gone; True if it answers a ping or is only
        slow to (still busy with a request that timed out, say)."""
        session.pending_fault = None
        outcome = self.server.request(session, builders.ping(), "pong", self.heartbeat_ms / 1000)
        session.pending_fault = None
        return not (isinstance(outcome, Fault) and outcome.kind is FaultKind.DISCONNECT)

    def _answers_ping(self, session: BotSession) -> bool:
        """Ping a bot that has been idle longer than the heartbeat before giving it a match;
        one that does not answer in time is restarted rather than blamed."""
        if time.monotonic() - session.last_heard < self.heartbeat_ms / 1000:
            return True
        outcome = self.server.request(session, builders.ping(), "pong", self.heartbeat_ms / 1000)
        if isinstance(outcome, Fault):
            session.pending_fault = None
            return False
        return True

    def close(self) -> None:
        """Shut every bot down, kill anything left and release the socket."""
        sessions = [session for pool in self._sessions.values() for session in pool]
        self.server.stop_bots([*sessions, *self._fresh], "referee closing")
        self._sessions.clear()
        self._fresh.clear()
        self.server.close()

    def __enter__(self) -> MatchRunner:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- a match ------------------------------------------------------------------------------

    def play(
        self,
        specs: Sequence[BotSpec],
        seed: int,
        match_id: str = "1",
        *,
        absent: Collection[str] = (),
    ) -> MatchReport:
        """Play one match, seat 0 = ``specs[0]``; all chance comes from ``seed``. Remote bots
        named in ``absent`` are not waited for: unless connected, they forfeit at once."""
        players = (specs[0].name, specs[1].name)
        self._absent = frozenset(absent)
        for spec in specs:
            self.counters.setdefault(spec.name, Counter())["matches"] += 1
        # Read what came in since the last match first: a stray message from a bot becomes
        # its pending fault (so it is restarted, rather than forfeiting the match about to
        # start), and a hello from a remote bot's new connection moves its session.
        self.server.drain()
        sessions: list[BotSession] = []
        try:
            started = []
            for spec in specs:
                session, is_new = self._session(spec, sessions)
                sessions.append(session)
                if is_new:
                    started.append(session)
            # Both bots start at once and say hello in either order: one start-up's wait.
            for session in started:
                self._handshake(session)
            rng = random.Random(seed)
            report = MatchReport(
                match_id, players, seed, new_match(self.options, draw_first_master(rng))
            )
            play_match(
                report,
                rng,
                [
                    BotPlayer(
                        self.server,
                        session,
                        match_id,
                        seat,
                        players[1 - seat],
                        self.time_control,
                        seed,
                        self.clock,
                    )
                    for seat, session in zip(_SEATS, sessions, strict=True)
                ],
            )
            for fault in report.faults:
                self.counters.setdefault(fault.bot, Counter())[fault.kind.value] += 1
            return report
        finally:
            self._retire(sessions)


class BotPlayer:
    """A bot process or a remote bot, through its protocol session, as a player of the match
    loop (:func:`referee.rules.play.play_match`): it builds the bot's messages, keeps its
    clock (the warm-up of its first decision, the bank) and turns every failure into a
    :class:`Fault` that names the seat, the game and the decision."""

    watches = False
    interrupts = True

    def __init__(
        self,
        server: BotServer,
        session: BotSession,
        match_id: str,
        seat: Seat,
        opponent: str,
        control: TimeControl,
        match_seed: int,
        clock: Clock = Clock.WALL,
    ) -> None:
        """``match_seed`` is the seed the match is dealt from; the bot gets its own seed,
        derived from it (:func:`protocol.builders.bot_seed_for`), if it speaks protocol 1.1.
        ``clock``: the runner's clock (:func:`referee.cpu_clock.resolve_clock`)."""
        self.server = server
        self.session = session
        self.match_id = match_id
        self.seat = int(seat)
        self.opponent = opponent
        self.control = control
        self.match_seed = match_seed
        self.bank = control.bank_ms
        #: The clock this bot is charged by: CPU time where the runner keeps the CPU clock
        #: and the server can count this bot's CPU time (not a remote bot), else wall time.
        self.clock = Clock.CPU if clock is Clock.CPU and server.cpu_clocked(session) else Clock.WALL
        self.last_charge: tuple[float, float] | None = None
        self.first_decision = True
        self.events = EventTracker()
        self.last_ms = 0.0
        #: Decisions the bot was asked for.
        self.decisions = 0
        self._text = ""
        self._reply_id: int | None = None

    def _blame(self, fault: Fault, game: int | None, decision: int | None) -> Fault:
        return dataclasses.replace(fault, seat=self.seat, game=game, decision=decision)

    def ready(self) -> Fault | None:
        """The handshake's fault, if the bot failed it."""
        fault = self.session.handshake_fault
        return None if fault is None else self._blame(fault, None, None)

    def start(self, match: MatchState, seat: Seat) -> Fault | None:
        """Send ``match_start`` and wait for ``ready`` (within the warm-up allowance)."""
        seed = builders.bot_seed_for(self.session.protocol, self.match_seed, seat)
        clock = builders.clock_for(self.session.protocol, self.clock.value)
        message = builders.match_start(
            self.match_id, seat, self.opponent, match.options, self.control.to_json(), seed, clock
        )
        outcome = self.server.request(self.session, message, "ready", self.control.warmup_ms / 1000)
        return self._blame(outcome, None, None) if isinstance(outcome, Fault) else None

    def decide(self, game: GameState, seat: Seat) -> Action | Fault:
        """Ask the bot for its action, within the deadline plus bank (and warm-up the first
        time); the fault if it does not answer with a well-formed action in time."""
        control = self.control
        seen = observation(game, seat)
        tracker = self.events
        tracker.observe(seen)
        bank = self.bank
        allowance = control.decision_ms + (bank or 0)
        if self.first_decision:
            allowance += control.warmup_ms
            self.first_decision = False
        self.decisions += 1
        # Under the CPU clock the allowance is CPU ms, the wall clock a backstop.
        cpu_ms = allowance if self.clock is Clock.CPU else None
        outcome = self.server.request(
            self.session,
            builders.decide(
                self.match_id,
                seen,
                legal_actions(game),
                tracker.take(),
                control.decision_ms,
                bank,
                tracker.observation_map(seen),
            ),
            "act",
            allowance / 1000,
            cpu_ms=cpu_ms,
            backstop=control.backstop,
        )
        if not isinstance(outcome, Reply):
            return self._blame(outcome, game.game_number, len(game.history) + 1)
        spent_ms = outcome.elapsed_ms if outcome.charged_ms is None else outcome.charged_ms
        if bank is not None and spent_ms > control.decision_ms:
            self.bank = max(0, bank - int(spent_ms - control.decision_ms))
        self.last_charge = (
            None
            if outcome.charged_ms is None
            else (round(outcome.charged_ms, 3), round(outcome.stall_ms, 3))
        )
        text = outcome.message["action"]
        self._text = text
        self._reply_id = outcome.message.get("id")
        try:
            action = read_bot_action(text)
        except ActionParseError as error:
            return self._illegal(game, error)
        self.last_ms = round(outcome.elapsed_ms, 3)
        return action

    def refused(
        self, game: GameState, seat: Seat, action: Action, error: IllegalActionError
    ) -> Fault:
        """The rules refused the bot's action: answer with an ``error``; its fault."""
        return self._illegal(game, error)

    def _illegal(self, game: GameState, error: AegisError) -> Fault:
        session = self.session
        self.server.notify(
            session, builders.error(self._reply_id, ErrorCode.ILLEGAL_ACTION, str(error))
        )
        session.counters[FaultKind.ILLEGAL_ACTION.value] += 1
        fault = Fault(
            FaultKind.ILLEGAL_ACTION,
            self.seat,
            session.name,
            f"{self._text!r}: {error}",
            stderr_tail=session.stderr_tail(),
        )
        return self._blame(fault, game.game_number, len(game.history) + 1)

    def interrupted(self, game: int, decision: int) -> Fault | None:
        """A fault the bot committed while the other seat was asked (a stray message)."""
        fault = self.session.pending_fault
        return None if fault is None else self._blame(fault, game, decision)

    def watch(self, game: GameState) -> None:
        """Not watching: the bot hears of the game at its decisions."""

    def game_over(self, game: GameState, seat: Seat) -> None:
        """The game's last events go out with the next ``decide`` or the ``match_end``."""
        self.events.observe(observation(game, seat))

    def match_over(self, course: MatchCourse[Fault], seat: Seat) -> None:
        """Send ``match_end``; a void match stops a started bot instead."""
        session = self.session
        if course.void:
            if session.connected and not session.remote:  # a remote bot stays for the next
                self.server.stop_bot(session, "match void")
            return
        match = course.match
        if not session.connected or match is None or match.result is None:
            return
        fault = course.forfeit_fault
        self.server.notify(
            session, builders.match_end(self.match_id, self.events.take(), match.result, fault)
        )
        if fault is not None and fault.bot == session.name and session.pending_fault is None:
            # A bot that faulted may be in any state: start it afresh for its next match.
            session.pending_fault = fault
