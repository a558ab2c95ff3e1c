"""Taking in a stranger's files: real folders, tar and zip archives, each hostile entry
refused by name, nothing written outside the destination, the limits counted as bytes
arrive."""

from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from tournaments.errors import UploadError
from tournaments.uploads import (
    UploadLimits,
    copy_folder,
    unpack_archive,
    unpack_tar_stream,
)

LIMITS = UploadLimits(max_bytes=1 << 20, max_files=50)


def tar_of(path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def entry(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = mode
    return info


def test_a_folder_is_copied_with_its_links_inside_and_exec_bits_only(tmp_path: Path) -> None:
    source = tmp_path / "bot"
    (source / "lib").mkdir(parents=True)
    (source / "lib" / "data.txt").write_text("data")
    (source / "run").write_text("#!/bin/sh\n")
    (source / "run").chmod(0o4775)  # set-uid and group-writable: neither is kept
    (source / "link").symlink_to("lib/data.txt")
    (source / "lib" / "up").symlink_to("..")
    copied = copy_folder(source, tmp_path / "copy", LIMITS)
    assert (copied.files, copied.entries, copied.bytes) == (2, 5, 14)
    assert stat.S_IMODE((tmp_path / "copy" / "run").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "copy" / "lib" / "data.txt").stat().st_mode) == 0o644
    assert os.readlink(tmp_path / "copy" / "link") == "lib/data.txt"
    assert (tmp_path / "copy" / "lib" / "up" / "link").read_text() == "data"


@pytest.mark.parametrize(
    ("target", "why"),
    [("/etc/passwd", "a link out of the submission (to /etc/passwd)"), ("../../x", "a link out")],
)
def test_a_folder_with_a_link_out_is_refused(tmp_path: Path, target: str, why: str) -> None:
    source = tmp_path / "bot"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "escape").symlink_to(target)
    with pytest.raises(UploadError, match=re.escape(f"'sub/escape': {why}")):
        copy_folder(source, tmp_path / "copy", LIMITS)
    assert not (tmp_path / "copy").exists()


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "bot"
    source.mkdir()
    os.mkfifo(source / "pipe")
    with pytest.raises(UploadError, match="'pipe': a FIFO: only files, folders and links"):
        copy_folder(source, tmp_path / "copy", LIMITS)


def test_limits_count_bytes_and_files(tmp_path: Path) -> None:
    source = tmp_path / "bot"
    source.mkdir()
    (source / "big").write_bytes(b"x" * 2048)
    refusal = r": 2\.0 KiB of files .*, more than the league's limit of 1\.0 KiB; the largest: big"
    with pytest.raises(UploadError, match=refusal):
        copy_folder(source, tmp_path / "a", UploadLimits(max_bytes=1024, max_files=10))
    for number in range(3):
        (source / f"f{number}").write_text("")
    with pytest.raises(UploadError, match="more than 3 files and folders"):
        copy_folder(source, tmp_path / "b", UploadLimits(max_bytes=1 << 20, max_files=3))


@pytest.mark.parametrize(
    ("member", "why"),
    [
        (entry("../evil.txt"), "'../evil.txt': a path with '..'"),
        (entry("bot/../../evil.txt"), "a path with '..'"),
        (entry("/tmp/evil.txt"), "'/tmp/evil.txt': an absolute path"),
        (entry("out", tarfile.SYMTYPE, "/etc/passwd"), "'out': a link out of the submission"),
        (entry("a/out", tarfile.SYMTYPE, "../../x"), "'a/out': a link out of the submission"),
        (entry("dev", tarfile.CHRTYPE), "'dev': a device: only files, folders and links"),
        (entry("pipe", tarfile.FIFOTYPE), "'pipe': a FIFO"),
        (entry("hard", tarfile.LNKTYPE, "/etc/passwd"), "'hard': a hard link to '/etc/passwd'"),
    ],
)
def test_a_hostile_tar_entry_is_refused(tmp_path: Path, member: tarfile.TarInfo, why: str) -> None:
    data = b"x" if member.type == tarfile.REGTYPE else None
    archive = tar_of(tmp_path / "bot.tar.gz", (entry("ok.txt"), b"fine"), (member, data))
    with pytest.raises(UploadError, match=re.escape(why)):
        unpack_archive(archive, tmp_path / "out" / "files", LIMITS)
    assert not (tmp_path / "out" / "files").exists()
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["bot.tar.gz", "out"]


def test_a_chain_of_links_that_leads_out_is_refused(tmp_path: Path) -> None:
    # Each link looks inside on its own; followed, d1/d2/x leaves: y is z, and z/.. is above.
    archive = tar_of(
        tmp_path / "bot.tar.gz",
        (entry("z", tarfile.DIRTYPE), None),
        (entry("d1/d2/y", tarfile.SYMTYPE, "../../z"), None),
        (entry("d1/d2/x", tarfile.SYMTYPE, "y/../../.."), None),
    )
    with pytest.raises(UploadError, match=r"'d1/d2/x': a link out of the submission .*via links"):
        unpack_archive(archive, tmp_path / "files", LIMITS)


def test_writing_through_a_link_is_refused(tmp_path: Path) -> None:
    archive = tar_of(
        tmp_path / "bot.tar.gz",
        (entry("sub", tarfile.DIRTYPE), None),
        (entry("alias", tarfile.SYMTYPE, "sub"), None),
        (entry("alias/file"), b"x"),
    )
    with pytest.raises(UploadError, match="'alias/file': written through the link 'alias'"):
        unpack_archive(archive, tmp_path / "files", LIMITS)


def test_an_entry_given_twice_is_refused(tmp_path: Path) -> None:
    archive = tar_of(tmp_path / "bot.tar.gz", (entry("a"), b"1"), (entry("./a"), b"2"))
    with pytest.raises(UploadError, match="'a': given twice"):
        unpack_archive(archive, tmp_path / "files", LIMITS)


def test_a_tar_hard_link_to_one_of_its_files_is_a_copy(tmp_path: Path) -> None:
    archive = tar_of(
        tmp_path / "bot.tar.gz",
        (entry("run", mode=0o6755), b"#!/bin/sh\n"),
        (entry("again", tarfile.LNKTYPE, "run"), None),
    )
    unpacked = unpack_archive(archive, tmp_path / "files", LIMITS)
    assert (unpacked.files, unpacked.entries) == (2, 2)
    again = tmp_path / "files" / "again"
    assert again.read_text() == "#!/bin/sh\n"
    assert again.stat().st_ino != (tmp_path / "files" / "run").stat().st_ino
    assert stat.S_IMODE((tmp_path / "files" / "run").stat().st_mode) == 0o755


def test_an_archive_that_lies_about_its_size_stops_at_the_limit(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = entry("big")
        info.size = 3 << 20
        archive.addfile(info, io.BytesIO(b"\0" * (3 << 20)))
    buffer.seek(0)
    with pytest.raises(UploadError, match=r"3\.0 MiB of files .* the largest: big \(3\.0 MiB\)"):
        unpack_tar_stream(buffer, tmp_path / "files", LIMITS, "the stream")
    assert not (tmp_path / "files").exists()


def test_an_archive_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "bot.tar.gz"
    path.write_bytes(os.urandom(2048))
    with pytest.raises(UploadError, match=r"the archive is 2\.0 KiB; the league takes at most"):
        unpack_archive(path, tmp_path / "files", UploadLimits(max_bytes=1024, max_files=5))


def test_damaged_archives(tmp_path: Path) -> None:
    for name in ("bot.tar.gz", "bot.zip"):
        (tmp_path / name).write_bytes(b"this is no archive")
        with pytest.raises(UploadError, match=r"not a (tar|zip) archive"):
            unpack_archive(tmp_path / name, tmp_path / "files", LIMITS)


def zip_of(path: Path, *members: tuple[zipfile.ZipInfo, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in members:
            archive.writestr(info, data)
    return path


def zip_entry(name: str, mode: int = stat.S_IFREG | 0o644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    return info


def test_a_zip_with_folders_executables_and_a_link_inside(tmp_path: Path) -> None:
    archive = zip_of(
        tmp_path / "bot.zip",
        (zip_entry("bot/"), b""),
        (zip_entry("bot/run", stat.S_IFREG | 0o755), b"#!/bin/sh\n"),
        (zip_entry("bot/start", stat.S_IFLNK | 0o777), b"run"),
    )
    unpack_archive(archive, tmp_path / "files", LIMITS)
    assert os.access(tmp_path / "files" / "bot" / "run", os.X_OK)
    assert os.readlink(tmp_path / "files" / "bot" / "start") == "run"


@pytest.mark.parametrize(
    ("info", "data", "why"),
    [
        (zip_entry("../evil.txt"), b"x", "'../evil.txt': a path with '..'"),
        (zip_entry("/evil.txt"), b"x", "an absolute path"),
        (zip_entry("a\\..\\evil.txt"), b"x", "a path with a NUL or a backslash"),
        (zip_entry("out", stat.S_IFLNK | 0o777), b"/etc", "'out': a link out"),
    ],
)
def test_a_hostile_zip_entry_is_refused(
    tmp_path: Path, info: zipfile.ZipInfo, data: bytes, why: str
) -> None:
    archive = zip_of(tmp_path / "bot.zip", (zip_entry("ok"), b"fine"), (info, data))
    with pytest.raises(UploadError, match=re.escape(why)):
        unpack_archive(archive, tmp_path / "out" / "files", LIMITS)
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["bot.zip", "out"]


def test_hard_links_count_once_in_a_folder(tmp_path: Path) -> None:
    """A folder holds a hard-linked file's bytes once (cargo's target/ links every crate it
    builds): 600 KiB under three names fits a limit of 1 MiB."""
    source = tmp_path / "bot"
    source.mkdir()
    (source / "lib.rlib").write_bytes(b"x" * (600 << 10))
    os.link(source / "lib.rlib", source / "deps.rlib")
    os.link(source / "lib.rlib", source / "again.rlib")
    unpacked = copy_folder(source, tmp_path / "copy", LIMITS)
    assert (unpacked.files, unpacked.bytes) == (3, 600 << 10)
    assert (tmp_path / "copy" / "again.rlib").read_bytes() == b"x" * (600 << 10)


def test_hard_links_count_once_in_a_build_s_tar_stream(tmp_path: Path) -> None:
    """What run_build streams: GNU tar of a folder with hard links (members of type LNKTYPE)."""
    folder = tmp_path / "built"
    folder.mkdir()
    (folder / "lib.rlib").write_bytes(os.urandom(600 << 10))
    os.link(folder / "lib.rlib", folder / "deps.rlib")
    packed = subprocess.run(
        ["tar", "--create", "--file=-", "--format=pax", "--sort=name", "."],
        cwd=folder,
        capture_output=True,
        check=True,
    ).stdout
    unpacked = unpack_tar_stream(io.BytesIO(packed), tmp_path / "files", LIMITS, "the stream")
    assert (unpacked.files, unpacked.bytes) == (2, 600 << 10)
    assert (tmp_path / "files" / "lib.rlib").read_bytes() == (folder / "lib.rlib").read_bytes()


def test_a_refusal_for_size_says_the_measured_size_and_the_largest_files(tmp_path: Path) -> None:
    source = tmp_path / "bot"
    (source / "target" / "release").mkdir(parents=True)
    (source / "target" / "release" / "bot").write_bytes(b"x" * (700 << 10))
    (source / "target" / "release" / "deps.rlib").write_bytes(b"x" * (500 << 10))
    os.link(source / "target" / "release" / "deps.rlib", source / "target" / "linked.rlib")
    (source / "src.rs").write_bytes(b"x" * (10 << 10))
    with pytest.raises(UploadError) as refused:
        copy_folder(source, tmp_path / "copy", LIMITS)
    assert str(refused.value) == (
        f"{source}: 1.2 MiB of files (each counted once, however many hard links name it), "
        "more than the league's limit of 1.0 MiB; the largest: target/release/bot (700.0 KiB), "
        "target/linked.rlib (500.0 KiB), src.rs (10.0 KiB)"
    )
    assert not (tmp_path / "copy").exists()
