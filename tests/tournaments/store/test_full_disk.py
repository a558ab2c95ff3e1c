"""A results store on a full disk: a real tmpfs of 4 MiB, filled up, under real runs of
``aegis-ref tournament``. Whatever step fails (the lock, the store, its settings, the bots,
the schedule, a record, a result), the command says what and where, exits 2 and leaves the
stored results as they were; once there is space, the same command resumes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tournaments.cli.helpers import invoke
from tests.tournaments.helpers import (
    assert_stored_exactly_once,
    run_cli,
    stored_count,
    wait_no_processes,
    winners,
    write_config,
)
from tournaments.store.database import (
    count_scheduled,
    open_store,
    stored_bot_names,
    unscheduled_bot_names,
)

_DISK_SIZE = 4 * 1024 * 1024


class SmallDisk:
    """A tmpfs of 4 MiB mounted for one test, and a file that fills it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def fill(self) -> None:
        """Use up every free block."""
        descriptor = os.open(self.filler, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            while os.write(descriptor, bytes(65536)):
                pass
        except OSError:
            pass  # no space left
        finally:
            os.close(descriptor)

    def leave_free(self, kib: int) -> None:
        """Fill the disk, then give ``kib`` KiB back."""
        self.fill()
        size = self.filler.stat().st_size
        os.truncate(self.filler, max(0, size - kib * 1024))

    def empty(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    root = tmp_path / "disk"
    root.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={_DISK_SIZE}", "aegis-test-disk", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield SmallDisk(root)
    finally:
        subprocess.run(["umount", "--lazy", str(root)], check=False)


def _assert_clean_store_failure(arguments: list[str | Path], output: Path) -> str:
    """Run ``aegis-ref tournament`` in-process; it must fail with exit 2 and one clean
    message naming a file in ``output``. Return the message."""
    result = invoke("tournament", *arguments, "--quiet")
    assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert result.exit_code == 2, result.output
    message = result.output.strip().splitlines()[-1]
    assert message.startswith(f"{output}/"), message
    assert ": cannot " in message, message
    return message


def test_every_step_before_the_first_match_fails_cleanly_on_a_full_disk(
    tmp_path: Path, small_disk: SmallDisk
) -> None:
    """With 0 to 88 KiB left, a resumed run (a bigger config: many new matches) and a first
    run in a new directory both stop with exit 2, at whichever step the disk ran out; the
    results stored before stay, and nothing half-scheduled is left."""
    config, marker = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=2, concurrency=1)
    output = small_disk.root / "out"
    first = invoke("tournament", config, "--output", output, "--quiet")
    assert first.exit_code == 0, first.output
    bigger, _ = write_config(
        tmp_path,
        ["alpha", "beta", "gamma"],
        marker=marker,
        matches_per_pair=2000,
        concurrency=1,
        file_name="bigger.yaml",
    )
    fresh = small_disk.root / "fresh"
    failures = set()
    for free in range(0, 96, 8):
        for directory in (output, fresh):
            if directory == fresh:
                shutil.rmtree(fresh, ignore_errors=True)
            small_disk.leave_free(free)
            message = _assert_clean_store_failure([bigger, "--output", directory], directory)
            failures.add(message.split(": cannot ")[1].split(":")[0])
    # The disk ran out at each step in turn, past opening the store too.
    assert {"write the lock", "open the results store"} < failures, failures
    assert failures & {
        "write the tournament's settings",
        "note how the bots are contained",
        "write the bots and the schedule",
    }, failures
    small_disk.empty()
    assert stored_count(output / "results.sqlite") == 2
    connection = open_store(output, read_only=True)
    try:  # no failed run recorded gamma or any of its matches
        assert (stored_bot_names(connection), unscheduled_bot_names(connection)) == (
            ["alpha", "beta"],
            [],
        )
        assert count_scheduled(connection) == 2
    finally:
        connection.close()
    resumed = invoke("tournament", config, "--output", output, "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert_stored_exactly_once(output, 2)
    assert wait_no_processes(marker) == []


def test_a_disk_that_fills_during_the_run_stops_it_cleanly_and_it_resumes(
    tmp_path: Path, small_disk: SmallDisk
) -> None:
    """The records fill the disk part way: the run stops with exit 2 naming the file it
    could not write, every match it stored is whole, and the same command, once there is
    space, plays exactly the rest."""
    config, marker = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=20, concurrency=1)
    output = small_disk.root / "out"
    small_disk.leave_free(256)
    # Room for the store and a few records (the store's first result takes more than 160
    # KiB with its tables and journal). Without the preflight, whose bots' logs would take
    # part of it: what fills the disk here is the matches' records.
    arguments = ("--output", str(output), "--quiet", "--no-preflight")
    failed = run_cli("tournament", str(config), *arguments, cwd=tmp_path)
    assert failed.returncode == 2, failed.stderr
    assert "Traceback" not in failed.stderr
    stored = stored_count(output / "results.sqlite")
    assert 1 <= stored < 20, failed.stderr
    assert f"{stored} of 20 matches stored in {output}" in failed.stderr
    failure = re.search(r"Failed: cannot store match (\S+): (\S+): cannot (.*)", failed.stderr)
    assert failure is not None, failed.stderr
    lost, where, what = failure.groups()
    assert where.startswith(f"{output}/")
    assert what.endswith("KiB free on its disk)")
    assert lost not in winners(output / "results.sqlite")  # its record may be there: no row
    assert wait_no_processes(marker) == []
    assert not [path for path in (output / "records").iterdir() if path.name.endswith(".tmp")]

    small_disk.empty()
    resumed = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resuming in {output}: {stored} of 20 matches already stored" in resumed.stdout
    assert_stored_exactly_once(output, 20)
    assert wait_no_processes(marker) == []
