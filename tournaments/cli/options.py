"""The flags that several commands share, each defined once, and what they turn into.

The rules flags come as a group: a command declares ``rules: RulesFlags`` and wears
:func:`with_rules_flags`, and typer sees the four flags in that parameter's place. The
others are ``Annotated`` types to give a parameter; where a command words a flag its own way,
it passes its help text to the flag's function (``decision_ms_flag("…")``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from referee.cgroups import detect_cgroups
from referee.cpu_clock import ClockUnavailableError, resolve_clock
from referee.listeners import RemoteListener, listen_problem, read_secret_key
from referee.rules.errors import RulesOptionsError
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxMode, SandboxPlan, SandboxUnavailableError, plan_sandbox
from referee.time_control import Clock, TimeControl

__all__ = [
    "BOT_HELP",
    "DEFAULT_TIME_CONTROL",
    "NO_RULES_FLAGS",
    "BankMsOption",
    "ClockOption",
    "ColorOption",
    "ConcurrencyOption",
    "DecisionMsOption",
    "KeyFileOption",
    "ListenOption",
    "RecordOption",
    "RecordPathsArgument",
    "RulesFlags",
    "SandboxOption",
    "SeedOption",
    "WarmupMsOption",
    "console_from_flag",
    "decision_ms_flag",
    "listener_from_flags",
    "record_flag",
    "sandbox_from_flag",
    "time_control_from_flags",
    "warmup_ms_flag",
    "with_rules_flags",
]

#: How a bot is named on the command line, for the help of a bot argument.
BOT_HELP = (
    'A bundled bot\'s name (random, …) or a quoted command line ("python3 my_bot.py"), '
    'optionally named as NAME=BOT (mine="python3 my_bot.py"); a command line without a '
    "name is called by the name it gives in its hello."
)

# ---------------------------------------------------------------------------------------------
# Rules options: --target-score, --cold-margin, --promise-min-bid, --max-exchange-rounds

_RULES_HELP = {
    "target_score": "Rules option: points that win the match.",
    "cold_margin": "Rules option: a lead that wins the match early.",
    "promise_min_bid": "Rules option: smallest bid earning the promise bonus.",
    "max_exchange_rounds": "Rules option: exchange rounds before bidding (0-4).",
}


@dataclass(frozen=True, slots=True)
class RulesFlags:
    """The rules flags as given; None where a flag is absent."""

    target_score: int | None = None
    cold_margin: int | None = None
    promise_min_bid: int | None = None
    max_exchange_rounds: int | None = None

    def options(self) -> RulesOptions:
        """Rules options from the flags; defaults where a flag is absent. A bad value is a
        usage error."""
        given = {name: value for name, value in asdict(self).items() if value is not None}
        try:
            return RulesOptions(**given)
        except RulesOptionsError as error:
            raise typer.BadParameter(str(error)) from None


#: No rules flag given: the default rules.
NO_RULES_FLAGS = RulesFlags()


def with_rules_flags(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the rules flags in place of its ``rules`` parameter, for typer.

    The flags stand where ``rules`` stands, so ``--help`` lists them there; ``command`` gets
    them as one :class:`RulesFlags` and turns them into rules options (``rules.options()``)
    when it is ready to report a bad value.
    """
    signature = inspect.signature(command, eval_str=True)
    parameters = list(signature.parameters.values())
    names = [parameter.name for parameter in parameters]
    at = names.index("rules")
    parameters[at : at + 1] = [
        inspect.Parameter(
            name,
            parameters[at].kind,
            default=None,
            annotation=Annotated[int | None, typer.Option(help=help)],
        )
        for name, help in _RULES_HELP.items()
    ]

    @functools.wraps(command)
    def with_flags(**given: Any) -> None:
        rules = RulesFlags(**{name: given.pop(name) for name in _RULES_HELP})
        command(**given, rules=rules)

    # What typer reads: the signature with the flags, and their types.
    with_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_flags.__annotations__ = {
        **{parameter.name: parameter.annotation for parameter in parameters},
        "return": signature.return_annotation,
    }
    return with_flags


# ---------------------------------------------------------------------------------------------
# Time control: --decision-ms, --bank-ms, --warmup-ms

#: The clock when no time-control flag is given; each flag's default comes from it.
DEFAULT_TIME_CONTROL = TimeControl()


def decision_ms_flag(help: str = "Deadline of each decision.") -> Any:
    """``--decision-ms``: the deadline of each decision, at least 1 ms."""
    return typer.Option(min=1, help=help)


def warmup_ms_flag(
    help: str = "Extra time for start-up and each first decision.", *, minimum: int = 0
) -> Any:
    """``--warmup-ms``: the extra time for a bot's start-up and its first decisions."""
    return typer.Option(min=minimum, help=help)


DecisionMsOption = Annotated[int, decision_ms_flag()]
BankMsOption = Annotated[
    int | None, typer.Option(min=0, help="Time bank per bot per match (none by default).")
]
WarmupMsOption = Annotated[int, warmup_ms_flag()]
ClockOption = Annotated[
    Clock | None,
    typer.Option(
        help="What a decision is charged: cpu (the CPU time of all the bot's processes and "
        "threads; required) or wall; by default cpu where the machine counts it, else wall."
    ),
]


def time_control_from_flags(control: TimeControl, *, exit_code: int = 2) -> TimeControl:
    """``control`` if this machine can keep its clock: exits with ``exit_code`` and a
    message naming what is missing for ``--clock cpu``; warns on stderr when the default
    CPU clock falls back to wall time."""
    try:
        _, warning = resolve_clock(control, detect_cgroups())
    except ClockUnavailableError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code) from None
    if warning is not None:
        typer.echo(f"warning: {warning}", err=True)
    return control


# ---------------------------------------------------------------------------------------------
# How many matches at once: --concurrency

ConcurrencyOption = Annotated[
    int,
    typer.Option(
        min=1,
        max=256,
        help="Matches played at once, each by a worker process of its own with its bots, as "
        "a tournament's concurrency; the results are the same at any concurrency for bots "
        "that draw their chance from the match's seed.",
    ),
]

# ---------------------------------------------------------------------------------------------
# How started bots are contained: --sandbox

SandboxOption = Annotated[
    SandboxMode,
    typer.Option(
        "--sandbox",
        help="auto: run each bot in a bubblewrap sandbox where bubblewrap works, else "
        "unsandboxed with a warning; required: refuse to run without it; off: never.",
        case_sensitive=False,
    ),
]


def sandbox_from_flag(mode: SandboxMode, *, exit_code: int = 2) -> SandboxPlan:
    """The sandbox plan for ``--sandbox``: exits with ``exit_code`` and a message naming
    what is missing for ``required``; warns on stderr when bots will run unsandboxed."""
    try:
        plan = plan_sandbox(mode)
    except SandboxUnavailableError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code) from None
    if not plan.enabled and mode is not SandboxMode.OFF:
        typer.echo(f"warning: {plan.summary}", err=True)
    return plan


# ---------------------------------------------------------------------------------------------
# Seeds, records and colour

SeedOption = Annotated[int, typer.Option(help="Master seed: same seed, same deals.")]


def record_flag(help: str = "Write the JSON Lines record here.") -> Any:
    """``--record``: the file to write a record to."""
    return typer.Option(dir_okay=False, help=help)


RecordOption = Annotated[Path | None, record_flag()]
RecordPathsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="JSON Lines records (docs/records.md), or folders: every *.jsonl in them.",
        show_default=False,
    ),
]
ColorOption = Annotated[
    bool | None, typer.Option("--color/--no-color", help="Force colour on or off.")
]


def console_from_flag(color: bool | None, **settings: Any) -> Console:
    """A console on standard output for ``--color/--no-color``: colour forced on, off, or
    (neither flag) where the output is a terminal."""
    return Console(force_terminal=color if color else None, no_color=color is False, **settings)


# ---------------------------------------------------------------------------------------------
# Remote bots: --listen HOST:PORT --key-file FILE

ListenOption = Annotated[
    str | None,
    typer.Option(help="HOST:PORT on which remote bots (remote:KEY) dial in over CurveZMQ."),
]
KeyFileOption = Annotated[
    Path | None,
    typer.Option(dir_okay=False, help="The referee's secret key (from aegis-ref keygen)."),
]


def listener_from_flags(
    listen: str | None, key_file: Path | None, *, needed: bool, exit_code: int = 2
) -> RemoteListener | None:
    """The listener of ``--listen`` and ``--key-file`` (None when neither is given and no
    remote bot plays); a clear error and ``exit_code`` when they cannot be used."""
    if listen is None and key_file is None:
        if needed:
            typer.echo("error: a remote bot needs --listen HOST:PORT and --key-file", err=True)
            raise typer.Exit(exit_code)
        return None
    if listen is None or key_file is None:
        typer.echo("error: --listen and --key-file go together", err=True)
        raise typer.Exit(exit_code)
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        typer.echo(f"error: --listen wants HOST:PORT, got {listen!r}", err=True)
        raise typer.Exit(exit_code)
    try:
        public, secret = read_secret_key(key_file)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code) from None
    problem = listen_problem(host, int(port))
    if problem is not None:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(exit_code)
    return RemoteListener(host, int(port), public, secret)
