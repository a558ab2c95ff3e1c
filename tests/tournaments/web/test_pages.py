"""The pages of ``aegis-ref serve`` in a real headless Chromium: they draw without a
console error and ask for nothing outside the server, and an open standings page shows
each new result of a running tournament without reloading."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.tournaments.chromium import Page, devtools_page, require_chromium
from tests.tournaments.helpers import stored_count, wait_no_processes
from tests.tournaments.played import CRASHER_OUTPUT, MATCHES, NAME
from tests.tournaments.web.serving import (
    served,
    slow_config,
    tournament_running,
    wait_for_version,
)
from tournaments.store.database import open_store, stored_matches

#: A new result must show in an open page within this many seconds (the issue's promise).
LIVE_S = 2.0


@pytest.fixture(scope="module")
def server(tournament_output: Path) -> Iterator[str]:
    """The server of the played tournament's output."""
    with served(tournament_output) as base:
        wait_for_version(base)
        yield base


def _only_from(page: Page, base: str) -> None:
    outside = [url for url in page.requested() if not url.startswith(base + "/")]
    assert outside == []


def _open(page: Page, url: str, ready: str) -> None:
    page.open(url)
    page.wait_until(ready, timeout=20)


def test_the_standings_page_draws_the_run(server: str, tmp_path: Path) -> None:
    require_chromium()
    with devtools_page(tmp_path / "profile") as page:
        _open(page, server + "/", "document.body.dataset.version !== undefined")
        assert page.evaluate("document.getElementById('title').textContent") == NAME
        rows = page.evaluate("document.querySelectorAll('#standings tr').length")
        assert rows == 1 + 3
        names = page.evaluate(
            "Array.from(document.querySelectorAll('#standings td.name a'))"
            ".map(function (a) { return a.textContent; })"
        )
        assert sorted(names) == ["alpha", "crasher", "rnd"]
        assert page.evaluate("document.querySelectorAll('#chart circle').length") == 3
        assert page.evaluate("document.querySelectorAll('#recent tr').length") == 1 + MATCHES
        # The name with a script in it is text: no element came of it.
        assert page.evaluate("document.querySelectorAll('h1 script, h1 img').length") == 0
        assert page.problems() == []
        _only_from(page, server)


def test_the_bot_and_matches_pages_draw_without_errors(server: str, tmp_path: Path) -> None:
    require_chromium()
    with devtools_page(tmp_path / "profile") as page:
        _open(page, server + "/bots/crasher", "document.body.dataset.version !== undefined")
        assert page.evaluate("document.getElementById('title').textContent") == "crasher"
        faults = page.evaluate("document.querySelectorAll('#faults tr').length")
        assert faults > 1
        explanations = page.evaluate(
            "Array.from(document.querySelectorAll('#faults td.text'))"
            ".map(function (td) { return td.textContent; }).join('\\n')"
        )
        assert "crash" in explanations
        assert page.evaluate("document.querySelectorAll('#faults img').length") == 0
        _open(page, server + "/matches", "document.body.dataset.version !== undefined")
        assert page.evaluate("document.querySelectorAll('#recent tr').length") == 1 + MATCHES
        assert page.problems() == []
        _only_from(page, server)


def test_the_replay_page_draws_without_errors(
    server: str, tournament_output: Path, tmp_path: Path
) -> None:
    require_chromium()
    connection = open_store(tournament_output, read_only=True)
    try:
        crashed = next(
            match for match in stored_matches(connection) if match.forfeit_bot == "crasher"
        )
    finally:
        connection.close()
    with devtools_page(tmp_path / "profile") as page:
        page.open(f"{server}/replay/{quote(crashed.match_id, safe='')}")
        page.wait_until("document.getElementById('replay') !== null", timeout=20)
        page.wait_until("document.body.innerText.indexOf('crash') >= 0", timeout=20)
        # The crasher's output is on the page as text, not as an element.
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        text = page.evaluate("document.body.innerText")
        assert CRASHER_OUTPUT in text or "onerror" in text
        assert page.problems() == []
        _only_from(page, server)


def _played_shown(page: Page) -> int:
    text = page.evaluate("document.getElementById('summary').textContent")
    found = re.match(r"(\d+) of", text or "")
    return int(found.group(1)) if found else -1


def test_an_open_page_shows_each_result_of_a_running_tournament(tmp_path: Path) -> None:
    """A real tournament plays while the page is open: each count of stored matches read
    from the store shows on the page within 2 s, and the page never reloads."""
    require_chromium()
    names = ["one", "two", "three"]
    config, marker = slow_config(tmp_path, names, matches_per_pair=4)
    output = tmp_path / "out"
    total = 3 * 4
    with (
        tournament_running(config, output) as run,
        served(output) as base,
        devtools_page(tmp_path / "profile") as page,
    ):
        _open(page, base + "/", "document.body.dataset.version !== undefined")
        page.evaluate("window.sameDocument = true")
        seen, playing = [], []
        deadline = time.monotonic() + 120
        while True:
            count = stored_count(output / "results.sqlite")
            if run.poll() is not None and count < total:
                raise AssertionError(f"the run ended with {count} of {total}: {run.communicate()}")
            assert time.monotonic() < deadline, f"{count} of {total} stored in 120 s"
            asked = time.monotonic()
            page.wait_until(f"(function () {{ var m = /^(\\d+) of/.exec("
                            f"document.getElementById('summary').textContent); "
                            f"return m !== null && Number(m[1]) >= {count}; }})()",
                            timeout=LIVE_S + 1.0)  # fmt: skip
            waited = time.monotonic() - asked
            assert waited < LIVE_S, f"{count} stored, shown after {waited:.2f} s"
            seen.append(_played_shown(page))
            playing.append(page.evaluate("document.querySelectorAll('#playing tr').length - 1"))
            if count >= total:
                break
            time.sleep(0.1)
        assert page.evaluate("window.sameDocument") is True
        assert _played_shown(page) == total
        assert len(set(seen)) >= 3, f"the page saw too few steps: {seen}"
        # The matches in flight showed while the run went (one playing, one next).
        assert max(playing) >= 1, playing
        rows = page.evaluate("document.querySelectorAll('#standings tr').length")
        assert rows == 1 + len(names)
        assert page.problems() == []
        _only_from(page, base)
    assert wait_no_processes(marker) == []
