"""The displays' pace of standings computations: paid for by the matches stored since, so
that the coordinator's cost per match stays flat however long a computation takes; and
the live table laid out once, not at every redraw."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from tests.tournaments.stored import new_store, row, store_match
from tournaments.report.terminal import LaidOutOnce, LinesDisplay, StandingsPace
from tournaments.stats.standings import Standings, load_standings


def test_a_quick_computation_is_due_after_one_match() -> None:
    pace = StandingsPace()
    assert not pace.due(0.0)  # nothing stored yet
    pace.stored()
    assert pace.due(0.0)
    pace.computed(0.0, 0.0002)  # 0.2 ms: one match at 1 ms pays for it
    assert not pace.due(1.0)
    pace.stored()
    assert pace.due(1.0)


def test_a_slow_computation_waits_for_the_matches_that_pay_for_it() -> None:
    """A computation of a quarter of a second (a large store) waits for 250 matches at 1 ms
    each while they come fast: its cost per match stays at 1 ms."""
    pace = StandingsPace()
    pace.stored()
    pace.computed(10.0, 10.25)
    for _ in range(249):
        pace.stored()
    assert not pace.due(30.0)
    pace.stored()
    assert pace.due(30.0)


def test_when_matches_come_slowly_a_hundredth_of_the_time_pays() -> None:
    """One match, then a wait of 100 times what the last computation took (1 % of the
    time): due, so that a slow run's table does not wait for matches that come rarely."""
    pace = StandingsPace()
    pace.stored()
    pace.computed(10.0, 10.25)
    pace.stored()
    assert not pace.due(30.0)
    assert pace.due(35.25)


def test_with_a_minimum_interval_it_takes_at_most_a_tenth_of_the_time() -> None:
    pace = StandingsPace(0.25)
    pace.stored()
    pace.computed(0.0, 0.05)  # 50 ms: due 0.5 s later (a tenth), and after 50 matches
    for _ in range(60):
        pace.stored()
    assert not pace.due(0.4)
    assert pace.due(0.55)
    pace.computed(0.55, 0.5505)
    pace.stored()
    assert not pace.due(0.7)  # the minimum interval
    assert pace.due(0.81)


def _log(tmp_path: Path, every: int | None, matches: int) -> tuple[str, int]:
    """A log display over a real store, fed ``matches`` stored matches: its text and how
    many standings it computed."""
    connection = new_store(tmp_path, ["a", "b"])
    computed = 0

    def standings() -> Standings:
        nonlocal computed
        computed += 1
        return load_standings(connection)

    stream = io.StringIO()
    display = LinesDisplay(Console(file=stream, width=200), every=every)
    try:
        display.start("log", 1000, 0, standings)
        for index in range(matches):
            identifier = store_match(connection, index + 1, ("a", "b"), index % 2)
            display.match_stored(row(identifier, ("a", "b"), index % 2))
    finally:
        connection.close()
    return stream.getvalue(), computed


def test_a_given_every_is_kept_to_the_match(tmp_path: Path) -> None:
    text, computed = _log(tmp_path, 3, 9)
    assert computed == 3
    assert text.count("synthetic: ") == 3  # the tables' titles: the store's name


def test_the_default_pace_still_shows_a_quick_table_every_tenth(tmp_path: Path) -> None:
    """The default ``every`` (a tenth of the matches to play, at least 10) with a store
    whose standings take far less than the 10 ms that 10 matches pay for."""
    _text, computed = _log(tmp_path, None, 300)
    assert computed == 3  # after 100, 200 and 300 of the 1,000 matches


def test_the_default_pace_holds_back_a_table_the_matches_have_not_paid_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a table of a large store would be: one that costs more than the matches since
    paid for (here every table, at a nanosecond a match and of the time) waits, past its
    tenth."""
    monkeypatch.setattr(StandingsPace, "per_match_seconds", 1e-9)
    monkeypatch.setattr(StandingsPace, "idle_share", 1e-9)
    _text, computed = _log(tmp_path, None, 300)
    assert computed == 1  # after 100 matches; those at 200 and 300 not yet paid for


class CountedLayout:
    """A renderable that counts how often it is laid out."""

    def __init__(self) -> None:
        self.layouts = 0

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.layouts += 1
        yield Text("standings " * (options.max_width // 10))


def test_the_live_table_is_laid_out_once_per_width() -> None:
    """Redrawn four times a second, the table is laid out again only for a new width (a
    resized terminal), and drawn the same as laid out afresh."""
    inner = CountedLayout()
    table = LaidOutOnce(inner)
    stream = io.StringIO()
    console = Console(file=stream, width=80)
    for _ in range(3):
        console.print(table)
    assert inner.layouts == 1
    console.width = 40
    console.print(table)
    assert inner.layouts == 2
    afresh = io.StringIO()
    Console(file=afresh, width=40).print(CountedLayout())
    assert stream.getvalue().splitlines()[-1] == afresh.getvalue().splitlines()[-1]
