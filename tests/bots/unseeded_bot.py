"""An SDK bot that draws its choices from the system's randomness, not from the match's seed:
it plays legally, but never the same match the same way twice."""

import random
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, run


class UnseededBot(Bot):
    """Uniform over the legal actions, from an unseeded generator."""

    name = "unseeded"

    def __init__(self) -> None:
        self.system = random.SystemRandom()

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """Any legal action."""
        return self.system.choice(legal)


if __name__ == "__main__":
    run(UnseededBot())
