"""Record files on disk: write one atomically, read one back and verify it, find them in
folders.

The format is :mod:`referee.records`' business; this module only moves its lines to and from
files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from referee.atomic import write_atomically
from referee.records import VerifyReport, verify_lines

__all__ = ["RECORD_SUFFIX", "find_records", "verify_file", "write_record"]

#: The suffix of a record file; a folder's records are its files with it.
RECORD_SUFFIX = ".jsonl"


def write_record(path: Path, lines: Iterable[str]) -> None:
    """Write record lines to ``path`` atomically and durably
    (:func:`referee.atomic.write_atomically`).

    An interrupted or failed run leaves the old file (or none), never half a record. A path
    that is not a regular file (``/dev/stdout``, a pipe) is written to directly; through a
    symbolic link, the file it points to is replaced and the link kept.
    """
    try:
        mode = os.stat(path).st_mode  # follows links
    except FileNotFoundError:
        mode = stat.S_IFREG  # a new file
    if not stat.S_ISREG(mode):
        # Renaming over a device or a pipe would replace it with a plain file.
        with path.open("w", encoding="utf-8", newline="\n") as stream:
            _write_lines(stream, lines)
        return
    target = Path(os.path.realpath(path))
    # The .jsonl.tmp suffix is in .gitignore.
    write_atomically(
        target, lambda stream: _write_lines(stream, lines), durable=True, suffix=".jsonl.tmp"
    )


def _write_lines(stream: TextIO, lines: Iterable[str]) -> None:
    for line in lines:
        stream.write(line)
        stream.write("\n")


def verify_file(path: Path) -> VerifyReport:
    """Verify the record in ``path``; raise ``OSError`` if it cannot be read."""
    with path.open("rb") as stream:
        return verify_lines(enumerate(stream, 1))


def find_records(paths: Iterable[Path]) -> list[Path]:
    """The record files that ``paths`` name: a folder's ``*.jsonl`` files at any depth,
    sorted (hidden files and folders skipped: a writer's temporaries), and any other path as
    given (reading it says whether it is one).

    Each file is listed once, in the order of ``paths``. Raises ``FileNotFoundError`` for a
    folder that holds no record.
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        inside = [path]
        if path.is_dir():
            inside = sorted(
                candidate
                for candidate in path.rglob(f"*{RECORD_SUFFIX}")
                if candidate.is_file()
                and not any(part.startswith(".") for part in candidate.relative_to(path).parts)
            )
            if not inside:
                raise FileNotFoundError(f"{path}: no record (*{RECORD_SUFFIX} file) in this folder")
        for candidate in inside:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return found
