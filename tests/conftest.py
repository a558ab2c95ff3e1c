"""Checks of the whole test run: it leaves no process and no referee directory behind, and
(with ``AEGIS_EXPECT_BUILD``) runs the build of the hot path it was asked to.

Every process the tests start inherits ``AEGISREF_TEST_RUN``, a value drawn for this run,
and a bot's descendants inherit it from the bot; at the end of the run none may be alive. Nor
may any ``aegis-ref-ipc-*`` directory that appeared during the run remain, unless a live
process of another run owns it (two runs on one machine, as a loaded CI may have).
"""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.bots import processes_with_environment
from referee.rundir import OWNER_FILE, PREFIX

# Not AEGIS_*: the SDK tests start their bots without the AEGIS_ variables of this process.
_RUN_VARIABLE = "AEGISREF_TEST_RUN"
_SETTLE_SECONDS = 5.0  # processes being stopped as the last test ends get this long to go
_DIRECTORIES_BEFORE = pytest.StashKey[set[Path]]()


def _xdist_worker() -> bool:
    """Whether this process is one of pytest-xdist's workers (``pytest -n N``)."""
    return "PYTEST_XDIST_WORKER" in os.environ


def _xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands the tests to xdist's workers and runs none itself."""
    return not _xdist_worker() and bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config: pytest.Config) -> None:
    # xdist's workers inherit the controller's value: one run, however many processes.
    os.environ.setdefault(_RUN_VARIABLE, secrets.token_hex(8))
    config.stash[_DIRECTORIES_BEFORE] = _referee_directories()
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
    """The processes of this run still alive, but multiprocessing's resource tracker and the
    reaper of this process's bots (tournaments/run/reaper.py): tests start them in this process,
    and they end with it."""
    found = {pid: _command_line(pid) for pid in processes_with_environment(_RUN_VARIABLE, run)}
    own_reaper = f"reaper.py {_reaper_marker_prefix()}"
    return {
        pid: line
        for pid, line in found.items()
        if "multiprocessing.resource_tracker" not in line and own_reaper not in line
    }


def _reaper_marker_prefix() -> str:
    """How the marker of this process's reaper starts (see tournaments/run/worker.py)."""
    return f"{socket.gethostname()}-{os.getpid()}-"


def _of_another_run(directory: Path, run: str) -> bool:
    """Whether a referee directory's owner (the pid in its owner file) lives and belongs to
    another test run, or to none."""
    try:
        owner = int(Path(directory, OWNER_FILE).read_text(encoding="ascii"))
        environment = Path(f"/proc/{owner}/environ").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    return f"{_RUN_VARIABLE}={run}".encode() not in environment


def _left_behind(before: set[Path]) -> list[str]:
    """What the run left: its processes still alive, and referee directories made since
    ``before``, once they have had a few seconds to go."""
    run = os.environ[_RUN_VARIABLE]
    deadline = time.monotonic() + _SETTLE_SECONDS
    while True:
        processes = _left_running(run)
        directories = {
            path for path in _referee_directories() - before if not _of_another_run(path, run)
        }
        if not (processes or directories) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    problems = [f"process {pid} left running: {line}" for pid, line in processes.items()]
    return problems + [f"directory left behind: {path}" for path in sorted(directories)]


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the run if it leaves a process it started or a referee directory behind. Under
    xdist the controller checks once every worker is done (:func:`pytest_sessionfinish`): a
    worker that finishes first would see the other's directories as left behind."""
    yield
    if _xdist_worker():
        return
    problems = _left_behind(request.config.stash[_DIRECTORIES_BEFORE])
    if problems:
        pytest.fail("the test run left things behind:\n" + "\n".join(problems), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _xdist_controller(session.config):
        return
    problems = _left_behind(session.config.stash[_DIRECTORIES_BEFORE])
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("the test run left things behind:", red=True)
            for problem in problems:
                reporter.write_line(f"  {problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
