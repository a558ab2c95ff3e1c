"""Bots that test the referee's clock: each plays the first legal action and spends its time
in one way (``clockwork.py MODE [ARGUMENT]``):

- ``spin SHARE``: spends SHARE (0.9: 90 %) of the decision's time (``deadline_ms``) in CPU;
- ``sleep SECONDS``: sleeps that long at every decision, using no CPU;
- ``fork-think MILLISECONDS [COUNT]``: forks COUNT (1) helper processes that each spin that
  much CPU at once, and waits for them (the bot itself does nothing meanwhile);
- ``spin-between``: answers at once, and spins in a background thread between its turns.

At each match start it writes ``CLOCKWORK clock=C`` on stderr: the clock ``match_start``
named (protocol 1.2). Every decision it writes one line on stderr,
``CLOCKWORK decision=N cpu_ms=X total_ms=Y``: the CPU time its process and its waited-for
children used on that decision (what a test or a benchmark compares the referee's charge
with), and in all so far.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, MatchInfo, run


def spin_cpu(seconds: float) -> None:
    """Spin until this thread has used ``seconds`` of CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def used_cpu() -> float:
    """CPU seconds of this process and its waited-for children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # os.times() counts in ticks
    return time.process_time() + children.ru_utime + children.ru_stime


class Clockwork(Bot):
    """Spends each decision's time the way its mode says."""

    name = "clockwork"

    def __init__(self, mode: str, arguments: Sequence[str]) -> None:
        self.mode = mode
        self.arguments = arguments
        self.decisions = 0
        if mode == "spin-between":
            threading.Thread(target=self._spin_forever, daemon=True).start()

    @staticmethod
    def _spin_forever() -> None:
        while True:
            spin_cpu(0.01)

    def on_match_start(self, match: MatchInfo) -> None:
        print(f"CLOCKWORK clock={match.time_control.clock}", file=sys.stderr, flush=True)

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        before = used_cpu()
        self.decisions += 1
        if self.mode == "spin":
            spin_cpu(float(self.arguments[0]) * view.deadline_ms / 1000)
        elif self.mode == "sleep":
            time.sleep(float(self.arguments[0]))
        elif self.mode == "fork-think":
            count = int(self.arguments[1]) if len(self.arguments) > 1 else 1
            self._fork_think(float(self.arguments[0]) / 1000, count)
        total = used_cpu()
        print(
            f"CLOCKWORK decision={self.decisions} cpu_ms={(total - before) * 1000:.3f} "
            f"total_ms={total * 1000:.3f}",
            file=sys.stderr,
            flush=True,
        )
        return legal[0]

    @staticmethod
    def _fork_think(seconds: float, count: int) -> None:
        helpers = []
        for _ in range(count):
            helper = os.fork()
            if helper == 0:
                try:
                    spin_cpu(seconds)
                finally:
                    os._exit(0)
            helpers.append(helper)
        for helper in helpers:
            os.waitpid(helper, 0)


if __name__ == "__main__":
    run(Clockwork(sys.argv[1], sys.argv[2:]), argv=[])
