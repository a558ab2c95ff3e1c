"""Submitting over the network, against a real server on loopback: who may submit, what
is refused before anything is stored, what each author may see; and an author's bot
submitted from the command line, built, checked, accepted and playing."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from referee.sandbox import bubblewrap_problem
from tests.tournaments.helpers import AEGIS_REF, free_port, run_cli
from tests.tournaments.submission_helpers import manifest, python_bot, write_league
from tests.tournaments.web.serving import served, wait_until_answers
from tournaments.league.accounts import ACCOUNTS_NAME


def _author(league: Path, name: str, *options: str) -> str:
    made = run_cli("authors", "add", name, "--league", str(league), *options, cwd=league)
    assert made.returncode == 0, made.stderr
    assert "shown this once" in made.stderr
    return made.stdout.strip()


def _tar(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=folder.name)
    return buffer.getvalue()


def _hostile_tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


def _post(base: str, body: bytes, token: str | None) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{base}/api/v1/submissions", content=body, headers=headers, timeout=30)


def _stored(league: Path) -> list[str]:
    """Every submission stored: NAME/VERSION."""
    folder = league / "submissions"
    return sorted(
        f"{bot.name}/{version.name}"
        for bot in folder.iterdir()
        if bot.is_dir() and not bot.name.startswith(".")
        for version in bot.iterdir()
    )


@pytest.fixture
def league(tmp_path: Path) -> Path:
    """A league whose uploads may unpack to 1 MiB at most."""
    return write_league(tmp_path / "league", max_upload_mb=1)


@pytest.fixture
def server(league: Path) -> Iterator[str]:
    with served(league) as base:
        yield base


def test_tokens_wrong_missing_expired_or_malformed_store_nothing(
    league: Path, server: str, tmp_path: Path
) -> None:
    token = _author(league, "ada")
    expired = _author(league, "old", "--days", "0")
    body = _tar(python_bot(tmp_path / "alpha", "alpha"))
    name, _, secret = token.partition(".")
    for wrong in (
        None,
        "ada",
        f"{name}.{secret[:-2]}xx",
        f"bob.{secret}",
        f"{name}.",
        expired,
        "../../etc.passwd",
    ):
        refused = _post(server, body, wrong)
        assert refused.status_code == 401, (wrong, refused.text)
        assert secret not in refused.text
    assert _stored(league) == []
    # The accounts file holds no token.
    accounts = (league / "submissions" / ACCOUNTS_NAME).read_text()
    assert secret not in accounts
    assert _post(server, body, token).status_code == 201
    assert _stored(league) == ["alpha/1.0"]


def test_a_bot_name_belongs_to_its_first_author(league: Path, server: str, tmp_path: Path) -> None:
    ada, bob = _author(league, "ada"), _author(league, "bob")
    first = _post(server, _tar(python_bot(tmp_path / "a1", "alpha", "1.0")), ada)
    assert first.status_code == 201, first.text
    taken = _post(server, _tar(python_bot(tmp_path / "a2", "alpha", "2.0")), bob)
    assert taken.status_code == 403
    assert "belongs to another author" in taken.json()["error"]
    again = _post(server, _tar(python_bot(tmp_path / "a3", "alpha", "3.0")), ada)
    assert again.status_code == 201
    assert _stored(league) == ["alpha/1.0", "alpha/3.0"]
    # Each author sees its own submissions, with the build log and check report; another
    # author's is not found, as one that does not exist.
    mine = httpx.get(
        f"{server}/api/v1/submissions", headers={"Authorization": f"Bearer {ada}"}
    ).json()
    assert [entry["version"] for entry in mine["submissions"]] == ["1.0", "3.0"]
    status = httpx.get(
        f"{server}/api/v1/submissions/alpha/1.0", headers={"Authorization": f"Bearer {ada}"}
    )
    assert status.status_code == 200
    assert {"build_log", "check_report", "state", "logs"} <= set(status.json())
    assert status.json()["logs"] == {}  # it has not played yet
    # What the bot wrote as it played (a worker's log of it) is its author's to see.
    worker_logs = league / "results" / "logs" / "vm-1"
    worker_logs.mkdir(parents=True)
    (worker_logs / "alpha_1.0.log").write_text("alpha's stderr: <b>secret</b>\n")
    (worker_logs / "other_1.0.log").write_text("another bot's stderr\n")
    logs = httpx.get(
        f"{server}/api/v1/submissions/alpha/1.0", headers={"Authorization": f"Bearer {ada}"}
    ).json()["logs"]
    assert logs == {"vm-1": "alpha's stderr: <b>secret</b>\n"}
    for token in (bob, None):
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        other = httpx.get(f"{server}/api/v1/submissions/alpha/1.0", headers=headers)
        assert other.status_code == (404 if token else 401)
        assert "build_log" not in other.text
        assert "secret" not in other.text
    theirs = httpx.get(
        f"{server}/api/v1/submissions", headers={"Authorization": f"Bearer {bob}"}
    ).json()
    assert theirs["submissions"] == []
    # The organiser's account sees every one.
    organiser = _author(league, "org", "--organiser")
    everything = httpx.get(
        f"{server}/api/v1/submissions", headers={"Authorization": f"Bearer {organiser}"}
    ).json()
    assert [entry["version"] for entry in everything["submissions"]] == ["1.0", "3.0"]
    seen = httpx.get(
        f"{server}/api/v1/submissions/alpha/1.0", headers={"Authorization": f"Bearer {organiser}"}
    )
    assert seen.status_code == 200
    assert "build_log" in seen.json()


def test_an_upload_too_large_is_refused_as_it_arrives(league: Path, server: str) -> None:
    token = _author(league, "ada", "--max-upload-mb", "0.01")  # 10 KiB
    big = os.urandom(64 * 1024)
    declared = _post(server, big, token)
    assert declared.status_code == 413

    def trickle() -> Iterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(64):
            yield os.urandom(1024)

    streamed = httpx.post(
        f"{server}/api/v1/submissions",
        content=trickle(),
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert streamed.status_code == 413
    assert _stored(league) == []
    assert list((league / "submissions" / ".uploads").iterdir()) == []


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([(_member("../evil.txt"), b"x")], "a path with '..'"),
        ([(_member("bot/out", tarfile.SYMTYPE, "/etc/passwd"), None)], "a link out"),
        ([(_member("bot/out", tarfile.SYMTYPE, "../../x"), None)], "a link out"),
        # A bomb: 4 MiB of zeros, a few KiB packed, past the league's 1 MiB.
        ([(_member("bot/zeros"), bytes(4 << 20))], "more than"),
    ],
)
def test_hostile_archives_are_refused_over_http(
    league: Path,
    server: str,
    members: list[tuple[tarfile.TarInfo, bytes | None]],
    why: str,
) -> None:
    token = _author(league, "ada")
    manifest_text = manifest("evil", "1.0", run="./run").encode()
    body = _hostile_tar((_member("bot/aegis-bot.toml"), manifest_text), *members)
    refused = _post(server, body, token)
    assert refused.status_code == 422, refused.text
    assert any(why in reason for reason in refused.json()["reasons"]), refused.text
    assert _stored(league) == []
    assert not (league.parent / "evil.txt").exists()


def test_a_flood_past_the_daily_limit_is_refused(league: Path, server: str, tmp_path: Path) -> None:
    token = _author(league, "ada", "--per-day", "2")
    answers = [
        _post(server, _tar(python_bot(tmp_path / f"v{n}", "alpha", f"{n}.0")), token).status_code
        for n in range(1, 6)
    ]
    assert answers == [201, 201, 429, 429, 429]
    assert _stored(league) == ["alpha/1.0", "alpha/2.0"]


def test_an_author_name_is_a_name(league: Path) -> None:
    refused = run_cli(
        "authors", "add", "<script>alert(1)</script>", "--league", str(league), cwd=league
    )
    assert refused.returncode == 2
    assert "author name" in refused.stderr
    assert not (league / "submissions" / ACCOUNTS_NAME).exists()


@pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"a league needs bubblewrap: {bubblewrap_problem()}",
)
def test_an_author_submits_from_the_command_line_and_the_bot_plays(tmp_path: Path) -> None:
    """The league runs with --serve; the author's submit is built, checked, accepted and
    plays, as a local submission would."""
    league = write_league(tmp_path / "league")
    token = _author(league, "ada")
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    port = free_port()
    address = f"127.0.0.1:{port}"
    base = f"http://{address}"
    log = tmp_path / "league.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(AEGIS_REF), "league", str(league), "--poll", "0.2", "--serve", address],
            stdout=output,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
    try:
        wait_until_answers(base)
        bot = python_bot(tmp_path / "alpha", "alpha")
        submitted = run_cli(
            "submit", str(bot), "--server", base, "--token-file", str(token_file),
            cwd=tmp_path, timeout=180,
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr + log.read_text()
        assert "Accepted alpha 1.0" in submitted.stdout
        assert "alpha@1.0 plays in the league" in submitted.stdout
        deadline = time.monotonic() + 90
        while True:
            standings = httpx.get(f"{base}/api/v1/standings", timeout=10).json()
            played = {bot["name"]: bot["matches"] for bot in standings["bots"]}
            if played.get("alpha@1.0", 0) > 0:
                break
            assert time.monotonic() < deadline, (standings, log.read_text())
            time.sleep(0.2)
        status = httpx.get(
            f"{base}/api/v1/submissions/alpha/1.0", headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert status["state"] == "accepted"
        assert status["check_report"]["passed"] is True, status["check_report"]
        # Its logs of the matches it played, for its author alone.
        assert status["logs"], status
        other = _author(league, "bob")
        refused = httpx.get(
            f"{base}/api/v1/submissions/alpha/1.0", headers={"Authorization": f"Bearer {other}"}
        )
        assert refused.status_code == 404
        assert "logs" not in refused.text
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/submissions/..%2F..%2Fleague.yaml/x",
        "/api/v1/submissions/alpha/..%2F..%2F..%2Fleague.yaml",
        "/api/v1/submissions/alpha/1.0%2F..%2F..%2F.authors.json",
        "/api/v1/submissions/.authors.json/x",
        "/api/v1/submissions/%2E%2E/%2E%2E",
    ],
)
def test_path_traversal_in_a_submission_s_path_finds_nothing(
    league: Path, server: str, tmp_path: Path, path: str
) -> None:
    token = _author(league, "ada")
    assert _post(server, _tar(python_bot(tmp_path / "alpha", "alpha")), token).status_code == 201
    found = httpx.get(server + path, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert found.status_code == 404, found.text
    assert "hash" not in found.text
    assert "submissions:" not in found.text
