"""The preflight: start each bot once, as its matches will start it, up to its ``hello``.

A bot that cannot even say hello (its script is missing, its interpreter lacks the SDK, it
crashes on start-up) would forfeit every match it is scheduled for; a tournament asks
:func:`preflight_bots` first and stops before playing anything. Each bot is started by a
:class:`~referee.server.BotServer` with the tournament's sandbox, its own limits, environment
and working directory, and given the warm-up allowance of the time control to say hello, as
:class:`~referee.runner.MatchRunner` gives it; then it is sent ``shutdown`` and stopped with
everything it started.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.bots import BotSpec
from referee.faults import Fault
from referee.sandbox import SandboxPlan
from referee.server import BotServer
from referee.session import BotSession

__all__ = ["PreflightResult", "preflight_bots"]


@dataclass(frozen=True, slots=True)
class PreflightResult:
    """How one bot's start went."""

    name: str
    #: Why it did not get to a valid hello; None if it did.
    fault: Fault | None
    #: From its start to its hello (or to the fault), in milliseconds.
    elapsed_ms: float
    #: Its exit status when the fault was seen; None while it still ran (a hello that never
    #: came in time: it was then stopped). Negative: killed by that signal.
    exit_code: int | None = None
    #: Where its output went, if anywhere.
    log_path: str | None = None
    #: The name it gave in its hello (unchecked: the bot's own words), if it said one.
    said: str | None = None
    #: Whether its process was started at all (a program the sandbox cannot show is not).
    started: bool = True

    @property
    def ok(self) -> bool:
        """True when the bot started and said a valid hello."""
        return self.fault is None


def preflight_bots(
    specs: Sequence[BotSpec],
    *,
    warmup_ms: int,
    sandbox: SandboxPlan | None = None,
    log_dir: Path | None = None,
    log_budget_dir: Path | None = None,
    parallel: int = 2,
    stopping: Callable[[], bool] = lambda: False,
) -> list[PreflightResult]:
    """Start ``specs`` (started bots, not remote ones) ``parallel`` at a time, as a match
    starts its two bots: all of a batch at once, then each given ``warmup_ms`` for its hello
    in turn. Return the results in ``specs``' order; every bot is stopped before this
    returns. Once ``stopping()`` is true no more bots are started, and the results hold only
    those that were. ``log_budget_dir``: the ledgers of the run's log caps, which the
    output of the preflight counts against too (:class:`~referee.bots.LogBudget`)."""
    if any(spec.is_remote for spec in specs):
        raise ValueError("remote bots dial in: they cannot be started for a preflight")
    results: list[PreflightResult] = []
    server = BotServer(log_dir=log_dir, sandbox=sandbox, log_budget_dir=log_budget_dir)
    try:
        for first in range(0, len(specs), max(1, parallel)):
            if stopping():
                break
            batch = [server.start_bot(spec) for spec in specs[first : first + max(1, parallel)]]
            started = time.monotonic()
            try:
                results.extend(
                    _await_hello(server, session, started, warmup_ms) for session in batch
                )
            finally:
                server.stop_bots(batch, "preflight over", grace=1.0)
    finally:
        server.close()
    return results


def _await_hello(
    server: BotServer, session: BotSession, started: float, warmup_ms: int
) -> PreflightResult:
    fault = session.handshake_fault or server.handshake(session, warmup_ms / 1000)
    elapsed = (time.monotonic() - started) * 1000
    exit_code = None
    if fault is not None and session.process is not None:
        exit_code = session.process.exit_code()
    log = str(session.log_path) if session.log_path is not None else None
    said = session.hello.name if fault is None and session.hello is not None else None
    started = session.process is not None
    return PreflightResult(session.name, fault, round(elapsed, 1), exit_code, log, said, started)
