"""The flags that several commands share, each defined once, and what they turn into."""

from __future__ import annotations

from typing import Annotated

import typer

from referee.rules.errors import RulesOptionsError
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxMode, SandboxPlan, SandboxUnavailableError, plan_sandbox

__all__ = [
    "ColdMarginOption",
    "MaxExchangeRoundsOption",
    "PromiseMinBidOption",
    "SandboxOption",
    "TargetScoreOption",
    "rules_from_flags",
    "sandbox_from_flag",
]

# Rules options as command-line flags, shared by every command that plays matches.
TargetScoreOption = Annotated[
    int | None, typer.Option(help="Rules option: points that win the match.")
]
ColdMarginOption = Annotated[
    int | None, typer.Option(help="Rules option: a lead that wins the match early.")
]
PromiseMinBidOption = Annotated[
    int | None, typer.Option(help="Rules option: smallest bid earning the promise bonus.")
]
MaxExchangeRoundsOption = Annotated[
    int | None, typer.Option(help="Rules option: exchange rounds before bidding (0-4).")
]


# How started bots are contained, shared by every command that starts bots.
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


def rules_from_flags(
    target_score: int | None,
    cold_margin: int | None,
    promise_min_bid: int | None,
    max_exchange_rounds: int | None,
) -> RulesOptions:
    """Rules options from the command-line flags; defaults where a flag is absent."""
    given = {
        "target_score": target_score,
        "cold_margin": cold_margin,
        "promise_min_bid": promise_min_bid,
        "max_exchange_rounds": max_exchange_rounds,
    }
    try:
        return RulesOptions(**{name: value for name, value in given.items() if value is not None})
    except RulesOptionsError as error:
        raise typer.BadParameter(str(error)) from None
