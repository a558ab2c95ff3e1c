"""A real ``aegis-ref serve`` on loopback for the web tests: started as the organiser
starts it, in a process of its own, and stopped (with its output checked) after."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import yaml

from tests.tournaments.helpers import (
    AEGIS_REF,
    free_port,
    rawbot_entry,
    start_tournament,
    write_config,
)

#: Seconds a server may take to answer its first request on a busy machine.
START_TIMEOUT = 120.0


@contextlib.contextmanager
def served(path: Path, *arguments: str) -> Iterator[str]:
    """Run ``aegis-ref serve PATH`` on a free loopback port; yield its base URL once it
    answers. The server is stopped (SIGTERM, then SIGKILL) whatever happens."""
    port = free_port()
    process = subprocess.Popen(
        [str(AEGIS_REF), "serve", str(path), "--port", str(port), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(base, process)
        yield base
    finally:
        process.terminate()
        try:
            process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def wait_until_answers(base: str, process: subprocess.Popen[str] | None = None) -> None:
    """Wait until the server at ``base`` answers (while ``process``, if given, lives)."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert process is None or process.poll() is None, process.communicate()
        try:
            if httpx.get(f"{base}/static/live.css", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the server did not answer in time"
        time.sleep(0.05)


def wait_for_version(base: str, at_least: int = 1, timeout: float = 10.0) -> dict[str, object]:
    """The standings document once the server answers and has read the store (version
    ``at_least``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = httpx.get(f"{base}/api/v1/standings", timeout=5)
        except httpx.TransportError:  # not listening yet
            response = httpx.Response(503)
        if response.status_code == 200:  # 404 until the store can be read
            document: dict[str, object] = response.json()
            version = document["version"]
            assert isinstance(version, int)
            if version >= at_least:
                return document
        assert time.monotonic() < deadline, f"no standings of version {at_least} in time"
        time.sleep(0.05)


def slow_config(directory: Path, names: list[str], matches_per_pair: int) -> tuple[Path, str]:
    """A config of rawbots started afresh for every match: a match takes a few tenths of a
    second, so results come one by one while a test watches. Returns it and the marker."""
    config, marker = write_config(
        directory, names, matches_per_pair=matches_per_pair, concurrency=1
    )
    data = yaml.safe_load(config.read_text())
    data["bots"] = [rawbot_entry(name, marker, keep_alive=False) for name in names]
    config.write_text(yaml.safe_dump(data))
    return config, marker


@contextlib.contextmanager
def tournament_running(
    config: Path, output: Path, *arguments: str
) -> Iterator[subprocess.Popen[str]]:
    """``aegis-ref tournament CONFIG`` running in the background while the block runs; the
    block ends by waiting for it to finish well (it is killed if the block fails)."""
    run = start_tournament(config, output, config.parent, *arguments)
    try:
        yield run
        _, errors = run.communicate(timeout=120)
        assert run.returncode == 0, errors
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
