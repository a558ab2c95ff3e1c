"""Checks of the whole test run: it leaves no process and no referee directory behind, and
(with ``AEGIS_EXPECT_BUILD``) runs the build of the hot path it was asked to.

Every process the tests start inherits ``AEGISREF_TEST_RUN``, a value drawn for this run,
and a bot's descendants inherit it from the bot; at the end of the run none may be alive. Nor
may any ``aegis-ref-ipc-*`` directory that appeared during the run remain.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.bots import processes_with_environment
from referee.rundir import PREFIX

# Not AEGIS_*: the SDK tests start their bots without the AEGIS_ variables of this process.
_RUN_VARIABLE = "AEGISREF_TEST_RUN"
_SETTLE_SECONDS = 5.0  # processes being stopped as the last test ends get this long to go


def pytest_configure(config: pytest.Config) -> None:
    os.environ[_RUN_VARIABLE] = secrets.token_hex(8)
    expected = os.environ.get("AEGIS_EXPECT_BUILD")
    if expected is not None:  # tests/protocol/test_compiled.py reruns tests compiled
        from referee.build_info import hot_path_build

        if hot_path_build() != expected:
            raise pytest.UsageError(f"expected the {expected} hot path, got {hot_path_build()}")


def _referee_directories() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob(f"{PREFIX}*"))


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "(gone)"


def _left_running(run: str) -> dict[int, str]:
    """The processes of this run still alive, but multiprocessing's resource tracker: the
    pools of the tournament tests start it in this process, and it ends with this process."""
    found = {pid: _command_line(pid) for pid in processes_with_environment(_RUN_VARIABLE, run)}
    return {
        pid: line for pid, line in found.items() if "multiprocessing.resource_tracker" not in line
    }


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """Fail the run if it leaves a process it started or a referee directory behind."""
    before = _referee_directories()
    yield
    run = os.environ[_RUN_VARIABLE]
    deadline = time.monotonic() + _SETTLE_SECONDS
    while True:
        processes = _left_running(run)
        directories = _referee_directories() - before
        if not (processes or directories) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    problems = [f"process {pid} left running: {line}" for pid, line in processes.items()]
    problems += [f"directory left behind: {path}" for path in sorted(directories)]
    if problems:
        pytest.fail("the test run left things behind:\n" + "\n".join(problems), pytrace=False)
