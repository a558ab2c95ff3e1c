"""The bundled ``random`` bot: uniform over the legal actions. The SDK reseeds its RNG from each
match's ``seed`` (protocol 1.1), so a match plays the same however it is run; ``AEGIS_SEED``
seeds it under a 1.0 referee."""

import os
import random
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, MatchInfo, run


class RandomBot(Bot):
    """Chooses uniformly among the legal actions at every decision."""

    name = "random"
    author = "aegis-ref"

    def __init__(self, seed: str | None) -> None:
        self.rng = random.Random(seed)
        #: Mixed into each match's seed, so that two copies of this bot with different
        #: ``AEGIS_SEED`` (``random`` and ``random-2``) stay different players.
        self.personal_seed = seed

    def on_match_start(self, match: MatchInfo) -> None:
        """The SDK has reseeded ``rng`` from the match's seed; mix in our own, if any."""
        if match.seed is not None and self.personal_seed:
            self.rng.seed(f"{match.seed}:{self.personal_seed}")

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """Exchange, bid or play: any legal action, uniformly."""
        return self.rng.choice(legal)


if __name__ == "__main__":
    run(RandomBot(os.environ.get("AEGIS_SEED")))
