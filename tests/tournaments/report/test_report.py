"""The HTML report: built from a real tournament's store, parsed, and rendered by headless
Chromium; its rating progression and limits checked on synthetic stores."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from referee.cgroups import detect_cgroups
from tests.tournaments.chromium import png_size, require_chromium, run_chromium
from tests.tournaments.helpers import run_cli
from tests.tournaments.html_tree import Element, parse
from tests.tournaments.played import BOTS, MATCHES, NAME
from tests.tournaments.stored import new_store, store_match
from tournaments.report.html_report import build_report
from tournaments.report.report_data import (
    MAX_PROGRESSION_POINTS,
    progression_marks,
    rating_progression,
)
from tournaments.stats.standings import load_standings

# ---------------------------------------------------------------------------------------------
# A real tournament (tests/tournaments/played.py)


@pytest.fixture
def output(tournament_output: Path) -> Path:
    """The tournament's output directory."""
    return tournament_output


def check_page(page: Element, output: Path, report_dir: Path) -> None:
    """What every rendering of the report must hold, parsed or as Chromium built it."""
    assert page.find_all("title")[0].all_text() == f"Tournament report: {NAME}"
    for identifier in ("standings", "elo", "crosstable", "progression", "faults", "matches"):
        assert page.by_id(identifier).tag == "section"
    # The standings table: one row per bot, the crasher last with its forfeits.
    rows = page.by_id("standings-table").find_all("tbody")[0].find_all("tr")
    assert len(rows) == len(BOTS)
    assert {row.find_all("td")[1].all_text() for row in rows} == set(BOTS)
    last = [cell.all_text() for cell in rows[-1].find_all("td")]
    assert last[1] == "crasher"
    assert last[10] == "4 (crash 4)"
    # The Elo chart: a dot and an interval bar per bot.
    elo = page.by_id("elo-chart")
    assert len(elo.find_all("svg")) == 1
    assert len(elo.find_all("circle", "elo")) == len(BOTS)
    assert len(elo.find_all("line", "ci")) == len(BOTS)
    # The heat map: a cell for every pair of bots, coloured where they played.
    heatmap = page.by_id("crosstable-heatmap")
    cells = heatmap.find_all("rect", "cell")
    assert len(cells) == len(BOTS) ** 2
    assert len([cell for cell in cells if "played" in cell.classes]) == len(BOTS) * (len(BOTS) - 1)
    assert all(cell.attrs["fill"].startswith("#") for cell in heatmap.find_all("rect", "played"))
    assert sum(int(cell.attrs["data-wins"]) for cell in cells if "played" in cell.classes) == (
        MATCHES
    )
    # The progression: a line per bot through one point per stored match.
    progression = page.by_id("progression-chart")
    assert len(progression.find_all("polyline", "line")) == len(BOTS)
    assert len(progression.find_all("circle", "point")) <= len(BOTS) * MATCHES
    assert len(progression.find_all("circle", "point")) >= len(BOTS)
    # Faults: every crash listed with a link to its record.
    faults = page.by_id("faults-table")
    crasher = [row for row in faults.find_all("tr") if "crasher" in row.all_text()]
    assert len(crasher) == 1
    headers = [th.all_text() for th in faults.find_all("th")]
    assert "crash" in headers
    # Timing: each bot's wall time per decision, its CPU charge where the machine keeps the
    # CPU clock, and its largest charge over decision_ms.
    cpu_clock = detect_cgroups().cpu_clock_problem() is None
    for row in faults.find_all("tr"):
        cells = [cell.all_text() for cell in row.find_all("td")]
        if not cells or cells[headers.index("decisions")] == "0":
            continue
        for column in ("wall ms median", "wall ms p95", "CPU ms median", "CPU ms p95"):
            assert re.fullmatch(r"\d+\.\d", cells[headers.index(column)]) or (
                column.startswith("CPU") and not cpu_clock
            ), (column, cells)
        assert re.fullmatch(r"\d+%", cells[headers.index("budget used")]), cells
    assert "crash" in page.by_id("fault-list").all_text()
    # Matches: each links to its replay page beside the report and to its record, both
    # relative, and both files are there.
    rows = [row for row in page.by_id("matches").find_all("tr") if row.find_all("td")]
    assert len(rows) == MATCHES
    pairings = page.by_id("matches").find_all("details", "pairing")
    assert len(pairings) == 3
    assert all("open" in details.attrs for details in pairings)  # a short list starts open
    for row in rows:
        links = [anchor.attrs["href"] for anchor in row.find_all("a")]
        assert len(links) == 2
        for link in links:
            assert not urlsplit(link).scheme
            assert not link.startswith("/")
        replay, record = ((report_dir / unquote(link)).resolve() for link in links)
        assert replay.parent == (report_dir / "replays").resolve()
        assert replay.name == record.stem + ".html"
        assert replay.is_file()
        assert record.parent == (output / "records").resolve()
        assert record.is_file()
    # A fault's match links to the moment of the fault in its replay.
    fault_links = [anchor.attrs["href"] for anchor in page.by_id("fault-list").find_all("a")]
    assert fault_links
    assert all(re.fullmatch(r"replays/match-[^#]+\.html#m1g\d+a\d+", link) for link in fault_links)


def check_self_contained(text: str, page: Element) -> None:
    """No resource from anywhere but the page itself."""
    assert "http://" not in text
    assert "https://" not in text
    for tag in ("link", "img", "iframe", "object", "embed"):
        assert not page.find_all(tag), tag
    for element in page.iter():
        assert "src" not in element.attrs, element
        if element.tag == "a":
            assert not urlsplit(element.attrs.get("href", "")).scheme
    assert "@import" not in text
    assert "url(" not in text.replace("url(#", "")


def test_report_command_writes_a_self_contained_page(output: Path) -> None:
    result = run_cli("report", str(output), cwd=output.parent)
    assert result.returncode == 0, result.stderr
    path = output / "report.html"
    assert result.stdout.strip() == f"report: {path}"
    text = path.read_text(encoding="utf-8")
    page = parse(text)
    check_page(page, output, output)
    check_self_contained(text, page)
    # The name is escaped everywhere: the only script is the report's own.
    assert "&lt;script&gt;alert(" in text
    assert len(page.find_all("script")) == 1
    assert "alert" not in page.find_all("script")[0].all_text()


def test_report_elsewhere_links_back_to_the_records(output: Path, tmp_path: Path) -> None:
    destination = tmp_path / "pages" / "tournament.html"
    result = run_cli("report", str(output), "-o", str(destination), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    page = parse(destination.read_text(encoding="utf-8"))
    check_page(page, output, destination.parent)


def test_report_errors(output: Path, tmp_path: Path) -> None:
    result = run_cli("report", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert "not a tournament output" in result.stderr
    result = run_cli("report", str(output), "--anchor", "nobody", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown bot 'nobody'" in result.stderr
    result = run_cli(
        "report", str(output), "--anchor", "alpha", "-o", str(tmp_path / "a.html"), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "Elo of alpha fixed at 1500" in (tmp_path / "a.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Chromium


def test_report_renders_in_headless_chromium(output: Path, tmp_path: Path) -> None:
    require_chromium()
    path = output / "report.html"
    result = run_cli("report", str(output), cwd=output.parent)
    assert result.returncode == 0, result.stderr
    url = path.resolve().as_uri()
    dumped = run_chromium(["--dump-dom", url], tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    page = parse(dumped.stdout)
    # The DOM Chromium built holds the tables and every SVG element...
    check_page(page, output, output)
    # ...and the inline script ran: every sortable table was made sortable.
    sortable = [table for table in page.find_all("table") if "sortable" in table.classes]
    assert len(sortable) >= 3
    assert all(table.attrs.get("data-sortable") == "ready" for table in sortable)
    headings = page.by_id("standings-table").find_all("th")
    assert all(heading.attrs.get("tabindex") == "0" for heading in headings)
    # A screenshot: a page of the asked size with something drawn on it.
    screenshot = tmp_path / "report.png"
    shot = run_chromium(
        ["--window-size=1200,2400", "--hide-scrollbars", f"--screenshot={screenshot}", url],
        tmp_path / "profile",
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png_size(screenshot) == (1200, 2400)
    assert screenshot.stat().st_size > 20_000  # a blank page compresses to a few KB


# ---------------------------------------------------------------------------------------------
# Rating progression and limits, on synthetic stores


def test_progression_marks() -> None:
    assert progression_marks(0, 4) == []
    assert progression_marks(3, 4) == [1, 2, 3]
    marks = progression_marks(1000, 4)
    assert len(marks) == MAX_PROGRESSION_POINTS
    assert marks[-1] == 1000
    assert all(later - earlier == 20 for earlier, later in itertools.pairwise(marks))
    assert len(progression_marks(1000, 40)) == 5  # a fit of 40 bots is slow: few points
    assert progression_marks(1000, 40)[-1] == 1000


def test_progression_ends_at_the_standings(tmp_path: Path) -> None:
    """Many stored matches: at most 50 refits, in order, the last one equal to the
    standings; the report renders an empty store too."""
    connection = new_store(tmp_path, ["a", "b", "c"])
    try:
        empty = parse(build_report(connection))
        assert "No results yet." in empty.by_id("progression").all_text()
        assert "No match stored yet." in empty.by_id("matches").all_text()
        assert not empty.by_id("crosstable-heatmap").find_all("rect", "played")
        seats = [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a")]
        for number in range(1, 401):
            store_match(connection, number, seats[number % 4], number % 3 % 2)
        standings = load_standings(connection)
        progression = rating_progression(connection, ["a", "b", "c"])
        assert [point.matches for point in progression] == list(range(8, 401, 8))
        for name in ("a", "b", "c"):
            assert progression[-1].elo[name] == pytest.approx(
                standings.fit.ratings[name].elo, abs=1e-6
            )
        page = parse(build_report(connection))
        assert len(page.by_id("progression-chart").find_all("circle", "point")) == 3 * 50
    finally:
        connection.close()
