"""The conformance checker for bot authors: ``aegis-ref check-bot``.

It starts a bot the way the referee does and runs it through :data:`CHECKLIST`, item by item,
each a small function that returns :class:`Pass` or :class:`Fail` with the reason. The items,
in order:

- ``handshake``: the bot starts, connects and says a valid ``hello`` with its token within
  ``warmup_ms``, offering a version the referee speaks (1.0, 1.1 or 1.2); it is welcomed.
- ``unsupported_version``: a second copy of the bot is offered only a version it cannot speak
  (its ``hello`` is answered with ``reject``, code ``version``); it must exit.
- ``ping``: ``ping`` is answered with ``pong`` within ``heartbeat_ms``.
- ``exchange_decision``, ``bid_decision``, ``play_decision``: a decision of each type is
  answered within ``deadline_ms`` with a legal action.
- ``legal_actions``: positions where the obvious answer is illegal (the slave may not stop,
  the master's bid floor after exchanges, the slave's overbid, the last card).
- ``follow_suit``, ``void_in_led_suit``, ``killer_on_trump_lead``: crafted deals in which the
  bot must follow the led suit, is void in it, or holds a killer facing a trump lead.
- ``unknown_fields``: fields the protocol does not define, at the top level of ``match_start``
  and ``decide``, inside the observation and inside every event, are ignored.
- ``unknown_type``: a message of an unknown type is answered with ``error`` code
  ``unknown_type`` naming its id, and the bot then still answers a ``ping``.
- ``several_matches``: several full matches in one process against an in-process random
  player, under the referee's clock, without a fault; it reports the CPU time of all the
  bot's processes and threads (what a tournament on the CPU clock charges), and says so
  when they used more CPU time than the answers took (several busy at once).
- ``reproducible`` (advice, not a requirement): the same match twice, with the same seed, gets
  the same actions.
- ``shutdown``: after ``shutdown`` the process exits with code 0 within 1 second.
- ``no_leftovers``: once it has exited, no process carrying its token remains.

Every single-decision item (a **probe**) is a match of its own: ``match_start``, one
``decide`` built by :mod:`protocol.views` from a game state the engine reached, and a
``match_end`` in which the checker's imaginary opponent forfeits (or the bot, if it failed).
A probe holds the answer to ``deadline_ms`` although the referee would allow a match's first
decision ``warmup_ms`` more: a bot should not need warm-up time at every match. It still waits
``warmup_ms`` longer, so that a slow answer is reported with its time and the conversation
stays in step.

A **remote bot** (one that runs elsewhere and dials in over CurveZMQ with its key pair) goes
through :data:`REMOTE_CHECKLIST`: the same items but ``unsupported_version`` (the checker
cannot start a second copy of it) and ``no_leftovers`` (it cannot see the bot's machine);
its ``handshake`` is dialling in within ``connect_s`` and saying a valid ``hello``, and its
``shutdown`` is closing the connection within 1 second. A remote bot that fails an item goes
on if it still answers a ``ping``; one whose connection is gone has ``warmup_ms`` to dial in
again, since it cannot be restarted from here.

**The clock.** check-bot times every answer by the wall clock (its ``match_start`` says
``wall``), and where the bot's cgroup counts CPU time it measures that too: the report says
both (:attr:`CheckReport.clock_note`), and why the CPU time was not measured when it was not
(no cgroup CPU accounting here, or a remote bot).

One failure does not stop the check: after a failed item the checker makes sure the bot still
answers a ``ping``, and restarts it if its process is gone or stuck. Every wait is bounded,
and everything the checker started is stopped before :func:`check_bot` returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import random
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from protocol import builders
from protocol.codes import ErrorCode
from protocol.sdk_views import read_bot_action
from protocol.version import SEED_VERSION
from protocol.views import EventTracker, legal_to_wire
from referee.bots import BotSpec, kill_by_token, processes_with_environment
from referee.cgroups import detect_cgroups
from referee.faults import Fault, FaultKind, fault_reason
from referee.listeners import RemoteListener
from referee.rules.actions import parse_action
from referee.rules.cards import DECK, Card, parse_card
from referee.rules.errors import ActionParseError, AegisError, IllegalActionError
from referee.rules.game import GameState, Seat, apply, legal_actions, new_game, observation
from referee.rules.match import MatchResult, Termination, draw_first_master, new_match
from referee.rules.options import RulesOptions
from referee.rules.play import MatchCourse, Player, PolicyPlayer, play_match
from referee.runner import BotPlayer
from referee.sandbox import SandboxPlan
from referee.seeds import derive_seed
from referee.selfplay import RandomPolicy
from referee.server import BotServer
from referee.session import BotSession
from referee.time_control import TimeControl

__all__ = [
    "CHECKLIST",
    "REMOTE_CHECKLIST",
    "Advice",
    "CheckItem",
    "CheckReport",
    "CheckSettings",
    "Fail",
    "ItemResult",
    "Pass",
    "Skip",
    "Status",
    "Verdict",
    "check_bot",
]

#: The only version offered in ``unsupported_version``: one no bot can speak.
FOREIGN_VERSIONS = ("99.0",)
#: Seconds a bot has to exit after ``shutdown`` (protocol section 5).
SHUTDOWN_SECONDS = 1.0
#: Seconds a rejected bot has to exit (protocol section 5).
REJECT_EXIT_SECONDS = 2.0
#: Seconds the bot's children get to follow it out before they count as left behind.
LEFTOVER_GRACE_SECONDS = 0.5
#: The opponent's name in the checker's matches.
OPPONENT_NAME = "aegis-check"
#: Rules of the ``several_matches`` matches, in turn: short matches, and rules that differ
#: from the defaults so that a bot must read them from ``match_start``.
MATCH_RULES = (
    RulesOptions(target_score=10),
    RulesOptions(target_score=10, max_exchange_rounds=0),
    RulesOptions(target_score=10, max_exchange_rounds=2, promise_min_bid=4),
)
#: An extra field the protocol does not define, added by ``unknown_fields``.
UNKNOWN_FIELD = "x_checker_unknown"
_POLL_SECONDS = 0.01


# -- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pass:
    """The item passed; ``reason`` says what was seen."""

    reason: str


@dataclass(frozen=True, slots=True)
class Fail:
    """The item failed; ``reason`` says what went wrong."""

    reason: str


@dataclass(frozen=True, slots=True)
class Skip:
    """The item could not be checked (no bot to check it on); it does not pass."""

    reason: str


@dataclass(frozen=True, slots=True)
class Advice:
    """The bot does not do what the item recommends, which is no requirement: the check still
    passes; ``reason`` says what to change."""

    reason: str


Verdict = Pass | Fail | Skip | Advice


class Status(enum.StrEnum):
    """An item's outcome, as printed."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"
    ADVICE = "ADVICE"


_STATUS = {Pass: Status.PASS, Fail: Status.FAIL, Skip: Status.SKIP, Advice: Status.ADVICE}


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One checklist item's verdict and how long it took."""

    name: str
    description: str
    verdict: Verdict
    seconds: float

    @property
    def status(self) -> Status:
        """PASS, FAIL, SKIP or ADVICE."""
        return _STATUS[type(self.verdict)]

    @property
    def reason(self) -> str:
        """Why the item passed, failed or was skipped."""
        return self.verdict.reason

    def line(self) -> str:
        """``PASS handshake: …``."""
        return f"{self.status} {self.name}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        """The item in the ``--json`` report."""
        return {
            "name": self.name,
            "description": self.description,
            "status": self.status.value.lower(),
            "reason": self.reason,
            "seconds": self.seconds,
        }


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """The clock and the length of a check."""

    decision_ms: int = 1000
    warmup_ms: int = 5000
    heartbeat_ms: int = 5000
    matches: int = 3
    seed: int = 1
    #: How the bot is started: as a tournament starts it (sandboxed where it can be).
    sandbox: SandboxPlan | None = None
    #: A remote bot: seconds it has to dial in and say hello.
    connect_s: float = 60.0

    def __post_init__(self) -> None:
        if min(self.decision_ms, self.warmup_ms, self.heartbeat_ms, self.matches) < 1 or (
            self.connect_s <= 0
        ):
            raise ValueError(f"invalid check settings {self}")


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The whole check: every item's result, in checklist order."""

    bot: str
    command: tuple[str, ...]
    settings: CheckSettings
    items: tuple[ItemResult, ...]
    #: Times the checker had to start the bot afresh after its process was lost.
    restarts: int = 0
    #: The name the bot gave in its hello, if it said one.
    said: str | None = None
    #: Why the bot's CPU time was not measured (None: it was, beside the wall time).
    cpu_time_problem: str | None = None

    @property
    def clock_note(self) -> str:
        """Which clock the check applied: answers timed by the wall clock, and the CPU time
        of the bot's processes and threads measured beside it, or why not."""
        note = (
            f"answers timed by the wall clock (deadline_ms {self.settings.decision_ms}, as a "
            "tournament on clock: wall times them)"
        )
        if self.cpu_time_problem is None:
            return note + (
                "; the CPU time of all the bot's processes and threads measured too (what a "
                "tournament on clock: cpu charges)"
            )
        return note + f"; its CPU time not measured: {self.cpu_time_problem}"

    @property
    def name(self) -> str:
        """The bot's own name (its hello's), else the name the checker gave it (a bundled
        bot's, or its program's file name)."""
        return self.said or self.bot

    @property
    def sandboxed(self) -> bool:
        """Whether the bot ran in a sandbox."""
        return self.settings.sandbox is not None and self.settings.sandbox.enabled

    @property
    def passed(self) -> bool:
        """True only if every item passed (an item with advice does not fail the check)."""
        return all(item.status in (Status.PASS, Status.ADVICE) for item in self.items)

    def summary(self) -> str:
        """One line: how many items passed and which did not."""
        passed = sum(item.status is Status.PASS for item in self.items)
        text = f"{passed} of {len(self.items)} items passed"
        advised = [item.name for item in self.items if item.status is Status.ADVICE]
        if self.passed:
            text += f": {self.name} is ready for a tournament"
            return text + (f"; advice: {', '.join(advised)}" if advised else "")
        if advised:
            text += f"; advice: {', '.join(advised)}"
        for status, label in ((Status.FAIL, "failed"), (Status.SKIP, "not checked")):
            names = [item.name for item in self.items if item.status is status]
            if names:
                text += f"; {label}: {', '.join(names)}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The machine-readable report of ``check-bot --json``."""
        return {
            "bot": self.bot,
            "said": self.said,
            "sandboxed": self.sandboxed,
            "command": list(self.command),
            "passed": self.passed,
            "summary": self.summary(),
            "settings": asdict(self.settings),
            "clock": {
                "answers": "wall",
                "cpu_time_measured": self.cpu_time_problem is None,
                "cpu_time_problem": self.cpu_time_problem,
                "note": self.clock_note,
            },
            "restarts": self.restarts,
            "items": [item.to_json() for item in self.items],
        }


# -- the check --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckItem:
    """One item of the checklist: a name, what it checks, and the check itself."""

    name: str
    description: str
    check: Callable[[_Checker], Verdict]
    #: The item talks to the connected bot: it is skipped when there is none.
    needs_bot: bool = True


def check_bot(
    spec: BotSpec,
    settings: CheckSettings | None = None,
    *,
    listener: RemoteListener | None = None,
    on_result: Callable[[ItemResult], None] | None = None,
) -> CheckReport:
    """Run the bot ``spec`` through :data:`CHECKLIST`; ``on_result`` sees each item's result
    as soon as it is known. Never raises for anything the bot does.

    A remote bot (``spec.curve_public_key``) dials in to ``listener`` with its key pair and
    goes through :data:`REMOTE_CHECKLIST`: the items that make sense for a bot the checker
    did not start."""
    if spec.is_remote and listener is None:
        raise ValueError(f"bot {spec.name!r} is remote: it needs a listener to dial in to")
    settings = settings or CheckSettings()
    results: list[ItemResult] = []
    with _Checker(spec, settings, listener) as checker:
        for item in REMOTE_CHECKLIST if spec.is_remote else CHECKLIST:
            started = time.monotonic()
            verdict = checker.run(item)
            result = ItemResult(
                item.name, item.description, verdict, round(time.monotonic() - started, 3)
            )
            results.append(result)
            if on_result is not None:
                on_result(result)
        restarts = checker.restarts
    said = checker.said
    return CheckReport(
        spec.name, spec.command, settings, tuple(results), restarts, said, checker.cpu_problem()
    )


@dataclass(frozen=True, slots=True)
class _Answer:
    """A bot's answer to one ``decide``: the state after it, or what was wrong with it."""

    state: GameState | None
    action: str | None
    elapsed_ms: float
    problem: str | None = None
    fault: FaultKind | None = None


class _Checker:
    """The checker's side: one server, the bot's current session, restarts and bookkeeping."""

    def __init__(
        self, spec: BotSpec, settings: CheckSettings, listener: RemoteListener | None = None
    ) -> None:
        self.spec = spec
        self.settings = settings
        #: A bot that dials in rather than one the checker starts.
        self.remote = spec.is_remote
        self.clock = TimeControl(decision_ms=settings.decision_ms, warmup_ms=settings.warmup_ms)
        self.server = BotServer(
            heartbeat_ms=settings.heartbeat_ms,
            sandbox=settings.sandbox,
            remote=listener if self.remote else None,
        )
        self.session: BotSession | None = None
        #: Why the bot cannot be used any more (it could not be started), if so.
        self.unavailable: str | None = None
        self.restarts = 0
        self.matches = 0
        self.shutdown_sent = False
        #: The name in the bot's first valid hello.
        self.said: str | None = None
        #: Whether the bot's first process was in a cgroup that counts its CPU time.
        self.cpu_counted: bool | None = None

    def cpu_problem(self) -> str | None:
        """Why the bot's CPU time is not measured, or None if it is."""
        if self.remote:
            return "a remote bot runs on its own machine (a tournament times it by the wall clock)"
        if self.cpu_counted is None:
            return "the bot was never started"
        if self.cpu_counted:
            return None
        problem = detect_cgroups().cpu_clock_problem()
        return problem or "the bot's process is in no cgroup that counts its CPU time"

    def __enter__(self) -> _Checker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the bot (its whole process group and anything carrying its token)."""
        try:
            if self.session is not None:
                self.server.stop_bot(self.session, "conformance check over", grace=0.2)
        finally:
            self.server.close()

    # -- the bot's process ------------------------------------------------------------------

    def start(self, wait_s: float | None = None) -> Fault | None:
        """Start the bot (a remote bot: wait ``wait_s``, by default ``connect_s``, for it to
        dial in) and wait for its hello; None once it is connected."""
        if self.remote:
            session = self.server.expect_remote(self.spec)
            timeout_s = self.settings.connect_s if wait_s is None else wait_s
        else:
            session = self.server.start_bot(self.spec)
            timeout_s = self.settings.warmup_ms / 1000
            if self.cpu_counted is None:
                self.cpu_counted = self.server.cpu_clocked(session)
        self.session = session
        if session.handshake_fault is not None:
            return session.handshake_fault
        fault = self.server.handshake(session, timeout_s)
        if fault is None and self.said is None and session.hello is not None:
            self.said = session.hello.name
        return fault

    def connected(self) -> BotSession:
        """The connected session (only called by items that need the bot)."""
        assert self.session is not None
        return self.session

    def _healthy(self) -> bool:
        session = self.session
        return (
            session is not None
            and session.connected
            and not session.exited()
            and session.pending_fault is None
        )

    def run(self, item: CheckItem) -> Verdict:
        """Run one item: restart a lost bot first, resynchronise after a failure."""
        if item.needs_bot:
            problem = self._ensure_bot()
            if problem is not None:
                return Skip(f"not checked: {problem}")
        verdict = item.check(self)
        if item.needs_bot and isinstance(verdict, Fail):
            self._resync()
        return verdict

    def _ensure_bot(self) -> str | None:
        """None if a connected bot is ready, else why there is none."""
        if self.unavailable is not None:
            return self.unavailable
        if self._healthy():
            return None
        if self.remote:
            return self._recover_remote()
        if self.session is not None:
            self.server.stop_bot(self.session, "restart", grace=0.2)
        self.restarts += 1
        fault = self.start()
        if fault is not None:
            self.unavailable = (
                f"the bot could not be restarted ({fault_reason(fault, self.spec.command)})"
            )
            return self.unavailable
        return None

    def _recover_remote(self) -> str | None:
        """A remote bot cannot be restarted from here: one still connected goes on if it
        answers a ping; one whose connection is gone has ``warmup_ms`` to dial in again."""
        session = self.session
        warmup_s = self.settings.warmup_ms / 1000
        if session is not None and session.connected:
            session.pending_fault = None
            outcome = self.server.request(session, builders.ping(), "pong", warmup_s)
            if not isinstance(outcome, Fault):
                return None
            if outcome.kind is not FaultKind.DISCONNECT:
                reason = fault_reason(outcome, self.spec.command)
                self.unavailable = f"the bot does not answer a ping ({reason})"
                return self.unavailable
        if session is not None:
            self.server.forget(session)
        self.restarts += 1
        fault = self.start(warmup_s)
        if fault is not None:
            reason = fault_reason(fault, self.spec.command)
            self.unavailable = (
                "its connection is gone and it did not dial in again within warmup_ms (a "
                f"remote bot cannot be restarted from here: {reason})"
            )
            return self.unavailable
        return None

    def _resync(self) -> None:
        """After a failure: a generous ping drains late replies and shows the bot is alive;
        a bot that does not answer it is marked for a restart."""
        if not self._healthy():
            return
        session = self.connected()
        outcome = self.server.request(
            session, builders.ping(), "pong", self.settings.warmup_ms / 1000
        )
        if isinstance(outcome, Fault):
            session.pending_fault = outcome

    # -- decisions ---------------------------------------------------------------------------

    def next_match_id(self, label: str) -> str:
        """A fresh match id."""
        self.matches += 1
        return f"check-{self.matches}-{label}"

    def start_match(
        self, match_id: str, seat: Seat, options: RulesOptions, extra: dict[str, Any] | None
    ) -> str | None:
        """Send ``match_start``; None once the bot is ready, else the problem."""
        match_seed = derive_seed(self.settings.seed, "check-bot", match_id)
        seed = builders.bot_seed_for(self.connected().protocol, match_seed, seat)
        control = self.clock.to_json()
        # check-bot times a bot by the wall clock (its report says what the CPU clock adds).
        clock = builders.clock_for(self.connected().protocol, "wall")
        message = {
            **builders.match_start(match_id, seat, OPPONENT_NAME, options, control, seed, clock),
            **(extra or {}),
        }
        outcome = self.server.request(
            self.connected(), message, "ready", self.settings.warmup_ms / 1000
        )
        if isinstance(outcome, Fault):
            return f"no ready to match_start ({fault_reason(outcome, self.spec.command)})"
        return None

    def ask(
        self, state: GameState, message: dict[str, Any], wait_ms: int, limit_ms: int
    ) -> _Answer:
        """Send a ``decide`` for the seat to move in ``state``; judge the answer by the rules
        and by ``limit_ms``, waiting up to ``wait_ms`` for it."""
        seat = state.to_move
        assert seat is not None
        session = self.connected()
        outcome = self.server.request(session, message, "act", wait_ms / 1000)
        if isinstance(outcome, Fault):
            return _Answer(
                None, None, float(wait_ms), fault_reason(outcome, self.spec.command), outcome.kind
            )
        text = outcome.message["action"]
        try:
            after = apply(state, seat, read_bot_action(text))
        except (ActionParseError, IllegalActionError) as error:
            self.server.notify(
                session, builders.error(outcome.message["id"], ErrorCode.ILLEGAL_ACTION, str(error))
            )
            legal = _shortened(message["legal"])
            problem = f"answered {text!r}, which is illegal: {error} (legal: {legal})"
            return _Answer(None, text, outcome.elapsed_ms, problem, FaultKind.ILLEGAL_ACTION)
        if outcome.elapsed_ms > limit_ms:
            problem = (
                f"answered {text!r} after {outcome.elapsed_ms:.0f} ms; "
                f"the deadline is {limit_ms} ms"
            )
            return _Answer(None, text, outcome.elapsed_ms, problem, FaultKind.TIMEOUT)
        return _Answer(after, text, outcome.elapsed_ms)

    def end_match(self, message: dict[str, Any]) -> None:
        """Send ``match_end`` (a bot that is gone is not blamed twice)."""
        if self.session is not None and self.session.connected:
            self.server.notify(self.session, message)

    def probe(self, position: _Position, *, extra: bool = False) -> _Answer:
        """A one-decision match at ``position``; ``extra`` adds unknown fields everywhere."""
        state = position.state
        seat = position.seat
        match_id = self.next_match_id(position.label)
        problem = self.start_match(
            match_id, seat, state.options, {UNKNOWN_FIELD: {"since": "9.9"}} if extra else None
        )
        if problem is not None:
            return _Answer(None, None, 0.0, problem)
        seen = observation(state, seat)
        tracker = EventTracker()
        tracker.observe(seen)
        decide = builders.decide(
            match_id, seen, legal_actions(state), tracker.take(), self.clock.decision_ms, None
        )
        if extra:
            decide["observation"][UNKNOWN_FIELD] = [1, "two", None]
            decide["events"] = [
                {**event, UNKNOWN_FIELD: {"nested": True}} for event in decide["events"]
            ]
            decide[UNKNOWN_FIELD] = "ignore me"
            decide["x_checker_number"] = 7
        decision_ms = self.settings.decision_ms
        answer = self.ask(state, decide, decision_ms + self.settings.warmup_ms, decision_ms)
        session = self.connected()
        if answer.action is None and answer.fault is FaultKind.TIMEOUT:
            # Silent for deadline and warm-up together: stuck, so start it afresh next time.
            session.pending_fault = Fault(FaultKind.TIMEOUT, -1, session.name, str(answer.problem))
        if answer.problem is None:
            at_fault = seat.other
            cause = Fault(
                FaultKind.DISCONNECT,
                at_fault,
                OPPONENT_NAME,
                "the conformance check's probe is over",
            )
        else:
            at_fault = seat
            cause = Fault(answer.fault or FaultKind.TIMEOUT, seat, session.name, answer.problem)
        result = MatchResult(
            at_fault.other, Termination.FORFEIT, state.scores_before, state.game_number - 1
        )
        self.end_match(builders.match_end(match_id, [], result, cause))
        return answer

    def probes(self, positions: Sequence[_Position], *, extra: bool = False) -> Verdict:
        """Probe each position in turn; fail at the first wrong answer."""
        seen: list[str] = []
        for position in positions:
            answer = self.probe(position, extra=extra)
            if answer.problem is not None:
                return Fail(f"{position.title}: {answer.problem}")
            seen.append(f"{position.title}: {answer.action!r} in {answer.elapsed_ms:.1f} ms")
        return Pass("; ".join(seen))


def _shortened(items: Sequence[str], keep: int = 6) -> str:
    shown = ", ".join(items[:keep])
    return shown if len(items) <= keep else f"{shown}, … ({len(items)} in all)"


# -- positions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Position:
    """A game state the engine reached, with the bot to move."""

    label: str
    title: str
    state: GameState

    @property
    def seat(self) -> Seat:
        """The bot's seat: the one to move."""
        assert self.state.to_move is not None
        return self.state.to_move


def _deal(master_hand: str, slave_hand: str, key_card: str) -> tuple[Card, ...]:
    """A deck dealing these hands and this key card; the stock in canonical order."""
    placed = [parse_card(code) for code in (*master_hand.split(), *slave_hand.split(), key_card)]
    assert len(set(placed)) == 11, "a card dealt twice"
    return (*placed, *(card for card in DECK if card not in placed))


def _position(
    label: str,
    title: str,
    deck: Sequence[Card],
    master: Seat,
    actions: Sequence[str] = (),
    options: RulesOptions | None = None,
) -> _Position:
    """The state after ``actions``, each by the seat to move, from a game dealt from ``deck``."""
    state = new_game(options or RulesOptions(), master, deck)
    for text in actions:
        assert state.to_move is not None
        state = apply(state, state.to_move, parse_action(text))
    return _Position(label, title, state)


#: Key card 2D: trump is diamonds and the killers are 2S, 2H and 2C.
_PLAIN_DEAL = _deal("AS 9H 4D 3C 8C", "KH 5H 9S 4C 6S", "2D")


def _exchange_positions() -> list[_Position]:
    return [_position("exchange", "the master's first exchange round", _PLAIN_DEAL, Seat.SECOND)]


def _bid_positions() -> list[_Position]:
    return [
        _position(
            "bid",
            "the slave after the master's bid of 2",
            _PLAIN_DEAL,
            Seat.FIRST,
            ["stop", "bid 2"],
        )
    ]


def _play_positions() -> list[_Position]:
    return [
        _position(
            "play",
            "the master leading the first trick",
            _PLAIN_DEAL,
            Seat.FIRST,
            ["stop", "bid 1", "pass"],
        )
    ]


def _last_card() -> _Position:
    """The follower in the fifth trick, one card in hand; both seats played their first legal
    card before."""
    state = new_game(RulesOptions(), Seat.SECOND, _PLAIN_DEAL)
    while not (len(state.tricks) == 4 and state.lead is not None):
        assert state.to_move is not None
        state = apply(state, state.to_move, legal_actions(state)[0])
    return _Position("last-card", "the last card of the game", state)


def _legal_positions() -> list[_Position]:
    return [
        _position(
            "slave-exchange",
            "the slave's exchange (it may not stop; it may exchange nothing)",
            _PLAIN_DEAL,
            Seat.FIRST,
            ["exchange 4D 3C"],
        ),
        _position(
            "bid-floor",
            "the master's bid after two exchange rounds (bid 3 at least)",
            _PLAIN_DEAL,
            Seat.SECOND,
            ["exchange 4D", "exchange", "exchange 3C", "exchange", "stop"],
        ),
        _position(
            "overbid",
            "the slave facing a bid of 4 (pass or bid 5)",
            _PLAIN_DEAL,
            Seat.FIRST,
            ["stop", "bid 4"],
        ),
        _last_card(),
    ]


#: The master leads 9H or 9D to the slave (the bot); trump is diamonds, killers 2S 2H 2C.
_LEAD_HEARTS = ["stop", "bid 1", "pass", "play 9H"]
_LEAD_TRUMP = ["stop", "bid 1", "pass", "play 9D"]


def _follow_positions() -> list[_Position]:
    deal = _deal("AS 9H 4D 3C 8C", "KH 5H 9S 4C 6S", "2D")
    return [_position("follow", "hearts led, holding KH and 5H", deal, Seat.SECOND, _LEAD_HEARTS)]


def _void_positions() -> list[_Position]:
    deal = _deal("AS 9H 4D 3C 8C", "KS 5D 9S 4C 6S", "2D")
    return [
        _position(
            "void", "hearts led, holding no heart (and a trump)", deal, Seat.FIRST, _LEAD_HEARTS
        )
    ]


def _killer_positions() -> list[_Position]:
    void = _deal("AS 9D 4D 3C 8C", "2S KH 9S 4C 6S", "2D")
    trump = _deal("AS 9D 4D 3C 8C", "2S KD 9S 4C 6H", "2D")
    return [
        _position(
            "killer-void",
            "trump led, void in trump, holding the killer 2S",
            void,
            Seat.SECOND,
            _LEAD_TRUMP,
        ),
        _position(
            "killer-trump",
            "trump led, holding the killer 2S and the trump KD (must play KD)",
            trump,
            Seat.FIRST,
            _LEAD_TRUMP,
        ),
    ]


def _unknown_field_positions() -> list[_Position]:
    return [
        _position(
            "unknown-fields",
            "a play decision with unknown fields",
            _PLAIN_DEAL,
            Seat.SECOND,
            _LEAD_HEARTS,
        )
    ]


# -- the items ---------------------------------------------------------------------------------


def check_handshake(checker: _Checker) -> Verdict:
    """The bot starts, connects and says a valid hello with its token; it is welcomed."""
    started = time.monotonic()
    fault = checker.start()
    elapsed = (time.monotonic() - started) * 1000
    session = checker.session
    if fault is not None or session is None or session.hello is None:
        checker.unavailable = "the bot did not complete the handshake"
        if session is not None:
            checker.server.stop_bot(session, "handshake failed", grace=0.0)
        return Fail(fault_reason(fault, checker.spec.command) if fault is not None else "no hello")
    hello = session.hello
    how = "dialled in with its key" if checker.remote else "with its token"
    return Pass(
        f"hello from {hello.name!r} offering {', '.join(hello.versions)}, {how}, "
        f"after {elapsed:.0f} ms; welcomed with protocol {session.protocol}"
    )


def check_unsupported_version(checker: _Checker) -> Verdict:
    """Another copy of the bot is offered only an unknown version; it must exit."""
    with BotServer(
        heartbeat_ms=checker.settings.heartbeat_ms,
        supported_versions=FOREIGN_VERSIONS,
        sandbox=checker.settings.sandbox,
    ) as server:
        session = server.start_bot(checker.spec)
        try:
            fault = session.handshake_fault or server.handshake(
                session, checker.settings.warmup_ms / 1000
            )
            if fault is None:
                offered = ", ".join(session.hello.versions) if session.hello else "?"
                return Fail(
                    f"the bot offered {offered} and accepted protocol {session.protocol}, "
                    "which it cannot speak"
                )
            if fault.kind is not FaultKind.VERSION:
                return Fail(f"no hello to reject ({fault_reason(fault, checker.spec.command)})")
            started = time.monotonic()
            code = _wait_exit(session, REJECT_EXIT_SECONDS)
            elapsed = time.monotonic() - started
            if code is None:
                return Fail(
                    f"rejected (code version, supported_versions {list(FOREIGN_VERSIONS)}), "
                    f"but still running {REJECT_EXIT_SECONDS:.1f} s later"
                )
            return Pass(
                f"rejected ({fault.detail}); it exited with code {code} after {elapsed:.2f} s"
            )
        finally:
            server.stop_bot(session, "check over", grace=0.0)


def check_ping(checker: _Checker) -> Verdict:
    """``ping`` is answered with ``pong`` within ``heartbeat_ms``."""
    limit = checker.settings.heartbeat_ms
    outcome = checker.server.request(checker.connected(), builders.ping(), "pong", limit / 1000)
    if isinstance(outcome, Fault):
        return Fail(f"{fault_reason(outcome, checker.spec.command)} (heartbeat_ms is {limit})")
    return Pass(f"pong after {outcome.elapsed_ms:.1f} ms (limit {limit} ms)")


def check_exchange_decision(checker: _Checker) -> Verdict:
    """An exchange decision is answered in time with a legal action."""
    return checker.probes(_exchange_positions())


def check_bid_decision(checker: _Checker) -> Verdict:
    """A bid decision is answered in time with a legal action."""
    return checker.probes(_bid_positions())


def check_play_decision(checker: _Checker) -> Verdict:
    """A play decision is answered in time with a legal action."""
    return checker.probes(_play_positions())


def check_legal_actions(checker: _Checker) -> Verdict:
    """Positions where the obvious answer is illegal are answered from ``legal``."""
    return checker.probes(_legal_positions())


def check_follow_suit(checker: _Checker) -> Verdict:
    """Holding the led suit, the bot follows it."""
    return checker.probes(_follow_positions())


def check_void_in_led_suit(checker: _Checker) -> Verdict:
    """Void in the led suit, the bot plays any card (and does not choke on it)."""
    return checker.probes(_void_positions())


def check_killer_on_trump_lead(checker: _Checker) -> Verdict:
    """Facing a trump lead with a killer: any card when void in trump, else trump."""
    return checker.probes(_killer_positions())


def check_unknown_fields(checker: _Checker) -> Verdict:
    """Unknown fields in ``match_start``, ``decide``, the observation and events are ignored."""
    return checker.probes(_unknown_field_positions(), extra=True)


def check_unknown_type(checker: _Checker) -> Verdict:
    """A message of an unknown type draws ``error`` ``unknown_type``; the bot carries on."""
    session = checker.connected()
    limit = checker.settings.heartbeat_ms
    outcome = checker.server.request(
        session, {"type": "frobnicate", "detail": "a type from the future"}, "error", limit / 1000
    )
    if isinstance(outcome, Fault):
        return Fail(
            f"no error answering 'frobnicate' ({fault_reason(outcome, checker.spec.command)})"
        )
    code = outcome.message.get("code")
    if code != ErrorCode.UNKNOWN_TYPE:
        return Fail(f"answered 'frobnicate' with error code {code!r}, not 'unknown_type'")
    after = checker.server.request(session, builders.ping(), "pong", limit / 1000)
    if isinstance(after, Fault):
        reason = fault_reason(after, checker.spec.command)
        return Fail(f"answered 'frobnicate' properly, then no pong ({reason})")
    return Pass(
        f"error unknown_type answering 'frobnicate' after {outcome.elapsed_ms:.1f} ms; then a pong"
    )


def check_several_matches(checker: _Checker) -> Verdict:
    """Several full matches in one process, under the referee's clock, without a fault."""
    session = checker.connected()
    where = (
        "all on one connection"
        if session.process is None
        else f"all in process {session.process.pid}"
    )
    games = decisions = 0
    slowest = thinking = 0.0
    total = checker.settings.matches
    cgroup = session.process.cgroup if session.process is not None else None
    cpu_before = cgroup.cpu_usage_us() if cgroup is not None else None
    for number in range(1, total + 1):
        played = _play_match(checker, number)
        if isinstance(played, str):
            return Fail(f"match {number} of {total}: {played}")
        games += played[0]
        decisions += played[1]
        slowest = max(slowest, played[2])
        thinking += played[3]
    checker.server.drain(0.05)
    if session.exited() or checker.session is not session:
        return Fail(f"the process ended after match {total} without being told to")
    cpu_after = cgroup.cpu_usage_us() if cgroup is not None else None
    cpu = (
        f"; CPU time not measured: {checker.cpu_problem()}"
        if cpu_before is None or cpu_after is None
        else _cpu_note((cpu_after - cpu_before) / 1000, thinking, decisions)
    )
    return Pass(
        f"{total} matches ({games} games, {decisions} decisions) against an in-process random "
        f"player, {where}; slowest answer {slowest:.1f} ms{cpu}"
    )


def _cpu_note(cpu_ms: float, thinking_ms: float, decisions: int) -> str:
    """What the bot's processes and threads used in CPU time, as the CPU clock of a
    tournament charges it, and a word if it kept several CPUs busy at once."""
    note = (
        f"; CPU time {cpu_ms:.0f} ms in all its processes and threads "
        f"({cpu_ms / max(decisions, 1):.1f} ms a decision: on the CPU clock a tournament "
        "charges every thread)"
    )
    if thinking_ms > 0 and cpu_ms > 1.5 * thinking_ms:
        note += (
            f"; it used {cpu_ms / thinking_ms:.1f} times its answer time in CPU: several "
            "threads or processes busy at once spend a CPU budget that many times as fast"
        )
    return note


def _play_match(checker: _Checker, number: int) -> tuple[int, int, float, float] | str:
    """Match ``number`` of ``several_matches``: (games, decisions, slowest ms, the bot's
    answer times summed, ms) or the problem."""
    played = _checked_match(checker, number)
    if isinstance(played, str):
        return played
    course, decisions = played
    assert course.match is not None
    times = [ms for timings in course.timings for ms in timings]
    # The in-process opponent answers in no time: the sum is the bot's.
    return course.match.games_played, decisions, max(times, default=0.0), sum(times)


def _checked_match(checker: _Checker, number: int) -> tuple[MatchCourse[Fault], int] | str:
    """Play check match ``number``: the course and the bot's decisions, or the problem.

    The bot plays seat 0 and seat 1 in turn, as the runner plays it (the same player in the
    same match loop); the opponent is an in-process random player. The same ``number`` is the
    same match: the same rules, seat, deals, opponent and seed.
    """
    settings = checker.settings
    options = MATCH_RULES[(number - 1) % len(MATCH_RULES)]
    seat = Seat((number - 1) % 2)
    seed = derive_seed(settings.seed, "check-bot", number)
    rng = random.Random(seed)
    opponent = PolicyPlayer(
        RandomPolicy(derive_seed(settings.seed, "check-bot", number, "opponent"))
    )
    match_id = checker.next_match_id("match")
    bot = _CheckedBot(
        checker.server, checker.connected(), match_id, seat, OPPONENT_NAME, checker.clock, seed
    )
    players: list[Player[Fault]] = [bot, opponent]
    if seat is Seat.SECOND:
        players.reverse()
    names = (
        (checker.spec.name, OPPONENT_NAME)
        if seat is Seat.FIRST
        else (OPPONENT_NAME, checker.spec.name)
    )
    course: MatchCourse[Fault] = MatchCourse(
        match_id, names, seed, new_match(options, draw_first_master(rng))
    )
    play_match(course, rng, players)
    fault = course.forfeit_fault
    if fault is not None:
        if fault.game is None:
            return f"no ready to match_start ({fault_reason(fault, checker.spec.command)})"
        clock = f"deadline_ms {settings.decision_ms}" + (
            f" + warmup_ms {settings.warmup_ms} for a match's first decision"
            if bot.decisions == 1
            else ""
        )
        if fault.kind is FaultKind.ILLEGAL_ACTION:  # its output says nothing of the rules
            return f"game {fault.game}, decision {fault.decision}: {fault.detail} ({clock})"
        return f"{fault_reason(fault, checker.spec.command)} ({clock})"
    return course, bot.decisions


def check_reproducible(checker: _Checker) -> Verdict:
    """The same match twice, with the same seed: the bot should choose the same actions.

    Advice, not a requirement: a bot that draws its randomness from ``match_start``'s
    ``seed`` alone (protocol 1.1) and does not let the clock choose for it makes a
    tournament's results reproducible.
    """
    session = checker.connected()
    plays = []
    for _ in range(2):
        played = _checked_match(checker, 1)
        if isinstance(played, str):
            # Not this item's failure to report (several_matches plays the same matches).
            return Advice(f"not checked: the match could not be played: {played}")
        plays.append(played[0])
    seat = Seat.FIRST  # check match 1 seats the bot first
    seed = builders.bot_seed_for(session.protocol, plays[0].seed, seat)
    for first, second in zip(plays[0].games, plays[1].games, strict=False):
        ours = [turn for turn in first.history if turn.seat is seat]
        again = [turn for turn in second.history if turn.seat is seat]
        for number, (one, other) in enumerate(zip(ours, again, strict=False), 1):
            if one.action != other.action:
                hint = (
                    "draw all randomness from match_start's seed and reseed at every match "
                    "(SPEC §5, Reproducibility)"
                    if seed is not None
                    else f"the bot speaks protocol {session.protocol}, which has no seed: "
                    f"offer {SEED_VERSION} in hello and draw all randomness from "
                    "match_start's seed"
                )
                return Advice(
                    f"game {first.game_number}, the bot's decision {number}: "
                    f"{str(one.action)!r} the first time, {str(other.action)!r} the second; {hint}"
                )
    games = len(plays[0].games)
    seed_note = (
        f"its seed {seed} both times"
        if seed is not None
        else f"protocol {session.protocol}: no seed"
    )
    return Pass(f"the same actions in both plays of one match ({games} games, {seed_note})")


class _CheckedBot(BotPlayer):
    """The bot under check, as the runner plays it; an illegal answer's fault names the legal
    actions too."""

    def _illegal(self, game: GameState, error: AegisError) -> Fault:
        fault = super()._illegal(game, error)
        legal = _shortened(legal_to_wire(legal_actions(game)))
        detail = f"answered {self._text!r}, which is illegal: {error} (legal: {legal})"
        return dataclasses.replace(fault, detail=detail)


def check_shutdown(checker: _Checker) -> Verdict:
    """After ``shutdown`` the process exits with code 0 within a second."""
    session = checker.connected()
    fault = checker.server.notify(session, builders.shutdown("conformance check over"))
    checker.shutdown_sent = True
    session.closed = True  # nothing more is sent; the cleanup must not say shutdown twice
    if fault is not None:
        return Fail(f"shutdown could not be sent ({fault_reason(fault, checker.spec.command)})")
    started = time.monotonic()
    code = _wait_exit(session, SHUTDOWN_SECONDS)
    elapsed = time.monotonic() - started
    if code is None:
        # Only the bot's own process is killed, so that no_leftovers sees what it started.
        _kill_leader(session)
        return Fail(
            f"still running {SHUTDOWN_SECONDS:.1f} s after shutdown (the referee then kills "
            "its process group)"
        )
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return Fail(f"{how} after {elapsed:.2f} s")
    return Pass(f"exited with code 0 after {elapsed:.2f} s")


def check_remote_shutdown(checker: _Checker) -> Verdict:
    """After ``shutdown`` a remote bot closes its connection within a second."""
    session = checker.connected()
    fault = checker.server.notify(session, builders.shutdown("conformance check over"))
    checker.shutdown_sent = True
    if fault is not None:
        return Fail(f"shutdown could not be sent ({fault_reason(fault, checker.spec.command)})")
    started = time.monotonic()
    while checker.server.still_connected(session):
        if time.monotonic() - started > SHUTDOWN_SECONDS:
            return Fail(f"still connected {SHUTDOWN_SECONDS:.1f} s after shutdown")
        time.sleep(0.05)
    session.closed = True  # the cleanup must not say shutdown twice
    return Pass(f"closed its connection after {time.monotonic() - started:.2f} s")


def check_no_leftovers(checker: _Checker) -> Verdict:
    """Once the bot has exited, no process carrying its token remains."""
    session = checker.session
    if not checker.shutdown_sent or session is None:
        return Skip("not checked: the bot was never shut down")
    if not session.exited():
        _kill_leader(session)
    deadline = time.monotonic() + LEFTOVER_GRACE_SECONDS
    left = _carriers(session.token)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _carriers(session.token)
    if left:
        kill_by_token(session.token)
        listed = "; ".join(f"pid {pid}: {command}" for pid, command in left[:5])
        return Fail(
            f"{len(left)} process(es) started by the bot still ran "
            f"{LEFTOVER_GRACE_SECONDS:.1f} s after it exited ({listed}); killed now"
        )
    return Pass("nothing carrying the bot's token is left after it exited")


def _wait_exit(session: BotSession, seconds: float) -> int | None:
    """The exit code once the bot's process ends within ``seconds``, else None."""
    process = session.process
    assert process is not None
    deadline = time.monotonic() + seconds
    while (code := process.exit_code()) is None and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    return code


def _kill_leader(session: BotSession) -> None:
    """SIGKILL the bot's own process, not its group, and wait (bounded) until it is gone."""
    process = session.process
    assert process is not None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(process.pid, signal.SIGKILL)
    _wait_exit(session, 2.0)


def _carriers(token: str) -> list[tuple[int, str]]:
    """Processes whose environment holds ``AEGIS_TOKEN=token``: (pid, command line)."""
    found = []
    for pid in processes_with_environment("AEGIS_TOKEN", token):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue  # gone meanwhile
        found.append((pid, " ".join(command.replace("\0", " ").split())[:120]))
    return found


CHECKLIST: tuple[CheckItem, ...] = (
    CheckItem(
        "handshake",
        "starts, connects and says a valid hello with its token within warmup_ms, offering "
        "protocol 1.0, 1.1 or 1.2; is welcomed",
        check_handshake,
        needs_bot=False,
    ),
    CheckItem(
        "unsupported_version",
        "offered only a version it cannot speak (reject, code version), exits within "
        f"{REJECT_EXIT_SECONDS:.0f} s",
        check_unsupported_version,
        needs_bot=False,
    ),
    CheckItem("ping", "answers ping with pong within heartbeat_ms", check_ping),
    CheckItem(
        "exchange_decision",
        "answers an exchange decision within deadline_ms with a legal action",
        check_exchange_decision,
    ),
    CheckItem(
        "bid_decision",
        "answers a bid decision within deadline_ms with a legal action",
        check_bid_decision,
    ),
    CheckItem(
        "play_decision",
        "answers a play decision within deadline_ms with a legal action",
        check_play_decision,
    ),
    CheckItem(
        "legal_actions",
        "answers only legal actions where the obvious one is illegal: the slave's exchange, "
        "the master's bid floor, the slave's overbid, the last card",
        check_legal_actions,
    ),
    CheckItem("follow_suit", "holding the led suit, follows it", check_follow_suit),
    CheckItem(
        "void_in_led_suit", "void in the led suit, plays a legal card", check_void_in_led_suit
    ),
    CheckItem(
        "killer_on_trump_lead",
        "holding a killer facing a trump lead: any card when void in trump, else a trump",
        check_killer_on_trump_lead,
    ),
    CheckItem(
        "unknown_fields",
        "ignores unknown fields in match_start and decide, in the observation and in events",
        check_unknown_fields,
    ),
    CheckItem(
        "unknown_type",
        "answers a message of unknown type with error unknown_type naming its id, then still "
        "answers ping",
        check_unknown_type,
    ),
    CheckItem(
        "several_matches",
        "plays several full matches in one process under the referee's clock, without a fault",
        check_several_matches,
    ),
    CheckItem(
        "reproducible",
        "plays the same match twice with the same seed and chooses the same actions "
        "(advice: needed for reproducible tournaments, not to play in one)",
        check_reproducible,
    ),
    CheckItem(
        "shutdown",
        f"exits with code 0 within {SHUTDOWN_SECONDS:.0f} s of shutdown",
        check_shutdown,
    ),
    CheckItem(
        "no_leftovers",
        "leaves no process carrying its token behind once it has exited",
        check_no_leftovers,
        needs_bot=False,
    ),
)

#: The checklist of a remote bot, which dials in with its key pair: every item but those
#: about its process (another copy offered an unknown version, what it leaves behind), and
#: its handshake and shutdown judged by what its connection does.
REMOTE_CHECKLIST: tuple[CheckItem, ...] = tuple(
    CheckItem(
        "handshake",
        "dials in with its key pair within the connect timeout and says a valid hello, "
        "offering protocol 1.0, 1.1 or 1.2; is welcomed",
        check_handshake,
        needs_bot=False,
    )
    if item.name == "handshake"
    else CheckItem(
        "shutdown",
        f"closes its connection within {SHUTDOWN_SECONDS:.0f} s of shutdown",
        check_remote_shutdown,
    )
    if item.name == "shutdown"
    else item
    for item in CHECKLIST
    if item.name not in ("unsupported_version", "no_leftovers")
)
