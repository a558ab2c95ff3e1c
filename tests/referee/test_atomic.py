"""Atomic file writes (referee/atomic.py), on real files: the old file or the new one, never
half of one, and no temporary file left behind, whatever goes wrong while writing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

import pytest

from referee.atomic import write_atomically


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old", encoding="utf-8")
    write_atomically(target, lambda stream: stream.write("new\n"), durable=True)
    assert target.read_bytes() == b"new\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["page.html"]


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, failure: BaseException
) -> None:
    target = tmp_path / "record.jsonl"
    target.write_text("old\n", encoding="utf-8")

    def half_then_fail(stream: TextIO) -> None:
        stream.write("half of a new")
        stream.flush()
        raise failure

    with pytest.raises(type(failure)):
        write_atomically(target, half_then_fail, suffix=".jsonl.tmp")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["record.jsonl"]


def test_the_temporary_file_is_hidden_beside_the_target_with_its_suffix(tmp_path: Path) -> None:
    seen: list[str] = []

    def look(stream: TextIO) -> None:
        seen.extend(path.name for path in tmp_path.iterdir())

    write_atomically(tmp_path / "settings.json", look, suffix=".x.tmp")
    assert len(seen) == 1
    assert seen[0].startswith(".settings.json.")
    assert seen[0].endswith(".x.tmp")


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        write_atomically(tmp_path / "report.html", lambda stream: stream.write("x"))
    finally:
        os.umask(previous)
    assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o644
