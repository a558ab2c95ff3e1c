"""The bundled ``random`` bot: uniform over the legal actions. The SDK reseeds its RNG from each
match's ``seed`` (protocol 1.1), so a match plays the same however it is run; ``AEGIS_SEED``
seeds it under a 1.0 referee.

Its choices are the SDK's example :class:`protocol.examples.random_bot.RandomBot`; it adds
what a bundled bot needs and the short example leaves out: its own seed mixed into each
match's, so that two copies of it in one tournament stay different players."""

import os

from protocol.examples.random_bot import RandomBot
from protocol.sdk import MatchInfo, run


class BundledRandomBot(RandomBot):
    """The example, with its ``AEGIS_SEED`` mixed into each match's seed."""

    author = "aegis-ref"

    def __init__(self, seed: str | None) -> None:
        super().__init__(seed)
        #: Mixed into each match's seed, so that two copies of this bot with different
        #: ``AEGIS_SEED`` (``random`` and ``random-2``) stay different players.
        self.personal_seed = seed

    def on_match_start(self, match: MatchInfo) -> None:
        """The SDK has reseeded ``rng`` from the match's seed; mix in our own, if any."""
        if match.seed is not None and self.personal_seed:
            self.rng.seed(f"{match.seed}:{self.personal_seed}")


if __name__ == "__main__":
    run(BundledRandomBot(os.environ.get("AEGIS_SEED")))
