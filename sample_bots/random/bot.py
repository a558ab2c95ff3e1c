"""The bundled ``random`` bot: uniform over the legal actions, seeded from ``AEGIS_SEED``."""

import os
import random
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, run


class RandomBot(Bot):
    """Chooses uniformly among the legal actions at every decision."""

    name = "random"
    author = "aegis-ref"

    def __init__(self, seed: str | None) -> None:
        self.rng = random.Random(seed)

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """Exchange, bid or play: any legal action, uniformly."""
        return self.rng.choice(legal)


if __name__ == "__main__":
    run(RandomBot(os.environ.get("AEGIS_SEED")))
