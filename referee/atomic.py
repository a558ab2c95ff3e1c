"""Writing a file atomically: the one way every record, page, report and settings file is
written, so that a run that dies or a full disk leaves the old file (or none), never half a
new one.

:func:`write_atomically` writes into a temporary file beside the target (same directory,
so the rename stays on one file system), flushes it to disk, renames it over the target and,
when asked to be ``durable``, flushes the directory too, so that the rename itself survives
a crash of the machine (a record must, before its result is committed).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

__all__ = ["temporary_name", "write_atomically"]


def temporary_name(path: Path, suffix: str = ".tmp") -> Path:
    """A fresh hidden name beside ``path`` for its temporary file: ``.NAME.HEX`` + ``suffix``
    (a cleanup finds those of a run that died by their suffix)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}{suffix}")


def write_atomically(
    path: Path,
    write: Callable[[TextIO], object],
    *,
    durable: bool = False,
    suffix: str = ".tmp",
) -> None:
    """Write ``path`` with ``write`` (given the open text stream) atomically: the old file
    or the new one, never half of it. ``durable``: the directory is flushed after the rename.
    Raises ``OSError`` (a full disk, say), leaving no temporary file behind; on any other
    exception (Ctrl-C included) too."""
    while True:
        temporary = temporary_name(path, suffix)
        try:
            # O_EXCL: two writers never share a temporary file; 0o666: the umask's usual mode.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            descriptor = os.open(temporary, flags, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    if durable:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
