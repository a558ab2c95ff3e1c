"""cgroups for an ordinary user: a cgroup v2 subtree delegated the way systemd does it
(the group and its ``cgroup.procs``, ``cgroup.subtree_control`` and ``cgroup.threads``
owned by the user), on the machine's real cgroup2 hierarchy; the referee, run as that user,
finds it, moves itself into a leaf of its own and keeps its bots' groups beside it."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.cgroups import REFEREE_LEAF
from referee.sandbox import bubblewrap_problem
from tests.referee.organiser import (
    SYSTEM_PYTHON,
    as_organiser,
    organiser_environment,
    organiser_ids,
    organiser_problem,
)

_PROBE = """
import os, time
from pathlib import Path
from referee.bots import BotProcess, BotSpec
from referee.cgroups import detect_cgroups
from referee.sandbox import plan_sandbox
top = Path(os.environ["DELEGATED"])
support = detect_cgroups()
print("describe", support.describe())
print("own", Path("/proc/self/cgroup").read_text().splitlines()[-1])
process = BotProcess(
    BotSpec("probe", ("/bin/sh", "-c", "echo started; exec sleep 60")),
    endpoint="ipc:///nowhere",
    token="t",
    log_path=None,
    sandbox=plan_sandbox("required"),
)
deadline = time.monotonic() + 20
while "started" not in " ".join(process.stderr_tail()) and time.monotonic() < deadline:
    time.sleep(0.02)
group = process.cgroup.folders[0]
print("bot group", group.relative_to(top))
process.cgroup.freeze()
deadline = time.monotonic() + 20
while "frozen 1" not in (group / "cgroup.events").read_text() and time.monotonic() < deadline:
    time.sleep(0.02)
print("events", " ".join((group / "cgroup.events").read_text().split()))
process.cgroup.freeze(False)
print("exit", process.stop())
# The point of the leaf: with no process left in the subtree's top, it can give controllers
# to the groups below (cgroup v2's "no internal processes" rule). hugetlb is the one
# controller every hybrid machine leaves to v2.
offered = (top / "cgroup.controllers").read_text().split()
if "hugetlb" in offered:
    fd = os.open(top / "cgroup.subtree_control", os.O_WRONLY)
    try:
        os.write(fd, b"+hugetlb")
        print("enable hugetlb: ok")
    except OSError as error:
        print("enable hugetlb:", error.strerror)
    finally:
        os.close(fd)
"""


@contextlib.contextmanager
def _cgroup2_mount() -> Iterator[Path]:
    """The machine's cgroup2 hierarchy: where it is mounted already, or mounted here."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, kind = before.split(), after.split()[:1]
        if kind == ["cgroup2"] and fields[3] == "/" and os.access(fields[4], os.W_OK):
            yield Path(fields[4])
            return
    point = Path(tempfile.mkdtemp(prefix="aegis-cgroup2-"))
    mounted = subprocess.run(["mount", "-t", "cgroup2", "none", str(point)], check=False)
    try:
        if mounted.returncode != 0:
            pytest.skip("no cgroup2 hierarchy here, and it cannot be mounted")
        yield point
    finally:
        if mounted.returncode == 0:
            subprocess.run(["umount", str(point)], check=False)
        point.rmdir()


@pytest.fixture
def delegated() -> Iterator[Path]:
    """A v2 group delegated to the organiser as systemd delegates one."""
    problem = organiser_problem() or bubblewrap_problem()
    if problem is not None:
        pytest.skip(problem)
    with _cgroup2_mount() as hierarchy:
        yield from _delegated_group(hierarchy)


def _delegated_group(hierarchy: Path) -> Iterator[Path]:
    top = hierarchy / f"aegis-ref-test-delegated-{uuid.uuid4().hex[:8]}"
    top.mkdir()
    uid, gid = organiser_ids()
    for path in (top, top / "cgroup.procs", top / "cgroup.subtree_control", top / "cgroup.threads"):
        os.chown(path, uid, gid)
    try:
        yield top
    finally:
        for folder, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
            for pid in (Path(folder) / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), 9)
        for folder, _, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def test_an_ordinary_user_in_a_delegated_subtree_gets_a_leaf_and_groups_for_its_bots(
    delegated: Path,
) -> None:
    # Started in the delegated group as systemd-run --scope starts a command there.
    start = 'echo $$ > "$DELEGATED/cgroup.procs" && exec "$@"'
    result = subprocess.run(
        ["sh", "-c", start, "sh", *as_organiser(), str(SYSTEM_PYTHON), "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={**organiser_environment(), "DELEGATED": str(delegated)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    hierarchy_path = "/" + str(delegated.relative_to(delegated.parent))
    assert lines["own"] == f"0::{hierarchy_path}/{REFEREE_LEAF}"
    assert (
        f"v2 subtree {delegated} delegated, the referee in its leaf {REFEREE_LEAF}"
        in (lines["describe"])
    )
    assert "freeze (v2)" in lines["describe"]
    offered = (delegated / "cgroup.controllers").read_text().split()
    if "memory" not in offered:  # a hybrid machine: v1 holds it, and the line says so
        assert "the delegated subtree is not given memory" in lines["describe"]
    # The bots' groups lie beside the leaf, in a folder of this referee's own.
    folder, bot = lines["bot"].removeprefix("group ").split("/")
    assert re.fullmatch(r"aegis-ref-\d+", folder)
    assert bot
    assert "frozen 1" in lines["events"]
    if "hugetlb" in offered:
        assert lines["enable"] == "hugetlb: ok"
