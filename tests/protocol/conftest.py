"""Fixtures of the SDK tests that talk to a scripted referee over ipc."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.protocol.sdk_support import ScriptedReferee, short_tmpdir


@pytest.fixture
def directory() -> Iterator[Path]:
    """A short private directory for ipc endpoints (socket paths have a length limit)."""
    with short_tmpdir() as path:
        yield path


@pytest.fixture
def referee(directory: Path) -> Iterator[ScriptedReferee]:
    """A scripted referee bound in ``directory``."""
    with ScriptedReferee(f"ipc://{directory}/referee") as scripted:
        yield scripted
