"""The watcher of a run's folder wakes every event stream through one shared future: at a
change with a new ``update`` frame, and, when nothing changed for a while, with the same
one (a heartbeat: the streams then send a comment), so that no stream keeps a timer; and
a stream ends with its client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import uvicorn

from tests.tournaments.helpers import free_port
from tournaments.web import app
from tournaments.web.app import RunView


def test_a_change_and_a_quiet_spell_each_wake_the_streams_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "HEARTBEAT_S", 0.3)

    async def watched() -> None:
        view = RunView(tmp_path, poll_s=0.02)
        watcher = asyncio.create_task(view.watch())
        try:
            first = await asyncio.wait_for(asyncio.shield(view.changed), 10)
            assert first == view.version == 1  # the folder read for the first time
            frame = view.live_message
            # A change: a new frame, a new version.
            (tmp_path / "in-play.json").write_text("[]")
            changed = await asyncio.wait_for(asyncio.shield(view.changed), 10)
            assert changed == 2
            assert view.live_message is not frame
            frame = view.live_message
            # Nothing changes: a heartbeat wakes them with the same version and frame.
            loop = asyncio.get_running_loop()
            quiet = loop.time()
            beat = await asyncio.wait_for(asyncio.shield(view.changed), 10)
            assert beat == 2
            assert view.live_message is frame
            assert loop.time() - quiet >= 0.2
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await view.close()

    asyncio.run(watched())


def test_a_stream_whose_client_left_is_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real uvicorn on loopback, limited to two streams: a third is refused, and once a
    client hangs up its place is free again (the stream ended with its client)."""
    monkeypatch.setattr(app, "MAX_STREAMS", 2)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app.create_app(tmp_path, poll_s=0.05),
            host="127.0.0.1",
            port=port,
            http="httptools",
            log_level="warning",
            lifespan="on",
        )
    )

    async def stream() -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /api/v1/events HTTP/1.1\r\nHost: test\r\n\r\n")
        status = await asyncio.wait_for(reader.readline(), 10)
        return reader, writer, status

    async def served() -> None:
        serving = asyncio.create_task(server.serve())
        try:
            while not server.started:
                await asyncio.sleep(0.02)
            first = await stream()
            second = await stream()
            assert first[2].startswith(b"HTTP/1.1 200")
            assert second[2].startswith(b"HTTP/1.1 200")
            third = await stream()
            assert third[2].startswith(b"HTTP/1.1 503")
            third[1].close()
            first[1].close()  # the client hangs up
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while True:
                again = await stream()
                again[1].close()
                if again[2].startswith(b"HTTP/1.1 200"):
                    break
                assert loop.time() < deadline, "the stream of the client that left stays"
                await asyncio.sleep(0.05)
            second[1].close()
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, 30)

    asyncio.run(served())
