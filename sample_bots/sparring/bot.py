"""The bundled ``sparring`` bot: ``greedy`` with a strength knob, for calibrated opponents.

At every decision it plays a uniformly random legal action with probability ``P``, else
``greedy``'s choice. ``P`` is 0 (plays as ``greedy``) to 1 (plays as ``random``), set by
``--random P`` or the environment variable ``AEGIS_SPARRING_RANDOM`` (the argument wins);
the default is 0.5. A field of sparring bots with different ``P`` has a known true order:
the smaller ``P``, the stronger the bot.

Its randomness comes from the SDK's ``rng``, reseeded from each match's ``seed``; ``P`` (and
``AEGIS_SEED``, if set) are mixed in, so that two sparring bots in one match do not draw the
same numbers and a match plays the same however it is run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, MatchInfo, run
from sample_bots.greedy.bot import GreedyPlayer

__all__ = ["DEFAULT_RANDOM", "SparringBot", "random_share"]

DEFAULT_RANDOM = 0.5
ENVIRONMENT = "AEGIS_SPARRING_RANDOM"


def random_share(arguments: Sequence[str], environment: dict[str, str]) -> float:
    """``P`` from ``--random P``, else ``AEGIS_SPARRING_RANDOM``, else the default; exits
    with a message naming the bad value if it is not a number from 0 to 1."""
    parser = argparse.ArgumentParser(prog="sparring", description=__doc__.splitlines()[0])
    parser.add_argument("--random", metavar="P", help="share of random actions, 0 to 1")
    given = parser.parse_args(list(arguments)).random
    source = "--random"
    if given is None:
        given, source = environment.get(ENVIRONMENT), ENVIRONMENT
    if given is None:
        return DEFAULT_RANDOM
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        parser.exit(2, f"sparring: {source} must be a number from 0 to 1, got {given!r}\n")
    return value


class SparringBot(Bot):
    """Greedy, except for a random legal action with probability ``share``."""

    name = "sparring"
    author = "aegis-ref"

    def __init__(self, share: float, seed: str | None = None) -> None:
        self.share = share
        self.player = GreedyPlayer()
        self.personal_seed = f"sparring:{share!r}:{seed or ''}"

    def on_match_start(self, match: MatchInfo) -> None:
        """Forget the last match's cards; mix ``P`` into the match's seed."""
        self.player.forget()
        if match.seed is not None:
            self.rng.seed(f"{match.seed}:{self.personal_seed}")

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """A random legal action with probability ``share``, else greedy's."""
        if self.rng.random() < self.share:
            return self.rng.choice(legal)
        return self.player.decide(view.observation, legal)


if __name__ == "__main__":
    run(SparringBot(random_share(sys.argv[1:], dict(os.environ)), os.environ.get("AEGIS_SEED")))
