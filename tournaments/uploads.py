"""Taking in a stranger's files: a folder, a ``.tar.gz`` or ``.zip``, or the tar stream of a
build, copied into a folder of ours under limits, every entry checked first.

What is taken: regular files (with their executable bit, nothing else of their mode: no
set-uid, no group or world write), folders, and symbolic links that stay inside (relative,
and resolving inside once every entry is in place). What is refused, naming the entry:
absolute paths, ``..``, links out (absolute, or leading outside), writing through a link,
devices, FIFOs and sockets, an entry given twice, more files or bytes than the limits
allow (counted as the bytes arrive, so an archive that lies about its sizes stops there).
A hard link of a tar archive becomes a copy of the file it names, if that file is one of
the archive's. Nothing is written outside the destination folder, whatever the input.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tournaments.errors import UploadError

__all__ = [
    "Unpacked",
    "UploadLimits",
    "copy_folder",
    "is_archive",
    "unpack_archive",
    "unpack_tar_stream",
]

_CHUNK = 1 << 20
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4096
_MAX_LINK_BYTES = 4096
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """The most an upload (or a build's folder) may hold: bytes of file content, and
    entries (files, folders and links)."""

    max_bytes: int
    max_files: int


@dataclass(frozen=True, slots=True)
class Unpacked:
    """What was taken in: regular files, every entry (files, folders and links), bytes."""

    files: int
    entries: int
    bytes: int


def _size(count: int) -> str:
    return f"{count / _MIB:.1f} MiB" if count >= _MIB else f"{count / 1024:.1f} KiB"


class _TooLargeError(UploadError):
    """More bytes of files than the limit: raised by :meth:`_Intake.add_bytes` and turned
    into the refusal that names the measured size (:meth:`_Intake.too_large`)."""


#: How many of the largest files a refusal for size names.
_LARGEST_NAMED = 5


def is_archive(path: Path) -> bool:
    """True for a file named like an archive this module unpacks."""
    return path.name.lower().endswith(_ARCHIVE_SUFFIXES)


class _Intake:
    """The destination folder and the checks of every entry written into it."""

    def __init__(self, destination: Path, limits: UploadLimits, what: str) -> None:
        destination.mkdir(parents=True, exist_ok=False)
        self.root = destination
        self.limits = limits
        self.what = what
        self.entries = 0
        self.bytes = 0
        self.seen: set[str] = set()
        self.links: list[str] = []
        #: Regular files taken, by path: what a tar hard link may name.
        self.regular: set[str] = set()
        #: The bytes of each file counted, by path: the largest are named in a refusal.
        self.sizes: dict[str, int] = {}

    def refuse(self, name: str, why: str) -> UploadError:
        return UploadError(f"{self.what}: {name!r}: {why}")

    def check_name(self, raw: str) -> str | None:
        """The entry's path inside the destination, normalised; None for the root itself.
        Raises for a path that is absolute, climbs out, is not a plain relative path, or
        was given before."""
        name = self.normal(raw)
        if name is not None and name in self.seen:
            raise self.refuse(name, "given twice")
        return name

    def normal(self, raw: str) -> str | None:
        """:meth:`check_name` without the check for an entry given twice."""
        name = raw
        while name.startswith("./"):
            name = name[2:]
        name = name.rstrip("/")
        if name in ("", "."):
            return None
        if "\0" in name or "\\" in name:
            raise self.refuse(raw, "a path with a NUL or a backslash")
        if name.startswith("/"):
            raise self.refuse(raw, "an absolute path: every path must be inside the submission")
        parts = name.split("/")
        if ".." in parts:
            raise self.refuse(raw, "a path with '..': every path must stay inside the submission")
        parts = [part for part in parts if part not in ("", ".")]
        if not parts:
            return None
        name = "/".join(parts)
        if len(name.encode()) > _MAX_PATH_BYTES or any(
            len(part.encode()) > _MAX_NAME_BYTES for part in parts
        ):
            raise self.refuse(raw[:80], "a path too long")
        return name

    def count(self, name: str) -> None:
        self.seen.add(name)
        self.entries += 1
        if self.entries > self.limits.max_files:
            raise UploadError(
                f"{self.what}: more than {self.limits.max_files} files and folders, the "
                "league's limit"
            )

    def place(self, name: str) -> Path:
        """The path of a new entry, its parent folders made; refuses to go through a link."""
        path = self.root
        parts = name.split("/")
        for part in parts[:-1]:
            path = path / part
            if path.is_symlink():
                raise self.refuse(name, f"written through the link {part!r}")
            if not path.exists():
                path.mkdir()
            elif not path.is_dir():
                raise self.refuse(name, f"inside {part!r}, which is not a folder")
        path = path / parts[-1]
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise self.refuse(name, "given twice")
        return path

    def folder(self, raw: str) -> None:
        name = self.check_name(raw)
        if name is None:
            return
        path = self.place(name)
        self.count(name)
        path.mkdir(exist_ok=True)

    def file(self, raw: str, source: BinaryIO, executable: bool, *, counted: bool = True) -> None:
        """A regular file; not ``counted`` toward the size: a hard link to a file counted
        already (a folder holds its bytes once, however many names it has)."""
        name = self.check_name(raw)
        if name is None:
            raise self.refuse(raw, "a file where the submission's folder is")
        path = self.place(name)
        self.count(name)
        with path.open("xb") as stream:
            while chunk := source.read(_CHUNK):
                if counted:
                    self.add_bytes(len(chunk), name)
                stream.write(chunk)
        path.chmod(0o755 if executable else 0o644)
        self.regular.add(name)

    def add_bytes(self, count: int, name: str) -> None:
        self.bytes += count
        self.sizes[name] = self.sizes.get(name, 0) + count
        if self.bytes > self.limits.max_bytes:
            raise _TooLargeError(f"{self.what}: more than {_size(self.limits.max_bytes)} of files")

    def too_large(self, rest: Iterator[tuple[str, int]]) -> UploadError:
        """The refusal for size, once the limit is passed: the files not yet counted,
        ``rest`` (path and size, each file's bytes once), are measured too, and the refusal
        says the folder's whole size and its largest files."""
        sizes = dict(self.sizes)
        for raw, size in rest:
            name = raw
            while name.startswith("./"):
                name = name[2:]
            sizes[name] = max(size, sizes.get(name, 0))
        largest = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:_LARGEST_NAMED]
        named = ", ".join(f"{name} ({_size(size)})" for name, size in largest)
        return UploadError(
            f"{self.what}: {_size(sum(sizes.values()))} of files (each counted once, however "
            f"many hard links name it), more than the league's limit of "
            f"{_size(self.limits.max_bytes)}; the largest: {named}"
        )

    def link(self, raw: str, target: str) -> None:
        name = self.check_name(raw)
        if name is None:
            raise self.refuse(raw, "a link where the submission's folder is")
        if not target or "\0" in target or len(target.encode()) > _MAX_LINK_BYTES:
            raise self.refuse(name, "a link with an empty or overlong target")
        if target.startswith("/"):
            raise self.refuse(name, f"a link out of the submission (to {target})")
        inside = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
        if inside == ".." or inside.startswith("../"):
            raise self.refuse(name, f"a link out of the submission (to {target})")
        path = self.place(name)
        self.count(name)
        os.symlink(target, path)
        self.links.append(name)

    def hard_link(self, raw: str, target: str) -> None:
        """A tar hard link: a copy of a file the archive already gave."""
        try:
            wanted = self.normal(target)
        except UploadError:
            wanted = None
        if wanted is None or wanted not in self.regular:
            raise self.refuse(raw, f"a hard link to {target!r}, which is no file of the archive")
        source = self.root / wanted
        with source.open("rb") as stream:
            self.file(raw, stream, os.access(source, os.X_OK), counted=False)

    def finish(self) -> Unpacked:
        """Check that every link, followed to its end, stays inside."""
        root = os.path.realpath(self.root)
        for name in self.links:
            resolved = os.path.realpath(self.root / name)
            if resolved != root and not resolved.startswith(root + os.sep):
                target = os.readlink(self.root / name)
                raise self.refuse(name, f"a link out of the submission (to {target}, via links)")
        return Unpacked(len(self.regular), self.entries, self.bytes)


@contextlib.contextmanager
def _all_or_nothing(
    destination: Path,
    what: str,
    damaged: tuple[type[Exception], ...] = (),
    as_damaged: str = "a damaged archive",
    unreadable: str = "cannot unpack it",
) -> Iterator[None]:
    """Remove ``destination`` if the block fails; its ``damaged`` errors (those of a
    damaged archive) and its ``OSError`` become an :class:`UploadError` about ``what``."""
    try:
        yield
    except damaged as error:
        shutil.rmtree(destination, ignore_errors=True)
        raise UploadError(f"{what}: {as_damaged} ({error})") from None
    except OSError as error:
        shutil.rmtree(destination, ignore_errors=True)
        raise UploadError(f"{what}: {unreadable}: {error.strerror or error}") from None
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise


def copy_folder(source: Path, destination: Path, limits: UploadLimits) -> Unpacked:
    """Copy the folder ``source`` into the new folder ``destination``, checking every
    entry; links are copied as links, never followed. Raises :class:`UploadError` (and
    leaves no ``destination``) for anything refused."""
    intake = _Intake(destination, limits, str(source))
    counted: set[tuple[int, int]] = set()  # (device, inode) of the files counted: once each
    with _all_or_nothing(destination, str(source), unreadable="cannot read it"):
        entries = _walk(source)
        for relative, entry in entries:
            status = entry.stat(follow_symlinks=False)
            mode = status.st_mode
            if stat.S_ISLNK(mode):
                intake.link(relative, os.readlink(entry.path))
            elif stat.S_ISDIR(mode):
                intake.folder(relative)
            elif stat.S_ISREG(mode):
                inode = (status.st_dev, status.st_ino)
                try:
                    with open(entry.path, "rb") as stream:
                        intake.file(
                            relative, stream, bool(mode & 0o111), counted=inode not in counted
                        )
                except _TooLargeError:
                    rest = _unique_files(entries, counted | {inode})
                    raise intake.too_large(
                        itertools.chain([(relative, status.st_size)], rest)
                    ) from None
                counted.add(inode)
            else:
                raise intake.refuse(relative, f"{_kind(mode)}: only files, folders and links")
        return intake.finish()


def _unique_files(
    entries: Iterator[tuple[str, os.DirEntry[str]]], counted: set[tuple[int, int]]
) -> Iterator[tuple[str, int]]:
    """Path and size of each regular file among ``entries`` whose inode is not ``counted``."""
    for relative, entry in entries:
        status = entry.stat(follow_symlinks=False)
        inode = (status.st_dev, status.st_ino)
        if stat.S_ISREG(status.st_mode) and inode not in counted:
            counted.add(inode)
            yield relative, status.st_size


def _walk(folder: Path, prefix: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``folder`` (outer first, by name), links not followed."""
    with os.scandir(folder) as entries:
        ordered = sorted(entries, key=lambda entry: entry.name)
    for entry in ordered:
        relative = f"{prefix}{entry.name}"
        yield relative, entry
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), relative + "/")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def unpack_archive(path: Path, destination: Path, limits: UploadLimits) -> Unpacked:
    """Unpack the ``.tar.gz``, ``.tgz``, ``.tar`` or ``.zip`` file ``path`` into the new
    folder ``destination``. Raises :class:`UploadError` (and leaves no ``destination``)."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise UploadError(f"{path}: cannot read it: {error.strerror or error}") from None
    if size > limits.max_bytes:
        raise UploadError(
            f"{path}: the archive is {_size(size)}; the league takes at most "
            f"{_size(limits.max_bytes)}"
        )
    if path.name.lower().endswith(".zip"):
        return _unpack_zip(path, destination, limits)
    try:
        with tarfile.open(path, "r:*") as archive:
            return _unpack_tar(archive, destination, limits, str(path))
    except tarfile.ReadError as error:
        raise UploadError(f"{path}: not a tar archive ({error})") from None


def unpack_tar_stream(
    stream: BinaryIO, destination: Path, limits: UploadLimits, what: str
) -> Unpacked:
    """Unpack a tar stream (read once, in order) into the new folder ``destination``.
    Raises :class:`UploadError` (and leaves no ``destination``)."""
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            return _unpack_tar(archive, destination, limits, what)
    except tarfile.ReadError as error:
        raise UploadError(f"{what}: not a tar stream ({error})") from None


def _unpack_tar(
    archive: tarfile.TarFile, destination: Path, limits: UploadLimits, what: str
) -> Unpacked:
    intake = _Intake(destination, limits, what)
    with _all_or_nothing(destination, what, (tarfile.TarError, EOFError, zlib.error)):
        members = iter(archive)
        for member in members:
            if member.isdir():
                intake.folder(member.name)
            elif member.issym():
                intake.link(member.name, member.linkname)
            elif member.islnk():
                intake.hard_link(member.name, member.linkname)
            elif member.isreg():
                try:
                    if member.size > limits.max_bytes:  # refuse before reading it
                        intake.add_bytes(member.size, intake.normal(member.name) or member.name)
                    data = archive.extractfile(member)
                    assert data is not None  # a regular member always has its content
                    intake.file(member.name, data, bool(member.mode & 0o111))  # type: ignore[arg-type]
                except _TooLargeError:
                    # The rest is read for its sizes alone (a build's stream is bounded by
                    # its folder's tmpfs, an archive by its own size): what the refusal says.
                    rest = ((m.name, m.size) for m in members if m.isreg())
                    raise intake.too_large(
                        itertools.chain([(member.name, member.size)], rest)
                    ) from None
            else:
                kind = "a FIFO" if member.isfifo() else "a device" if member.isdev() else "special"
                raise intake.refuse(member.name, f"{kind}: only files, folders and links")
        return intake.finish()


def _unpack_zip(path: Path, destination: Path, limits: UploadLimits) -> Unpacked:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise UploadError(f"{path}: not a zip archive ({error})") from None
    intake = _Intake(destination, limits, str(path))
    damaged = (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError)
    with archive, _all_or_nothing(destination, str(path), damaged, "a damaged or encrypted zip"):
        for info in archive.infolist():
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                with archive.open(info) as stream:
                    target = stream.read(_MAX_LINK_BYTES + 1)
                intake.link(info.filename, target.decode("utf-8", "replace"))
            elif info.is_dir():
                intake.folder(info.filename)
            elif mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                raise intake.refuse(info.filename, f"{_kind(mode)}: only files and folders")
            else:
                try:
                    if info.file_size > limits.max_bytes:
                        intake.add_bytes(info.file_size, info.filename)
                    with archive.open(info) as stream:
                        intake.file(info.filename, stream, bool(mode & 0o111))  # type: ignore[arg-type]
                except _TooLargeError:
                    rest = archive.infolist()[archive.infolist().index(info) :]
                    files = ((item.filename, item.file_size) for item in rest if not item.is_dir())
                    raise intake.too_large(files) from None
        return intake.finish()
