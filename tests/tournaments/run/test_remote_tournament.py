"""Remote bots in tournaments that play several matches at once: one listener (the hub) for
the whole run, every match stored once, and a remote bot that is missing never stalls it.

Real tcp on loopback with CurveZMQ, real bot processes dialling in with their key pairs."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from referee.listeners import generate_keys
from tests.referee.bot_helpers import remote_bot
from tests.tournaments.helpers import (
    RAWBOT,
    assert_stored_exactly_once,
    quiet,
    remote_tournament,
    rows,
)
from tournaments.config.tournament import load_config
from tournaments.run.coordinator import run_tournament


@contextmanager
def running(processes: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    """Kill whatever of ``processes`` is still running at the end."""
    try:
        yield
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(5)


def messages(log: Path) -> list[dict[str, object]]:
    """The messages a rawbot logged with ``--log-messages``."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_two_remote_bots_and_a_local_one_at_concurrency_2(tmp_path: Path) -> None:
    """``far`` dials in twice (connections: 2) and ``near`` once; every match is stored
    once, without a fault, and each connection played one match at a time."""
    far, near = generate_keys(), generate_keys()
    config, referee, endpoint = remote_tournament(
        tmp_path,
        ["alpha"],
        {"far": (far[0], 2), "near": (near[0], 1)},
        connect_timeout_s=30,
        concurrency=2,
        matches_per_pair=2,
    )
    logs = [tmp_path / "far-1.jsonl", tmp_path / "far-2.jsonl", tmp_path / "near.jsonl"]
    processes = [
        remote_bot(endpoint, referee, keys, RAWBOT, "--name", name, "--log-messages", str(log))
        for keys, name, log in zip((far, far, near), ("far", "far", "near"), logs, strict=True)
    ]
    with running(processes):
        setup = load_config(config).with_overrides(output=tmp_path / "out")
        display = quiet()
        summary, standings = run_tournament(setup, display=display)
        assert summary.complete, summary
        assert summary.failure is None
        assert (summary.played, summary.total) == (6, 6)
        assert_stored_exactly_once(tmp_path / "out", 6)
        for row in rows(tmp_path / "out" / "results.sqlite").values():
            assert json.loads(str(row["faults_json"])) == [], row
            assert row["termination"] != "void"
        assert standings is not None
        assert {row.name: row.record.matches for row in standings.rows} == {
            "alpha": 4,
            "far": 4,
            "near": 4,
        }
        notes = display.console.file.getvalue()  # type: ignore[attr-defined]
        assert "Remote bot far has connected" in notes
        # The end of the run shuts every connection down.
        assert [process.wait(15) for process in processes] == [0, 0, 0]
    starts = [sum(message["type"] == "match_start" for message in messages(log)) for log in logs]
    assert (starts[0] + starts[1], starts[2]) == (4, 4)
    # far played on both its connections (the second may dial in a little after the first,
    # which then plays alone).
    assert min(starts[:2]) >= 1, starts
    for log in logs:  # one match at a time on a connection: start, end, start, end …
        kinds = [message["type"] for message in messages(log)]
        bounds = [kind for kind in kinds if kind in ("match_start", "match_end")]
        assert bounds == ["match_start", "match_end"] * (len(bounds) // 2), log.name


def test_remote_bots_that_never_connect_do_not_stall_the_run(tmp_path: Path) -> None:
    """The run waits a bounded time for ``far`` and ``ghost`` (playing the local matches
    meanwhile: test_remote.py shows the scheduling), then reports each and plays its matches
    at once as forfeits; where the two meet, the match is void."""
    config, _, _ = remote_tournament(
        tmp_path,
        ["alpha", "beta"],
        {"far": (generate_keys()[0], 1), "ghost": (generate_keys()[0], 1)},
        connect_timeout_s=2,
        concurrency=2,
        matches_per_pair=2,
    )
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    display = quiet()
    started = time.monotonic()
    summary, standings = run_tournament(setup, display=display)
    assert 2 <= time.monotonic() - started < 30  # one wait, not one a match
    assert summary.complete
    assert_stored_exactly_once(tmp_path / "out", 12)
    stored = rows(tmp_path / "out" / "results.sqlite").values()
    local = [row for row in stored if {row["seat0"], row["seat1"]} == {"alpha", "beta"}]
    void = [row for row in stored if {row["seat0"], row["seat1"]} == {"far", "ghost"}]
    forfeits = [row for row in stored if row not in local and row not in void]
    assert (len(local), len(void), len(forfeits)) == (2, 2, 8)
    for row in forfeits:
        assert row["forfeit_bot"] in ("far", "ghost"), row
        assert row["forfeit_kind"] == "handshake", row
        assert "not connected" in str(row["forfeit_json"])
    assert all(row["forfeit_kind"] is None and not row["void"] for row in local)
    assert all(row["void"] for row in void)
    notes = display.console.file.getvalue()  # type: ignore[attr-defined]
    for name in ("far", "ghost"):
        assert f"Remote bot {name} has not connected in 2 s: it forfeits its matches" in notes
    assert standings is not None
    record = next(row.record for row in standings.rows if row.name == "far")
    assert record.forfeits == {"handshake": 4}


def test_a_remote_bot_that_disconnects_mid_match(tmp_path: Path) -> None:
    """Its process ends at its third decision: that match is forfeited at once with fault
    ``disconnect`` (the listener sees the connection close), and its later match, once the
    bounded wait for it is over, with ``handshake``."""
    keys = generate_keys()
    config, referee, endpoint = remote_tournament(
        tmp_path,
        ["alpha", "beta"],
        {"far": (keys[0], 1)},
        connect_timeout_s=1,
        concurrency=2,
        matches_per_pair=2,
    )
    process = remote_bot(endpoint, referee, keys, RAWBOT, "--fault", "crash", "--at", "3")
    with running([process]):
        setup = load_config(config).with_overrides(output=tmp_path / "out")
        started = time.monotonic()
        summary, _ = run_tournament(setup, display=quiet())
        assert time.monotonic() - started < 30
    assert summary.complete
    assert_stored_exactly_once(tmp_path / "out", 6)
    stored = rows(tmp_path / "out" / "results.sqlite").values()
    far = sorted(
        (row for row in stored if "far" in (row["seat0"], row["seat1"])),
        key=lambda row: str(row["finished_at"]),
    )
    assert [row["forfeit_bot"] for row in far] == ["far"] * 4
    assert [row["forfeit_kind"] for row in far] == ["disconnect"] + ["handshake"] * 3
    assert "its connection closed" in str(far[0]["forfeit_json"])
    assert json.loads(str(far[0]["timings_json"]))["decisions"] != [0, 0]


def test_remote_bots_on_a_dask_cluster(tmp_path: Path) -> None:
    """Workers of a Dask cluster reach the remote bots through the coordinator's listener,
    with the run's own key pair."""
    pytest.importorskip("distributed", reason="needs the cluster extra (dask)")
    keys = generate_keys()
    config, referee, endpoint = remote_tournament(
        tmp_path, ["alpha"], {"far": (keys[0], 1)}, connect_timeout_s=30, matches_per_pair=2
    )
    process = remote_bot(endpoint, referee, keys, RAWBOT)
    with running([process]):
        setup = load_config(config).with_overrides(output=tmp_path / "out", local_cluster=1)
        display = quiet()
        summary, _ = run_tournament(setup, display=display)
        assert summary.complete, summary
        assert process.wait(15) == 0
    for row in rows(tmp_path / "out" / "results.sqlite").values():
        assert json.loads(str(row["faults_json"])) == [], row
    notes = display.console.file.getvalue()  # type: ignore[attr-defined]
    assert f"Workers reach the remote bots through {endpoint}" in notes
