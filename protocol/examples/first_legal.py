"""A bot that always plays the first legal action, for benchmarks and tests:
``python -m protocol.examples.first_legal``. Uses the decision methods one by one."""

from __future__ import annotations

from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, run


class FirstLegalBot(Bot):
    """Always ``legal[0]``: the cheapest possible bot, so benchmarks measure the SDK."""

    name = "first-legal"
    author = "aegis-ref"

    def exchange(self, view: Decision, legal: Sequence[Action]) -> Action:
        """The first exchange action (``stop`` for the master)."""
        return legal[0]

    def bid(self, view: Decision, legal: Sequence[Action]) -> Action:
        """The lowest bid (or ``pass`` for the slave)."""
        return legal[0]

    def play(self, view: Decision, legal: Sequence[Action]) -> Action:
        """The first card allowed."""
        return legal[0]


if __name__ == "__main__":
    run(FirstLegalBot())
