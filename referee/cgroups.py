"""Control groups for started bots: memory and process limits, CPU accounting, freezing and
killing a bot with everything it started.

Machines differ: cgroup v2 alone, v1 controllers alone, or both (a hybrid). Each feature
takes what the machine has, v2 first: freezing and killing need only a writable v2 group
(``cgroup.freeze``, ``cgroup.kill``, ``cpu.stat`` are in every v2 group), memory and process
limits need their controller in v2 or a writable v1 hierarchy of it, and where a feature is
missing the caller falls back to rlimits and signals. Nothing here raises for a missing or
read-only cgroup file system: a group is made with whatever works.

Each referee process keeps its bots' groups in a folder of its own, ``aegis-ref-<pid>``,
under its own group in each hierarchy; folders of referees that are gone are removed when
the next one starts. A referee holds an advisory lock (``flock``) on each of its folders for
as long as it lives, and the kernel drops it when the process dies, however it dies: the
sweep takes only folders it can lock. Locks, unlike pids, stay true across PID namespaces
sharing a hierarchy and across pid reuse.

An ordinary user gets cgroups where systemd delegates a v2 subtree to it (``systemd-run
--user --scope -p Delegate=yes``, or a service with ``Delegate=yes``): the referee's own v2
group is then writable, holds the referee and can enable controllers for groups below it
only once no process is left in it (cgroup v2's "no internal processes" rule). So the
referee moves itself into a leaf of its own, ``aegis-ref-referee``, and keeps its bots'
folders beside that leaf; the processes it starts later (workers, reapers) begin in the
leaf and find the same subtree above it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BotCgroup",
    "CgroupSupport",
    "detect_cgroups",
    "release_folders",
    "remove_groups_of",
    "system_cpu_stall_us",
]

#: The v1 controllers used, and the v2 controllers enabled for bots where possible.
_V1_CONTROLLERS = ("memory", "pids", "cpuacct", "cpuset", "freezer")
_V2_CONTROLLERS = ("memory", "pids", "cpuset")
_PREFIX = "aegis-ref-"
#: The leaf of a delegated v2 subtree the referee moves itself into (see the module's text).
REFEREE_LEAF = "aegis-ref-referee"
#: How an ordinary user gets a delegated v2 subtree with the memory and pids controllers.
DELEGATION_ADVICE = "systemd-run --user --scope -p Delegate=yes aegis-ref ..."
#: Set to ``off`` to run without cgroups (tests of the fallback), or ``v1`` to leave v2 out.
_OVERRIDE_VARIABLE = "AEGIS_CGROUPS"


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """What this machine offers a referee: per v1 controller, the referee's own group's
    folder; the referee's v2 group folder and the controllers it can enable for bots."""

    v1: dict[str, Path] = field(default_factory=dict)
    v2: Path | None = None
    v2_controllers: frozenset[str] = frozenset()
    #: The referee's leaf in a delegated v2 subtree (``v2`` is then that subtree's top).
    v2_leaf: Path | None = None
    #: What the v2 probe found beyond the groups: a leaf that could not be made, controllers
    #: the subtree is not given, the lack of a delegated subtree for an ordinary user.
    notes: tuple[str, ...] = ()

    def has(self, feature: str) -> bool:
        """Whether ``feature`` (memory, pids, cpu, cpuset, freeze, kill) is available.
        ``kill``: everything a bot started can be found and killed, which any group does."""
        if feature == "kill":
            return self.v2 is not None or bool(self.v1)
        if feature in ("freeze", "cpu") and self.v2 is not None:
            return True
        if feature in self.v2_controllers:
            return True
        v1_name = {"freeze": "freezer", "cpu": "cpuacct"}.get(feature, feature)
        return v1_name in self.v1

    def cpu_clock_problem(self) -> str | None:
        """Why the CPU clock cannot run here (what is missing), or None if it can."""
        missing = [
            what
            for feature, what in (
                ("cpu", "CPU accounting (cgroup v2 cpu.stat or v1 cpuacct)"),
                ("freeze", "a freezer (cgroup v2 cgroup.freeze or v1 freezer)"),
            )
            if not self.has(feature)
        ]
        if not missing:
            return None
        return "no writable cgroup with " + " and ".join(missing)

    def describe(self) -> str:
        """One line: which features are on, and from which version; where a delegated v2
        subtree was found, which one; and what the probe found missing."""
        if self.v2 is None and not self.v1:
            return "; ".join(("no cgroups (limits by rlimit only)", *self.notes))
        parts = []
        for feature in ("memory", "pids", "cpu", "cpuset", "freeze"):
            if not self.has(feature):
                continue
            v2 = self.v2 is not None and (
                feature in self.v2_controllers or feature in ("freeze", "cpu")
            )
            parts.append(f"{feature} (v{2 if v2 else 1})")
        line = "cgroups: " + ", ".join(parts) if parts else "no usable cgroups"
        if self.v2_leaf is not None:
            line += f"; v2 subtree {self.v2} delegated, the referee in its leaf {REFEREE_LEAF}"
        return "; ".join((line, *self.notes))


def _own_groups() -> tuple[dict[str, str], str | None]:
    """This process's group path per v1 controller, and its v2 path."""
    v1: dict[str, str] = {}
    v2 = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            number, controllers, path = line.split(":", 2)
            if number == "0" and controllers == "":
                v2 = path
            for name in controllers.split(","):
                v1[name] = path
    return v1, v2


def _mounts() -> Iterator[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, type, options) of every cgroup file system."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            before, _, after = line.partition(" - ")
            fields, tail = before.split(), after.split()
            if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
                continue
            options = set(tail[2].split(",")) | set(fields[5].split(",") if len(fields) > 5 else ())
            yield fields[3], fields[4].replace("\\040", " "), tail[0], options


def _folder(mount_root: str, mount_point: str, group: str) -> Path | None:
    """Where ``group`` (a path from /proc/self/cgroup) lies under this mount, if inside it."""
    if mount_root != "/" and not (group == mount_root or group.startswith(mount_root + "/")):
        return None
    relative = os.path.relpath(group, mount_root) if mount_root != "/" else group.lstrip("/")
    folder = Path(mount_point) / ("" if relative == "." else relative)
    return folder if os.access(folder, os.W_OK) else None


@functools.cache
def detect_cgroups() -> CgroupSupport:
    """Probe the cgroups this process can use for its bots (once per process)."""
    override = os.environ.get(_OVERRIDE_VARIABLE, "")
    if override == "off":
        return CgroupSupport()
    own_v1, own_v2 = _own_groups()
    v1: dict[str, Path] = {}
    v2: Path | None = None
    leaf: Path | None = None
    notes: list[str] = []
    v2_mounted = False
    for root, point, kind, options in _mounts():
        if kind == "cgroup2":
            if own_v2 is not None and override != "v1" and v2 is None:
                v2_mounted = True
                v2, leaf, note = _delegated(root, point, own_v2)
                notes += [note] if note else []
            continue
        for name in _V1_CONTROLLERS:
            if name in options and name in own_v1 and name not in v1:
                found = _folder(root, point, own_v1[name])
                if found is not None:
                    v1[name] = found
    controllers: frozenset[str] = frozenset()
    if v2 is not None:
        with contextlib.suppress(OSError):
            offered = set((v2 / "cgroup.controllers").read_text().split())
            controllers = frozenset(set(_V2_CONTROLLERS) & offered)
        if leaf is not None:
            absent = [name for name in ("memory", "pids") if name not in controllers]
            if absent and not all(name in v1 for name in absent):
                notes.append(
                    f"the delegated subtree is not given {' or '.join(absent)} (held by v1 "
                    "here, or not delegated)"
                )
    elif v2_mounted and not v1 and os.geteuid() != 0:
        notes.append(f"no delegated cgroup v2 subtree for this user: {DELEGATION_ADVICE}")
    support = CgroupSupport(v1, v2, controllers, leaf, tuple(notes))
    _remove_stale(support)
    return support


def _delegated(root: str, point: str, own: str) -> tuple[Path | None, Path | None, str | None]:
    """The v2 group the referee can keep its bots' groups under: (that group, the referee's
    leaf in it if it is a delegated subtree, a note on what failed).

    The root group takes processes and controllers alike; any other writable group does
    only once the referee has left it for a leaf of its own (it may be in that leaf
    already: a worker or reaper started after the move)."""
    folder = _folder(root, point, own)
    if folder is None or own == "/" or folder == Path(point):
        return folder, None, None
    if folder.name == REFEREE_LEAF and _is_delegated(folder.parent):
        return folder.parent, folder, None
    if not _is_delegated(folder):
        return folder, None, None
    leaf = folder / REFEREE_LEAF
    try:
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
    except OSError as error:
        return folder, None, f"cannot move the referee into {leaf}: {error.strerror}"
    return folder, leaf, None


def _is_delegated(folder: Path) -> bool:
    """Whether this process may make groups in ``folder``, move processes through it and
    enable its controllers for the groups below (what systemd's delegation grants)."""
    return all(
        os.access(path, os.W_OK)
        for path in (folder, folder / "cgroup.procs", folder / "cgroup.subtree_control")
    )


def _referee_folders(support: CgroupSupport) -> list[Path]:
    folders = list(support.v1.values())
    if support.v2 is not None:
        folders.append(support.v2)
    return folders


def _remove_stale(support: CgroupSupport) -> None:
    """Remove the bot groups of referees that are gone (killed before they could): the
    folders whose lock can be taken, this process's own excepted (it holds their locks)."""
    for base in _referee_folders(support):
        with contextlib.suppress(OSError):
            for entry in os.scandir(base):
                if _is_referee_folder(entry.name) and entry.is_dir(follow_symlinks=False):
                    _remove_if_unlocked(Path(entry.path))


def _is_referee_folder(name: str) -> bool:
    """Whether ``name`` is a referee's folder of bot groups (``aegis-ref-<pid>``): only those
    are swept. A delegated subtree named with the same prefix, the referee's leaf
    (``aegis-ref-referee``) or anything else is never a referee's to kill."""
    pid = name.removeprefix(_PREFIX)
    return name.startswith(_PREFIX) and pid.isascii() and pid.isdigit()


def _remove_if_unlocked(folder: Path) -> None:
    """Kill and remove the groups in ``folder`` and the folder, if no live referee holds its
    lock (a referee's folder, or one it was still making, under its temporary name)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # its referee lives (or this file system cannot lock: left alone)
        with contextlib.suppress(OSError):
            for child in folder.iterdir():
                if child.is_dir():
                    _kill_and_remove(child)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    finally:
        os.close(descriptor)


def remove_groups_of(pid: int) -> int:
    """Kill every process in the bot groups of referee process ``pid`` and remove the groups;
    return how many processes were in them. Meant for a process of the same group as that
    referee (its reaper) once the referee is gone: whatever its bots started is found
    wherever it went, whatever session, process group or environment it made itself."""
    found: set[int] = set()  # a process is in a group of each hierarchy: count it once
    for base in _referee_folders(detect_cgroups()):
        folder = base / f"{_PREFIX}{pid}"
        if folder.is_dir():
            found |= _kill_and_remove(folder)
    return len(found)


_parent_lock = threading.Lock()
#: This process's folders, removed when it exits (those of a process that cannot, killed
#: outright, go with the next referee's sweep), with the descriptors holding their locks.
_own_folders: dict[Path, int] = {}
#: How long making a folder waits for a sweep that holds its lock for a moment.
_LOCK_WAIT_SECONDS = 2.0


def release_folders() -> None:
    """Remove this process's (empty) folders of bot groups and let go of their locks; safe
    to call more than once."""
    with _parent_lock:
        folders = dict(_own_folders)
        _own_folders.clear()
    for folder, descriptor in folders.items():
        with contextlib.suppress(OSError):
            os.rmdir(folder)
        os.close(descriptor)


atexit.register(release_folders)


def _parent(base: Path, v2_enable: frozenset[str] = frozenset()) -> Path:
    """This referee's folder under ``base``, made and locked on first use."""
    folder = base / f"{_PREFIX}{os.getpid()}"
    with _parent_lock:
        if folder not in _own_folders or not folder.is_dir():
            _own_folders[folder] = _make_locked(folder)
            if (base / "cpuset.cpus").exists():
                # A v1 cpuset takes no task until its CPUs and memory nodes are set.
                for name in ("cpuset.cpus", "cpuset.mems"):
                    _write(folder / name, (base / name).read_text().strip())
            if v2_enable:
                with contextlib.suppress(OSError):
                    _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in v2_enable))
                with contextlib.suppress(OSError):
                    _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in v2_enable))
    return folder


def _make_locked(folder: Path) -> int:
    """Make ``folder`` (or take over one left by a dead process of the same pid), holding its
    lock; returns the descriptor that holds it. A sweep may find the new folder before it is
    locked and remove it (cgroup v2 renames no group, so it cannot be made under another
    name): then it is made again."""
    previous = _own_folders.pop(folder, None)
    if previous is not None:
        os.close(previous)
    for _ in range(100):
        if folder.is_dir():
            _remove_if_unlocked(folder)  # a dead referee's of the same pid (reused)
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            locked = _lock_within(descriptor, _LOCK_WAIT_SECONDS)
            if not locked or _same_inode(folder, descriptor):
                return descriptor  # unlocked where nothing locks: never swept either
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)  # a sweep took it meanwhile
    raise OSError(f"{folder} was swept away while being made, again and again")


def _lock_within(descriptor: int, seconds: float) -> bool:
    """Take the lock, waiting up to ``seconds`` for a sweep that holds it for a moment;
    False where the file system cannot lock."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)
        except OSError:
            return False


def _same_inode(path: Path, descriptor: int) -> bool:
    """Whether ``path`` still names the directory open as ``descriptor``."""
    try:
        named = os.stat(path)
    except OSError:
        return False
    held = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _write(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(descriptor, text.encode())
    finally:
        os.close(descriptor)


class BotCgroup:
    """The groups of one started bot in every hierarchy that works, with its limits set.

    The bot's first process joins them between fork and exec (:meth:`join_in_child`), so
    everything it starts is counted, limited, frozen and killed with it.
    """

    def __init__(
        self,
        support: CgroupSupport,
        name: str,
        *,
        memory_mb: int | None,
        processes: int | None,
        cpus: set[int] | None = None,
    ) -> None:
        self.support = support
        self.memory_mb = memory_mb
        self.folders: list[Path] = []
        self._procs_files: list[bytes] = []
        self._freeze_file: Path | None = None
        self._freeze_values = (b"1", b"0")
        self._freeze_descriptor: int | None = None
        self.frozen = False
        self._memory: Path | None = None
        self._memory_v2 = False
        self._cpu: Path | None = None
        #: Open descriptors of the files the CPU clock reads at every decision.
        self._descriptors: dict[Path, int] = {}
        #: The v2 group's folder (its ``cgroup.events`` says when a freeze is complete).
        self._v2_folder: Path | None = None
        self._kill_file: Path | None = None
        self.problems: list[str] = []
        v2_enabled: set[str] = set()
        if support.v2 is not None:
            folder = self._make(support.v2, name, support.v2_controllers)
            if folder is not None:
                v2_enabled = set(support.v2_controllers) & set(
                    _read(folder / "cgroup.controllers").split()
                )
                self._freeze_file = folder / "cgroup.freeze"
                self._v2_folder = folder
                self._kill_file = (
                    folder / "cgroup.kill" if (folder / "cgroup.kill").exists() else None
                )
                self._cpu = folder / "cpu.stat"
                if "memory" in v2_enabled and memory_mb is not None:
                    self._try(folder / "memory.max", str(memory_mb * 1024 * 1024))
                    self._try(folder / "memory.swap.max", "0", quiet=True)
                    self._memory, self._memory_v2 = folder, True
                if "pids" in v2_enabled and processes is not None:
                    self._try(folder / "pids.max", str(processes))
                if "cpuset" in v2_enabled and cpus:
                    self._try(folder / "cpuset.cpus", _cpu_list(cpus))
        for controller, base in support.v1.items():
            if controller in v2_enabled or (controller == "freezer" and self._freeze_file):
                continue
            if controller == "cpuacct" and self._cpu is not None:
                continue
            folder = self._make(base, name)
            if folder is None:
                continue
            if controller == "memory" and memory_mb is not None:
                limit = str(memory_mb * 1024 * 1024)
                self._try(folder / "memory.limit_in_bytes", limit)
                self._try(folder / "memory.memsw.limit_in_bytes", limit, quiet=True)
                self._memory = folder
            elif controller == "pids" and processes is not None:
                self._try(folder / "pids.max", str(processes))
            elif controller == "cpuset":
                parent = folder.parent
                cpus_text = _cpu_list(cpus) if cpus else _read(parent / "cpuset.cpus").strip()
                self._try(folder / "cpuset.cpus", cpus_text)
                self._try(folder / "cpuset.mems", _read(parent / "cpuset.mems").strip())
            elif controller == "freezer":
                self._freeze_file = folder / "freezer.state"
                self._freeze_values = (b"FROZEN", b"THAWED")
            elif controller == "cpuacct":
                self._cpu = folder / "cpuacct.usage"

    def _make(self, base: Path, name: str, enable: frozenset[str] = frozenset()) -> Path | None:
        try:
            folder = _parent(base, enable) / name
            folder.mkdir()
        except OSError as error:
            self.problems.append(f"cannot make a cgroup under {base}: {error.strerror}")
            return None
        self.folders.append(folder)
        self._procs_files.append(str(folder / "cgroup.procs").encode())
        return folder

    def _try(self, path: Path, value: str, *, quiet: bool = False) -> None:
        try:
            _write(path, value)
        except OSError as error:
            if not quiet:
                self.problems.append(f"cannot set {path.name} to {value}: {error.strerror}")

    def join_in_child(self) -> None:
        """Move the calling process into every group; runs between fork and exec, so it
        uses nothing but system calls on prepared paths."""
        for path in self._procs_files:
            try:
                descriptor = os.open(path, os.O_WRONLY)
            except OSError:
                continue
            try:
                os.write(descriptor, b"0")
            except OSError:
                pass
            finally:
                os.close(descriptor)

    def freeze(self, frozen: bool = True, *, force: bool = False) -> None:
        """Freeze (or thaw) every process of the bot; a no-op without a freezer. ``force``:
        write even if the group is believed to be in that state already."""
        if self._freeze_file is None or (frozen == self.frozen and not force):
            return
        if self._freeze_descriptor is None:
            try:
                self._freeze_descriptor = os.open(self._freeze_file, os.O_WRONLY | os.O_CLOEXEC)
            except OSError:
                self._freeze_file = None
                return
        with contextlib.suppress(OSError):
            os.write(self._freeze_descriptor, self._freeze_values[0 if frozen else 1])
            self.frozen = frozen

    @property
    def counts_cpu(self) -> bool:
        """Whether the CPU clock can run on this group: it counts the CPU time of all the
        bot's processes, and it can be frozen to read that count at rest."""
        return self._cpu is not None and self._freeze_file is not None

    def freeze_and_settle(self, timeout_s: float = 1.0) -> bool:
        """Freeze the bot and wait until every one of its processes is stopped (a freeze
        takes effect as each task next enters the kernel): after this, its CPU count holds
        still. False if the group did not report frozen within ``timeout_s``."""
        self.freeze(True)
        if self._freeze_file is None:
            return False
        if self._v2_folder is not None:
            events, wanted = self._v2_folder / "cgroup.events", b"frozen 1"
        else:
            events, wanted = self._freeze_file, b"FROZEN"
        deadline = time.monotonic() + timeout_s
        pause = 0.0
        while wanted not in self._pread(events):
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)  # the first look again at once, then yield the CPU
            pause = min(0.001, pause + 0.0001)
        return True

    def cpu_usage_us(self) -> int | None:
        """CPU time the bot and everything it started have used, in microseconds: exact
        while the group is frozen and settled, up to a scheduler tick behind while it runs."""
        if self._cpu is None:
            return None
        if self._cpu.name == "cpu.stat":
            return _value_in(self._pread(self._cpu), b"usage_usec")
        return _value_in(self._pread(self._cpu), None) // 1000

    def cpu_stall_us(self) -> int | None:
        """How long, in all, some process of the bot was ready to run but waited for a CPU
        (the ``some`` total of the v2 group's ``cpu.pressure``), if the kernel says."""
        if self._v2_folder is None:
            return None
        text = self._pread(self._v2_folder / "cpu.pressure")
        return _pressure_total(text) if text else None

    def _pread(self, path: Path) -> bytes:
        """The file's content, through a descriptor kept open (cheaper than opening it at
        every decision); empty if it cannot be read."""
        descriptor = self._descriptors.get(path)
        try:
            if descriptor is None:
                descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                self._descriptors[path] = descriptor
            return os.pread(descriptor, 4096, 0)
        except OSError:
            return b""

    def memory_exceeded(self) -> bool:
        """Whether the kernel killed a process of the bot for its memory limit."""
        if self._memory is None:
            return False
        if self._memory_v2:
            return _stat_value(self._memory / "memory.events", "oom_kill") > 0
        control = _read(self._memory / "memory.oom_control")
        if "oom_kill " in control:
            return _stat_value(self._memory / "memory.oom_control", "oom_kill") > 0
        # Kernels before 4.13 count no OOM kills: the limit was reached, at least.
        return _stat_value(self._memory / "memory.failcnt", None) > 0

    def cpu_seconds(self) -> float | None:
        """CPU time the bot and everything it started have used, if counted."""
        if self._cpu is None:
            return None
        if self._cpu.name == "cpu.stat":
            return _stat_value(self._cpu, "usage_usec") / 1e6
        return _stat_value(self._cpu, None) / 1e9

    def pids(self) -> set[int]:
        """The processes in the bot's groups."""
        found: set[int] = set()
        for folder in self.folders:
            found |= _procs(folder)
        return found

    def kill(self) -> None:
        """SIGKILL every process in the groups (thawed first: a v1-frozen task would not
        die until thawed), whatever state the referee believes it to be in."""
        self.freeze(False, force=True)
        if self._kill_file is not None:
            with contextlib.suppress(OSError):
                _write(self._kill_file, "1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the groups; idempotent."""
        for descriptor in self._descriptors.values():
            os.close(descriptor)
        self._descriptors.clear()
        if self._freeze_descriptor is not None:
            self.kill()
            os.close(self._freeze_descriptor)
            self._freeze_descriptor = None
        elif self.folders:
            self.kill()
        for folder in self.folders:
            _kill_and_remove(folder)
        self.folders = []
        self._procs_files = []


def _procs(folder: Path) -> set[int]:
    with contextlib.suppress(OSError, ValueError):
        return {int(line) for line in _read(folder / "cgroup.procs").split()}
    return set()


def _kill_and_remove(folder: Path) -> set[int]:
    """Kill the processes of a group and of any group below it, and remove them all,
    deepest first, waiting a moment for them to go; return the processes they held."""
    held: set[int] = set()
    with contextlib.suppress(OSError):
        for below, _, _ in sorted(os.walk(folder), key=lambda entry: -len(entry[0])):
            if Path(below) != folder:
                held |= _kill_and_remove_one(Path(below))
    return held | _kill_and_remove_one(folder)


def _kill_and_remove_one(folder: Path) -> set[int]:
    """Kill the processes of one group and remove it; return the processes it held."""
    held = _procs(folder)
    state = folder / "freezer.state"
    with contextlib.suppress(OSError):
        if state.exists():
            _write(state, "THAWED")
    with contextlib.suppress(OSError):
        if (folder / "cgroup.freeze").exists():
            _write(folder / "cgroup.freeze", "0")
    with contextlib.suppress(OSError):
        if (folder / "cgroup.kill").exists():
            _write(folder / "cgroup.kill", "1")  # every process at once, also those forking
    deadline = time.monotonic() + 2.0
    while True:
        for pid in _procs(folder):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.rmdir(folder)
            return held
        except FileNotFoundError:
            return held
        except OSError:
            if time.monotonic() > deadline:
                return held
            time.sleep(0.01)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _stat_value(path: Path, key: str | None) -> int:
    """A number from a cgroup file: the whole file, or the value after ``key``."""
    return _value_in(_read(path).encode(), None if key is None else key.encode())


def _value_in(text: bytes, key: bytes | None) -> int:
    """A number from a cgroup file's content: the whole of it, or the value after ``key``."""
    with contextlib.suppress(ValueError):
        if key is None:
            return int(text.strip() or 0)
        for line in text.splitlines():
            name, _, value = line.partition(b" ")
            if name == key:
                return int(value)
    return 0


def _pressure_total(text: bytes) -> int:
    """The ``total=`` microseconds of the ``some`` line of a pressure stall file."""
    for line in text.splitlines():
        if line.startswith(b"some "):
            for part in line.split():
                if part.startswith(b"total="):
                    with contextlib.suppress(ValueError):
                        return int(part[len(b"total=") :])
    return 0


def system_cpu_stall_us() -> int | None:
    """The machine's CPU pressure stall total in microseconds (``/proc/pressure/cpu``: how
    long some runnable task waited for a CPU), if the kernel keeps it."""
    try:
        with open("/proc/pressure/cpu", "rb") as pressure:
            return _pressure_total(pressure.read())
    except OSError:
        return None


def _cpu_list(cpus: set[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))
