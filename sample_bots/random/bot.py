"""The bundled ``random`` bot: uniform over the legal actions. The SDK reseeds its RNG from each
match's ``seed`` (protocol 1.1), so a match plays the same however it is run; ``AEGIS_SEED``
seeds it under a 1.0 referee."""

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
