"""An SDK bot that plays its first legal action, except that its first decision takes
``--sleep`` seconds (default 3) and its first ``match_start`` ``--sleep-at-start`` seconds
(default 0): a bot that is slow once, to test what the referee does next.

    slow_once_bot.py [--sleep SECONDS] [--sleep-at-start SECONDS]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, MatchInfo, run


class SlowOnce(Bot):
    """Sleeps through its first decision, then answers at once."""

    name = "slow-once"

    def __init__(self, sleep: float, sleep_at_start: float) -> None:
        self.sleep = sleep
        self.sleep_at_start = sleep_at_start

    def on_match_start(self, match: MatchInfo) -> None:
        time.sleep(self.sleep_at_start)
        self.sleep_at_start = 0.0

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        if self.sleep:
            time.sleep(self.sleep)
            self.sleep = 0.0
        return legal[0]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sleep", type=float, default=3.0)
    parser.add_argument("--sleep-at-start", type=float, default=0.0)
    arguments = parser.parse_known_args()[0]
    run(SlowOnce(arguments.sleep, arguments.sleep_at_start))
