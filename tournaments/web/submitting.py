"""Submitting over the network: a league's authors upload bots with their token, and follow
them (``/api/v1/submissions``).

An upload is taken in exactly as ``aegis-ref submit`` takes in a local one
(:meth:`~tournaments.league.submissions.SubmissionStore.receive`: the same checks of paths, links,
sizes and manifest), and the running league builds, checks and accepts or rejects it. What
the service adds, before anything is stored: the author's token, its submissions per day,
its upload size (counted as the bytes arrive: a larger upload is cut off there), and whose
bot name it is. Only a submission's author (and the organiser's account) sees its build
log, its check report and its logs (what the bot wrote on stderr and stdout as it played).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from pathlib import Path
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from referee.server import log_file_name
from tournaments.config.tournament import TournamentSetup
from tournaments.errors import SubmissionRejectedError
from tournaments.league.accounts import Author, Authors, RefusedError
from tournaments.league.manifest import BotManifest
from tournaments.league.submissions import Submission, SubmissionStore

__all__ = ["BUILD_LOG_SHOWN", "submission_routes"]

#: Most bytes of a build log a status shows (its end).
BUILD_LOG_SHOWN = 256 * 1024
_UPLOADS = ".uploads"


def _refused(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status)


def _suffix(head: bytes) -> str:
    """What an upload is, by its first bytes: the name the store's unpacker goes by."""
    if head.startswith(b"\x1f\x8b"):
        return ".tar.gz"
    if head.startswith(b"PK\x03\x04"):
        return ".zip"
    return ".tar"


def _status(submission: Submission, *, detail: bool) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "name": submission.name,
        "version": submission.version,
        "player": submission.player,
        "state": submission.state.value,
        "submitted_at": submission.submitted_at,
        "finished_at": submission.finished_at,
        "reasons": list(submission.reasons),
        "build_tail": list(submission.build_tail),
        "check_summary": submission.check_summary,
        "status": f"/api/v1/submissions/{submission.name}/{submission.version}",
    }
    if detail:
        shown["build_log"] = _tail(submission.build_log)
        try:
            shown["check_report"] = json.loads(
                (submission.folder / "check.json").read_text(encoding="utf-8")
            )
        except (OSError, ValueError):
            shown["check_report"] = None
    return shown


def _tail(path: Path) -> str | None:
    try:
        with path.open("rb") as stream:
            stream.seek(0, 2)
            size = stream.tell()
            stream.seek(max(0, size - BUILD_LOG_SHOWN))
            return stream.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def _logs(output: Path, player: str) -> dict[str, str | None]:
    """The end of each of a bot's logs in a run's output (``logs/WORKER/PLAYER.log``: its
    stderr and stdout, a file per worker process and one of the preflight), by worker."""
    folder, name = output / "logs", log_file_name(player)
    try:
        workers = sorted(entry.name for entry in folder.iterdir() if entry.is_dir())
    except OSError:
        return {}
    return {
        worker: _tail(folder / worker / name)
        for worker in workers
        if (folder / worker / name).is_file()
    }


def submission_routes(setup: TournamentSetup) -> list[Route]:
    """The routes of a league's submissions over the network."""
    store = SubmissionStore(setup)
    authors = Authors(store.folder)
    # One upload is taken in at a time: who owns a new name is decided once.
    receiving = asyncio.Lock()

    async def author_of(request: Request) -> Author:
        return await asyncio.to_thread(authors.authenticate, request.headers.get("authorization"))

    async def submit(request: Request) -> Response:
        try:
            author = await author_of(request)
            await asyncio.to_thread(authors.may_submit, author)
        except RefusedError as refusal:
            return _refused(refusal.status, refusal.reason)
        limit = author.max_upload_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return _refused(413, f"the upload is {declared} bytes, more than {limit}")
        uploads = store.folder / _UPLOADS
        uploads.mkdir(parents=True, exist_ok=True)
        received = uploads / f"{author.name}-{secrets.token_hex(8)}.upload"
        try:
            size = 0
            head = b""
            with received.open("wb") as stream:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        return _refused(413, f"the upload is more than {limit} bytes")
                    if len(head) < 4:
                        head += chunk[:4]
                    stream.write(chunk)
            if size == 0:
                return _refused(400, "an empty upload: send the bot's .tar.gz, .tar or .zip")
            archive = received.with_name(received.stem + _suffix(head))
            received.rename(archive)
            received = archive

            def admit(manifest: BotManifest) -> None:
                authors.check_owner(author, manifest.name)

            async with receiving:
                # Again, in turn: uploads that arrived together count one after the other.
                await asyncio.to_thread(authors.may_submit, author)
                submission = await asyncio.to_thread(store.receive, received, admit=admit)
                await asyncio.to_thread(authors.note_submission, author, submission.name)
        except ClientDisconnect:
            return _refused(400, "the upload was cut short")
        except RefusedError as refusal:
            return _refused(refusal.status, refusal.reason)
        except SubmissionRejectedError as error:
            # The reasons name the upload by its temporary file: name it as the author sent it.
            reasons = [reason.replace(str(received), "upload") for reason in error.reasons]
            return JSONResponse({"error": "rejected", "reasons": reasons}, status_code=422)
        finally:
            with contextlib.suppress(OSError):
                received.unlink()
        return JSONResponse(_status(submission, detail=False), status_code=201)

    async def mine(request: Request) -> Response:
        try:
            author = await author_of(request)
        except RefusedError as refusal:
            return _refused(refusal.status, refusal.reason)
        found = await asyncio.to_thread(store.submissions)
        owned = [
            _status(submission, detail=False)
            for submission in found
            if author.organiser
            or await asyncio.to_thread(authors.owner, submission.name) == author.name
        ]
        return JSONResponse({"author": author.name, "submissions": owned})

    async def one(request: Request) -> Response:
        try:
            author = await author_of(request)
        except RefusedError as refusal:
            return _refused(refusal.status, refusal.reason)
        name, version = request.path_params["name"], request.path_params["version"]
        owner = await asyncio.to_thread(authors.owner, name)
        if owner != author.name and not author.organiser:
            # Another author's bot, or none: the same answer, so names cannot be probed.
            return _refused(404, "no such submission of yours")
        found = await asyncio.to_thread(store.submissions)
        for submission in found:
            if submission.name == name and submission.version == version:
                shown = await asyncio.to_thread(_status, submission, detail=True)
                # The player's name comes from the stored manifest, never from the URL.
                shown["logs"] = await asyncio.to_thread(_logs, setup.output, submission.player)
                return JSONResponse(shown)
        return _refused(404, "no such submission of yours")

    return [
        Route("/api/v1/submissions", submit, methods=["POST"]),
        Route("/api/v1/submissions", mine, methods=["GET"]),
        Route("/api/v1/submissions/{name:str}/{version:str}", one, methods=["GET"]),
    ]
