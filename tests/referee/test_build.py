"""A submission's build in a real bubblewrap sandbox: what it writes comes out as a tar
stream; out of time, or when the caller stops reading, it ends with everything it started."""

from __future__ import annotations

import os
import tarfile
import time
import uuid
from pathlib import Path
from typing import BinaryIO

import pytest

from referee.bots import processes_with_environment
from referee.build import BuildLimits, run_build
from referee.sandbox import bubblewrap_problem, plan_sandbox

pytestmark = pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"bubblewrap cannot sandbox here: {bubblewrap_problem()}",
)


def submission(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "sub" / "source"
    source.mkdir(parents=True)
    (source / "hello.c").write_text("int main(void) { return 0; }\n")
    return source, tmp_path / "sub" / "bot"


def wait_gone(marker: str, timeout: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (alive := processes_with_environment("AEGIS_TEST_MARKER", marker)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    return alive


def test_the_built_folder_comes_out_as_a_tar_stream(tmp_path: Path) -> None:
    source, target = submission(tmp_path)
    members: dict[str, tuple[bool, int]] = {}

    def receive(stream: BinaryIO) -> None:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                members[member.name] = (member.isdir(), member.mode & 0o111)

    command = 'pwd; cc -o hello hello.c && mkdir out && echo made > out/note && echo "$HOME"'
    result = run_build(
        command, source=source, target=target, receive=receive, sandbox=plan_sandbox("required")
    )
    assert result.succeeded, result
    # At the bot's own path; HOME is private (after the line on PATH, if the referee's PATH
    # lists directories the sandbox does not show).
    assert result.log_tail[-2:] == (str(target), "/tmp")
    assert members["./hello"][1]
    assert not members["./hello.c"][1]
    assert members["./out"] == (True, 0o111)
    assert "./out/note" in members
    assert not target.exists()  # nothing of the build lands here but through the stream


def test_a_build_out_of_time_ends_with_everything_it_started(tmp_path: Path) -> None:
    source, target = submission(tmp_path)
    marker = uuid.uuid4().hex
    received: list[bytes] = []
    started = time.monotonic()
    result = run_build(
        "sleep 60 & setsid sleep 60 & sleep 60",
        source=source,
        target=target,
        receive=lambda stream: received.append(stream.read()),
        sandbox=plan_sandbox("required"),
        limits=BuildLimits(timeout_s=1.0),
        env={"AEGIS_TEST_MARKER": marker},
    )
    assert time.monotonic() - started < 10
    assert result.timed_out
    assert not result.succeeded
    assert result.problem(BuildLimits(timeout_s=1.0)) == (
        "the build ran out of time: it was stopped after 1 s"
    )
    assert received == []  # it never got to packing its folder
    assert wait_gone(marker) == []


def test_a_caller_that_refuses_the_stream_stops_the_build(tmp_path: Path) -> None:
    source, target = submission(tmp_path)
    marker = uuid.uuid4().hex

    def refuse(stream: BinaryIO) -> None:
        stream.read(512)
        raise RuntimeError("too big")

    command = "head -c 50000000 /dev/zero > big; sleep 60 &"
    with pytest.raises(RuntimeError, match="too big"):
        run_build(
            command,
            source=source,
            target=target,
            receive=refuse,
            sandbox=plan_sandbox("required"),
            env={"AEGIS_TEST_MARKER": marker},
        )
    assert wait_gone(marker) == []


def test_a_build_that_fills_its_folder_fails_there(tmp_path: Path) -> None:
    source, target = submission(tmp_path)
    limits = BuildLimits(size_mb=4)
    result = run_build(
        "head -c 8000000 /dev/zero > big",
        source=source,
        target=target,
        receive=lambda stream: None,
        sandbox=plan_sandbox("required"),
        limits=limits,
    )
    assert result.exit_code == 1
    assert "No space left on device" in result.log_tail[-1]
    assert result.problem(limits) == f"the build exited with code 1 after {result.seconds:.1f} s"


def test_the_build_s_path_holds_only_directories_its_sandbox_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The organiser's PATH may list toolchains the sandbox does not show (~/.cargo/bin):
    they are left out, and the build's log says so; shown with read_only, they stay."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "mytool").write_text("#!/bin/sh\necho tool ran\n")
    (tools / "mytool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    source, target = submission(tmp_path)
    command = 'echo "PATH is $PATH"; mytool 2>/dev/null || echo "no mytool"'
    plan = plan_sandbox("required")
    result = run_build(command, source=source, target=target, receive=drain, sandbox=plan)
    assert result.succeeded, result
    assert result.log_tail == (
        f"aegis-ref: PATH=/usr/bin:/bin; left out of it, since the build's sandbox does not "
        f"show them: {tools} (the league's build.read_only can show a toolchain, build.env "
        "can set PATH)",
        "PATH is /usr/bin:/bin",
        "no mytool",
    )
    shown = run_build(
        command, source=source, target=target, receive=drain, sandbox=plan, read_only=[str(tools)]
    )
    assert shown.log_tail == (f"PATH is {tools}:/usr/bin:/bin", "tool ran")


def drain(stream: BinaryIO) -> None:
    """Read the built folder's stream to its end."""
    while stream.read(1 << 16):
        pass
