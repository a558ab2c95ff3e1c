"""``protocol.sdk.run`` in this process (on a thread), against a scripted referee: where the
endpoint and token come from, giving up, reconnecting, and the exit codes."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from protocol.sdk import (
    EXIT_IDLE,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    Action,
    Bot,
    Decision,
    run,
)
from tests.processes import MachineWatch
from tests.protocol.sdk_support import BOT_TIMEOUT, ScriptedReferee


class FirstLegal(Bot):
    """The simplest bot."""

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        return legal[0]


class Running:
    """``run`` on a thread; ``code`` is its exit code once it has ended."""

    def __init__(self, *arguments: Any, **options: Any) -> None:
        self.code: int | None = None
        # Bounded even if a test fails before the shutdown: the bot then gives up by itself,
        # and a daemon thread cannot hold up the end of the test session.
        options.setdefault("max_idle", BOT_TIMEOUT)
        self._thread = threading.Thread(
            target=self._run, args=arguments, kwargs=options, daemon=True
        )
        self._thread.start()

    def _run(self, *arguments: Any, **options: Any) -> None:
        try:
            run(FirstLegal(), *arguments, **options)
        except SystemExit as exit_:
            self.code = int(exit_.code)  # type: ignore[arg-type]
        else:
            self.code = EXIT_OK

    def is_alive(self) -> bool:
        """True while ``run`` has not returned."""
        return self._thread.is_alive()

    def join(self, timeout: float = BOT_TIMEOUT) -> int:
        """Wait for the end; fail if it takes longer than ``timeout``."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "run() did not return"
        assert self.code is not None
        return self.code


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AEGIS_ENDPOINT", "AEGIS_TOKEN", "AEGIS_SDK_DEBUG"):
        monkeypatch.delenv(name, raising=False)


def _hello_then_shutdown(referee: ScriptedReferee, running: Running) -> dict[str, Any]:
    identity, hello = referee.handshake()
    referee.send(identity, "shutdown", reason="done")
    assert running.join() == EXIT_OK
    return hello


def test_command_line_overrides_the_environment(
    referee: ScriptedReferee, monkeypatch: pytest.MonkeyPatch, directory: Path
) -> None:
    monkeypatch.setenv("AEGIS_ENDPOINT", f"ipc://{directory}/nobody-here")
    monkeypatch.setenv("AEGIS_TOKEN", "from-environment")
    argv = ["--seed", "4", "--endpoint", referee.endpoint, "--token", "from-argv", "extra"]
    hello = _hello_then_shutdown(referee, Running(argv=argv))
    assert hello["token"] == "from-argv"


def test_options_take_their_value_after_a_space_or_an_equals_sign_and_are_never_abbreviated(
    referee: ScriptedReferee, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC section 1: ``--token=TOKEN`` and ``--token TOKEN``; an option the bot does not
    know takes no value (``--colour`` leaves ``--token=…`` alone), and ``--tok`` is not
    ``--token``."""
    monkeypatch.setenv("AEGIS_TOKEN", "from-environment")
    argv = ["--colour", f"--endpoint={referee.endpoint}", "--tok", "abbreviated"]
    hello = _hello_then_shutdown(referee, Running(argv=argv))
    assert hello["token"] == "from-environment"
    argv = ["--colour", "--token=-begins-with-a-dash", "--endpoint", referee.endpoint]
    hello = _hello_then_shutdown(referee, Running(argv=argv))
    assert hello["token"] == "-begins-with-a-dash"


def test_the_environment_is_the_default(
    referee: ScriptedReferee, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEGIS_ENDPOINT", referee.endpoint)
    monkeypatch.setenv("AEGIS_TOKEN", "from-environment")
    hello = _hello_then_shutdown(referee, Running(argv=[]))
    assert hello["token"] == "from-environment"
    assert hello["name"] == "FirstLegal"


def test_arguments_of_run_come_first(referee: ScriptedReferee, directory: Path) -> None:
    argv = ["--endpoint", f"ipc://{directory}/elsewhere", "--token", "from-argv"]
    hello = _hello_then_shutdown(referee, Running(referee.endpoint, "given", argv))
    assert hello["token"] == "given"


def test_no_endpoint_is_a_usage_error(caplog: pytest.LogCaptureFixture) -> None:
    assert Running(argv=[]).join() == EXIT_USAGE
    assert "AEGIS_ENDPOINT" in caplog.text


def test_a_bad_endpoint_is_a_usage_error(caplog: pytest.LogCaptureFixture) -> None:
    assert Running("nonsense://here", argv=[]).join() == EXIT_USAGE
    assert "cannot connect" in caplog.text


def test_a_silent_referee_gets_new_hellos_then_the_bot_gives_up(
    referee: ScriptedReferee, caplog: pytest.LogCaptureFixture
) -> None:
    watch = MachineWatch()
    started = watch.started
    running = Running(referee.endpoint, "", [], idle_timeout=0.3, max_idle=1.1)
    hellos = []
    while running.is_alive() and time.monotonic() - started < BOT_TIMEOUT:
        received = referee.poll(0.05)
        if received is not None:
            hellos.append(received)
    assert running.join() == EXIT_IDLE
    assert watch.elapsed() > 1.0
    assert watch.unstalled() < 3.0
    assert len(hellos) >= 2
    assert len({identity for identity, _hello in hellos}) == len(hellos)  # fresh sockets
    assert {hello["id"] for _identity, hello in hellos} == {1}
    assert "reconnecting" in caplog.text
    assert "exiting" in caplog.text


def test_a_welcome_in_another_major_version_exits(referee: ScriptedReferee) -> None:
    running = Running(referee.endpoint, "", [])
    identity, hello = referee.receive()
    referee.send(
        identity, "welcome", reply_to=hello["id"], protocol="2.0", referee="r", heartbeat_ms=9
    )
    assert running.join() == EXIT_REJECTED


def test_debug_mode_from_the_environment(
    referee: ScriptedReferee, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEGIS_SDK_DEBUG", "1")
    running = Running(referee.endpoint, "", [])
    identity, _hello = referee.handshake()
    # A ping with a negative id passes the fast path but not the models.
    referee.send_raw(identity, b"\x83\xa7version\xa31.0\xa4type\xa4ping\xa2id\xff")
    _sender, error = referee.receive()
    assert error["code"] == "malformed"
    referee.send(identity, "shutdown", reason="done")
    assert running.join() == EXIT_OK
