"""A ladder's settings and their checks, for the config to read and the planner to follow.

The planner itself (:mod:`tournaments.stats.ladder`) decides from the joint fit; what a
ladder may be asked for is checked here, below it, so that reading a config needs neither
the planner nor its numerical libraries.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LadderSettings", "check_settings", "default_finalists", "race_confidence"]


@dataclass(frozen=True, slots=True)
class LadderSettings:
    """How a ladder plays: what it certifies, its budget and its pairing policy."""

    #: K to certify; None ranks the whole field.
    top: int | None = None
    confidence: float = 0.95
    #: Budget in matches (a duplicate pair is 2 matches).
    max_matches: int | None = None
    #: Budget in rounds.
    rounds: int | None = None
    #: Share of long-range random pairs per swiss round.
    random_share: float = 0.1
    #: Elo added to a pair's distance for every earlier meeting.
    repeat_penalty: float = 100.0
    #: Bots in the final (default: :func:`default_finalists`).
    finalists: int | None = None
    #: Virtual games of each bot against a virtual bot of the mean rating.
    prior_games: float = 2.0
    #: With ``top`` and a budget: the share of the budget kept for the final. Once the rest
    #: is spent, the final starts with the best ``finalists`` contenders even if more are
    #: still in the race (0: the final starts only when the race has narrowed the field).
    final_share: float = 0.3
    #: With ``top``: the one-sided confidence at which a bot leaves the race, each of K bots
    #: above it (None: ``1 - (1 - confidence) / top``, see :func:`race_confidence`).
    race_confidence: float | None = None


def race_confidence(settings: LadderSettings) -> float:
    """The one-sided confidence at which a bot leaves the race: ``race_confidence``, or by
    default ``1 - (1 - confidence) / top``, stricter than the certification: a bot out of
    the race plays no more games that could correct a mistake, and any of the top K could
    be the one sent away."""
    if settings.race_confidence is not None:
        return settings.race_confidence
    return 1 - (1 - settings.confidence) / (settings.top or 1)


def default_finalists(top: int, field_size: int) -> int:
    """The final's size for ``top``: K plus a margin of half of K (at least 2), at most
    the field."""
    return min(field_size, top + max(2, top // 2))


def check_settings(
    settings: LadderSettings, field_size: int | None, *, fewest_bots: int = 0
) -> list[tuple[str, str]]:
    """Problems with ``settings`` for a field of ``field_size`` bots, as (key, message);
    with ``field_size`` None (a league's field, known only when it runs), the problems
    that do not depend on the field, the budget checked against a round of
    ``fewest_bots`` (the config's own bots: the fewest a league's field can have)."""
    problems: list[tuple[str, str]] = []
    if field_size is not None and field_size < 2:
        problems.append(("bots", f"a ladder needs at least 2 bots, got {field_size}"))
    top = settings.top
    if top is not None and top < 1:
        problems.append(("top", f"top must be at least 1, got {top}"))
    elif top is not None and field_size is not None and top > field_size:
        problems.append(("top", f"top {top} is larger than the field of {field_size} bots"))
    if not 0.5 < settings.confidence < 1:
        problems.append(
            ("confidence", f"confidence must be between 0.5 and 1, got {settings.confidence}")
        )
    bots = field_size if field_size is not None else fewest_bots
    one_round = max(2 * (bots // 2), 2)
    budget = settings.max_matches
    if budget is not None and budget < one_round:
        if field_size is not None:
            message = (
                f"below one round: {budget} matches, but a round of {field_size} bots is "
                f"{one_round} matches (a duplicate pair per bot)"
            )
        elif budget >= 2:
            message = (
                f"below one round: {budget} matches, but a round of the config's {bots} "
                f"bots, the fewest the league's field can have, is {one_round} matches (a "
                "duplicate pair per bot)"
            )
        else:
            message = (
                f"below one duplicate pair: {budget} matches, and a ladder plays its bots in "
                "duplicate pairs of 2 matches"
            )
        problems.append(("max_matches", message))
    if settings.rounds is not None and settings.rounds < 1:
        problems.append(("rounds", f"rounds must be at least 1, got {settings.rounds}"))
    if not 0 <= settings.random_share <= 1:
        problems.append(
            ("random_share", f"random_share must be between 0 and 1, got {settings.random_share}")
        )
    if not settings.repeat_penalty >= 0:
        problems.append(
            ("repeat_penalty", f"repeat_penalty must be >= 0, got {settings.repeat_penalty}")
        )
    if not settings.prior_games > 0:
        problems.append(("prior_games", f"prior_games must be > 0, got {settings.prior_games}"))
    if not 0 <= settings.final_share < 1:
        problems.append(
            (
                "final_share",
                f"final_share must be at least 0 and below 1, got {settings.final_share}",
            )
        )
    if settings.race_confidence is not None:
        if top is None:
            problems.append(
                ("race_confidence", "race_confidence needs top: only a top K has a race")
            )
        elif not 0.5 < settings.race_confidence < 1:
            problems.append(
                (
                    "race_confidence",
                    f"race_confidence must be between 0.5 and 1, got {settings.race_confidence}",
                )
            )
        elif (
            settings.race_confidence < settings.confidence
            and settings.max_matches is None
            and settings.rounds is None
        ):
            problems.append(
                (
                    "race_confidence",
                    f"race_confidence {settings.race_confidence} below confidence "
                    f"{settings.confidence} needs a budget (max_matches or rounds): a bot can "
                    "then rest while its comparison with the top is still open, and only the "
                    "budget would end the ladder",
                )
            )
    finalists = settings.finalists
    if finalists is not None:
        if top is None:
            problems.append(("finalists", "finalists needs top: the final decides the top K"))
        elif finalists < top:
            problems.append(
                ("finalists", f"finalists must be at least top ({top}), got {finalists}")
            )
        elif field_size is not None and finalists > field_size:
            problems.append(
                (
                    "finalists",
                    f"finalists must be between top ({top}) and the field ({field_size}), "
                    f"got {finalists}",
                )
            )
    return problems
