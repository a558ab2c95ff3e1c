"""The sandbox of a started bot: bubblewrap namespaces and a minimal view of the filesystem.

A bot is a stranger's program. In its sandbox it has its own PID, network, IPC, UTS, user and
cgroup namespaces, an unprivileged uid and gid, no capabilities and a session of its own; it
sees the system directories, its own directory, the referee's Python and the paths its
organiser lists, all read-only, a private size-capped ``/tmp`` and its own endpoint, and
nothing else: not the results, the config, the logs, other bots or the referee's processes.
When the sandbox's first process ends, the kernel ends every process in its PID namespace,
and what the bot wrote (``/tmp`` is a tmpfs of the sandbox) goes with it.

This module builds command lines and probes the machine; :mod:`referee.bots` starts them.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import protocol
import referee
import sample_bots

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "SYSTEM_DIRECTORIES",
    "SandboxMode",
    "SandboxPlan",
    "SandboxUnavailableError",
    "bubblewrap_problem",
    "plan_sandbox",
    "sandbox_command",
]

#: The uid and gid a bot has inside its sandbox (``nobody``/``nogroup`` on Debian).
SANDBOX_UID = 65534
SANDBOX_GID = 65534

#: System directories every bot sees read-only (those that exist on this machine).
SYSTEM_DIRECTORIES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Files and folders under /etc that a sandbox never shows, whatever their mode. Besides
#: these, everything under /etc that not every user may read is hidden: inside a sandbox
#: started by root a bot has its owner's rights on root's files (its uid maps to root's,
#: without capabilities), so root's secrets must be hidden, not merely unreadable.
_MASKED = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
)
#: Kernel interfaces of /proc that a sandbox shows read-only (settings of the whole machine:
#: root's uid may write them even without capabilities) or not at all.
#: (kcore, kmsg and the like need capabilities a bot has not; every mount costs its start.)
_PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq")
_PROC_HIDDEN = ("/proc/keys", "/proc/timer_list")
#: Size of the sandbox's /dev/shm (POSIX shared memory), in MiB.
_SHM_MB = 16
#: Environment variables of the referee's that a sandboxed bot keeps; all others are dropped
#: (an organiser's environment may hold credentials).
_KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


class SandboxMode(enum.StrEnum):
    """``auto``: sandbox where bubblewrap works, else run bots unsandboxed and say so;
    ``required``: refuse to start without it; ``off``: never sandbox."""

    AUTO = "auto"
    REQUIRED = "required"
    OFF = "off"


class SandboxUnavailableError(RuntimeError):
    """``sandbox: required`` on a machine where bubblewrap cannot run a sandbox."""


class UnsafeSandboxPathError(OSError):
    """A path a sandbox was asked to show would undo it (``/``, or a folder holding the
    temporary directory, where the referee's sockets live)."""


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    """How a referee starts its bots: sandboxed or not, and what no sandbox may show.

    ``hidden``: paths never visible in a sandbox even inside a directory it shows (the
    tournament's config and output directory). ``freeze_opponent``: freeze a bot while the
    other bot of its match decides (needs a freezer cgroup). ``problem``: why bots run
    unsandboxed, when they do.
    """

    enabled: bool
    hidden: tuple[str, ...] = ()
    freeze_opponent: bool = True
    problem: str | None = None

    @property
    def summary(self) -> str:
        """One line for the start of a run, the standings and the report."""
        if self.enabled:
            return "bots ran sandboxed (bubblewrap)"
        user = _user_name()
        why = f": {self.problem}" if self.problem else ""
        return f"bots ran unsandboxed as user {user}{why}"


def _user_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid())


@functools.cache
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox bots on this machine (missing, or namespaces refused),
    or None when it can. Probed once per process by running a real, empty sandbox."""
    program = shutil.which("bwrap")
    if program is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    command = sandbox_command(["/bin/true"], home=None, endpoint=None, main_thread=False)
    try:
        completed = subprocess.run(
            command,
            capture_output=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
            env=sandbox_environment({}),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not run a sandbox: {error}"
    if completed.returncode != 0:
        said = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[-1] if said else f"exit code {completed.returncode}"
        return f"bubblewrap could not run a sandbox: {detail}"
    return None


def plan_sandbox(
    mode: SandboxMode | str,
    *,
    hidden: Iterable[str | os.PathLike[str]] = (),
    freeze_opponent: bool = True,
) -> SandboxPlan:
    """Resolve ``mode`` on this machine. Raises :class:`SandboxUnavailableError` for
    ``required`` where bubblewrap cannot sandbox, naming what is missing."""
    mode = SandboxMode(mode)
    hidden_paths = tuple(os.path.realpath(path) for path in hidden)
    if mode is SandboxMode.OFF:
        return SandboxPlan(False, hidden_paths, False, "sandbox: off")
    problem = bubblewrap_problem()
    if problem is not None:
        if mode is SandboxMode.REQUIRED:
            raise SandboxUnavailableError(f"sandbox: required, but {problem}")
        return SandboxPlan(False, hidden_paths, False, problem)
    return SandboxPlan(True, hidden_paths, freeze_opponent)


@functools.cache
def python_paths() -> tuple[str, ...]:
    """What the referee's Python needs to run the bundled bots and the SDK: its prefixes and
    the folders of this project's packages (an editable install imports them from the
    source tree, which is otherwise not shown), the bundled bots' among them: a bundled bot
    may import another (``strong`` plays out with ``greedy``'s policy)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    paths |= {os.path.dirname(package.__file__ or "") for package in (protocol, referee)}
    # The folder referee.bundled.sample_bots_dir names (importing it here would close a cycle:
    # bundled imports referee.bots, which imports this module).
    paths.add(str(Path(sample_bots.__file__).resolve().parent))
    return tuple(sorted({os.path.realpath(path) for path in paths} | paths))


def sandbox_command(
    argv: Sequence[str],
    *,
    home: str | None,
    endpoint: str | None,
    main_thread: bool,
    cwd: str | None = None,
    read_only: Sequence[str] = (),
    hidden: Sequence[str] = (),
    tmp_mb: int = 64,
    mounts: Sequence[str] = (),
) -> list[str]:
    """The bubblewrap command that runs ``argv`` sandboxed.

    ``home``: the bot's own directory; ``endpoint``: the path of its ipc socket;
    ``read_only``: more paths to show; ``hidden``: paths never shown, even inside those;
    ``cwd``: its working directory (an empty folder where nothing is shown there);
    ``main_thread``: whether the caller is the process's main thread (bubblewrap's
    parent-death signal follows the thread that starts it, see :mod:`referee.bots`);
    ``mounts``: more bubblewrap mount options, applied after every path shown (a build's
    writable folder, :mod:`referee.build`).
    """
    command = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
        "--hostname",
        "aegis-bot",
        "--new-session",
        "--cap-drop",
        "ALL",
        # No user namespace of its own inside: in one, a bot could mount its cgroups and
        # raise its own limits.
        "--disable-userns",
    ]
    if main_thread:
        command.append("--die-with-parent")
    shown: list[str] = []
    for directory in SYSTEM_DIRECTORIES:
        if os.path.islink(directory) and not os.path.isabs(os.readlink(directory)):
            # Merged /usr (/bin -> usr/bin): the same link, no mount of its own to pay for.
            command += ["--symlink", os.readlink(directory), directory]
        elif os.path.lexists(directory):
            command += ["--ro-bind", directory, directory]
            shown.append(os.path.realpath(directory))
    for path in (*_MASKED, *_unreadable_under("/etc")):
        command += _mask(path)
    command += ["--proc", "/proc"]
    for path in _PROC_READ_ONLY:
        if os.path.exists(path):
            command += ["--ro-bind", path, path]
    for path in _PROC_HIDDEN:
        if os.path.exists(path):
            command += ["--ro-bind", "/dev/null", path]
    command += ["--dev", "/dev", "--size", str(_SHM_MB * 1024 * 1024), "--tmpfs", "/dev/shm"]
    # The private /tmp before anything bound inside it (a bot's folder, its endpoint).
    command += ["--size", str(tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    extra = [*python_paths(), *([home] if home else []), *read_only]
    for path in dict.fromkeys(os.path.realpath(item) for item in extra):
        _refuse_unsafe(path)
        if os.path.exists(path) and not _is_under(path, shown):
            command += ["--ro-bind", path, path]
            shown.append(path)
    if endpoint is not None:
        command += ["--ro-bind", endpoint, endpoint]
    for path in hidden:
        if _is_under(path, shown) and os.path.exists(path):
            command += _mask(path)
    command += mounts
    working = cwd or home or "/tmp"
    if working != "/tmp" and not _is_under(os.path.realpath(working), shown):
        command += ["--dir", working]  # an empty folder, where nothing of it is shown
    # The sandbox's root is a tmpfs of bubblewrap's, as large as half the memory: read-only,
    # and /dev too, so /tmp and /dev/shm (with their size caps) are where a bot can write.
    command += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", working]
    command += ["--", *argv]
    return command


@functools.cache
def _unreadable_under(root: str) -> tuple[str, ...]:
    """The files and folders under ``root`` that not every user may read (a folder: enter
    and list), outermost only: what an unprivileged bot could not read outside a sandbox."""
    hidden: list[str] = []
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            needed = 0o005 if stat.S_ISDIR(mode) else 0o004
            if mode & needed != needed:
                hidden.append(path)
                if name in folders:
                    folders.remove(name)  # hidden whole: nothing below it to look at
    return tuple(sorted(hidden))


def _refuse_unsafe(path: str) -> None:
    """Raise :class:`UnsafeSandboxPathError` for a path whose showing undoes the sandbox."""
    temporary = os.path.realpath(tempfile.gettempdir())
    if path == "/" or _is_under(temporary, [path]) or _is_under("/tmp", [path]):
        raise UnsafeSandboxPathError(
            f"a sandbox cannot show {path}: it holds {temporary}, where the referee's "
            "sockets and other runs' files are (give the bot a folder of its own)"
        )


def _mask(path: str) -> list[str]:
    if os.path.isdir(path):
        return ["--tmpfs", path, "--remount-ro", path]
    if os.path.lexists(path):
        return ["--ro-bind", "/dev/null", path]
    return []


def _is_under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def sandbox_environment(base: dict[str, str]) -> dict[str, str]:
    """A sandboxed bot's environment: ``base`` (the bot's own variables and the referee's
    ``AEGIS_*``), a few of the referee's (PATH, locale), and ``HOME`` and ``TMPDIR`` in the
    sandbox's private ``/tmp``; nothing else of the referee's environment."""
    environment = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    environment.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    environment.update(HOME="/tmp", TMPDIR="/tmp")
    environment.update(base)
    return environment


_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|deno|bun|java|ruby|perl|php|lua|luajit|julia|Rscript|dotnet"
    r"|mono|bash|sh|dash|zsh|env)[0-9.]*"
)


def shown_directories(search_path: str, shown: Sequence[str]) -> tuple[str, str]:
    """Split a ``PATH`` value in two: the directories under ``shown`` (what a sandbox shows),
    in order, and those it does not show, both joined by ``:``."""
    real = [os.path.realpath(path) for path in shown]
    kept: list[str] = []
    left_out: list[str] = []
    for directory in search_path.split(":"):
        if not directory:
            continue
        # Its own path must be shown (bound, or a system link such as /bin -> usr/bin), and
        # where it leads too.
        inside = _is_under(os.path.realpath(directory), real) and _is_under(
            directory, [*shown, *real]
        )
        (kept if inside else left_out).append(directory)
    return ":".join(kept), ":".join(left_out)


class ProgramNotShownError(OSError):
    """A bot's program (or its script) lies outside every folder its sandbox shows."""


def unshown_program(
    command: Sequence[str], *, home: str | None, read_only: Sequence[str], cwd: str | None
) -> str | None:
    """Why the sandbox cannot run ``command``, or None: its program, or an interpreter's
    script, is a file on this machine outside the folders the sandbox shows (the system
    directories, the referee's Python, the bot's ``home`` and its ``read_only`` paths).
    bubblewrap would only say ``execvp ...: No such file or directory``."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    shown = [
        os.path.realpath(path)
        for path in (*SYSTEM_DIRECTORIES, *python_paths(), *([home] if home else []), *read_only)
    ]
    program = command[0] if command else ""
    candidates = [program] if "/" in program else []
    if not candidates or _INTERPRETER.fullmatch(os.path.basename(program)):
        candidates += [argument for argument in command[1:2] if not argument.startswith("-")]
    for argument in candidates:
        path = Path(argument) if os.path.isabs(argument) else base / argument
        try:
            if not path.is_file():
                continue
        except (OSError, ValueError):
            continue
        resolved = os.path.realpath(path)
        if _is_under(resolved, shown):
            continue
        folder = os.path.dirname(resolved)
        where = f"its folder {home}" if home else "no folder of its own"
        return (
            f"it is outside its sandbox, which shows {where}: make {folder} its cwd, or add "
            "it to its read_only"
        )
    return None


def bot_home(command: Sequence[str], cwd: str | None) -> str | None:
    """The bot's own directory, shown read-only in its sandbox: the folder of its program,
    or, for an interpreter (``python3 bot.py``, ``node bot.js``), of the first argument that
    names an existing file; paths resolve against ``cwd``. None if there is none outside the
    system directories."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    system = [os.path.realpath(directory) for directory in SYSTEM_DIRECTORIES]

    def folder(argument: str) -> str | None:
        candidate = Path(argument) if os.path.isabs(argument) else base / argument
        try:
            if not candidate.is_file():
                return None
        except (OSError, ValueError):  # a name too long for a path, a NUL: not a file
            return None
        resolved = os.path.realpath(candidate)
        return None if _is_under(resolved, system) else os.path.dirname(resolved)

    program = command[0] if command else ""
    if "/" in program and not _INTERPRETER.fullmatch(os.path.basename(program)):
        found = folder(program)
        if found is not None:
            return found
    for argument in command[1:]:
        if not argument.startswith("-"):
            found = folder(argument)
            if found is not None:
                return found
    return None
