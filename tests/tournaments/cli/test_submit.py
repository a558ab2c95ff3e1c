"""``aegis-ref submit`` with real submissions: good bots in Python, JavaScript and C, each
built by its own build step in a real bubblewrap sandbox and checked by check-bot's
checklist; and the rejections, each with its reason: a bad manifest, a failing build, a
build that tries the network or writes outside its folder, a bot that fails the check, an
archive with a path or a link out of it, a version submitted twice, a bot over the
league's limits."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from referee.sandbox import bubblewrap_problem
from tests.sample_bots.language_bots import c_toolchain_missing, skip_unless_ci
from tests.tournaments.cli.helpers import invoke
from tests.tournaments.helpers import RAWBOT
from tests.tournaments.submission_helpers import (
    SAMPLE_BOTS,
    c_bot,
    js_bot,
    manifest,
    python_bot,
    status,
    write_league,
)

pytestmark = pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"submissions need bubblewrap: {bubblewrap_problem()}",
)


@pytest.fixture(scope="module")
def league(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One league for the module's submissions (each test submits its own names)."""
    return write_league(tmp_path_factory.mktemp("league") / "league", max_upload_mb=100)


def submit(path: Path, league: Path, *arguments: str) -> tuple[int, str]:
    result = invoke("submit", path, "--league", league, *arguments)
    return result.exit_code, result.output


def tar_gz(folder: Path, archive: Path, top: str) -> Path:
    with tarfile.open(archive, "w:gz") as stream:
        stream.add(folder, arcname=top)
    return archive


def zipped(folder: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w") as stream:
        for path in sorted(folder.rglob("*")):
            info = zipfile.ZipInfo(str(path.relative_to(folder)))
            info.external_attr = (path.stat().st_mode & 0xFFFF) << 16
            stream.writestr(info, path.read_bytes())
    return archive


def test_a_python_bot_archived_in_a_folder_is_built_checked_and_accepted(
    league: Path, tmp_path: Path
) -> None:
    bot = python_bot(tmp_path / "py-bot", "py-bot")
    code, output = submit(tar_gz(bot, tmp_path / "py-bot-1.0.tar.gz", "py-bot"), league)
    assert code == 0, output
    assert "Received py-bot 1.0 (3 files" in output
    assert "Built in" in output
    assert "PASS several_matches" in output
    assert "Accepted py-bot 1.0 (Python, by Tess Tester)" in output
    assert "py-bot@1.0 plays in the league from its next round." in output
    stored = league / "submissions" / "py-bot" / "1.0"
    assert status(league, "py-bot", "1.0")["state"] == "accepted"
    assert any((stored / "bot" / "__pycache__").iterdir())  # its build's work
    assert not (stored / "source" / "__pycache__").exists()  # the submission never changes
    assert json.loads((stored / "check.json").read_text())["passed"] is True


def test_a_c_bot_is_compiled_by_its_build_in_the_sandbox(league: Path, tmp_path: Path) -> None:
    missing = c_toolchain_missing()
    if missing:
        skip_unless_ci(missing)
    bot = c_bot(tmp_path / "c-bot", "c-bot")
    code, output = submit(zipped(bot, tmp_path / "c-bot.zip"), league)
    assert code == 0, output
    assert "Building c-bot 1.0: make bot (sandboxed, no network" in output
    stored = league / "submissions" / "c-bot" / "1.0"
    assert os.access(stored / "bot" / "bot", os.X_OK)
    assert sorted(path.name for path in (stored / "source").iterdir()) == [
        "Makefile",
        "aegis-bot.toml",
        "bot.c",
    ]


def test_a_javascript_bot_with_its_packages_is_accepted(league: Path, tmp_path: Path) -> None:
    if shutil.which("node") is None or not (SAMPLE_BOTS / "js" / "node_modules").is_dir():
        skip_unless_ci("Node.js or the JavaScript bot's packages (npm ci) are missing")
    code, output = submit(js_bot(tmp_path / "js-bot", "js-bot"), league)
    assert code == 0, output
    assert "Accepted js-bot 1.0 (JavaScript, by Tess Tester)" in output


def test_a_bad_manifest_is_rejected_with_its_lines_and_nothing_is_stored(
    league: Path, tmp_path: Path
) -> None:
    bot = python_bot(tmp_path / "bad", "bad-manifest")
    text = (bot / "aegis-bot.toml").read_text().replace('"1.0"', "1.0")
    (bot / "aegis-bot.toml").write_text(text + "colour = 'blue'\n")
    code, output = submit(bot, league)
    assert code == 1
    assert f"Rejected {bot}:" in output
    assert f"- {bot}/aegis-bot.toml:2: version: should be a valid string, got 1.0" in output
    assert f"- {bot}/aegis-bot.toml:7: colour: unknown key" in output
    assert not (league / "submissions" / "bad-manifest").exists()


def test_a_folder_without_a_manifest_is_rejected(league: Path, tmp_path: Path) -> None:
    (tmp_path / "empty" / "src").mkdir(parents=True)
    (tmp_path / "empty" / "bot.py").write_text("")
    code, output = submit(tmp_path / "empty", league)
    assert code == 1
    assert "no aegis-bot.toml at the root of the bot's folder (found: bot.py, src)" in output


def test_a_failing_build_is_rejected_with_its_last_lines(league: Path, tmp_path: Path) -> None:
    bot = python_bot(tmp_path / "fails", "fails", build="echo compiling >&2; echo oops; exit 3")
    code, output = submit(bot, league)
    assert code == 1, output
    assert "Rejected fails 1.0:\n  - the build exited with code 3 after" in output
    assert "    | compiling\n    | oops" in output
    assert "Fix it, raise its version in aegis-bot.toml and submit it again." in output
    stored = status(league, "fails", "1.0")
    assert stored["state"] == "rejected"
    assert stored["build_tail"][-2:] == ["compiling", "oops"]
    assert not (league / "submissions" / "fails" / "1.0" / "bot").exists()
    # A submission never changes: the same version again is refused.
    code, output = submit(bot, league)
    assert code == 1
    assert "fails 1.0 was submitted already on " in output
    assert "rejected: submissions never change, so a new one needs a new version" in output


def test_a_built_folder_refused_keeps_the_build_s_last_lines_and_time(
    league: Path, tmp_path: Path
) -> None:
    """The build succeeds but what it made is refused (here, a link out of the folder):
    status.json still holds the build's last lines and how long it took."""
    build = "echo building >&2; ln -s /etc/passwd leak; echo linked"
    bot = python_bot(tmp_path / "leaky", "leaky", build=build)
    code, output = submit(bot, league)
    assert code == 1, output
    assert "its build: the built folder: 'leak': a link out of the submission" in output
    stored = status(league, "leaky", "1.0")
    assert stored["state"] == "rejected"
    assert stored["build_tail"][-2:] == ["building", "linked"]
    assert isinstance(stored["build_seconds"], float)
    assert 0 < stored["build_seconds"] < 300


NO_NETWORK = '"$AEGIS_PYTHON" -c "import socket; socket.create_connection((\'1.1.1.1\', 80), 2)"'


@pytest.mark.parametrize(
    ("build", "said"),
    [
        (NO_NETWORK, "Network is unreachable"),
        ("echo escaped > ../escaped.txt", "../escaped.txt: Read-only file system"),
        ('touch "$AEGIS_SOURCE/changed"', "changed': Read-only file system"),
        ('cp bot.py "$(dirname "$AEGIS_PYTHON")/planted"', "planted': Read-only file system"),
    ],
    ids=["network", "beside-its-folder", "its-source", "the-machine"],
)
def test_a_build_that_reaches_out_is_rejected(
    league: Path, tmp_path: Path, build: str, said: str
) -> None:
    name = f"reach-{len(list((league / 'submissions').glob('reach-*')))}"
    code, output = submit(python_bot(tmp_path / "bot", name, build=build), league)
    assert code == 1, output
    assert f"Rejected {name} 1.0:\n  - the build exited with code" in output
    assert said in output
    stored = league / "submissions" / name / "1.0"
    assert not (stored / "escaped.txt").exists()
    assert sorted(path.name for path in (stored / "source").iterdir()) == [
        "aegis-bot.toml",
        "bot.py",
        "run",
    ]
    assert not (Path(sys.executable).parent / "planted").exists()


def test_a_bot_that_fails_check_bot_is_rejected_with_the_items(
    league: Path, tmp_path: Path
) -> None:
    bot = python_bot(
        tmp_path / "illegal", "illegal", build=None, code=RAWBOT, arguments="--fault illegal"
    )
    code, output = submit(bot, league)
    assert code == 1, output
    assert "FAIL exchange_decision" in output
    assert re.search(r"- check-bot exchange_decision: .*illegal", output), output
    summary = status(league, "illegal", "1.0")["check_summary"]
    assert re.fullmatch(r"\d+ of 16 items passed; failed: exchange_decision.*", summary)


def test_a_run_program_the_build_did_not_make_is_rejected(league: Path, tmp_path: Path) -> None:
    folder = tmp_path / "norun"
    folder.mkdir()
    (folder / "aegis-bot.toml").write_text(manifest("norun", "1", run="./bot", build="true"))
    code, output = submit(folder, league)
    assert code == 1
    assert "run: ./bot does not exist in the bot's folder after its build" in output


def evil_tar(path: Path, member: tarfile.TarInfo) -> Path:
    good = manifest("evil", "1.0", run="./run").encode()
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("aegis-bot.toml")
        info.size = len(good)
        archive.addfile(info, io.BytesIO(good))
        archive.addfile(member, io.BytesIO(b"x" * member.size))
    return path


def link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def regular(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 1
    return info


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        (regular("../../escaped.txt"), "'../../escaped.txt': a path with '..'"),
        (regular("/tmp/escaped.txt"), "'/tmp/escaped.txt': an absolute path"),
        (link("passwd", "/etc/passwd"), "'passwd': a link out of the submission (to /etc/passwd)"),
        (link("up", "../.."), "'up': a link out of the submission (to ../..)"),
    ],
    ids=["dot-dot", "absolute", "link-absolute", "link-up"],
)
def test_an_archive_with_a_way_out_is_rejected(
    league: Path, tmp_path: Path, member: tarfile.TarInfo, reason: str
) -> None:
    archive = evil_tar(tmp_path / "evil.tar.gz", member)
    code, output = submit(archive, league)
    assert code == 1
    assert f"Rejected {archive}:\n  - {archive}: {reason}" in output
    assert not (league / "submissions" / "evil").exists()
    assert not list(league.parent.rglob("escaped.txt"))
    assert not list((league / "submissions" / ".incoming").iterdir())


def test_a_folder_with_a_link_out_is_rejected(league: Path, tmp_path: Path) -> None:
    bot = python_bot(tmp_path / "linked", "linked")
    (bot / "secrets").symlink_to(Path.home())
    code, output = submit(bot, league)
    assert code == 1
    assert f"'secrets': a link out of the submission (to {Path.home()})" in output


def test_limits_over_the_league_s_are_rejected(tmp_path: Path) -> None:
    small = write_league(
        tmp_path / "small",
        max_upload_mb=1,
        limits={"memory_mb": 256},
        max_limits={"memory_mb": 512},
    )
    bot = python_bot(tmp_path / "greedy-for-memory", "hungry")
    with (bot / "aegis-bot.toml").open("a") as stream:
        stream.write("\n[limits]\nmemory_mb = 4096\n")
    code, output = submit(bot, small)
    assert code == 1
    assert "aegis-bot.toml:9: limits.memory_mb: 4096 is over the league's limit of 512" in output
    big = python_bot(tmp_path / "big", "big")
    (big / "data.bin").write_bytes(os.urandom(2 << 20))
    code, output = submit(big, small)
    assert code == 1
    assert "more than the league's limit of 1.0 MiB; the largest: data.bin (2.0 MiB)" in output
    taken = python_bot(tmp_path / "house", "house")
    code, output = submit(taken, small)
    assert "name: 'house' is the name of one of the league's own bots" in output


def test_no_league_there(tmp_path: Path) -> None:
    result = invoke("submit", tmp_path, "--league", tmp_path)
    assert result.exit_code == 2
    assert "no league.yaml here: not a league's folder" in result.output


def test_queued_without_waiting_then_listed(league: Path, tmp_path: Path) -> None:
    code, output = submit(python_bot(tmp_path / "later", "later"), league, "--no-wait")
    assert code == 0, output
    assert "Queued: the league, when it runs, builds and checks it" in output
    assert status(league, "later", "1.0")["state"] == "received"
    listing = invoke("submissions", league, "--format", "json")
    assert listing.exit_code == 0, listing.output
    found = {row["player"]: row for row in json.loads(listing.output)}
    assert found["later@1.0"]["state"] == "received"
    assert found["fails@1.0"]["reasons"][0].startswith("the build exited with code 3")


def test_a_dry_run_builds_and_checks_here_and_stores_nothing(
    league: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A temporary folder of this test's own: other runs on the machine make theirs in /tmp.
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    bot = python_bot(tmp_path / "trial", "trial")
    code, output = submit(bot, league, "--dry-run")
    assert code == 0, output
    assert "Dry run of trial 1.0 (3 files, " in output
    assert f"with the settings of {league}; nothing is stored there" in output
    assert "Built in" in output
    assert "PASS several_matches" in output
    assert "Accepted trial 1.0 (Python, by Tess Tester)" in output
    assert f"A dry run: submit it with aegis-ref submit {bot} --league {league}" in output
    assert not (league / "submissions" / "trial").exists()
    assert not list(scratch_root.glob("aegis-ref-dry-run-*")), "the dry run left its scratch folder"


def test_a_dry_run_of_a_failing_build_says_why_and_keeps_its_log(
    league: Path, tmp_path: Path
) -> None:
    bot = python_bot(tmp_path / "trial-fails", "trial-fails", build="echo broken >&2; exit 4")
    code, output = submit(bot, league, "--dry-run")
    assert code == 1, output
    assert "Rejected trial-fails 1.0:\n  - the build exited with code 4 after" in output
    assert "    | broken" in output
    kept = re.search(r"its scratch store stays in (\S+) until you remove it", output)
    assert kept is not None
    scratch = Path(kept.group(1))
    try:
        log = scratch / "submissions" / "trial-fails" / "1.0" / "build.log"
        assert log.read_text().splitlines()[-1] == "broken"
    finally:
        shutil.rmtree(scratch)
    assert not (league / "submissions" / "trial-fails").exists()
