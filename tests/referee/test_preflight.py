"""The preflight's start of real bot processes: a bot that says hello, one that never does
(stopped when its allowance is over), one that exits; nothing is left running."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from referee.bots import BotSpec, ResourceLimits, processes_with_environment
from referee.faults import FaultKind
from referee.preflight import preflight_bots

RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"


def _rawbot(name: str, marker: str, *arguments: str) -> BotSpec:
    return BotSpec(
        name,
        (sys.executable, str(RAWBOT), "--name", name, *arguments),
        env={"AEGIS_TEST_MARKER": marker},
    )


def test_each_bot_is_started_once_and_stopped(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    specs = [
        _rawbot("good", marker),
        _rawbot("mute", marker, "--fault", "no_hello"),
        BotSpec("gone", (sys.executable, "-c", "print('bye'); raise SystemExit(4)")),
    ]
    results = preflight_bots(specs, warmup_ms=4000, log_dir=tmp_path, parallel=3)
    assert [result.name for result in results] == ["good", "mute", "gone"]
    good, mute, gone = results
    assert good.ok
    assert good.fault is None
    assert good.exit_code is None
    assert good.log_path == str(tmp_path / "good.log")
    assert mute.fault is not None
    assert mute.fault.kind is FaultKind.HANDSHAKE
    assert mute.fault.detail == "no valid hello within 4000 ms"
    assert mute.exit_code is None  # still running when given up on, then stopped
    assert gone.fault is not None
    assert gone.exit_code == 4
    assert gone.fault.detail == "process ended (exit code 4) before a valid hello"
    assert gone.fault.stderr_tail[-1] == "bye"
    assert processes_with_environment("AEGIS_TEST_MARKER", marker) == []


def test_a_bot_s_hello_name_and_its_share_of_the_log_cap(tmp_path: Path) -> None:
    """The result has the name the bot said; what it writes before its hello counts against
    the run's cap for it, which the ledgers keep across preflights and matches."""
    marker = uuid.uuid4().hex
    said = preflight_bots([_rawbot("alpha", marker, "--name", "calls-itself")], warmup_ms=5000)
    assert said[0].said == "calls-itself"
    chatty = BotSpec(
        "chatty",
        (sys.executable, "-c", "import sys; sys.stderr.write('x' * 30000)"),
        limits=ResourceLimits(log_bytes=50_000),
    )
    for run in ("one", "two"):
        (result,) = preflight_bots(
            [chatty], warmup_ms=5000, log_dir=tmp_path / run, log_budget_dir=tmp_path
        )
        assert result.said is None
        assert result.fault is not None
    kept = sum(len(path.read_bytes()) for path in tmp_path.glob("*/chatty.log"))
    assert 50_000 <= kept < 50_000 + 200
    assert processes_with_environment("AEGIS_TEST_MARKER", marker) == []


def test_a_stop_request_starts_no_more_bots(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    asked = []

    def stopping() -> bool:
        asked.append(True)
        return len(asked) > 1  # after the first batch

    specs = [_rawbot("a", marker), _rawbot("b", marker)]
    results = preflight_bots(specs, warmup_ms=5000, parallel=1, stopping=stopping)
    assert [result.name for result in results] == ["a"]
    assert processes_with_environment("AEGIS_TEST_MARKER", marker) == []


def test_remote_bots_cannot_be_started() -> None:
    with pytest.raises(ValueError, match="remote bots dial in"):
        preflight_bots([BotSpec("far", curve_public_key="k" * 40)], warmup_ms=100)
