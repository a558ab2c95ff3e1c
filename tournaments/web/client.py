"""The author's side of submitting over the network: pack a bot, upload it with a token,
follow its state (``aegis-ref submit PATH --server URL``). Standard library only."""

from __future__ import annotations

import json
import os
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tournaments.errors import TournamentError

__all__ = ["TOKEN_VARIABLE", "Answer", "get_status", "read_token", "upload"]

#: The environment variable that holds an author's token, when no file is given.
TOKEN_VARIABLE = "AEGIS_TOKEN"
_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class Answer:
    """The server's answer: its HTTP status and its JSON document."""

    status: int
    document: dict[str, Any]


def read_token(token_file: Path | None) -> str:
    """The author's token: from ``token_file``, else from :data:`TOKEN_VARIABLE`. Raises
    :class:`TournamentError` if there is none."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise TournamentError(f"{token_file}: {error.strerror or error}") from None
        if not token:
            raise TournamentError(f"{token_file}: empty: it should hold the token")
        return token
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        raise TournamentError(
            f"no token: give --token-file FILE or set {TOKEN_VARIABLE} (the organiser makes "
            "it with aegis-ref authors add)"
        )
    return token


def _request(request: urllib.request.Request) -> Answer:
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            return Answer(response.status, json.loads(response.read() or b"{}"))
    except urllib.error.HTTPError as error:
        body = error.read()
        try:
            document = json.loads(body)
        except ValueError:
            document = {"error": body.decode("utf-8", errors="replace").strip()}
        return Answer(error.code, document if isinstance(document, dict) else {})
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise TournamentError(f"{request.full_url}: {reason}") from None


def _packed(path: Path, into: Path) -> Path:
    """``path`` as the server takes it: an archive as it is, a folder as a .tar.gz (links
    kept as links: the server refuses those that lead out)."""
    if path.is_file():
        return path
    if not path.is_dir():
        raise TournamentError(f"{path}: no such file or folder")
    archive = into / "bot.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(path, arcname=path.resolve().name)
    return archive


def upload(server: str, token: str, path: Path) -> Answer:
    """Upload the bot at ``path`` (a folder or an archive) to the league at ``server``."""
    with tempfile.TemporaryDirectory(prefix="aegis-submit-") as scratch:
        body = _packed(path, Path(scratch)).read_bytes()
    request = urllib.request.Request(
        urllib.parse.urljoin(server, "/api/v1/submissions"),
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/octet-stream"},
    )
    return _request(request)


def get_status(server: str, token: str, status_path: str) -> Answer:
    """A submission's status (``status_path`` as the server gave it)."""
    request = urllib.request.Request(
        urllib.parse.urljoin(server, status_path), headers={"Authorization": f"Bearer {token}"}
    )
    return _request(request)
