"""Remote bots: they dial in over tcp with CurveZMQ, and only registered keys are admitted."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.bots import BotSpec
from referee.bundled import BotNameError, resolve_bot
from referee.faults import FaultKind
from referee.runner import MatchRunner, TimeControl
from referee.server import RemoteListener, generate_keys
from tournaments.cli import app

RANDOM_BOT = Path(__file__).resolve().parents[2] / "sample_bots" / "random" / "bot.py"


def remote_bot(endpoint: str, server_key: str, keys: tuple[str, str]) -> subprocess.Popen[bytes]:
    """Start the bundled random bot as a remote bot would run: by itself, with Curve keys."""
    environment = dict(os.environ)
    environment.pop("AEGIS_TOKEN", None)
    environment.update(
        AEGIS_ENDPOINT=endpoint,
        AEGIS_SERVER_KEY=server_key,
        AEGIS_PUBLIC_KEY=keys[0],
        AEGIS_SECRET_KEY=keys[1],
    )
    return subprocess.Popen(
        [sys.executable, str(RANDOM_BOT)],
        env=environment,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def referee_keys() -> tuple[str, str]:
    """A fresh referee key pair (public, secret)."""
    return generate_keys()


@pytest.fixture
def runner(referee_keys: tuple[str, str]) -> Iterator[MatchRunner]:
    """A runner that also listens on loopback tcp for remote bots."""
    public, secret = referee_keys
    listener = RemoteListener("127.0.0.1", 0, public, secret)
    with MatchRunner(
        time_control=TimeControl(decision_ms=1000, warmup_ms=5000), remote=listener
    ) as match_runner:
        yield match_runner


def test_registered_remote_bot_plays_matches(
    runner: MatchRunner, referee_keys: tuple[str, str]
) -> None:
    keys = generate_keys()
    endpoint = runner.server.remote_endpoint
    assert endpoint is not None
    assert endpoint.startswith("tcp://127.0.0.1:")
    process = remote_bot(endpoint, referee_keys[0], keys)
    try:
        spec = BotSpec("far-away", (), curve_public_key=keys[0])
        reports = [runner.play([spec, resolve_bot("first")], seed=seed) for seed in (1, 2)]
        for report in reports:
            assert report.faults == []
            assert report.match is not None
            assert report.match.result is not None
        # The same connection served both matches: the referee never started a process.
        assert runner._sessions["far-away"][0].process is None
    finally:
        runner.close()
        assert process.wait(5) == 0  # shutdown reaches remote bots too


def test_unknown_key_is_refused(runner: MatchRunner, referee_keys: tuple[str, str]) -> None:
    registered = generate_keys()
    intruder = generate_keys()
    endpoint = runner.server.remote_endpoint
    assert endpoint is not None
    process = remote_bot(endpoint, referee_keys[0], intruder)
    try:
        spec = BotSpec("expected", (), curve_public_key=registered[0])
        control = TimeControl(decision_ms=1000, warmup_ms=1500)
        runner.time_control = control
        report = runner.play([spec, resolve_bot("first")], seed=1)
        assert report.forfeit_fault is not None
        assert report.forfeit_fault.kind is FaultKind.HANDSHAKE
        assert report.winner == 1
        assert runner.server.stray_messages == 0  # CurveZMQ refused it before any message
    finally:
        process.kill()
        process.wait(5)


def test_remote_bot_spec_from_text() -> None:
    public, _secret = generate_keys()
    spec = resolve_bot(f"remote:{public}")
    assert spec.is_remote
    assert spec.curve_public_key == public
    with pytest.raises(BotNameError, match="40-character"):
        resolve_bot("remote:short")


def test_keygen_writes_a_usable_key_pair(tmp_path: Path) -> None:
    path = tmp_path / "referee.key"
    result = CliRunner().invoke(app, ["keygen", str(path)])
    assert result.exit_code == 0, result.output
    assert (path.stat().st_mode & 0o777) == 0o600
    public = Path(f"{path}.pub").read_text().strip()
    assert len(public) == 40
    assert public in result.output
    again = CliRunner().invoke(app, ["keygen", str(path)])
    assert again.exit_code == 2
    assert "exists" in again.output


def test_match_needs_a_listener_for_remote_bots() -> None:
    public, _secret = generate_keys()
    result = CliRunner().invoke(app, ["match", f"remote:{public}", "first"])
    assert result.exit_code == 2
    assert "--listen" in result.output
