"""The bundled ``first`` bot: always the first legal action. A fixed, trivial opponent.

It is the SDK's example :class:`protocol.examples.first_legal.FirstLegalBot` under the name
``first``: one source for both, so the bot the documentation shows is the one that plays."""

from protocol.examples.first_legal import FirstLegalBot
from protocol.sdk import run


class FirstBot(FirstLegalBot):
    """The example, named as the bundled bot."""

    name = "first"


if __name__ == "__main__":
    run(FirstBot())
