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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol.views import EventTracker, decision_kind, legal_to_wire, observation_to_wire
from referee.bots import BotSpec
from referee.faults import Fault, FaultKind
from referee.records import VOID_TERMINATION, game_line, match_end_line, match_start_line
from referee.rules.actions import Action, parse_action
from referee.rules.errors import ActionParseError, IllegalActionError
from referee.rules.game import (
    GameState,
    Observation,
    Seat,
    apply,
    legal_actions,
    observation,
    shuffled_deck,
)
from referee.rules.match import (
    MatchResult,
    MatchState,
    draw_first_master,
    finish_game,
    forfeit,
    new_match,
    start_game,
)
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxPlan
from referee.server import BotServer, BotSession, RemoteListener, Reply

__all__ = [
    "MatchReport",
    "MatchRunner",
    "TimeControl",
    "apply_bot_reply",
    "decide_message",
    "match_end_message",
    "match_start_message",
]

_SEATS = (Seat.FIRST, Seat.SECOND)


@dataclass(frozen=True, slots=True)
class TimeControl:
    """The clock: per-decision deadline, optional per-match bank, and a warm-up allowance for
    the handshake, the ``ready`` and each bot's first decision of a match."""

    decision_ms: int = 1000
    bank_ms: int | None = None
    warmup_ms: int = 5000

    def __post_init__(self) -> None:
        if self.decision_ms <= 0 or self.warmup_ms < 0 or (self.bank_ms or 0) < 0:
            raise ValueError(f"invalid time control {self}")

    def to_json(self) -> dict[str, int | None]:
        """As sent in ``match_start``."""
        return {
            "decision_ms": self.decision_ms,
            "bank_ms": self.bank_ms,
            "warmup_ms": self.warmup_ms,
        }


@dataclass(slots=True)
class MatchReport:
    """Everything about one played match: the outcome, every game, timings and faults."""

    match_id: str
    players: tuple[str, str]
    seed: int
    match: MatchState | None
    games: list[GameState] = field(default_factory=list)
    #: Per game, the decision time in ms of each action in ``history`` order.
    timings: list[list[float]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    #: The fault that ended the match, if it was forfeited.
    forfeit_fault: Fault | None = None
    #: Both bots failed before the first game: no winner.
    void: bool = False

    @property
    def winner(self) -> Seat | None:
        """The winning seat, None for a void match."""
        if self.match is None or self.match.result is None:
            return None
        return self.match.result.winner

    def record_lines(self, match_number: int = 1) -> list[dict[str, Any]]:
        """The match in the record format (``docs/records.md``), with timings and faults.

        A void match (both bots failed before the first game) has a ``match_start`` line and
        a ``match_end`` line with termination ``void`` and no winner.
        """
        assert self.match is not None
        lines = [match_start_line(match_number, self.match, self.players, self.seed)]
        lines.extend(
            game_line(match_number, game, timings)
            for game, timings in zip(self.games, self.timings, strict=True)
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
    ) -> None:
        """``remote``: listen for remote bots there; ``remote_connect_s``: how long a match
        waits for a remote bot that is not connected (default: the warm-up allowance);
        ``sandbox``: how bots are started (:func:`referee.sandbox.plan_sandbox`; default
        unsandboxed)."""
        self.options = options or RulesOptions()
        self.time_control = time_control or TimeControl()
        self.heartbeat_ms = heartbeat_ms
        self.remote_connect_s = remote_connect_s
        self.server = BotServer(
            heartbeat_ms=heartbeat_ms, log_dir=log_dir, remote=remote, sandbox=sandbox
        )
        #: Sessions kept from match to match (keep-alive and remote bots), by bot name.
        self._sessions: dict[str, list[BotSession]] = {}
        #: Sessions started for the match being played, stopped at its end.
        self._fresh: list[BotSession] = []
        #: Per bot name: faults by kind, restarts, matches.
        self.counters: dict[str, Counter[str]] = {}

    # -- bot processes -----------------------------------------------------------------------

    def _session(self, spec: BotSpec, taken: Sequence[BotSession]) -> tuple[BotSession, bool]:
        """A session for ``spec`` not in ``taken``, and whether it was just started (and so
        still owes its hello): a new process unless the bot is kept alive (or remote) and
        its process is healthy. A bot playing itself gets two processes."""
        counters = self.counters.setdefault(spec.name, Counter())
        if not spec.keep_alive and not spec.is_remote:
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
        return self.server.expect_remote(spec) if spec.is_remote else self.server.start_bot(spec)

    def _handshake(self, session: BotSession) -> None:
        timeout_s = self.time_control.warmup_ms / 1000
        if session.spec.is_remote and self.remote_connect_s is not None:
            timeout_s = self.remote_connect_s  # it dials in when its owner starts it
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
        outcome = self.server.request(session, {"type": "ping"}, "pong", self.heartbeat_ms / 1000)
        session.pending_fault = None
        return not (isinstance(outcome, Fault) and outcome.kind is FaultKind.DISCONNECT)

    def _answers_ping(self, session: BotSession) -> bool:
        """Ping a bot that has been idle longer than the heartbeat before giving it a match;
        one that does not answer in time is restarted rather than blamed."""
        if time.monotonic() - session.last_heard < self.heartbeat_ms / 1000:
            return True
        outcome = self.server.request(session, {"type": "ping"}, "pong", self.heartbeat_ms / 1000)
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

    def play(self, specs: Sequence[BotSpec], seed: int, match_id: str = "1") -> MatchReport:
        """Play one match, seat 0 = ``specs[0]``; all chance comes from ``seed``."""
        players = (specs[0].name, specs[1].name)
        report = MatchReport(match_id, players, seed, None)
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
            return self._play(report, sessions, seed, match_id, players)
        finally:
            self._retire(sessions)

    def _play(
        self,
        report: MatchReport,
        sessions: list[BotSession],
        seed: int,
        match_id: str,
        players: tuple[str, str],
    ) -> MatchReport:
        rng = random.Random(seed)
        match = new_match(self.options, draw_first_master(rng))
        report.match = match
        failed = [
            self._seat_fault(session.handshake_fault, seat, None, None)
            for seat, session in zip(_SEATS, sessions, strict=True)
            if session.handshake_fault is not None
        ]
        if not failed:
            failed = self._start(sessions, match_id, players)
        if failed:
            return self._end_early(report, sessions, failed, match_id)
        return self._play_games(report, sessions, rng, match_id)

    def _start(
        self, sessions: list[BotSession], match_id: str, players: tuple[str, str]
    ) -> list[Fault]:
        failed = []
        for seat, session in zip(_SEATS, sessions, strict=True):
            outcome = self.server.request(
                session,
                match_start_message(
                    match_id, seat, players[1 - seat], self.options, self.time_control
                ),
                "ready",
                self.time_control.warmup_ms / 1000,
            )
            if isinstance(outcome, Fault):
                failed.append(self._seat_fault(outcome, seat, None, None))
        return failed

    def _play_games(
        self, report: MatchReport, sessions: list[BotSession], rng: random.Random, match_id: str
    ) -> MatchReport:
        match = report.match
        assert match is not None
        control = self.time_control
        banks = [control.bank_ms, control.bank_ms]
        first_decision = [True, True]
        trackers = [EventTracker(), EventTracker()]
        while match.result is None:
            game = start_game(match, shuffled_deck(rng))
            timings: list[float] = []
            report.games.append(game)
            report.timings.append(timings)
            while game.to_move is not None:
                seat = game.to_move
                seen = observation(game, seat)
                trackers[seat].observe(seen)
                legal = legal_actions(game)
                bank = banks[seat]
                allowance = control.decision_ms + (bank or 0)
                if first_decision[seat]:
                    allowance += control.warmup_ms
                    first_decision[seat] = False
                tracker = trackers[seat]
                outcome = self.server.request(
                    sessions[seat],
                    decide_message(
                        match_id,
                        seen,
                        legal,
                        tracker.take(),
                        control,
                        bank,
                        tracker.observation_map(seen),
                    ),
                    "act",
                    allowance / 1000,
                )
                decision_number = len(game.history) + 1
                if isinstance(outcome, Reply):
                    if bank is not None and outcome.elapsed_ms > control.decision_ms:
                        banks[seat] = max(0, bank - int(outcome.elapsed_ms - control.decision_ms))
                    applied = apply_bot_reply(self.server, game, seat, outcome, sessions[seat])
                    if isinstance(applied, GameState):
                        game = applied
                        timings.append(round(outcome.elapsed_ms, 3))
                        report.games[-1] = game
                        other = sessions[1 - seat]
                        if other.pending_fault is None:
                            continue
                        outcome, seat = other.pending_fault, _SEATS[1 - seat]
                    else:
                        outcome = applied
                fault = self._seat_fault(outcome, seat, game.game_number, decision_number)
                return self._forfeit(report, sessions, fault, match_id, trackers)
            for seat in _SEATS:
                trackers[seat].observe(observation(game, seat))
            match = finish_game(match, game)
            report.match = match
        for seat in _SEATS:
            self._notify_end(sessions[seat], match_id, trackers[seat].take(), report)
        return report

    def _seat_fault(
        self, fault: Fault, seat: Seat, game: int | None, decision: int | None
    ) -> Fault:
        fault = dataclasses.replace(fault, seat=int(seat), game=game, decision=decision)
        self.counters.setdefault(fault.bot, Counter())[fault.kind.value] += 1
        return fault

    def _forfeit(
        self,
        report: MatchReport,
        sessions: list[BotSession],
        fault: Fault,
        match_id: str,
        trackers: list[EventTracker],
    ) -> MatchReport:
        assert report.match is not None
        report.match = forfeit(report.match, _SEATS[fault.seat])
        report.faults.append(fault)
        report.forfeit_fault = fault
        for seat in _SEATS:
            self._notify_end(sessions[seat], match_id, trackers[seat].take(), report)
        return report

    def _end_early(
        self, report: MatchReport, sessions: list[BotSession], failed: list[Fault], match_id: str
    ) -> MatchReport:
        assert report.match is not None
        report.faults.extend(failed)
        if len(failed) == 2:
            report.void = True
            report.forfeit_fault = failed[0]
            for session in sessions:
                if session.connected and not session.remote:  # a remote bot stays for the next
                    self.server.stop_bot(session, "match void")
            return report
        report.match = forfeit(report.match, _SEATS[failed[0].seat])
        report.forfeit_fault = failed[0]
        for seat in _SEATS:
            self._notify_end(sessions[seat], match_id, [], report)
        return report

    def _notify_end(
        self, session: BotSession, match_id: str, events: list[dict[str, Any]], report: MatchReport
    ) -> None:
        if not session.connected or report.match is None or report.match.result is None:
            return
        fault = report.forfeit_fault
        self.server.notify(session, match_end_message(match_id, events, report.match.result, fault))
        if fault is not None and fault.bot == session.name and session.pending_fault is None:
            # A bot that faulted may be in any state: start it afresh for its next match.
            session.pending_fault = fault


# -- the messages of a match, shared with every driver of a bot (the runner, a human match) ---


def match_start_message(
    match_id: str, seat: Seat, opponent: str, options: RulesOptions, control: TimeControl
) -> dict[str, Any]:
    """The ``match_start`` request to the bot in ``seat``."""
    return {
        "type": "match_start",
        "match_id": match_id,
        "seat": int(seat),
        "opponent": opponent,
        "rules": options.to_dict(),
        "time_control": control.to_json(),
    }


def decide_message(
    match_id: str,
    seen: Observation,
    legal: Sequence[Action],
    events: list[dict[str, Any]],
    control: TimeControl,
    bank_ms: int | None,
    observation_map: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``decide`` request for one decision, built from the seat's observation only.

    ``observation_map`` is ``observation_to_wire(seen)`` when the caller has it already
    (:meth:`EventTracker.observation_map` builds it faster).
    """
    return {
        "type": "decide",
        "match_id": match_id,
        "decision": decision_kind(seen),
        "events": events,
        "observation": observation_to_wire(seen) if observation_map is None else observation_map,
        "legal": legal_to_wire(legal),
        "deadline_ms": control.decision_ms,
        "bank_ms": bank_ms,
    }


def match_end_message(
    match_id: str, events: list[dict[str, Any]], result: MatchResult, fault: Fault | None
) -> dict[str, Any]:
    """The ``match_end`` notice: the last events, the result and the forfeit if any."""
    return {
        "type": "match_end",
        "match_id": match_id,
        "events": events,
        "result": {
            "winner": int(result.winner),
            "termination": result.termination.value,
            "scores": list(result.scores),
            "games": result.games,
            "forfeit": None
            if fault is None
            else {"seat": fault.seat, "fault": fault.kind.value, "detail": fault.detail},
        },
    }


def apply_bot_reply(
    server: BotServer, game: GameState, seat: Seat, reply: Reply, session: BotSession
) -> GameState | Fault:
    """The game after the bot's ``act``; an unparsable or illegal action is answered with an
    ``error`` and becomes an illegal-action fault."""
    text = reply.message["action"]
    try:
        return apply(game, seat, parse_action(text))
    except (ActionParseError, IllegalActionError) as error:
        server.notify(
            session,
            {
                "type": "error",
                "reply_to": reply.message.get("id"),
                "code": "illegal_action",
                "message": str(error),
            },
        )
        session.counters[FaultKind.ILLEGAL_ACTION.value] += 1
        return Fault(
            FaultKind.ILLEGAL_ACTION,
            int(seat),
            session.name,
            f"{text!r}: {error}",
            stderr_tail=session.stderr_tail(),
        )
