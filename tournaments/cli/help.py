"""How ``aegis-ref --help`` names what a command takes: capitals, as Unix manuals do.

Typer shows an option's type in angle brackets in lower case (``--matches <int range>``), a
flag as ``<bool>`` although it takes no value, and a required argument in braces
(``{bot_a}``). Here, once for every command: a flag shows no value, a value shows its
``metavar`` where the option names one (``N``, ``MS``, ``FILE``) and its type in capitals
otherwise (``INT``, ``TEXT``, ``PATH``), choices stay as the words one types
(``auto|required|off``), and an argument shows in capitals (``BOT_A``, ``[COMMAND]...``).
A command's description reflows its paragraphs to the terminal's width, as in plain mode,
instead of keeping the source's line breaks (``\b`` on a paragraph's first line keeps them).
``tests/tournaments/cli/test_help.py`` reads every command's help to keep it so.
"""

from __future__ import annotations

from typing import Any

from typer import core, rich_utils

__all__ = ["COMMAND_ORDER", "EXAMPLES", "TYPER_INTERNALS", "HelpGroup", "install"]

#: The commands in the order ``aegis-ref --help`` lists them: the order a user meets them
#: (the quick start's tournament and its readers, then a bot author's check, match and play,
#: the records' tools, A/B tests, submissions and leagues, remote bots' keys, and the
#: developers' tools).
COMMAND_ORDER = (
    "tournament",
    "standings",
    "report",
    "check-bot",
    "match",
    "play",
    "replay",
    "verify",
    "sprt",
    "submit",
    "submissions",
    "league",
    "serve",
    "authors",
    "keygen",
    "selfplay",
    "schema",
)

#: Each command's examples, shown at the end of its help; each one parses
#: (tests/tournaments/cli/test_help.py), so none can go stale.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "tournament": (
        "aegis-ref tournament tournaments/examples/demo.yaml",
        "aegis-ref tournament league.yaml --output results/league --concurrency 4",
    ),
    "standings": (
        "aegis-ref standings results/demo",
        "aegis-ref standings results/demo --format csv",
    ),
    "report": ("aegis-ref report results/demo -o demo.html",),
    "check-bot": (
        "aegis-ref check-bot -- python3 my_bot.py",
        "aegis-ref check-bot 'node my-bot/bot.js' --decision-ms 200",
        "aegis-ref check-bot --remote my-bot.key.pub --listen 127.0.0.1:5555 "
        "--key-file referee.key",
    ),
    "match": (
        "aegis-ref match random first --matches 10",
        "aegis-ref match 'python3 my_bot.py' greedy --seed 7 --record games.jsonl",
        "aegis-ref match 'mine=python3 my_bot.py' greedy --matches 40 --concurrency 2",
    ),
    "play": ("aegis-ref play greedy",),
    "replay": (
        "aegis-ref replay games.jsonl",
        "aegis-ref replay games.jsonl --match 2 --game 1",
        "aegis-ref replay games.jsonl --html replay.html",
    ),
    "verify": ("aegis-ref verify games.jsonl", "aegis-ref verify results/demo"),
    "sprt": (
        "aegis-ref sprt 'python3 new.py' 'python3 old.py' --elo0 0 --elo1 20",
        "aegis-ref sprt 'new=python3 bot.py --fast' 'old=python3 bot.py' --concurrency 2",
    ),
    "submit": (
        "aegis-ref submit my-bot/ --league leagues/spring",
        "aegis-ref submit my-bot-1.2.tar.gz --league leagues/spring --no-wait",
        "aegis-ref submit my-bot/ --server https://league.example.org --token-file ~/.aegis-token",
    ),
    "submissions": ("aegis-ref submissions leagues/spring",),
    "league": (
        "aegis-ref league leagues/spring",
        "aegis-ref league leagues/spring --once",
    ),
    "serve": (
        "aegis-ref serve results/demo",
        "aegis-ref serve leagues/spring --host 0.0.0.0 --port 443 --certfile cert.pem "
        "--keyfile key.pem",
    ),
    "authors": (
        "aegis-ref authors add ada --league leagues/spring",
        "aegis-ref authors add bob --league leagues/spring --per-day 3 --days 30",
    ),
    "keygen": ("aegis-ref keygen referee.key",),
    "selfplay": ("aegis-ref selfplay --matches 100 --seed 3 --record self.jsonl",),
    "schema": ("aegis-ref schema", "aegis-ref schema --out protocol/schema"),
}

#: Typer's lower-case type labels, and what the help shows instead.
_TYPE_NAMES = {
    "int": "INT",
    "int range": "INT",
    "float": "FLOAT",
    "float range": "FLOAT",
    "str": "TEXT",
    "path": "PATH",
    "file": "FILE",
    "dir": "DIR",
    "list[str]": "TEXT",
}

_typer_display_type = core._TyperParameter.display_type


def _display_type(self: core._TyperParameter, ctx: Any) -> str:
    if self.metavar is not None:
        return self.metavar
    label = _typer_display_type(self, ctx).removeprefix("<").removesuffix(">")
    if "|" in label:
        return label  # choices: the very words a user types
    return _TYPE_NAMES.get(label, label.upper())


def _option_display_type_rich(self: core.TyperOption, ctx: Any) -> str | None:
    if self.is_flag and not self.count:
        return None  # a flag takes no value
    shown = _display_type(self, ctx)
    return f"{shown}..." if self.nargs != 1 else shown


def _argument_display_name(self: core.TyperArgument) -> str:
    return self.metavar if self.metavar is not None else (self.name or "").upper()


def _argument_usage_name(self: core.TyperArgument) -> str:
    name = _argument_display_name(self)
    name = name if self.required else f"[{name}]"
    return f"{name}..." if self.nargs != 1 else name


def _reflow(paragraphs: list[str], markup_mode: object) -> str:
    return "\n\n".join(
        paragraph.removeprefix("\b\n")
        if paragraph.startswith("\b")
        else " ".join(paragraph.split())
        for paragraph in paragraphs
    )


class HelpGroup(core.TyperGroup):
    """The ``aegis-ref`` group: commands listed in :data:`COMMAND_ORDER`, each help ending
    with its :data:`EXAMPLES`."""

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        for name, command in self.commands.items():
            examples = EXAMPLES.get(name, ())
            if not examples:
                continue
            shown = "\n".join(f"  {example}" for example in examples)
            title = "Example" if len(examples) == 1 else "Examples"
            section = f"{title}:\n\n\b\n{shown}"
            command.epilog = f"{command.epilog}\n\n{section}" if command.epilog else section

    def list_commands(self, ctx: Any) -> list[str]:
        listed = super().list_commands(ctx)
        ranks = {name: rank for rank, name in enumerate(COMMAND_ORDER)}
        return sorted(listed, key=lambda name: ranks.get(name, len(ranks)))


_typer_command_help = rich_utils._make_command_help


def _command_help(*, help_text: str, markup_mode: Any) -> Any:
    """A command's line in the group's list: its first paragraph, reflowed."""
    first, _, rest = help_text.partition("\n\n")
    reflowed = first if first.startswith("\b") else " ".join(first.split())
    return _typer_command_help(help_text=f"{reflowed}\n\n{rest}", markup_mode=markup_mode)


#: The private parts of typer that :func:`install` replaces, with the parameters typer calls
#: them with: a typer that renames or reshapes one breaks the help's look, and
#: tests/tournaments/cli/test_help.py says so by name.
TYPER_INTERNALS: dict[str, tuple[str, ...]] = {
    "typer.core._TyperParameter.display_type": ("self", "ctx"),
    "typer.core.TyperOption.display_type_rich": ("self", "ctx"),
    "typer.core.TyperArgument.display_name_raw": ("self",),
    "typer.core.TyperArgument._usage_display_name": ("self",),
    "typer.rich_utils._fix_linebreaks": ("paragraphs", "markup_mode"),
    "typer.rich_utils._make_command_help": ("help_text", "markup_mode"),
}


def install() -> None:
    """Make every command's help use these names (idempotent)."""
    core._TyperParameter.display_type = _display_type  # type: ignore[method-assign]
    core.TyperOption.display_type_rich = _option_display_type_rich  # type: ignore[method-assign]
    core.TyperArgument.display_name_raw = property(_argument_display_name)  # type: ignore[assignment,method-assign]
    core.TyperArgument._usage_display_name = _argument_usage_name  # type: ignore[method-assign]
    rich_utils._fix_linebreaks = _reflow
    rich_utils._make_command_help = _command_help
