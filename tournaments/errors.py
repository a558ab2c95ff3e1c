"""The tournament system's errors: one small hierarchy rooted in :class:`TournamentError`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ClusterError",
    "ConfigError",
    "ConfigIssue",
    "PreflightError",
    "StoreError",
    "StoreLockedError",
    "StoreMismatchError",
    "SubmissionRejectedError",
    "TournamentError",
    "UploadError",
]


class TournamentError(Exception):
    """Anything that stops a tournament command with a message instead of a traceback."""


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a config file: where it is and what is wrong."""

    source: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ConfigError(TournamentError):
    """A config file that cannot be used; ``issues`` lists every problem found."""

    def __init__(self, issues: Sequence[ConfigIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


class StoreError(TournamentError):
    """The results store cannot be opened or does not hold what was expected."""


class StoreMismatchError(StoreError):
    """An output directory holds results played under other rules, time control or seed."""


class StoreLockedError(StoreError):
    """Another ``aegis-ref tournament`` is writing to the same output directory."""


class ClusterError(TournamentError):
    """The cluster executor cannot be used: the extra is not installed, the scheduler cannot
    be reached, or its workers cannot run the tournament's bots."""


class UploadError(TournamentError):
    """A submission's files that a league does not take in (an archive with a path out of
    it, a link out, too many bytes): the message names the entry and the reason."""


class SubmissionRejectedError(TournamentError):
    """A submission a league does not take; ``reasons`` says why, one reason a line."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("\n".join(self.reasons))


class PreflightError(TournamentError):
    """A bot could not start as the tournament runs it (``names``): nothing was played."""

    def __init__(self, message: str, names: Sequence[str]) -> None:
        self.names = tuple(names)
        super().__init__(message)
