"""The JSON API and the pages of ``aegis-ref serve``, over real HTTP, on a real
tournament's output (whose names and bot output would break a page that did not escape
them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.tournaments.played import BOTS, CRASHER_OUTPUT, MATCHES, NAME
from tests.tournaments.web.serving import served, wait_for_version
from tournaments.report.formats import standings_json
from tournaments.stats.standings import load_standings
from tournaments.store.database import open_store, read_meta, stored_matches
from tournaments.web.app import PAGE_POLICY


@pytest.fixture(scope="module")
def server(tournament_output: Path) -> Iterator[str]:
    """The server of the played tournament's output."""
    with served(tournament_output) as base:
        wait_for_version(base)
        yield base


def _get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=10)


def test_the_standings_are_those_of_the_terminal_and_the_report(
    server: str, tournament_output: Path
) -> None:
    connection = open_store(tournament_output, read_only=True)
    try:
        expected = standings_json(load_standings(connection))
    finally:
        connection.close()
    document = _get(f"{server}/api/v1/standings").json()
    assert document["api"] == 1
    assert document["version"] >= 1
    assert document["matches_to_play"] == 0
    assert {key: document[key] for key in expected} == expected
    assert document["tournament"] == NAME
    # The crasher's forfeits make the standings' warnings (the certification lines).
    assert document["warnings"] == expected["warnings"]


def test_nothing_secret_is_served(server: str, tournament_output: Path) -> None:
    connection = open_store(tournament_output, read_only=True)
    try:
        meta = read_meta(connection)
    finally:
        connection.close()
    assert meta is not None
    for path in ("standings", "bots", "matches", "progression", "bots/alpha"):
        text = _get(f"{server}/api/v1/{path}").text
        assert "seed" not in text
        assert meta.config_hash not in text
        assert "rawbot.py" not in text  # the bots' command lines
        assert "AEGIS_TEST_MARKER" not in text


def test_bots_and_a_bots_page(server: str) -> None:
    bots = _get(f"{server}/api/v1/bots").json()["bots"]
    assert sorted(bot["name"] for bot in bots) == sorted(BOTS)
    assert all(bot["page"] == f"/bots/{bot['name']}" for bot in bots)
    crasher = _get(f"{server}/api/v1/bots/crasher").json()
    assert [version["player"] for version in crasher["versions"]] == ["crasher"]
    assert {row["opponent"] for row in crasher["opponents"]} == {"alpha", "rnd"}
    assert sum(row["wins"] + row["losses"] for row in crasher["opponents"]) == 4
    assert crasher["faults"], "the crasher's faults are listed"
    fault = crasher["faults"][0]
    assert fault["kind"] == "crash"
    assert "crash" in fault["explanation"]
    assert fault["replay"].startswith("/replay/")
    (times,) = crasher["times"]
    assert times["faults_by_kind"]["crash"] == len(crasher["faults"])
    assert len(crasher["matches"]) == 4
    alpha = _get(f"{server}/api/v1/bots/alpha").json()
    assert alpha["times"][0]["decisions"] > 0
    assert alpha["times"][0]["mean_ms"] > 0
    page = _get(f"{server}/bots/crasher")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


def test_matches_link_their_replays_and_records(server: str, tournament_output: Path) -> None:
    document = _get(f"{server}/api/v1/matches").json()
    assert document["matches_played"] == MATCHES
    connection = open_store(tournament_output, read_only=True)
    try:
        stored = {match.match_id: match for match in stored_matches(connection)}
    finally:
        connection.close()
    assert {match["match_id"] for match in document["recent"]} == set(stored)
    for match in document["recent"]:
        assert match["replay"] == "/replay/" + quote(match["match_id"], safe="")
        replay = _get(server + match["replay"])
        assert replay.status_code == 200
        assert "script-src 'sha256-" in replay.headers["content-security-policy"]
        assert "<script>alert" not in replay.text
        record = _get(server + match["record"])
        assert record.status_code == 200
        path = tournament_output / stored[match["match_id"]].record_path
        assert record.content == path.read_bytes()
        one = _get(f"{server}/api/v1/matches/{quote(match['match_id'], safe='')}").json()
        assert one["seats"] == match["seats"]
        assert one["winner"] == match["winner"]


def test_hostile_names_and_output_stay_data(server: str) -> None:
    """The tournament's name holds a script and the crasher's output holds markup: the
    JSON carries them as strings, and no page is built from them on the server."""
    standings = _get(f"{server}/api/v1/standings")
    assert json.loads(standings.text)["tournament"] == NAME
    for path in ("/", "/matches", "/bots/crasher"):
        page = _get(server + path)
        assert NAME not in page.text
        assert CRASHER_OUTPUT not in page.text
        assert page.headers["content-security-policy"] == PAGE_POLICY
        assert page.headers["x-content-type-options"] == "nosniff"


def test_a_client_that_has_the_document_gets_304(server: str) -> None:
    first = _get(f"{server}/api/v1/standings")
    again = httpx.get(
        f"{server}/api/v1/standings", headers={"If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.content == b""


def test_the_progression_ends_at_the_standings(server: str) -> None:
    progression = _get(f"{server}/api/v1/progression").json()
    standings = _get(f"{server}/api/v1/standings").json()
    assert progression["points"][-1]["matches"] == MATCHES
    last = progression["points"][-1]["elo"]
    for bot in standings["bots"]:
        assert last[bot["name"]] == pytest.approx(bot["elo"], abs=0.11)


#: Every URL parameter, with what tries to leave the run's folder or the package's files.
TRAVERSALS = [
    "/bots/..%2F..%2F..%2Fetc%2Fpasswd",
    "/bots/%2E%2E",
    "/replay/..%2F..%2Fresults.sqlite",
    "/replay/r0001-alpha+crasher%2F..%2F..%2Fresults.sqlite",
    "/static/..%2Fapp.py",
    "/static/%2E%2E%2F%2E%2E%2Fstore.py",
    "/static//etc/passwd",
    "/api/v1/bots/..%2F..%2Fetc%2Fpasswd",
    "/api/v1/bots/%00",
    "/api/v1/matches/..%2F..%2Fresults.sqlite",
    "/api/v1/matches/..%2F..%2Fresults.sqlite/record",
    "/api/v1/matches/%2Fetc%2Fpasswd/record",
    "/api/v1/matches/r0001-a+b%2F..%2F..%2F..%2Fetc%2Fpasswd/record",
    "/../../etc/passwd",
    "/api/v1/../../results.sqlite",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_path_traversal_in_any_parameter_finds_nothing(server: str, path: str) -> None:
    response = httpx.get(server + path, timeout=10)
    assert response.status_code == 404, response.text[:200]
    assert b"root:" not in response.content
    assert b"SQLite format" not in response.content
    assert b"import" not in response.content


def test_the_event_stream_is_guarded_and_carries_the_live_document(server: str) -> None:
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", f"{server}/api/v1/events") as stream,
    ):
        assert stream.status_code == 200
        assert stream.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert stream.headers["cache-control"] == "no-store"
        assert stream.headers["content-security-policy"] == PAGE_POLICY
        assert stream.headers["x-content-type-options"] == "nosniff"
        lines = stream.iter_lines()
        assert next(lines) == "event: update"
        data = next(lines)
    assert data.startswith("data: ")
    update = json.loads(data.removeprefix("data: "))
    standings = _get(f"{server}/api/v1/standings").json()
    assert update["version"] == standings["version"]
    assert update["standings"]["matches_played"] == standings["matches_played"]
    assert update["report"] is None
    assert len(update["recent"]) == min(10, MATCHES)
    # Only GET opens a stream.
    refused = httpx.post(f"{server}/api/v1/events", timeout=10)
    assert refused.status_code == 405
