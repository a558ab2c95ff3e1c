"""Bots for the tests of the match runner, the remote bots and the command line: rawbot
(tests/bots/rawbot.py, a bot that misbehaves on request), the bundled random bot started
as a remote bot would be, and short deadlines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from referee.bots import BotSpec
from referee.time_control import TimeControl

__all__ = ["FAST", "RANDOM_BOT", "RAWBOT", "rawbot", "remote_bot"]

RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"
RANDOM_BOT = Path(__file__).resolve().parents[2] / "sample_bots" / "random" / "bot.py"
#: Short deadlines, for bots that answer at once.
FAST = TimeControl(decision_ms=400, warmup_ms=3000)


def rawbot(name: str, *arguments: str, keep_alive: bool = False) -> BotSpec:
    """A spec for rawbot.py with these arguments (``keep_alive``: one process for every
    match, which the tests of a process's life across matches need)."""
    return BotSpec(
        name, (sys.executable, str(RAWBOT), "--name", name, *arguments), keep_alive=keep_alive
    )


def remote_bot(
    endpoint: str,
    server_key: str,
    keys: tuple[str, str],
    program: Path = RANDOM_BOT,
    *arguments: str,
) -> subprocess.Popen[bytes]:
    """Start a bot (the bundled random bot by default) as a remote bot would run: by itself,
    with Curve keys."""
    environment = dict(os.environ)
    environment.pop("AEGIS_TOKEN", None)
    environment.update(
        AEGIS_ENDPOINT=endpoint,
        AEGIS_SERVER_KEY=server_key,
        AEGIS_PUBLIC_KEY=keys[0],
        AEGIS_SECRET_KEY=keys[1],
    )
    return subprocess.Popen(
        [sys.executable, str(program), *arguments],
        env=environment,
        stderr=subprocess.DEVNULL,
    )
