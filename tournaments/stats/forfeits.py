"""Which bots lost their matches to their own faults in a run, and why.

The coordinator adds every match it stores to a :class:`ForfeitTally`; at the end of the
run, :meth:`ForfeitTally.troubled` names each bot that lost more than half of the matches it
played in this run to a fault of its own (a forfeit, or a void match in which it failed too),
with the fault that did it most, so that the command can say so loudly and, when a bot lost
every one of its matches, end with a non-zero exit code: its results mean nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from referee.faults import Fault, fault_reason
from tournaments.store.rows import ResultRow

__all__ = ["BotForfeits", "ForfeitTally", "row_faults"]


def row_faults(row: ResultRow) -> tuple[Fault | None, tuple[Fault, ...]]:
    """A stored match row's forfeit (None if it had none) and all its faults; faults that
    cannot be read are left out (a row is the workers' plain data, not a bot's)."""
    forfeit = _fault(row.forfeit_json)
    faults: list[Fault] = []
    try:
        listed = json.loads(row.faults_json or "[]")
    except (TypeError, ValueError):
        listed = []
    for item in listed if isinstance(listed, list) else []:
        fault = _fault(item)
        if fault is not None:
            faults.append(fault)
    return forfeit, tuple(faults)


def _fault(value: object) -> Fault | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    try:
        return Fault.from_json(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class BotForfeits:
    """A bot that lost most of its matches of a run to its own faults."""

    name: str
    #: Matches it played in the run, and those it lost to a fault of its own.
    matches: int
    lost: int
    #: Its faults by kind, most frequent first.
    kinds: tuple[tuple[str, int], ...]
    #: The latest fault of its most frequent kind.
    fault: Fault

    @property
    def lost_all(self) -> bool:
        """True when every match it played was lost to its own fault."""
        return self.lost == self.matches

    def warning(self, command: Sequence[str] = ()) -> str:
        """``WARNING: bot trumpyy lost all 8 of its matches of this run to its own faults
        (handshake 8): handshake before the first game: …`` (``command``: the bot's, for a
        hint)."""
        share = (
            f"all {self.matches} of its matches"
            if self.lost_all
            else f"{self.lost} of its {self.matches} matches"
        )
        kinds = ", ".join(f"{kind} {count}" for kind, count in self.kinds)
        return (
            f"WARNING: bot {self.name} lost {share} of this run to its own faults ({kinds}); "
            f"the most frequent: {fault_reason(self.fault, command)}"
        )


@dataclass(slots=True)
class _Counts:
    matches: int = 0
    lost: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    latest: dict[str, Fault] = field(default_factory=dict)


class ForfeitTally:
    """Per bot: the matches stored in a run, and those it lost to its own faults."""

    def __init__(self) -> None:
        self._bots: dict[str, _Counts] = {}

    def add(self, row: ResultRow) -> None:
        """Count one stored match row."""
        forfeit, faults = row_faults(row)
        void = row.void
        for name in row.seats:
            counts = self._bots.setdefault(name, _Counts())
            counts.matches += 1
            own = [fault for fault in faults if fault.bot == name]
            if forfeit is not None and forfeit.bot == name:
                blamed: Fault | None = forfeit
            elif void and own:
                blamed = own[0]
            else:
                blamed = None
            if blamed is not None:
                counts.lost += 1
                counts.kinds[blamed.kind.value] += 1
                counts.latest[blamed.kind.value] = blamed

    def troubled(self) -> list[BotForfeits]:
        """The bots that lost more than half of their matches to their own faults, worst
        first."""
        found = []
        for name, counts in self._bots.items():
            if counts.matches and 2 * counts.lost > counts.matches:
                kinds = tuple(counts.kinds.most_common())
                fault = counts.latest[kinds[0][0]]
                found.append(BotForfeits(name, counts.matches, counts.lost, kinds, fault))
        return sorted(found, key=lambda bot: (-bot.lost / bot.matches, bot.name))
