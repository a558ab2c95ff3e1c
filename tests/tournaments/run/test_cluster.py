"""The Dask executor against a real cluster on the loopback: a ``dask scheduler`` and two
``dask worker`` processes (with their nannies), tournaments of rawbots played through the
installed ``aegis-ref`` script, one worker SIGKILLed mid-run, ``--local-cluster``.

Every cluster result is compared, match by match, with a run of the same config and seed on
the local process pool: rawbots always play the first legal action and deals come from the
seed, so where a match is played must not change how it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from referee.cgroups import detect_cgroups
from referee.records import verify_lines
from tests.tournaments.helpers import (
    BUNDLED_TOTAL,
    assert_stored_exactly_once,
    differing,
    records_without_times,
    run_cli,
    start_tournament,
    stored_count,
    wait_for_stored,
    wait_no_processes,
    write_bundled_config,
    write_config,
)
from tournaments.cli.exit_codes import EXIT_BOT

DASK = Path(sys.executable).parent / "dask"
#: The bots of every config here: three rawbots, 20 matches per pair (60 matches).
BOTS = ["alpha", "beta", "gamma"]
MATCHES_PER_PAIR = 20
TOTAL = 60

pytestmark = pytest.mark.skipif(not DASK.exists(), reason="needs the cluster extra (dask)")


@dataclass
class Cluster:
    """A scheduler and its workers, each started in a process group of its own."""

    folder: Path
    scheduler_file: Path
    address: str
    #: Carried in the environment of every Dask process (not of the bots, whose env sets
    #: its own): nothing may carry it once the cluster is shut down.
    marker: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)


def _start(
    arguments: list[str], marker: str, log: Path, environment: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as stream:
        return subprocess.Popen(
            [str(DASK), *arguments],
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=stream,
            env={**os.environ, **(environment or {}), "AEGIS_TEST_MARKER": marker},
            process_group=0,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process's group, then SIGKILL it; bounded."""
    for number, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, number)
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_workers(address: str, count: int, timeout: float) -> None:
    """Wait until the scheduler has ``count`` workers (with a short-lived client)."""
    from distributed import Client

    with Client(address, timeout=timeout, set_as_default=False) as client:
        client.wait_for_workers(count, timeout=timeout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """``dask scheduler`` on 127.0.0.1 and two one-thread ``dask worker`` processes."""
    with _running_cluster(tmp_path_factory.mktemp("dask"), 2) as running:
        yield running


@contextlib.contextmanager
def _running_cluster(
    folder: Path, workers: int, worker_environment: Mapping[str, str] | None = None
) -> Iterator[Cluster]:
    """A scheduler and ``workers`` one-thread workers (``worker_environment`` added to
    theirs), stopped at the end with everything they started."""
    scheduler_file = folder / "scheduler.json"
    marker = uuid.uuid4().hex
    processes: list[subprocess.Popen[bytes]] = []
    try:
        scheduler = ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
        scheduler += ["--scheduler-file", str(scheduler_file)]
        processes.append(_start(scheduler, marker, folder / "scheduler.log"))
        deadline = time.monotonic() + 30
        address = None
        while address is None and time.monotonic() < deadline:
            assert processes[0].poll() is None, (folder / "scheduler.log").read_text()
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.05)
        assert address is not None, "the scheduler did not write its file in time"
        for number in range(workers):
            worker = ["worker", "--scheduler-file", str(scheduler_file), "--host", "127.0.0.1"]
            worker += ["--nthreads", "1", "--nworkers", "1", "--no-dashboard"]
            worker += ["--name", f"worker-{number}"]
            worker += ["--local-directory", str(folder / f"worker-{number}")]
            log = folder / f"worker-{number}.log"
            processes.append(_start(worker, marker, log, worker_environment))
        _wait_for_workers(address, workers, timeout=30)
        yield Cluster(folder, scheduler_file, address, marker, processes)
    finally:
        for process in reversed(processes):  # workers first: they then need no scheduler
            _stop(process)
        assert wait_no_processes(marker, timeout=5) == []


def _config(folder: Path, marker: str, name: str, **settings: object) -> Path:
    path, _ = write_config(
        folder,
        BOTS,
        marker=marker,
        file_name=f"{name}.yaml",
        matches_per_pair=MATCHES_PER_PAIR,
        **settings,
    )
    return path


@dataclass
class Reference:
    """A local-pool run of the config: the results every cluster run must reproduce."""

    folder: Path
    marker: str
    results: dict[str, tuple[object, ...]]
    standings: object


def results(database: Path) -> dict[str, tuple[object, ...]]:
    """Each stored match's outcome (not where or when it was played), by match id."""
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        return {
            row[0]: tuple(row[1:])
            for row in connection.execute(
                "SELECT match_id, winner, termination, score0, score1, games, games_won0, "
                "games_won1, forfeit_kind FROM results"
            )
        }
    finally:
        connection.close()


def standings_json(output: Path, cwd: Path) -> object:
    """The bots' part of ``aegis-ref standings --format json``."""
    printed = run_cli("standings", str(output), "--format", "json", cwd=cwd, timeout=300)
    assert printed.returncode == 0, printed.stderr
    return json.loads(printed.stdout)["bots"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The local run (concurrency 2) of the module's tournament."""
    folder = tmp_path_factory.mktemp("reference")
    marker = uuid.uuid4().hex
    config = _config(folder, marker, "local", concurrency=2)
    output = folder / "local"
    finished = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=folder)
    assert finished.returncode == 0, finished.stderr
    found = results(output / "results.sqlite")
    assert len(found) == TOTAL
    return Reference(folder, marker, found, standings_json(output, folder))


def _check_store(output: Path) -> None:
    """Every scheduled match stored once, with its record, which replays."""
    for match_id in assert_stored_exactly_once(output, TOTAL):
        name = f"match-{match_id}.jsonl"
        with (output / "records" / name).open("rb") as stream:
            assert verify_lines(enumerate(stream, 1)).ok, name


def _workers(output: Path) -> set[str]:
    """The distinct worker processes (host:pid) that played the stored matches."""
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return {worker for (worker,) in connection.execute("SELECT DISTINCT worker FROM results")}
    finally:
        connection.close()


def test_a_cluster_run_equals_the_local_run(cluster: Cluster, reference: Reference) -> None:
    """The same config and seed through the scheduler's address: the same result for every
    match and the same standings; both workers played; no bot is left on the workers."""
    folder = reference.folder
    config = _config(
        folder, reference.marker, "dask", executor={"kind": "dask", "address": cluster.address}
    )
    output = folder / "dask"
    finished = run_cli("tournament", str(config), "--output", str(output), cwd=folder, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert f"Playing on the Dask cluster at {cluster.address}: 2 worker(s)" in finished.stdout
    assert "Preflight: starting 3 bot(s) on the cluster as their matches will" in finished.stdout
    assert "Preflight: 3 bot(s) started and said hello in" in finished.stdout
    assert "Traceback" not in finished.stderr
    _check_store(output)
    assert results(output / "results.sqlite") == reference.results
    assert standings_json(output, folder) == reference.standings
    assert len(_workers(output)) == 2
    # close_worker_runner ran on every worker: their bots are stopped.
    assert wait_no_processes(reference.marker, timeout=5) == []


def test_a_killed_worker_s_match_is_played_again_and_stored_once(
    cluster: Cluster, reference: Reference
) -> None:
    """SIGKILL the worker process playing matches mid-run: its match runs again on another
    worker, the run completes, every match is stored exactly once and the results are the
    local run's; the reaper takes the dead worker's bots down."""
    folder = reference.folder
    config = _config(
        folder,
        reference.marker,
        "killed",
        # Two matches per task: the killed worker's whole batch is played again.
        executor={"kind": "dask", "scheduler_file": str(cluster.scheduler_file), "batch_size": 2},
    )
    output = folder / "killed"
    database = output / "results.sqlite"
    process = start_tournament(config, output, folder)
    try:
        wait_for_stored(process, database, 10)
        victim = int(sorted(_workers(output))[0].rsplit(":", 1)[1])
        os.kill(victim, signal.SIGKILL)
        stored_at_kill = stored_count(database)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 0, stderr
    assert stored_at_kill < TOTAL, "the run ended before the kill: make it longer"
    _check_store(output)
    assert results(database) == reference.results
    assert wait_no_processes(reference.marker, timeout=5) == []
    assert "Traceback" not in stderr, stderr
    assert stdout.strip().endswith(f"{TOTAL}/{TOTAL} matches stored")
    # The victim was a worker with live bots (so in the middle of its matches), and its
    # nanny saw it die: the dead worker's reaper killed its bots.
    deadline = time.monotonic() + 10
    while True:
        logs = "".join(path.read_text() for path in cluster.folder.glob("worker-*.log"))
        if "aegis-ref reaper: worker gone; killed " in logs or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert f"Worker process {victim} was killed by signal 9" in logs
    assert "aegis-ref reaper: worker gone; killed " in logs


def test_the_preflight_starts_the_bots_on_the_workers(cluster: Cluster, tmp_path: Path) -> None:
    """A bot whose script is missing stops the run before any match, as on the local pool:
    its fault, exit status and last output come back from the worker that started it."""
    config, marker = write_config(
        tmp_path, BOTS[:2], executor={"kind": "dask", "address": cluster.address}
    )
    data = yaml.safe_load(config.read_text())
    data["bots"].append({"name": "trumpyy", "command": "python3 bots/trumpyy.py"})
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    failed = run_cli("tournament", str(config), "--output", "out", cwd=tmp_path, timeout=300)
    assert failed.returncode == EXIT_BOT, failed.stderr
    assert "Preflight: starting 3 bot(s) on the cluster" in failed.stdout
    assert "Preflight: bot trumpyy cannot start as the tournament runs it" in failed.stderr
    assert "  exit status: 2\n" in failed.stderr
    assert f"python3: can't open file '{tmp_path / 'bots' / 'trumpyy.py'}'" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert stored_count(tmp_path / "out" / "results.sqlite") == 0
    assert wait_no_processes(marker, timeout=5) == []


def test_local_cluster_option(reference: Reference) -> None:
    """``--local-cluster 2`` overrides the config's (local) executor and plays the same
    matches; the local cluster and every bot are gone afterwards."""
    folder = reference.folder
    config = folder / "local.yaml"
    output = folder / "local-cluster"
    finished = run_cli(
        "tournament",
        str(config),
        "--output",
        str(output),
        "--local-cluster",
        "2",
        cwd=folder,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr
    assert "Playing on the Dask cluster started here at tcp://127.0.0.1:" in finished.stdout
    _check_store(output)
    assert results(output / "results.sqlite") == reference.results
    assert wait_no_processes(reference.marker, timeout=5) == []


@pytest.mark.skipif(
    detect_cgroups().cpu_clock_problem() is not None,
    reason=f"the earlier run needs the CPU clock here: {detect_cgroups().cpu_clock_problem()}",
)
def test_a_worker_without_cgroup_cpu_accounting_refuses_a_required_cpu_clock(
    tmp_path: Path,
) -> None:
    """A real cluster whose worker runs with AEGIS_CGROUPS=off, and a config that requires
    clock: cpu: the run stops before any match, naming the worker and what it lacks, and the
    matches an earlier run stored are all still there, records and all."""
    required = {"decision_ms": 2000, "warmup_ms": 10000, "clock": "cpu"}
    config, marker = write_config(tmp_path, BOTS[:2], time_control=required, matches_per_pair=2)
    earlier = run_cli("tournament", str(config), "--output", "out", cwd=tmp_path, timeout=120)
    assert earlier.returncode == 0, earlier.stderr
    output = tmp_path / "out"
    stored = results(output / "results.sqlite")
    assert len(stored) == 2
    records = {path.name: path.read_bytes() for path in (output / "records").iterdir()}
    (tmp_path / "dask").mkdir()
    with _running_cluster(tmp_path / "dask", 1, {"AEGIS_CGROUPS": "off"}) as cpuless:
        config, _ = write_config(
            tmp_path,
            BOTS,
            marker=marker,
            time_control=required,
            matches_per_pair=2,
            executor={"kind": "dask", "address": cpuless.address},
        )
        refused = run_cli("tournament", str(config), "--output", "out", cwd=tmp_path, timeout=120)
    assert refused.returncode == 2, refused.stderr
    message = " ".join(refused.stderr.split())
    assert "the cluster's workers cannot play this tournament" in message
    assert re.search(
        r"worker tcp://127\.0\.0\.1:\d+ \([^)]+\): time_control\.clock is cpu, but this worker "
        r"has no writable cgroup with CPU accounting \(cgroup v2 cpu\.stat or v1 cpuacct\) and a "
        r"freezer",
        message,
    ), message
    assert "Traceback" not in refused.stderr
    assert results(output / "results.sqlite") == stored
    assert {path.name: path.read_bytes() for path in (output / "records").iterdir()} == records
    assert wait_no_processes(marker, timeout=5) == []


def test_an_unreachable_scheduler_is_a_clean_error(tmp_path: Path) -> None:
    config, _ = write_config(
        tmp_path,
        BOTS[:2],
        executor={"kind": "dask", "address": "tcp://127.0.0.1:9", "connect_timeout_s": 1},
    )
    failed = run_cli("tournament", str(config), "--output", "out", cwd=tmp_path, timeout=300)
    assert failed.returncode == 2, failed.stderr
    assert "cannot connect to the Dask scheduler at tcp://127.0.0.1:9" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_ctrl_c_with_a_local_cluster(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the foreground process group) stops a ``--local-cluster`` run
    cleanly: the cluster lives in a session of its own, so no Dask worker dies of it with a
    traceback; the matches in flight are stored; nothing is left running; it resumes."""
    config, bots_marker = write_config(tmp_path, BOTS, matches_per_pair=100)
    marker = uuid.uuid4().hex  # carried by the coordinator, its helper, the workers, reapers
    output = tmp_path / "out"
    cluster = ["--local-cluster", "2"]
    environment = {**os.environ, "AEGIS_TEST_MARKER": marker}
    process = start_tournament(config, output, tmp_path, *cluster, env=environment)
    try:
        wait_for_stored(process, output / "results.sqlite", 5)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    stored = stored_count(output / "results.sqlite")
    assert f"Interrupted: {stored} of 300 matches stored" in stderr
    assert wait_no_processes(marker, timeout=10) == []
    assert wait_no_processes(bots_marker, timeout=5) == []
    arguments = ["tournament", str(config), "--output", str(output), *cluster, "--quiet"]
    resumed = run_cli(*arguments, cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert stored_count(output / "results.sqlite") == 300
    assert wait_no_processes(bots_marker, timeout=5) == []


def test_bots_with_randomness_play_the_same_records_on_the_cluster(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Random, greedy and strong bots (drawing their randomness from match_start's seed):
    the records of a run through the scheduler equal those of a local run at concurrency 1,
    match by match."""
    marker = uuid.uuid4().hex
    local = write_bundled_config(tmp_path, "local", marker)
    finished = run_cli("tournament", str(local), "--output", str(tmp_path / "local"), cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    remote = write_bundled_config(
        tmp_path, "dask", marker, executor={"kind": "dask", "address": cluster.address}
    )
    finished = run_cli(
        "tournament", str(remote), "--output", str(tmp_path / "dask"), cwd=tmp_path, timeout=300
    )
    assert finished.returncode == 0, finished.stderr
    played = records_without_times(tmp_path / "dask")
    assert len(played) == BUNDLED_TOTAL
    assert differing(played, records_without_times(tmp_path / "local")) == []
    assert len(_workers(tmp_path / "dask")) == 2
