"""A submitted bot's build: its command in a sandbox of its own, without network, under a
time limit, memory and process limits, and a size-capped folder to write in.

The build runs in a fresh copy of the submission. bubblewrap mounts a tmpfs of ``size_mb``
at the bot's folder (its final path, so that a path the build writes into a file stays
true), a shell copies the submitted files into it from the submission's folder (shown
read-only), runs the build command there, and, if it succeeds, writes the folder as a tar
stream on a descriptor of its own, which the caller reads (and checks member by member)
while the build runs. Everything else the sandbox shows is read-only and its ``/tmp`` a
private tmpfs, so a build can write nowhere else, and what it wrote goes with its sandbox:
only what the caller takes from the stream is kept.

This module, :mod:`referee.bots` and :mod:`referee.server` are the ones that start processes.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, cast

from referee.bots import LogBudget, LogSink, ResourceLimits, child_pids, prepare_child
from referee.cgroups import BotCgroup, detect_cgroups
from referee.sandbox import (
    SYSTEM_DIRECTORIES,
    SandboxPlan,
    python_paths,
    sandbox_command,
    sandbox_environment,
    shown_directories,
)

__all__ = ["BuildLimits", "BuildResult", "run_build"]

#: What the sandbox runs: copy the submission in, build, then stream the folder out on
#: descriptor 3 (the build itself writes its output to the log, and never sees descriptor 3).
_SCRIPT = """
exec 3>&1 1>&2
[ -z "$AEGIS_PATH_LEFT_OUT" ] || echo "aegis-ref: PATH=$PATH; left out of it, since the \
build's sandbox does not show them: $AEGIS_PATH_LEFT_OUT (the league's build.read_only \
can show a toolchain, build.env can set PATH)"
cp -PR --preserve=mode,timestamps "$AEGIS_SOURCE"/. . || {
    echo "aegis-ref: cannot copy the submission into its build folder"; exit 125; }
(exec 3>&-; exec /bin/sh -c "$AEGIS_BUILD") || exit $?
tar --create --file=- --format=pax --sort=name . >&3 || {
    echo "aegis-ref: cannot pack the built folder (an unreadable file?)"; exit 124; }
"""
_KILL_WAIT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class BuildLimits:
    """What a build may use: wall-clock seconds, the size of its folder (a tmpfs: writing
    past it fails with "No space left on device"), memory and processes (cgroup limits,
    where the machine has them; the folder's tmpfs counts as memory), its private ``/tmp``,
    open files and the bytes of its output kept in the log."""

    timeout_s: float = 300.0
    size_mb: int = 256
    memory_mb: int | None = 2048
    processes: int | None = 256
    tmp_mb: int = 512
    open_files: int | None = 1024
    log_bytes: int = 1_000_000


@dataclass(frozen=True, slots=True)
class BuildResult:
    """How a build ended. ``exit_code``: the sandbox's (None when it was killed at the time
    limit); ``log_tail``: the last lines it wrote."""

    exit_code: int | None
    seconds: float
    timed_out: bool
    memory_exceeded: bool
    log_tail: tuple[str, ...]
    log_bytes_dropped: int

    @property
    def succeeded(self) -> bool:
        """True when the build and the packing of its folder succeeded."""
        return self.exit_code == 0 and not self.timed_out

    def problem(self, limits: BuildLimits) -> str | None:
        """Why the build failed, in a sentence; None when it succeeded."""
        if self.timed_out:
            return f"the build ran out of time: it was stopped after {limits.timeout_s:g} s"
        if self.memory_exceeded:
            return (
                f"the build ran out of memory (limit {limits.memory_mb} MiB, its folder's "
                "files included)"
            )
        if self.exit_code == 0:
            return None
        if self.exit_code is not None and self.exit_code < 0:
            return f"the build was killed by signal {-self.exit_code} after {self.seconds:.1f} s"
        return f"the build exited with code {self.exit_code} after {self.seconds:.1f} s"


class _Prefixed:
    """A stream whose first bytes were already read."""

    def __init__(self, first: bytes, rest: IO[bytes]) -> None:
        self._first = first
        self._rest = rest

    def read(self, size: int = -1) -> bytes:
        if self._first:
            if size < 0:
                data, self._first = self._first + self._rest.read(), b""
                return data
            data, self._first = self._first[:size], self._first[size:]
            return data
        return self._rest.read(size)


_build_numbers = itertools.count(1)


def run_build(
    command: str,
    *,
    source: Path,
    target: Path,
    receive: Callable[[BinaryIO], None],
    sandbox: SandboxPlan,
    limits: BuildLimits | None = None,
    env: Mapping[str, str] | None = None,
    read_only: Sequence[str] = (),
    log_path: Path | None = None,
) -> BuildResult:
    """Build the submission in ``source`` with the shell command ``command`` in a sandbox
    where the folder ``target`` (which need not exist here) is a fresh copy of it; hand the
    built folder, a tar stream, to ``receive`` while the build runs. The sandbox shows
    nothing of the folder above ``target`` but ``source``, when it is there.

    ``receive`` is called only once the build has succeeded and its folder is being packed;
    if it raises, the build is stopped and the exception propagates (unless the build ran
    out of time meanwhile: then the result says so). ``env``: more environment variables;
    ``read_only``: more paths the sandbox shows. Needs an enabled ``sandbox``.
    """
    if not sandbox.enabled:
        raise ValueError("a build runs only in a sandbox")
    limits = limits or BuildLimits()
    main_thread = threading.current_thread() is threading.main_thread()
    folder = os.path.abspath(target)
    above = os.path.dirname(folder)
    if above in ("/", "/tmp") or above in SYSTEM_DIRECTORIES:
        raise ValueError(f"a build's folder needs a folder of its own to be in, not {above}")
    # Above the bot's folder, an empty read-only tmpfs: beside its folder (and wherever
    # that would be, even inside the sandbox's /tmp) nothing can be written.
    mounts = ["--tmpfs", above, "--ro-bind", str(source), str(source)]
    mounts += ["--size", str(limits.size_mb * 1024 * 1024), "--tmpfs", folder]
    argv = sandbox_command(
        ["/bin/sh", "-c", _SCRIPT],
        home=None,
        endpoint=None,
        main_thread=main_thread,
        cwd=folder,
        read_only=read_only,
        hidden=sandbox.hidden,
        tmp_mb=limits.tmp_mb,
        mounts=[*mounts, "--remount-ro", above],
    )
    environment = sandbox_environment(
        {**(env or {}), "AEGIS_BUILD": command, "AEGIS_SOURCE": str(source)}
    )
    if "PATH" not in (env or {}):
        shown = [*SYSTEM_DIRECTORIES, *python_paths(), *read_only, folder]
        kept, left_out = shown_directories(environment["PATH"], shown)
        environment["PATH"] = kept or "/usr/bin:/bin"
        if left_out:
            environment["AEGIS_PATH_LEFT_OUT"] = left_out
    rlimits = ResourceLimits(
        cpu_seconds=None,
        address_space_mb=None,  # compilers and Node.js reserve far more than they use
        open_files=limits.open_files,
        log_bytes=limits.log_bytes,
        memory_mb=limits.memory_mb,
        processes=limits.processes,
        tmp_mb=limits.tmp_mb,
        file_size_mb=limits.size_mb,
    )
    cgroup: BotCgroup | None = None
    support = detect_cgroups()
    if support.v1 or support.v2 is not None:
        cpus: set[int] | None = None
        with contextlib.suppress(OSError):
            cpus = os.sched_getaffinity(0)
        cgroup = BotCgroup(
            support,
            f"build-{os.getpid()}-{next(_build_numbers)}",
            memory_mb=limits.memory_mb,
            processes=limits.processes,
            cpus=cpus,
        )
    parent = os.getpid() if main_thread else None
    log_read, log_write = os.pipe()
    started = time.monotonic()
    try:
        process = subprocess.Popen(  # the organiser's sandbox around the author's command
            argv,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_write,
            start_new_session=True,
            preexec_fn=lambda: prepare_child(rlimits, parent, cgroup),
            close_fds=True,
        )
    except OSError:
        os.close(log_read)
        if cgroup is not None:
            cgroup.remove()
        raise
    finally:
        os.close(log_write)
    log = LogSink(log_read, log_path, LogBudget(limits.log_bytes))
    timed_out = threading.Event()

    def out_of_time() -> None:
        timed_out.set()
        _kill(process)

    timer = threading.Timer(limits.timeout_s, out_of_time)
    timer.daemon = True
    timer.start()
    assert process.stdout is not None
    stream = process.stdout
    try:
        first = stream.read(1)
        if first:
            try:
                receive(cast("BinaryIO", _Prefixed(first, stream)))
            except Exception:
                if not timed_out.is_set():
                    raise
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(max(0.0, limits.timeout_s - (time.monotonic() - started)) + 1.0)
    finally:
        timer.cancel()
        _kill(process)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_KILL_WAIT_SECONDS)
        stream.close()
        exceeded = cgroup is not None and cgroup.memory_exceeded()
        if cgroup is not None:
            cgroup.remove()  # whatever it started, wherever it went
        log.join(2.0)
    code = process.poll()
    if code is not None and 128 < code < 128 + 65:
        code = -(code - 128)  # bubblewrap reports a child killed by signal N as 128 + N
    return BuildResult(
        exit_code=None if timed_out.is_set() else code,
        seconds=round(time.monotonic() - started, 3),
        timed_out=timed_out.is_set(),
        memory_exceeded=exceeded,
        log_tail=tuple(log.tail()),
        log_bytes_dropped=log.dropped,
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sandbox: its first process (whose end ends every process in its PID
    namespace) and bubblewrap's process group."""
    for child in child_pids(process.pid):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
