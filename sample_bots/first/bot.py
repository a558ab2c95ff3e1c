"""The bundled ``first`` bot: always the first legal action. A fixed, trivial opponent."""

from collections.abc import Sequence

from protocol.sdk import Action, Bot, Decision, run


class FirstLegalBot(Bot):
    """Answers every decision with the first action of the legal list."""

    name = "first"
    author = "aegis-ref"

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """The first legal action."""
        return legal[0]


if __name__ == "__main__":
    run(FirstLegalBot())
