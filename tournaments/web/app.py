"""The web service of a run: its pages, its JSON API and its live updates (Starlette).

One :class:`RunView` watches the run's store: every ``poll_s`` seconds it asks SQLite
whether another connection committed (``PRAGMA data_version``, which costs no read of the
data), and when one did it bumps its version and drops what it computed. Each document of
the API is then computed once, on the first request of the new version, and the same bytes
go to every viewer; the standings are computed at once, before the viewers are told (over
server-sent events) that a new version is there. Every read of the store runs on one thread
of its own, in a short transaction, so viewers never compete with each other for the
database and never hold a read open that would stop the writer's checkpoints.

A viewer costs the service one socket write per change and no other work of its own: the
event streams are a bare ASGI handler (:class:`_EventStreams`, outside Starlette's routing
and middleware), each waiting on the one shared "changed" future and writing the same
pre-encoded frame; the heartbeat that keeps idle streams open is sent through that future
too, so no stream has a timer or a loop of its own. A viewer that stops reading costs one
blocked stream and nothing else: a send to a client that does not read blocks that
client's coroutine alone.

Every page is a static file of this package (:data:`STATIC`) that draws the API's data as
text; the Content-Security-Policy allows the server's own scripts, styles and requests and
nothing else.

The HTML report of the folder (``aegis-ref report``, ``OUTPUT/report.html``), if there is
one, is served at ``/report`` and linked from the pages; its links to the replay pages and
records it wrote beside it lead to the server's own (``/replays/...`` and ``/records/...``
redirect). A report that shows the master seed is never served.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sqlite3
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from tournaments.config.tournament import TournamentSetup
from tournaments.errors import StoreError
from tournaments.report.html_report import REPORT_NAME, SEED_SHOWN, report_page_policy
from tournaments.report.replay_page import (
    RecordReadError,
    read_record_lines,
    record_source,
    render_replay_page,
    replay_data,
    replay_page_policy,
)
from tournaments.run.in_play import IN_PLAY_NAME, read_in_play
from tournaments.run.sprt_live import SPRT_STATUS, read_sprt_status
from tournaments.store.database import DATABASE_NAME, data_version, open_store, stored_match
from tournaments.web.data import (
    API_VERSION,
    MATCH_ID,
    bot_document,
    bots_document,
    live_document,
    match_document,
    matches_document,
    progression_document,
    standings_document,
)
from tournaments.web.submitting import submission_routes

__all__ = ["PAGE_POLICY", "STATIC", "RunView", "create_app"]

_log = logging.getLogger(__name__)

#: The Content-Security-Policy of every page but the replays (which carry their own).
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
#: The package files the service serves under ``/static/``, with their media types; no
#: other name is looked up.
STATIC = {
    "live.js": "text/javascript; charset=utf-8",
    "live.css": "text/css; charset=utf-8",
}
_PAGES = ("standings.html", "bot.html", "matches.html", "sprt.html")
#: Seconds between two comments on an idle event stream (proxies close silent ones).
HEARTBEAT_S = 15.0
#: Most event streams open at once; one more is refused (503) rather than queued.
MAX_STREAMS = 5000
#: Documents kept at once between two changes of the store (bots, matches asked for).
_DOCUMENTS_KEPT = 1024
#: Replay pages kept rendered (the latest asked for).
_REPLAYS_KEPT = 32
#: The names the report gives the replay pages and records it links to.
_REPORT_REPLAY = re.compile(r"match-(?P<id>.+)\.html")
_REPORT_RECORD = re.compile(r"match-(?P<id>.+)\.jsonl")

_Document = Callable[[sqlite3.Connection], dict[str, Any] | None]


def _asset(name: str) -> bytes:
    return (resources.files("tournaments.web") / "static" / name).read_bytes()


@dataclass(frozen=True, slots=True)
class _Cached:
    version: int
    body: bytes | None


class RunView:
    """A run's store, watched: its documents computed once per change and shared."""

    def __init__(self, directory: Path, *, poll_s: float = 0.5) -> None:
        self.directory = directory
        self.poll_s = poll_s
        #: Bumped each time the store changed; 0 until it could be read.
        self.version = 0
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="aegis-web-store")
        # Touched on the executor's thread alone.
        self._connection: sqlite3.Connection | None = None
        self._data_version: int | None = None
        #: What the SPRT status, the matches in play and the report looked like at the
        #: last poll.
        self._files: list[tuple[int, int]] = []
        # Touched on the event loop alone.
        self._documents: dict[str, asyncio.Future[bytes | None]] = {}
        self._replays: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._report: tuple[tuple[int, int], bytes | None] | None = None
        self._changed: asyncio.Future[int] | None = None
        #: The latest ``update`` event, as sent: the same bytes to every stream.
        self.live = b"event: update\ndata: {}\n\n"
        #: The ASGI message that sends it, built once per change for every stream.
        self.live_message = _body_message(self.live)
        #: When the streams were last woken (by a change or a heartbeat).
        self._woken = time.monotonic()
        self.streams = 0

    # -- on the store's thread

    def _poll(self) -> bool:
        """True if the store (or an SPRT run's status) changed since the last poll, or
        could be read for the first time."""
        files = []
        for name in (SPRT_STATUS, IN_PLAY_NAME, REPORT_NAME):
            try:
                status = (self.directory / name).stat()
                files.append((status.st_mtime_ns, status.st_size))
            except OSError:
                files.append((0, -1))
        changed = files != self._files
        self._files = files
        if self._connection is None:
            try:
                self._connection = open_store(self.directory, read_only=True)
            except StoreError:
                return changed  # not there yet: the run is starting, or an SPRT run
        version = data_version(self._connection)
        changed = changed or version != self._data_version
        self._data_version = version
        return changed

    def _sprt_status(self) -> bytes | None:
        document = read_sprt_status(self.directory)
        if document is None:
            return None
        built = {"api": API_VERSION, "version": self.version, **document}
        return json.dumps(built, separators=(",", ":"), allow_nan=False).encode()

    def _build(self, document: _Document) -> bytes | None:
        if self._connection is None:
            return None
        built = document(self._connection)
        if built is None:
            return None
        built = {"api": API_VERSION, "version": self.version, **built}
        return json.dumps(built, ensure_ascii=False, separators=(",", ":")).encode()

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    @property
    def has_sprt(self) -> bool:
        """True if the folder held an SPRT run's status at the last poll (read after it)."""
        return bool(self._files) and self._files[0][1] >= 0

    def _live(self, connection: sqlite3.Connection) -> dict[str, Any] | None:
        found = self.with_in_play(live_document)(connection)
        if found is None:
            return None
        self._report = self._read_report()
        served = self._report is not None and self._report[1] is not None
        return {**found, "report": "/report" if served else None}

    def _read_report(self) -> tuple[tuple[int, int], bytes | None] | None:
        """The report file's (mtime, size) and its bytes (None if it shows the seed); None
        if there is no report."""
        path = self.directory / REPORT_NAME
        try:
            status = path.stat()
            key = (status.st_mtime_ns, status.st_size)
            if self._report is not None and self._report[0] == key:
                return self._report
            body = path.read_bytes()
        except OSError:
            return None
        if SEED_SHOWN.encode() in body[:4096]:
            _log.warning("%s shows the master seed: not served", path)
            return key, None
        return key, body

    # -- on the event loop

    async def report(self) -> bytes | None:
        """The folder's HTML report, None if it has none or it shows the master seed;
        read again when the file changed."""
        self._report = await self._run(self._read_report)
        return None if self._report is None else self._report[1]

    @property
    def changed(self) -> asyncio.Future[int]:
        """Done (with the new version) when the store changes next."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    async def _run(self, function: Callable[..., Any], *arguments: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, function, *arguments
        )

    async def watch(self) -> None:
        """Poll the store until cancelled; on a change, compute what the event streams
        carry, then wake them."""
        while True:
            try:
                changed = await self._run(self._poll)
            except (sqlite3.Error, StoreError) as error:
                _log.warning("cannot read the store of %s: %s", self.directory, error)
                changed = False
            if changed:
                self.version += 1
                self._documents.clear()
                try:
                    live = await self.document("live", self._live)
                except (sqlite3.Error, StoreError) as error:
                    _log.warning("cannot read the store of %s: %s", self.directory, error)
                    live = None
                if live is None:  # no store (an SPRT run): the version, and if it has begun
                    begun = {"api": API_VERSION, "version": self.version, "sprt": self.has_sprt}
                    live = json.dumps(begun).encode()
                self.live = b"event: update\ndata: " + live + b"\n\n"
                self.live_message = _body_message(self.live)
                self._wake()
            elif time.monotonic() - self._woken >= HEARTBEAT_S:
                self._wake()  # the streams send a comment: the version is the same
            await asyncio.sleep(self.poll_s)

    def _wake(self) -> None:
        waiting, self._changed = self.changed, None
        waiting.set_result(self.version)
        self._woken = time.monotonic()

    async def document(self, key: str, document: _Document) -> bytes | None:
        """The JSON of ``document`` at the current version: computed by the first request,
        awaited by the others."""
        pending = self._documents.get(key)
        if pending is None:
            if len(self._documents) >= _DOCUMENTS_KEPT:
                # Many names asked for between two changes (a crawler, a flood): start over
                # rather than grow; the standings come back on their next request.
                self._documents = {k: f for k, f in self._documents.items() if not f.done()}
            pending = asyncio.ensure_future(self._run(self._build, document))
            self._documents[key] = pending
        try:
            body: bytes | None = await asyncio.shield(pending)
        except (sqlite3.Error, StoreError):
            if self._documents.get(key) is pending:
                del self._documents[key]
            raise
        return body

    def with_in_play(self, document: _Document) -> _Document:
        """``document`` with the matches in play (:mod:`tournaments.run.in_play`)."""

        def built(connection: sqlite3.Connection) -> dict[str, Any] | None:
            found = document(connection)
            return None if found is None else {**found, "in_play": read_in_play(self.directory)}

        return built

    async def sprt(self) -> bytes | None:
        """The SPRT run's status (``/api/v1/sprt``), None if the folder has none."""
        key = "sprt"
        pending = self._documents.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._run(self._sprt_status))
            self._documents[key] = pending
        body: bytes | None = await asyncio.shield(pending)
        return body

    async def replay(self, match_id: str) -> bytes | None:
        """The replay page of a stored match, None if there is none; rendered once per
        record file."""
        if not MATCH_ID.fullmatch(match_id):
            return None
        connection_match = await self._run(self._match, match_id)
        if connection_match is None:
            return None
        path, title = connection_match
        try:
            source = record_source(path)
        except OSError:
            return None
        kept = self._replays.get(match_id)
        if kept is not None and kept[0] == source:
            self._replays.move_to_end(match_id)
            return kept[1]
        page: bytes | None = await self._run(self._render_replay, path, title, match_id)
        if page is None:
            return None
        self._replays[match_id] = (source, page)
        while len(self._replays) > _REPLAYS_KEPT:
            self._replays.popitem(last=False)
        return page

    def _match(self, match_id: str) -> tuple[Path, str] | None:
        if self._connection is None:
            return None
        match = stored_match(self._connection, match_id)
        if match is None:
            return None
        records = (self.directory / "records").resolve()
        path = (self.directory / match.record_path).resolve()
        if not path.is_relative_to(records):  # a damaged or hostile store: nothing outside
            return None
        return path, f"{match.seats[0]} vs {match.seats[1]} ({match.match_id})"

    @staticmethod
    def _render_replay(path: Path, title: str, match_id: str) -> bytes | None:
        try:
            lines = read_record_lines(path)
        except (OSError, RecordReadError):
            return None
        links = [
            ("Standings", "/"),
            ("Matches", "/matches"),
            ("Record", f"/api/v{API_VERSION}/matches/{match_id}/record"),
        ]
        return render_replay_page(replay_data(lines), title=title, links=links).encode()

    async def record(self, match_id: str) -> Path | None:
        """The record file of a stored match, inside the run's ``records/``; None if none."""
        if not MATCH_ID.fullmatch(match_id):
            return None
        found = await self._run(self._match, match_id)
        return None if found is None else found[0]

    async def close(self) -> None:
        """Close the store's connection and the thread."""
        await self._run(self._close)
        self._executor.shutdown(wait=False)


# ---------------------------------------------------------------------------------------------
# Responses


def _json(body: bytes | None, request: Request) -> Response:
    if body is None:
        return _not_found()
    tag = f'"{len(body)}-{hash(body) & 0xFFFFFFFF:x}"'
    headers = {"Cache-Control": "no-cache", "ETag": tag}
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _not_found() -> Response:
    return PlainTextResponse("not found\n", status_code=404)


_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
#: The headers every response gets besides its policy.
_GUARDS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
#: What a stream sends when a heartbeat wakes it and nothing changed.
_IDLE = {"type": "http.response.body", "body": b": idle\n\n", "more_body": True}


def _body_message(frame: bytes) -> dict[str, Any]:
    return {"type": "http.response.body", "body": frame, "more_body": True}


class _EventStreams:
    """``/api/v1/events`` (server-sent events), answered before Starlette: the latest
    ``update`` event at once and after each change (the version, the standings and the
    latest matches: :func:`live_document`), a comment at each heartbeat; every other
    request goes to ``app``.

    Per stream and change this is one wake-up and one ``send`` of a message built once for
    all; the stream ends when its client leaves (a task waits for the disconnect and
    cancels it), or when the server stops."""

    def __init__(self, view: RunView, path: str, app: Callable[..., Awaitable[None]]) -> None:
        self.view = view
        self.path = path
        self.app = app
        self.start = {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream; charset=utf-8"),
                (b"cache-control", b"no-store"),
                (b"x-accel-buffering", b"no"),
                (b"content-security-policy", PAGE_POLICY.encode()),
                *_GUARDS,
            ],
        }

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if scope["method"] != "GET":
            await _plain(send, 405, b"method not allowed\n")
            return
        view = self.view
        if view.streams >= MAX_STREAMS:
            await _plain(send, 503, b"too many event streams\n")
            return
        stream = asyncio.current_task()
        assert stream is not None

        async def until_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        def end_stream(_: asyncio.Future[None]) -> None:
            stream.cancel()

        gone = asyncio.ensure_future(until_gone())
        gone.add_done_callback(end_stream)
        view.streams += 1
        try:
            await send(self.start)
            sent = None
            while True:
                message = view.live_message
                await send(message if message is not sent else _IDLE)
                sent = message
                await asyncio.shield(view.changed)
        except asyncio.CancelledError:
            if not gone.done():
                raise  # the server stops
            stream.uncancel()  # the client left: the stream ends well
        finally:
            view.streams -= 1
            gone.remove_done_callback(end_stream)
            gone.cancel()


async def _plain(send: _Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *_GUARDS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _SecurityHeaders:
    """Every response gets the page policy (unless it set its own) and the usual guards."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", PAGE_POLICY.encode()))
                message["headers"] = headers + _GUARDS
            await send(message)

        await self.app(scope, receive, guarded)


def create_app(
    directory: Path, *, poll_s: float = 0.5, league: TournamentSetup | None = None
) -> Any:
    """The ASGI application serving the run whose output is ``directory``; with a
    ``league``, its authors may also submit over the network
    (:mod:`tournaments.web.submitting`)."""
    view = RunView(directory, poll_s=poll_s)
    pages = {name: _asset(name) for name in _PAGES}
    assets = {name: _asset(name) for name in STATIC}

    def page(name: str) -> Response:
        return Response(pages[name], media_type="text/html; charset=utf-8")

    async def standings_page(request: Request) -> Response:
        if (directory / SPRT_STATUS).exists() and not (directory / DATABASE_NAME).exists():
            return RedirectResponse("/sprt", status_code=303)  # an SPRT run has no standings
        return page("standings.html")

    async def report_page(request: Request) -> Response:
        body = await view.report()
        if body is None:
            return _not_found()
        return Response(
            body,
            media_type="text/html; charset=utf-8",
            headers={
                "Content-Security-Policy": f"{report_page_policy()}; frame-ancestors 'none'",
                "Cache-Control": "no-cache",
            },
        )

    async def report_replay(request: Request) -> Response:
        found = _REPORT_REPLAY.fullmatch(request.path_params["name"])
        if found is None or not MATCH_ID.fullmatch(found["id"]):
            return _not_found()
        return RedirectResponse(f"/replay/{quote(found['id'], safe='')}", status_code=307)

    async def report_record(request: Request) -> Response:
        found = _REPORT_RECORD.fullmatch(request.path_params["name"])
        if found is None or not MATCH_ID.fullmatch(found["id"]):
            return _not_found()
        record = f"{api}/matches/{quote(found['id'], safe='')}/record"
        return RedirectResponse(record, status_code=307)

    async def sprt_page(request: Request) -> Response:
        return page("sprt.html")

    async def api_sprt(request: Request) -> Response:
        return _json(await view.sprt(), request)

    async def matches_page(request: Request) -> Response:
        return page("matches.html")

    async def bot_page(request: Request) -> Response:
        name = request.path_params["name"]
        if await view.document(f"bot:{name}", lambda c: bot_document(c, name)) is None:
            return _not_found()
        return page("bot.html")

    async def replay_page(request: Request) -> Response:
        body = await view.replay(request.path_params["match_id"])
        if body is None:
            return _not_found()
        return Response(
            body,
            media_type="text/html; charset=utf-8",
            headers={"Content-Security-Policy": f"{replay_page_policy()}; frame-ancestors 'none'"},
        )

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return _not_found()
        return Response(
            assets[name], media_type=STATIC[name], headers={"Cache-Control": "no-cache"}
        )

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)  # browsers ask; the pages have none

    async def api_standings(request: Request) -> Response:
        return _json(await view.document("standings", standings_document), request)

    async def api_bots(request: Request) -> Response:
        return _json(await view.document("bots", bots_document), request)

    async def api_bot(request: Request) -> Response:
        name = request.path_params["name"]
        return _json(await view.document(f"bot:{name}", lambda c: bot_document(c, name)), request)

    async def api_matches(request: Request) -> Response:
        body = await view.document("matches", view.with_in_play(matches_document))
        return _json(body, request)

    async def api_match(request: Request) -> Response:
        match_id = request.path_params["match_id"]
        body = await view.document(f"match:{match_id}", lambda c: match_document(c, match_id))
        return _json(body, request)

    async def api_record(request: Request) -> Response:
        path = await view.record(request.path_params["match_id"])
        if path is None:
            return _not_found()
        try:
            body = await asyncio.to_thread(path.read_bytes)
        except OSError:
            return _not_found()
        return Response(body, media_type="application/x-ndjson")

    async def api_progression(request: Request) -> Response:
        return _json(await view.document("progression", progression_document), request)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watcher = asyncio.create_task(view.watch())
        try:
            yield
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await view.close()

    api = f"/api/v{API_VERSION}"
    routes = [
        Route("/", standings_page),
        Route("/matches", matches_page),
        Route("/sprt", sprt_page),
        Route("/report", report_page),
        Route("/replays/{name:str}", report_replay),
        Route("/records/{name:str}", report_record),
        Route("/bots/{name:str}", bot_page),
        Route("/replay/{match_id:str}", replay_page),
        Route("/static/{name:str}", static),
        Route("/favicon.ico", no_icon),
        Route(f"{api}/standings", api_standings),
        Route(f"{api}/bots", api_bots),
        Route(f"{api}/bots/{{name:str}}", api_bot),
        Route(f"{api}/matches", api_matches),
        Route(f"{api}/matches/{{match_id:str}}", api_match),
        Route(f"{api}/matches/{{match_id:str}}/record", api_record),
        Route(f"{api}/progression", api_progression),
        Route(f"{api}/sprt", api_sprt),
    ]
    if league is not None:
        routes += submission_routes(league)
    application = Starlette(routes=routes, lifespan=lifespan)
    application.state.view = view
    return _EventStreams(view, f"{api}/events", _SecurityHeaders(application))
