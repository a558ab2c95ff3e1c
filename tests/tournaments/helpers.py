"""Shared helpers of the tournament tests: rawbot configs, the CLI, bot processes."""

from __future__ import annotations

import io
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from referee.bots import processes_with_environment
from referee.listeners import generate_keys
from tournaments.report.terminal import QuietDisplay

RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"
#: The installed console script, next to the interpreter running the tests.
AEGIS_REF = Path(sys.executable).parent / "aegis-ref"
#: Short matches: a few games each.
FAST_RULES = {"target_score": 5, "cold_margin": 3}


def rawbot_entry(
    name: str, marker: str, *arguments: str, keep_alive: bool = True
) -> dict[str, object]:
    """A config entry for rawbot.py (first legal action) carrying ``marker`` in its env.

    Kept alive by default: these tests are about scheduling, storing and resuming, and play
    hundreds of quick matches; a process per match (the default of a real config, tested in
    test_containment.py and where ``keep_alive=False``) would make them minutes long."""
    return {
        "name": name,
        "command": [sys.executable, str(RAWBOT), "--name", name, *arguments],
        "env": {"AEGIS_TEST_MARKER": marker},
        "keep_alive": keep_alive,
    }


def write_config(
    directory: Path,
    names: Sequence[str],
    *,
    marker: str | None = None,
    file_name: str = "config.yaml",
    **settings: object,
) -> tuple[Path, str]:
    """Write a config of rawbots into ``directory``; return its path and the bots' marker."""
    marker = marker or uuid.uuid4().hex
    data: dict[str, object] = {
        "name": "test",
        "bots": [rawbot_entry(name, marker) for name in names],
        "rules": dict(FAST_RULES),
        "time_control": {"decision_ms": 2000, "warmup_ms": 10000},
        "seed": 11,
    }
    data.update(settings)
    path = directory / file_name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path, marker


def free_port() -> int:
    """A tcp port on loopback that nothing listens on (for a moment)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def remote_tournament(
    tmp_path: Path,
    local: Sequence[str],
    remote: dict[str, tuple[str, int]],
    *,
    connect_timeout_s: int,
    **settings: object,
) -> tuple[Path, str, str]:
    """A config of local rawbots and remote bots (name: (public key, connections)); return
    it, the referee's public key and the endpoint the remote bots dial."""
    public, secret = generate_keys()
    (tmp_path / "referee.key").write_text(secret + "\n", encoding="ascii")
    port = free_port()
    config, _ = write_config(
        tmp_path,
        local,
        listen={
            "host": "127.0.0.1",
            "port": port,
            "key_file": "referee.key",
            "connect_timeout_s": connect_timeout_s,
        },
        **settings,
    )
    data = yaml.safe_load(config.read_text())
    for name, (key, connections) in remote.items():
        data["bots"].append({"name": name, "remote_key": key, "connections": connections})
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config, public, f"tcp://127.0.0.1:{port}"


def processes_with_marker(marker: str) -> list[int]:
    """Pids of live processes whose environment carries ``AEGIS_TEST_MARKER=marker``."""
    return processes_with_environment("AEGIS_TEST_MARKER", marker)


def wait_no_processes(marker: str, timeout: float = 10.0) -> list[int]:
    """Wait until no process carries ``marker``; return those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    alive = processes_with_marker(marker)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = processes_with_marker(marker)
    return alive


def run_cli(*arguments: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``aegis-ref`` with these arguments and wait for it (``timeout``: a guard against
    a hang, wide enough for a machine kept busy by other work)."""
    return subprocess.run(
        [str(AEGIS_REF), *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "120"},
    )


def stored_count(database: Path) -> int:
    """Matches stored so far (0 while the store does not exist yet)."""
    if not database.exists():
        return 0
    try:
        connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return int(connection.execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        connection.close()


def start_tournament(
    config: Path,
    output: Path,
    cwd: Path,
    *arguments: str,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """Start ``aegis-ref tournament CONFIG --output OUTPUT ARGUMENTS --quiet`` in the
    background, in a process group of its own (as a shell runs a foreground job)."""
    return subprocess.Popen(
        [str(AEGIS_REF), "tournament", str(config), "--output", str(output), *arguments, "--quiet"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        process_group=0,
    )


def wait_for_stored(
    process: subprocess.Popen[str], database: Path, at_least: int = 1, timeout: float = 60
) -> int:
    """Wait until at least ``at_least`` matches are stored while the run still goes; return
    the count."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        count = stored_count(database)
        if count >= at_least:
            return count
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError(f"fewer than {at_least} matches stored in {timeout} s")


def winners(database: Path) -> dict[str, str | None]:
    """Each stored match's winner by match id."""
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        return dict(connection.execute("SELECT match_id, winner FROM results").fetchall())
    finally:
        connection.close()


def assert_stored_exactly_once(output: Path, total: int) -> list[str]:
    """Every scheduled match of the store in ``output`` stored once, with its record file;
    return the stored match ids."""
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        ids = [match_id for (match_id,) in connection.execute("SELECT match_id FROM results")]
        scheduled = {
            match_id for (match_id,) in connection.execute("SELECT match_id FROM schedule")
        }
    finally:
        connection.close()
    assert len(ids) == len(set(ids)) == total
    assert set(ids) == scheduled
    records = sorted(path.name for path in (output / "records").iterdir())
    assert records == sorted(f"match-{match_id}.jsonl" for match_id in ids)
    return ids


#: The bundled bots' tournament of the reproducibility tests: its matches per pair, and in all.
BUNDLED_MATCHES_PER_PAIR = 4
BUNDLED_TOTAL = 6 * BUNDLED_MATCHES_PER_PAIR


def bundled_bots(marker: str, *, keep_alive: bool) -> list[dict[str, Any]]:
    """The config's bots; ``strong`` searches a fixed number of worlds (its reproducible
    mode). Every bot carries ``marker`` in its environment."""
    entries: list[dict[str, Any]] = [
        {"name": "random", "command": "random", "env": {"AEGIS_SEED": "1"}},
        {"name": "random-2", "command": "random", "env": {"AEGIS_SEED": "2"}},
        {"name": "greedy", "command": "greedy", "env": {}},
        {"name": "strong", "command": "strong", "env": {"AEGIS_STRONG_WORLDS": "6"}},
    ]
    for entry in entries:
        entry["env"]["AEGIS_TEST_MARKER"] = marker
        entry["keep_alive"] = keep_alive
    return entries


def write_bundled_config(folder: Path, name: str, marker: str, **settings: Any) -> Path:
    """A config of the four bundled bots, kept alive unless ``keep_alive=False``."""
    keep_alive = settings.pop("keep_alive", True)
    data = {
        "name": "reproducibility",
        "bots": bundled_bots(marker, keep_alive=keep_alive),
        "rules": dict(FAST_RULES),
        "time_control": {"decision_ms": 5000, "warmup_ms": 20000},
        "matches_per_pair": BUNDLED_MATCHES_PER_PAIR,
        "seed": 2**40 + 17,
        "concurrency": 1,
        "sandbox": "off",  # the way of running is what varies here, not the containment
        **settings,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


#: What a record says of how long a decision took (wall, CPU charged, the machine's stall):
#: measured, so never the same twice.
TIME_KEYS = frozenset({"ms", "cpu_ms", "stall_ms"})


def without_times(value: Any) -> Any:
    """``value`` (a record's lines) without the measured times of its decisions."""
    if isinstance(value, dict):
        return {key: without_times(item) for key, item in value.items() if key not in TIME_KEYS}
    if isinstance(value, list):
        return [without_times(item) for item in value]
    return value


def records_without_times(output: Path) -> dict[str, list[Any]]:
    """Every stored match's record lines, decision times removed, by file name."""
    found = {}
    for path in sorted((output / "records").glob("match-*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        found[path.name] = [without_times(json.loads(line)) for line in lines if line]
    return found


def differing(one: dict[str, list[Any]], other: dict[str, list[Any]]) -> list[str]:
    """The matches whose records differ, or that only one side has."""
    return sorted(name for name in set(one) | set(other) if one.get(name) != other.get(name))


def quiet() -> QuietDisplay:
    """A display that prints into a buffer."""
    return QuietDisplay(Console(file=io.StringIO()))


def rows(database: Path) -> dict[str, dict[str, object]]:
    """Every stored row by match id."""
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    try:
        return {row["match_id"]: dict(row) for row in connection.execute("SELECT * FROM results")}
    finally:
        connection.close()
