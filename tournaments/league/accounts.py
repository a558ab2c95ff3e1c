"""A league's authors: who may submit over the network, with which token, under which limits,
and which bot names each one owns.

The accounts live in one JSON file in the league's submissions folder
(:data:`ACCOUNTS_NAME`; the store of submissions skips names that start with a dot), written
atomically under a lock. A token is ``AUTHOR.SECRET``, the secret 32 random bytes; the file
keeps only a random salt and the SHA-256 of salt and secret, so reading the file gives no
token. (A slow password hash would buy nothing here: the secret is random and long, not a
word a person chose, and it would give a flood of requests CPU to burn.)

A bot name belongs to the author who first submitted it; each author has a number of
submissions per day and an upload size, set when the author is made.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tournaments.errors import TournamentError

__all__ = [
    "ACCOUNTS_NAME",
    "AUTHOR_NAME",
    "DEFAULT_MAX_UPLOAD_MB",
    "DEFAULT_PER_DAY",
    "Author",
    "Authors",
    "RefusedError",
]

ACCOUNTS_NAME = ".authors.json"
_LOCK_NAME = ".authors.lock"
#: What an author's name looks like (it is the start of the author's tokens).
AUTHOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
DEFAULT_PER_DAY = 10
DEFAULT_MAX_UPLOAD_MB = 16
_DAY = timedelta(days=1)


class RefusedError(TournamentError):
    """A request an author may not make; ``status`` is the HTTP status that says so."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Author:
    """One author as the accounts file keeps it (no token: only its salted hash)."""

    name: str
    created_at: str
    #: None: the token does not expire.
    expires_at: str | None
    per_day: int
    max_upload_bytes: int
    #: The organiser's account: it sees every submission's build log and check report.
    organiser: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode("utf-8")).hexdigest()


class Authors:
    """The accounts of the league whose submissions folder is ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / ACCOUNTS_NAME

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The accounts, read under the lock; changes to the map are written back."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / _LOCK_NAME, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                temporary = self.path.with_name(f"{self.path.name}.tmp")
                temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
                os.chmod(temporary, 0o600)
                os.replace(temporary, self.path)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"authors": {}, "owners": {}, "submitted": {}}
        except (OSError, ValueError) as error:
            raise TournamentError(f"{self.path}: cannot read the accounts ({error})") from None
        if not isinstance(data, dict):
            raise TournamentError(f"{self.path}: not an accounts file")
        for key in ("authors", "owners", "submitted"):
            data.setdefault(key, {})
        return data

    # -- the organiser -----------------------------------------------------------------------

    def add(
        self,
        name: str,
        *,
        days: float | None = None,
        per_day: int = DEFAULT_PER_DAY,
        max_upload_mb: float = DEFAULT_MAX_UPLOAD_MB,
        organiser: bool = False,
    ) -> str:
        """Make the author ``name`` (or give it a new token, which ends its old one) and
        return its token: the only time it is seen. Raises :class:`TournamentError` for a
        malformed name."""
        if not AUTHOR_NAME.fullmatch(name):
            raise TournamentError(
                f"author name {name!r}: letters, digits, '_' and '-', 1 to 40, "
                "starting with a letter or digit"
            )
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        now = _now()
        with self._locked() as data:
            data["authors"][name] = {
                "salt": salt,
                "hash": _digest(salt, secret),
                "created_at": now.isoformat(timespec="seconds"),
                "expires_at": None
                if days is None
                else (now + timedelta(days=days)).isoformat(timespec="seconds"),
                "per_day": per_day,
                "max_upload_bytes": int(max_upload_mb * 2**20),
                "organiser": organiser,
            }
        return f"{name}.{secret}"

    def all(self) -> list[Author]:
        """Every author, by name."""
        with self._locked() as data:
            return [self._author(name, entry) for name, entry in sorted(data["authors"].items())]

    @staticmethod
    def _author(name: str, entry: dict[str, Any]) -> Author:
        return Author(
            name=name,
            created_at=str(entry["created_at"]),
            expires_at=entry.get("expires_at"),
            per_day=int(entry["per_day"]),
            max_upload_bytes=int(entry["max_upload_bytes"]),
            organiser=bool(entry.get("organiser", False)),
        )

    # -- a request ---------------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Author:
        """The author of an ``Authorization: Bearer TOKEN`` header. Raises
        :class:`RefusedError` (401) for a missing, malformed, unknown or expired token."""
        if not authorization or not authorization.startswith("Bearer "):
            raise RefusedError(401, "no token: send 'Authorization: Bearer TOKEN'")
        name, dot, secret = authorization.removeprefix("Bearer ").strip().partition(".")
        if not dot or not AUTHOR_NAME.fullmatch(name) or not secret:
            raise RefusedError(401, "a malformed token")
        with self._locked() as data:
            entry = data["authors"].get(name)
        if entry is None or not hmac.compare_digest(
            _digest(entry["salt"], secret), str(entry["hash"])
        ):
            raise RefusedError(401, "a wrong token")
        author = self._author(name, entry)
        if author.expires_at is not None and datetime.fromisoformat(author.expires_at) <= _now():
            raise RefusedError(401, f"this token expired on {author.expires_at}")
        return author

    def owner(self, bot: str) -> str | None:
        """The author who owns the bot name ``bot``, if any."""
        with self._locked() as data:
            owner = data["owners"].get(bot)
        return None if owner is None else str(owner)

    def may_submit(self, author: Author) -> None:
        """Raise :class:`RefusedError` (429) if ``author`` used up its submissions of the last
        24 hours."""
        with self._locked() as data:
            recent = self._recent(data, author.name)
        if len(recent) >= author.per_day:
            raise RefusedError(
                429,
                f"{author.name} made {len(recent)} submissions in the last 24 hours, its "
                f"limit: the next one is possible after {min(recent) + _DAY:%Y-%m-%d %H:%M} UTC",
            )

    @staticmethod
    def _recent(data: dict[str, Any], name: str) -> list[datetime]:
        since = _now() - _DAY
        times = [datetime.fromisoformat(when) for when in data["submitted"].get(name, [])]
        return [when for when in times if when > since]

    def check_owner(self, author: Author, bot: str) -> None:
        """Raise :class:`RefusedError` (403) if the bot name ``bot`` belongs to another author."""
        owner = self.owner(bot)
        if owner is not None and owner != author.name:
            raise RefusedError(403, f"the bot name {bot!r} belongs to another author")

    def note_submission(self, author: Author, bot: str) -> None:
        """Count a stored submission of ``author``, and give it the name ``bot`` if no one
        owns it yet."""
        with self._locked() as data:
            data["owners"].setdefault(bot, author.name)
            recent = self._recent(data, author.name)
            recent.append(_now())
            data["submitted"][author.name] = [when.isoformat() for when in recent]
