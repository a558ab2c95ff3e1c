"""A bot that burns a fixed amount of CPU on every decision (``burner.py MILLISECONDS``), so
that its decision times show how much CPU it was given while it thought."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, run


class Burner(Bot):
    """Spins for a fixed CPU time, then plays the first legal action."""

    name = "burner"

    def __init__(self, milliseconds: float) -> None:
        self.seconds = milliseconds / 1000

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """CPU time, not wall time: on a shared CPU it takes longer to get."""
        until = time.process_time() + self.seconds
        while time.process_time() < until:
            pass
        return legal[0]


if __name__ == "__main__":
    run(Burner(float(sys.argv[1])), argv=[])
