"""Rules options: the parameters a tournament may set for the whole match."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from referee.rules.errors import RulesOptionsError

__all__ = ["MAX_EXCHANGE_ROUNDS_LIMIT", "RulesOptions", "parse_rules_options"]

#: Four rounds of ten cards use 40 of the 41 stock cards (D2); more rounds could run the stock
#: dry, which the rules do not cover, and the master's bid floor (exchange count + 1) must stay
#: at most 5.
MAX_EXCHANGE_ROUNDS_LIMIT = 4


@dataclass(frozen=True, slots=True)
class RulesOptions:
    """The rules options of a match. Every game record states them.

    - ``target_score``: points that win the match (default 25).
    - ``cold_margin``: a lead that wins the match early, a "called game" (default 10).
    - ``promise_min_bid``: the smallest bid that earns the promise bonus (default 1, the
      card's table; 4 gives the card's text reading, D5).
    - ``max_exchange_rounds``: exchange rounds before bidding (default 4, at most 4).
    """

    target_score: int = 25
    cold_margin: int = 10
    promise_min_bid: int = 1
    max_exchange_rounds: int = 4

    def __post_init__(self) -> None:
        _check_int("target_score", self.target_score, 1, 1000)
        _check_int("cold_margin", self.cold_margin, 1, 1000)
        _check_int("promise_min_bid", self.promise_min_bid, 1, 5)
        _check_int("max_exchange_rounds", self.max_exchange_rounds, 0, MAX_EXCHANGE_ROUNDS_LIMIT)

    def to_dict(self) -> dict[str, int]:
        """The options as a plain mapping, as written in records and messages."""
        return asdict(self)


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RulesOptionsError(f"rules option {name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise RulesOptionsError(
            f"rules option {name} must be between {low} and {high}, got {value}"
        )


_OPTION_NAMES = tuple(field.name for field in fields(RulesOptions))


def parse_rules_options(mapping: Mapping[str, Any] | None) -> RulesOptions:
    """Build options from a mapping, rejecting unknown names; missing names take defaults."""
    if mapping is None:
        return RulesOptions()
    if not isinstance(mapping, Mapping):
        raise RulesOptionsError(f"rules options must be a mapping, got {type(mapping).__name__}")
    unknown = sorted(str(key) for key in mapping if key not in _OPTION_NAMES)
    if unknown:
        raise RulesOptionsError(
            f"unknown rules option(s) {', '.join(unknown)}; known: {', '.join(_OPTION_NAMES)}"
        )
    return RulesOptions(**dict(mapping))
