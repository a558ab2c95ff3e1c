"""The watcher of a run's folder wakes every event stream through one shared future: at a
change with a new ``update`` frame, and, when nothing changed for a while, with the same
one (a heartbeat: the streams then send a comment), so that no stream keeps a timer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

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
