"""A complete random Aegis bot: ``python -m protocol.examples.random_bot [--seed N]``
(seeded by ``--seed``, else the environment's ``AEGIS_SEED``, else the system)."""

import argparse
import os
import random
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, run


class RandomBot(Bot):
    """Chooses uniformly among the legal actions."""

    name = "random"

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """Every decision alike: exchange, bid or play."""
        return self.rng.choice(legal)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A random Aegis bot.")
    parser.add_argument("--seed", type=int, default=os.environ.get("AEGIS_SEED"))
    run(RandomBot(parser.parse_known_args()[0].seed))
