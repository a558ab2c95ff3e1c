"""The HTML report and the live pages link each other: ``aegis-ref report --live URL``
names the live pages in the report, and ``aegis-ref serve`` serves the folder's report at
``/report`` (linked from the pages once it exists, with its replay and record links leading
to the server's own), never one that shows the master seed. A real report, the real server,
a real HTTP client and a real headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote, unquote

import httpx

from tests.tournaments.chromium import devtools_page, require_chromium
from tests.tournaments.helpers import AEGIS_REF
from tests.tournaments.web.serving import served, wait_for_version
from tournaments.report.html_report import report_page_policy


def _report(output: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AEGIS_REF), "report", str(output), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _copy(tournament_output: Path, tmp_path: Path) -> Path:
    """The played tournament's output, of this test alone (a report is written in it)."""
    output = tmp_path / "out"
    shutil.copytree(tournament_output, output)
    (output / "report.html").unlink(missing_ok=True)
    return output


def test_the_report_names_the_live_pages(tournament_output: Path, tmp_path: Path) -> None:
    output = _copy(tournament_output, tmp_path)
    hostile = _report(output, "--live", "javascript:alert(1)")
    assert hostile.returncode == 2
    assert "--live: 'javascript:alert(1)': give an http:// or https:// address" in hostile.stderr
    assert not (output / "report.html").exists()
    made = _report(output, "--live", "https://league.example.org/?a=1&b=<2>")
    assert made.returncode == 0, made.stderr
    page = (output / "report.html").read_text()
    address = "https://league.example.org/?a=1&amp;b=&lt;2&gt;"
    assert f'<p class="meta" id="live">Live: <a href="{address}">{address}</a>' in page
    plain = _report(output)
    assert plain.returncode == 0, plain.stderr
    assert 'id="live"' not in (output / "report.html").read_text()


def test_the_served_site_serves_and_links_the_report(
    tournament_output: Path, tmp_path: Path
) -> None:
    require_chromium()
    output = _copy(tournament_output, tmp_path)
    with served(output) as base, devtools_page(tmp_path / "profile") as page:
        wait_for_version(base)
        assert httpx.get(base + "/report", timeout=5).status_code == 404
        page.open(base + "/")
        page.wait_until("document.body.dataset.version !== undefined", timeout=20)
        assert page.evaluate("document.getElementById('report-link').hidden") is True
        # The organiser writes the report while the page is open: the link shows, live.
        made = _report(output, "--live", base + "/")
        assert made.returncode == 0, made.stderr
        page.wait_until("!document.getElementById('report-link').hidden", timeout=20)
        answer = httpx.get(base + "/report", timeout=5)
        assert answer.status_code == 200
        assert answer.content == (output / "report.html").read_bytes()
        policy = answer.headers["content-security-policy"]
        assert policy == f"{report_page_policy()}; frame-ancestors 'none'"
        assert f'<a href="{base}/">' in answer.text
        # The report in the browser: its script runs under the policy, nothing outside.
        page.click("#report-link")
        page.wait_until("location.pathname === '/report'", timeout=20)
        page.wait_until("document.querySelector('#standings') !== null", timeout=20)
        replay = page.evaluate("document.querySelector('a[href^=\"replays/\"]').href")
        found = re.fullmatch(re.escape(base) + r"/replays/match-(.+)\.html(#.*)?", replay)
        assert found is not None, replay
        match_id = unquote(found[1])
        # Its replay link leads to the server's replay page of that match.
        page.open(replay)
        page.wait_until(f"location.pathname === '/replay/{quote(match_id, safe='')}'", timeout=20)
        assert page.problems() == []
        assert [url for url in page.requested() if not url.startswith(base + "/")] == []
        # Its record link leads to the match's record.
        record = httpx.get(
            f"{base}/records/match-{quote(match_id, safe='')}.jsonl",
            timeout=5,
            follow_redirects=True,
        )
        assert record.status_code == 200
        assert record.content == (output / "records" / f"match-{match_id}.jsonl").read_bytes()
        # Names that are not a match's lead nowhere.
        for path in (
            "/replays/..%2Fresults.sqlite",
            "/replays/match-..%2F..%2Fconfig.html",
            "/records/match-r1-a%2F..+b.jsonl",
            "/records/results.sqlite",
        ):
            assert httpx.get(base + path, timeout=5).status_code == 404, path
        # A report that shows the master seed is not published.
        shown = _report(output, "--show-seed")
        assert shown.returncode == 0, shown.stderr
        assert httpx.get(base + "/report", timeout=5).status_code == 404
        page.open(base + "/")
        page.wait_until("document.body && document.body.dataset.version !== undefined", 20)
        page.wait_until("document.getElementById('report-link').hidden", timeout=20)
