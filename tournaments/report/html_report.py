"""The HTML report of a tournament (``aegis-ref report OUTPUT_DIR``): one self-contained page.

The page holds the standings, the Elo ratings with their confidence intervals as a chart, the
likelihood of superiority, the crosstable as a heat map, the rating progression over the run,
a fault and timing summary per bot and links to every match's replay and record. It needs no
network to be viewed: the CSS is inline, the charts are inline SVG drawn here, and the only
script is a few inline lines that make the tables sortable by a click on a column heading.
Beside it, in :data:`REPLAYS_DIR`, every listed match gets a replay page
(:mod:`tournaments.report.replay_page`) that the report links to.

This module draws; what the page shows is read by :mod:`tournaments.report.report_data`, in one
transaction so that a report made during a run is consistent. Links to match records are
relative to the report, so the output directory can be moved or copied with its report.

A report may name the run's live pages (``--live URL``, ``aegis-ref serve``), and
``aegis-ref serve`` serves the report of the folder it serves under the policy of
:func:`report_page_policy`; a report that shows the master seed says so in a ``meta`` tag
(:data:`SEED_SHOWN`), so that the server can refuse it.
"""

from __future__ import annotations

import html
import math
import os
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from referee.atomic import write_atomically
from tournaments.errors import TournamentError
from tournaments.report.assets import asset_text, inline_hash
from tournaments.report.formats import ladder_line, standings_json
from tournaments.report.replay_page import RecordReadError, write_replay_page
from tournaments.report.report_data import (
    MAX_PROGRESSION_POINTS,
    BotActivity,
    FaultEntry,
    FaultSummary,
    ProgressionPoint,
    ReportData,
    read_report,
)
from tournaments.schedule.pairings import pairing_key
from tournaments.stats.ratings import DEFAULT_ELO, PAIR_UNIT, Rating
from tournaments.stats.standings import Standings, load_standings
from tournaments.store.database import StoredMatch, StoredMeta, open_store

__all__ = [
    "MAX_PROGRESSION_LINES",
    "REPLAYS_DIR",
    "REPORT_NAME",
    "SEED_SHOWN",
    "build_report",
    "render_report",
    "report_page_policy",
    "write_replay_pages",
    "write_report",
]

#: The report's file name in the output directory, unless ``-o`` says otherwise.
REPORT_NAME = "report.html"
#: The folder beside the report with a replay page for every match it lists.
REPLAYS_DIR = "replays"
#: In the head of a report that shows the master seed: a server does not publish it.
SEED_SHOWN = '<meta name="aegis-ref-report" content="seed-shown">'
#: Most bots drawn in the progression chart: the best by final standing.
MAX_PROGRESSION_LINES = 12

#: Distinct colours of the progression lines ("Tableau 10").
_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
_OPEN_MATCHES = 60  # matches listed with every pairing's list open
_LABEL_CHARS = 22  # bot names longer than this are shortened in chart labels
_CHAR_WIDTH = 7.0  # rough width of a 12px sans-serif character, for laying labels out

_e = html.escape


# ---------------------------------------------------------------------------------------------
# SVG helpers


def _num(value: float) -> str:
    """A coordinate, to a tenth of a pixel, without trailing zeros."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _short(name: str) -> str:
    return name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"


def _text_width(text: str) -> float:
    return len(text) * _CHAR_WIDTH


def _ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering the range."""
    if not high > low:
        low, high = low - 1, high + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step)
    last = math.ceil(high / step)
    return [index * step for index in range(first, last + 1)]


def _svg_open(width: float, height: float, css_class: str, label: str) -> str:
    """An inline SVG element (no namespace needed inside HTML) that scales down to fit."""
    return (
        f'<svg class="chart {css_class}" viewBox="0 0 {_num(width)} {_num(height)}" '
        f'width="{_num(width)}" height="{_num(height)}" role="img" aria-label="{_e(label)}">'
    )


def _diverging(share: float) -> str:
    """Red (0) through light grey (0.5) to blue (1): the colour of a win share."""
    low, middle, high = (178, 24, 43), (247, 247, 247), (33, 102, 172)
    share = min(max(share, 0.0), 1.0)
    start, end, t = (low, middle, share * 2) if share < 0.5 else (middle, high, share * 2 - 1)
    red, green, blue = (round(a + (b - a) * t) for a, b in zip(start, end, strict=True))
    return f"#{red:02x}{green:02x}{blue:02x}"


# ---------------------------------------------------------------------------------------------
# Charts


def _bounds(rating: Rating) -> tuple[float, float, float]:
    """A rated bot's interval and Elo as (low, elo, high)."""
    assert rating.elo is not None
    low = rating.low if rating.low is not None else rating.elo
    high = rating.high if rating.high is not None else rating.elo
    return low, rating.elo, high


def _match_bounds(rating: Rating) -> tuple[float, float]:
    """A rated bot's interval by match as (low, high)."""
    assert rating.elo is not None
    low = rating.match_low if rating.match_low is not None else rating.elo
    high = rating.match_high if rating.match_high is not None else rating.elo
    return low, high


def _elo_chart(standings: Standings) -> str:
    """Each rated bot's Elo as a dot on its confidence interval, best first."""
    rated = [row for row in standings.rows if row.rating.elo is not None]
    if not rated:
        return '<p class="empty">No ratings yet: no match has been decided.</p>'
    reference = DEFAULT_ELO
    bounds = [_bounds(row.rating) for row in rated]
    by_pair = standings.fit.unit == PAIR_UNIT
    match_bounds = [_match_bounds(row.rating) for row in rated] if by_pair else []
    ticks = _ticks(
        min(reference, *(low for low, _, _ in bounds), *(low for low, _ in match_bounds)),
        max(reference, *(high for _, _, high in bounds), *(high for _, high in match_bounds)),
    )
    domain = (ticks[0], ticks[-1])
    label_width = 14 + max(_text_width(_short(row.name)) for row in rated)
    plot_width, value_width, row_height, top, bottom = 480.0, 120.0, 26.0, 12.0, 34.0
    width = label_width + plot_width + value_width
    height = top + row_height * len(rated) + bottom
    plot_bottom = top + row_height * len(rated)

    def x(value: float) -> float:
        return label_width + (value - domain[0]) / (domain[1] - domain[0]) * plot_width

    several = len(standings.fit.components) > 1
    parts = [_svg_open(width, height, "elo-chart", "Elo ratings with confidence intervals")]
    parts.append('<g class="axis">')
    for tick in ticks:
        parts.append(
            f'<line class="grid" x1="{_num(x(tick))}" y1="{_num(top)}" x2="{_num(x(tick))}" '
            f'y2="{_num(plot_bottom)}"/>'
            f'<text class="tick" x="{_num(x(tick))}" y="{_num(plot_bottom + 16)}" '
            f'text-anchor="middle">{tick:.0f}</text>'
        )
    anchor_text = f"{standings.anchor} = 1500" if standings.anchor else "mean 1500"
    parts.append(
        f'<line class="reference" x1="{_num(x(reference))}" y1="{_num(top - 6)}" '
        f'x2="{_num(x(reference))}" y2="{_num(plot_bottom)}"/>'
        f'<text class="axis-title" x="{_num(label_width + plot_width / 2)}" '
        f'y="{_num(plot_bottom + 31)}" text-anchor="middle">Elo (dashed: {_e(anchor_text)})'
        "</text></g>"
    )
    for index, (row, (low, elo, high)) in enumerate(zip(rated, bounds, strict=True)):
        rating = row.rating
        y = top + row_height * (index + 0.5)
        colour = _PALETTE[(rating.component or 0) % len(_PALETTE)] if several else _PALETTE[0]
        half = high - elo
        tip = (
            f"{row.name}: Elo {elo:.0f}, {100 * standings.fit.confidence:.0f}% interval "
            f"{low:.0f} to {high:.0f}"
        )
        band = ""
        if by_pair:
            match_low, match_high = match_bounds[index]
            tip += f" by duplicate pair, {match_low:.0f} to {match_high:.0f} by match"
            band = (
                f'<line class="ci-match" x1="{_num(x(match_low))}" y1="{_num(y)}" '
                f'x2="{_num(x(match_high))}" y2="{_num(y)}"/>'
            )
        parts.append(
            f'<g class="bot" data-bot="{_e(row.name)}"><title>{_e(tip)}</title>'
            f'<text class="label" x="{_num(label_width - 8)}" y="{_num(y + 4)}" '
            f'text-anchor="end">{_e(_short(row.name))}</text>'
            + band
            + f'<line class="ci" x1="{_num(x(low))}" y1="{_num(y)}" x2="{_num(x(high))}" '
            f'y2="{_num(y)}" stroke="{colour}"/>'
            f'<line class="cap" x1="{_num(x(low))}" y1="{_num(y - 5)}" x2="{_num(x(low))}" '
            f'y2="{_num(y + 5)}" stroke="{colour}"/>'
            f'<line class="cap" x1="{_num(x(high))}" y1="{_num(y - 5)}" x2="{_num(x(high))}" '
            f'y2="{_num(y + 5)}" stroke="{colour}"/>'
            f'<circle class="elo" cx="{_num(x(elo))}" cy="{_num(y)}" r="5" '
            f'fill="{colour}"/>'
            f'<text class="value" x="{_num(label_width + plot_width + 10)}" y="{_num(y + 4)}">'
            f"{elo:.0f} ±{half:.0f}</text></g>"
        )
    parts.append("</svg>")
    unrated = [row.name for row in standings.rows if row.rating.elo is None]
    if unrated:
        parts.append(
            f'<p class="note">No rating yet (no decided match): {_e(", ".join(unrated))}</p>'
        )
    return "".join(parts)


def _heatmap(standings: Standings) -> str:
    """The crosstable as a grid of cells coloured by the row bot's share of the wins."""
    names = [row.name for row in standings.rows]
    count = len(names)
    cell = 46.0 if count <= 10 else 40.0 if count <= 20 else 22.0
    with_text = cell >= 30
    label_width = 14 + max(_text_width(_short(name)) for name in names)
    header = 12 + 0.72 * label_width  # column labels run up and right at 45°
    legend_height = 46.0
    width = label_width + max(cell * count + 0.72 * label_width, 380.0)
    height = header + cell * count + legend_height
    parts = [_svg_open(width, height, "heatmap", "Crosstable heat map")]
    for column, name in enumerate(names):
        x = label_width + cell * (column + 0.5)
        parts.append(
            f'<text class="label column" transform="translate({_num(x)},{_num(header - 6)}) '
            f'rotate(-45)">{_e(_short(name))}<title>{_e(name)}</title></text>'
        )
    for row_index, name in enumerate(names):
        y = header + cell * row_index
        parts.append(
            f'<text class="label row" x="{_num(label_width - 8)}" y="{_num(y + cell / 2 + 4)}" '
            f'text-anchor="end">{_e(_short(name))}<title>{_e(name)}</title></text>'
        )
        for column, other in enumerate(names):
            x = label_width + cell * column
            found = standings.crosstable.get(name, {}).get(other)
            geometry = f'x="{_num(x)}" y="{_num(y)}" width="{_num(cell)}" height="{_num(cell)}"'
            if name == other:
                parts.append(f'<rect class="cell self" {geometry}><title>{_e(name)}</title></rect>')
                continue
            if found is None or sum(found) == 0:
                parts.append(
                    f'<rect class="cell none" {geometry}>'
                    f"<title>{_e(name)} and {_e(other)} have not played</title></rect>"
                )
                continue
            wins, losses = found
            share = wins / (wins + losses)
            los = standings.fit.los.get(name, {}).get(other)
            tip = f"{name} against {other}: {wins} won, {losses} lost ({100 * share:.0f}%)"
            pairs = standings.pairs.get(name, {}).get(other)
            if pairs is not None and pairs.pairs:
                tip += f"; in duplicate pairs {pairs.text()}"
            if los is not None:
                tip += f"; likelihood that {name} is stronger: {_percent_text(los)}"
            parts.append(
                f'<rect class="cell played" {geometry} fill="{_diverging(share)}" '
                f'data-wins="{wins}" data-losses="{losses}"><title>{_e(tip)}</title></rect>'
            )
            if with_text:
                ink = "light" if abs(share - 0.5) > 0.3 else "dark"
                parts.append(
                    f'<text class="cell-text {ink}" x="{_num(x + cell / 2)}" '
                    f'y="{_num(y + cell / 2 + 4)}" text-anchor="middle">{wins}-{losses}</text>'
                )
    # The legend: the colour scale of the row bot's share of the wins.
    legend_y = header + cell * count + 14
    legend_x = label_width
    legend_width = 160.0
    parts.append(
        '<defs><linearGradient id="share-scale">'
        + "".join(
            f'<stop offset="{stop:.2f}" stop-color="{_diverging(stop)}"/>'
            for stop in (0, 0.25, 0.5, 0.75, 1)
        )
        + "</linearGradient></defs>"
        f'<g class="legend"><rect class="scale" x="{_num(legend_x)}" y="{_num(legend_y)}" '
        f'width="{_num(legend_width)}" height="10" fill="url(#share-scale)"/>'
        + "".join(
            f'<text class="tick" x="{_num(legend_x + legend_width * share)}" '
            f'y="{_num(legend_y + 24)}" text-anchor="middle">{100 * share:.0f}%</text>'
            for share in (0, 0.5, 1)
        )
        + f'<text class="tick" x="{_num(legend_x + legend_width + 16)}" '
        f'y="{_num(legend_y + 9)}">the row bot\'s share of the wins</text></g>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _progression_chart(
    progression: Sequence[ProgressionPoint], standings: Standings, matches: int
) -> str:
    """Each bot's Elo after every k-th stored match: one line per bot (the best few)."""
    if not progression:
        return '<p class="empty">No results yet.</p>'
    order = [row.name for row in standings.rows]
    shown = [name for name in order if any(name in point.elo for point in progression)][
        :MAX_PROGRESSION_LINES
    ]
    if not shown:
        return '<p class="empty">No ratings yet: no match has been decided.</p>'
    values = [point.elo[name] for point in progression for name in shown if name in point.elo]
    ticks = _ticks(min(values), max(values), 5)
    x_ticks = [tick for tick in _ticks(0, max(matches, 1), 6) if tick <= max(matches, 1)]
    left, plot_width, plot_height, top, bottom = 56.0, 560.0, 260.0, 12.0, 40.0
    legend_width = 24 + max(_text_width(_short(name)) for name in shown)
    width = left + plot_width + 16 + legend_width
    height = max(top + plot_height + bottom, top + 20.0 * len(shown) + 10)
    span = (ticks[0], ticks[-1])
    last = max(matches, progression[-1].matches, 1)

    def x(count: float) -> float:
        return left + count / last * plot_width

    def y(elo: float) -> float:
        return top + (span[1] - elo) / (span[1] - span[0]) * plot_height

    parts = [_svg_open(width, height, "progression-chart", "Elo ratings over the run")]
    parts.append('<g class="axis">')
    for tick in ticks:
        parts.append(
            f'<line class="grid" x1="{_num(left)}" y1="{_num(y(tick))}" '
            f'x2="{_num(left + plot_width)}" y2="{_num(y(tick))}"/>'
            f'<text class="tick" x="{_num(left - 6)}" y="{_num(y(tick) + 4)}" '
            f'text-anchor="end">{tick:.0f}</text>'
        )
    for tick in x_ticks:
        parts.append(
            f'<line class="grid" x1="{_num(x(tick))}" y1="{_num(top)}" x2="{_num(x(tick))}" '
            f'y2="{_num(top + plot_height)}"/>'
            f'<text class="tick" x="{_num(x(tick))}" y="{_num(top + plot_height + 16)}" '
            f'text-anchor="middle">{tick:g}</text>'
        )
    parts.append(
        f'<text class="axis-title" x="{_num(left + plot_width / 2)}" '
        f'y="{_num(top + plot_height + 34)}" text-anchor="middle">matches stored</text></g>'
    )
    for index, name in enumerate(shown):
        colour = _PALETTE[index % len(_PALETTE)]
        dashed = ' stroke-dasharray="6 3"' if index >= len(_PALETTE) else ""
        points = [(point.matches, point.elo[name]) for point in progression if name in point.elo]
        path = " ".join(f"{_num(x(count))},{_num(y(elo))}" for count, elo in points)
        parts.append(
            f'<g class="series" data-bot="{_e(name)}">'
            f'<polyline class="line" points="{path}" stroke="{colour}"{dashed}/>'
        )
        parts += [
            f'<circle class="point" cx="{_num(x(count))}" cy="{_num(y(elo))}" r="2.5" '
            f'fill="{colour}"><title>{_e(name)} after {count} matches: Elo {elo:.0f}</title>'
            "</circle>"
            for count, elo in points
        ]
        legend_y = top + 20.0 * index + 8
        legend_x = left + plot_width + 16
        parts.append(
            f'<line class="key" x1="{_num(legend_x)}" y1="{_num(legend_y)}" '
            f'x2="{_num(legend_x + 16)}" y2="{_num(legend_y)}" stroke="{colour}"{dashed}/>'
            f'<text class="label" x="{_num(legend_x + 22)}" y="{_num(legend_y + 4)}">'
            f"{_e(_short(name))}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Tables


def _cell(text: object, sort: object = None, css_class: str = "") -> str:
    attributes = f' class="{css_class}"' if css_class else ""
    if sort is not None:
        attributes += f' data-sort="{_e(str(sort))}"'
    return f"<td{attributes}>{_e(str(text))}</td>"


def _head(*headings: str) -> str:
    return "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headings) + "</tr></thead>"


def _value(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def _sort(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _standings_table(standings: Standings) -> str:
    confidence = f"{100 * standings.fit.confidence:.0f}%"
    data = standings_json(standings)
    rows = []
    by_pair = standings.fit.unit == PAIR_UNIT
    for bot in data["bots"]:
        intervals = [_interval_cell(bot["elo_low"], bot["elo_high"])]
        if by_pair:
            intervals.append(_interval_cell(bot["elo_match_low"], bot["elo_match_high"]))
        forfeits = bot["forfeits"]
        kinds = ", ".join(f"{kind} {count}" for kind, count in bot["forfeits_by_kind"].items())
        rows.append(
            "<tr>"
            + _cell(bot["rank"], bot["rank"], "num")
            + _cell(bot["name"], None, "name")
            + _cell(_value(bot["elo"]), _sort(bot["elo"]), "num")
            + "".join(intervals)
            + _cell(f"{bot['wins']}-{bot['losses']}", bot["wins"], "num")
            + _cell(_value(bot["win_pct"], 1), _sort(bot["win_pct"]), "num")
            + _cell(f"{bot['games_won']}/{bot['games']}", bot["games_won"], "num")
            + _cell(_value(bot["avg_points_for"], 2), _sort(bot["avg_points_for"]), "num")
            + _cell(_value(bot["avg_points_against"], 2), _sort(bot["avg_points_against"]), "num")
            + _cell(f"{forfeits} ({kinds})" if forfeits else "0", forfeits, "num")
            + _cell(bot["void"], bot["void"], "num")
            + (_cell(bot["status"] or "-", bot["status"], "name") if standings.ladder else "")
            + "</tr>"
        )
    return (
        '<table id="standings-table" class="sortable standings">'
        + _head(
            "#",
            "bot",
            "Elo",
            *(
                [f"{confidence} interval by pair", "by match"]
                if by_pair
                else [f"{confidence} interval"]
            ),
            "W-L",
            "win %",
            "games won",
            "pts/game",
            "opp/game",
            "forfeits",
            "void",
            *(["status"] if standings.ladder else []),
        )
        + "<tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _interval_cell(low: float | None, high: float | None) -> str:
    """A table cell ``1430 to 1570``, sorted by the interval's width."""
    text = "-" if low is None or high is None else f"{low:.0f} to {high:.0f}"
    return _cell(text, _sort(None if low is None or high is None else high - low), "num")


def _percent_text(probability: float) -> str:
    """A probability as a whole percentage that never rounds to a false certainty."""
    if probability > 0.995:
        return ">99%"
    if probability < 0.005:
        return "<1%"
    return f"{100 * probability:.0f}%"


def _los_table(standings: Standings) -> str:
    names = [row.name for row in standings.rows if row.name in standings.fit.los]
    if len(names) < 2:
        return ""
    body = []
    for name in names:
        cells = []
        for other in names:
            value = standings.fit.los[name].get(other)
            if name == other:
                cells.append('<td class="self">·</td>')
            elif value is None:
                cells.append('<td class="none" title="different groups: not comparable"></td>')
            else:
                ink = " light" if abs(value - 0.5) > 0.3 else ""
                cells.append(
                    f'<td class="num{ink}" style="background:{_diverging(value)}">'
                    f"{_percent_text(value)}</td>"
                )
        body.append(f'<tr><th class="name">{_e(name)}</th>{"".join(cells)}</tr>')
    head = "".join(f"<th>{_e(name)}</th>" for name in names)
    return (
        '<table id="los-table" class="matrix">'
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _quantile_cells(quantiles: tuple[float, float] | None) -> str:
    """The median and p95 cells of a bot's decision times (empty where there are none)."""
    median, p95 = quantiles if quantiles is not None else (None, None)
    return _cell(_value(median, 1), _sort(median), "num") + _cell(_value(p95, 1), _sort(p95), "num")


def _budget_cell(share: float | None) -> str:
    """How close a bot came to its budget: its largest charge over ``decision_ms``."""
    return _cell(_value(None if share is None else 100 * share, 0, "%"), _sort(share), "num")


def _faults_section(
    summary: FaultSummary,
    standings: Standings,
    records: str,
    replays: Mapping[str, str],
    decision_ms: int | None = None,
) -> str:
    kinds = summary.kinds
    forfeits = {row.name: row.record.forfeits for row in standings.rows}
    order = [row.name for row in standings.rows] + [
        name for name in summary.bots if name not in forfeits
    ]
    rows = []
    for name in order:
        activity = summary.bots.get(name, BotActivity(name))
        lost = sum(forfeits.get(name, Counter()).values())
        rows.append(
            "<tr>"
            + _cell(name, None, "name")
            + _cell(lost, lost, "num")
            + _cell(sum(activity.faults.values()), sum(activity.faults.values()), "num")
            + "".join(_cell(activity.faults[kind], activity.faults[kind], "num") for kind in kinds)
            + _cell(activity.decisions, activity.decisions, "num")
            + _cell(_value(activity.mean_ms, 1), _sort(activity.mean_ms), "num")
            + _cell(_value(activity.max_ms, 1), _sort(activity.max_ms), "num")
            + _quantile_cells(activity.wall_quantiles())
            + _quantile_cells(activity.cpu_quantiles())
            + _budget_cell(activity.budget_share(decision_ms) if decision_ms else None)
            + "</tr>"
        )
    table = (
        '<table id="faults-table" class="sortable faults">'
        + _head(
            "bot",
            "forfeits",
            "faults",
            *kinds,
            "decisions",
            "mean ms",
            "slowest ms",
            "wall ms median",
            "wall ms p95",
            "CPU ms median",
            "CPU ms p95",
            "budget used",
        )
        + "<tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    if not summary.total:
        return table + '<p class="empty">No faults: every bot answered every request.</p>'
    listed = len(summary.latest)
    caption = (
        f"The latest {listed} of {summary.total} faults"
        if listed < summary.total
        else f"All {summary.total} fault{'s' if summary.total != 1 else ''}"
    )
    items = []
    for entry in reversed(summary.latest):
        where = "before the first game"
        if entry.game is not None:
            where = f"game {entry.game}" + (
                f", decision {entry.decision}" if entry.decision is not None else ""
            )
        items.append(
            "<tr>"
            + f'<td><a href="{_fault_href(entry, records, replays)}">'
            + f"{_e(entry.match_id)}</a></td>"
            + _cell(entry.bot, None, "name")
            + _cell(entry.kind)
            + _cell(where)
            + _cell(entry.detail, None, "detail")
            + _cell(entry.last_output, None, "detail output")
            + "</tr>"
        )
    return (
        table
        + f"<h3>{_e(caption)}, newest first</h3>"
        + '<table id="fault-list" class="sortable fault-list">'
        + _head("match", "bot", "fault", "where", "detail", "last output line")
        + "<tbody>"
        + "".join(items)
        + "</tbody></table>"
    )


def _fault_href(entry: FaultEntry, records: str, replays: Mapping[str, str]) -> str:
    """A link to the moment of a fault in its match's replay page (a tournament's record
    holds one match, number 1), or to the record when the match has no page."""
    page = replays.get(entry.match_id)
    if page is None:
        return _href(records, entry.record_path)
    if entry.game is None:
        return _e(page)
    # Decision d is asked once d - 1 actions are made: the page's position d - 1.
    position = max(entry.decision - 1, 0) if entry.decision is not None else 0
    return _e(f"{page}#m1g{entry.game}a{position}")


def _href(records: str, record_path: str) -> str:
    """A relative link to a record: ``records`` is the output directory as seen from the
    report's directory (``.`` when the report lives in it)."""
    path = Path(records, record_path).as_posix() if records not in ("", ".") else record_path
    return _e(quote(path, safe="/"))


def _matches_section(
    matches: Sequence[StoredMatch], total: int, records: str, replays: Mapping[str, str]
) -> str:
    if not matches:
        return '<p class="empty">No match stored yet.</p>'
    groups: dict[str, list[StoredMatch]] = {}
    for match in matches:
        groups.setdefault(pairing_key(*match.seats), []).append(match)
    parts = []
    if len(matches) < total:
        parts.append(
            f'<p class="note">The first {len(matches)} of {total} matches by match id; every '
            "record is in the output directory's <code>records/</code> folder.</p>"
        )
    # A short list is open from the start; a long one opens pairing by pairing.
    opened = " open" if len(matches) <= _OPEN_MATCHES else ""
    for key in sorted(groups):
        group = groups[key]
        first, second = key.split("+", 1)
        won = Counter(match.winner for match in group)
        summary = (
            f"{first} {won[first]}-{won[second]} {second} "
            f"({len(group)} match{'es' if len(group) != 1 else ''}"
            + (f", {won[None]} void" if won[None] else "")
            + ")"
        )
        rows = []
        for match in group:
            record = _href(records, match.record_path)
            page = replays.get(match.match_id)
            rows.append(
                "<tr>"
                + f'<td><a href="{_e(page) if page else record}">{_e(match.match_id)}</a></td>'
                + f'<td><a class="record" href="{record}">jsonl</a></td>'
                + _cell(match.seats[0], None, "name")
                + _cell(match.seats[1], None, "name")
                + _cell(match.winner or "none (void)", None, "name")
                + _cell(match.termination)
                + _cell(f"{match.scores[0]}-{match.scores[1]}", match.scores[0], "num")
                + _cell(match.games, match.games, "num")
                + _cell(
                    "" if match.forfeit_bot is None else f"{match.forfeit_bot} {match.forfeit_kind}"
                )
                + _cell(f"{match.duration_s:.2f}", match.duration_s, "num")
                + "</tr>"
            )
        parts.append(
            f'<details class="pairing" data-pairing="{_e(key)}"{opened}>'
            f"<summary>{_e(summary)}</summary>"
            '<table class="sortable matches">'
            + _head(
                "match",
                "record",
                "seat 0",
                "seat 1",
                "winner",
                "end",
                "score",
                "games",
                "forfeit",
                "s",
            )
            + "<tbody>"
            + "".join(rows)
            + "</tbody></table></details>"
        )
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# The page

_CSS = asset_text("report.css")

#: Click (or Enter on) a column heading to sort a table by it; numbers by their value.
_SCRIPT = asset_text("report.js")


def _decision_ms(meta: StoredMeta | None) -> int | None:
    """The run's ``decision_ms``, if its settings are stored."""
    value = None if meta is None else meta.time_control.get("decision_ms")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _settings(meta: StoredMeta | None, show_seed: bool) -> str:
    if meta is None:
        return ""
    # The seed is every deal's secret: a report may be published while the tournament runs,
    # so it shows the seed only when asked to (once the tournament is over, for checking).
    seed = (
        str(meta.seed)
        if show_seed
        else ("drawn for this tournament, " if meta.seed_drawn else "")
        + "not shown (aegis-ref report --show-seed shows it)"
    )
    rules = ", ".join(f"{key} {value}" for key, value in sorted(meta.rules.items()))
    clock = ", ".join(
        f"{key} {'none' if value is None else value}"
        for key, value in sorted(meta.time_control.items())
    )
    return (
        '<dl class="settings">'
        f"<dt>rules</dt><dd>{_e(rules or 'defaults')}</dd>"
        f"<dt>time control</dt><dd>{_e(clock)}</dd>"
        f"<dt>seed</dt><dd>{_e(seed)}</dd></dl>"
    )


def _every(points: int, matches: int) -> str:
    """How often the progression was sampled, in words."""
    if points == 0:
        return "(nothing stored yet)"
    if points >= matches:
        return "after every match"
    return f"at {points} points of the run (about every {math.ceil(matches / points)} matches)"


def render_report(
    data: ReportData,
    *,
    records: str = ".",
    replays: Mapping[str, str] | None = None,
    generated: datetime | None = None,
    show_seed: bool = False,
    live_url: str | None = None,
) -> str:
    """The page, from data already read: ``records`` is the output directory relative to
    the report's directory, for the links to match records; ``replays`` the replay page of
    each match id that has one, relative to the report's directory (a match without one
    links to its record); the master seed is shown only with ``show_seed``; ``live_url``,
    if given, is linked as the run's live pages."""
    replays = replays or {}
    standings, progression = data.standings, data.progression
    generated = generated or datetime.now(UTC)
    title = f"Tournament report: {standings.name or 'unnamed'}"
    played, scheduled = standings.matches_played, standings.matches_scheduled
    anchoring = f"Elo of {standings.anchor} fixed at 1500" if standings.anchor else "mean Elo 1500"
    ladder = ladder_line(standings)
    summary = (
        (
            f"{played} of {scheduled} scheduled matches stored"
            + (" (in progress or interrupted)" if played < scheduled else "")
            if ladder is None
            else f"{played} matches stored. {ladder}"
        )
        + f", {standings.games} games, {len(standings.rows)} bots"
        + (f", {standings.void} void" if standings.void else "")
        + f"; {anchoring}"
    )
    confidence = f"{100 * standings.fit.confidence:.0f}%"
    points = len(progression)
    sections = [
        (
            "standings",
            "Standings",
            '<div class="scroll">' + _standings_table(standings) + "</div>"
            '<p class="note">Ranked by Elo. A forfeit is a loss for the bot that faulted; a void '
            "match (both bots failed before the first game) counts for nobody. Click a heading to "
            "sort.</p>",
        ),
        (
            "elo",
            "Elo ratings",
            '<figure id="elo-chart">'
            + _elo_chart(standings)
            + f"<figcaption>Each dot is a bot's Elo, the bar its {confidence} confidence interval"
            + (
                " with the duplicate pair as the unit (its two matches share their deals), the "
                "grey band the interval that counts every match as independent"
                if standings.fit.unit == PAIR_UNIT
                else ""
            )
            + "; ratings are fitted jointly to every result (Bradley-Terry) with one virtual "
            f"drawn match per pairing ({standings.fit.virtual_draws:g}).</figcaption></figure>"
            + (
                "<h3>Likelihood of superiority: how likely the row bot is stronger than the "
                "column bot</h3>" + '<div class="scroll">' + _los_table(standings) + "</div>"
                if len(standings.fit.los) > 1
                else ""
            ),
        ),
        (
            "crosstable",
            "Crosstable",
            '<figure id="crosstable-heatmap"><div class="scroll">'
            + _heatmap(standings)
            + "</div><figcaption>Each cell is the row bot's wins-losses against the column bot, "
            "coloured by the row bot's share of the wins; hover a cell for the likelihood of "
            "superiority.</figcaption></figure>",
        ),
        (
            "progression",
            "Rating progression",
            '<figure id="progression-chart">'
            + _progression_chart(progression, standings, played)
            + "<figcaption>Every bot's Elo refitted to the results so far "
            + f"{_every(points, played)}, in the order the matches were stored"
            + (
                f"; the {MAX_PROGRESSION_LINES} best bots of {len(standings.rows)} are drawn"
                if len(standings.rows) > MAX_PROGRESSION_LINES
                else ""
            )
            + ".</figcaption></figure>",
        ),
        (
            "faults",
            "Faults and timing",
            '<div class="scroll">'
            + _faults_section(data.faults, standings, records, replays, _decision_ms(data.meta))
            + "</div>"
            + '<p class="note">Forfeits: matches lost by the bot\'s own fault. Faults: every fault '
            "recorded, including both of a void match. Decision times are the referee's, in ms: "
            "wall, from request to answer, and CPU, what the CPU clock charged (the CPU time of "
            "all the bot's processes and threads; none on the wall clock). Budget used: the "
            "bot's largest charge (CPU on the CPU clock, else wall) over decision_ms. "
            "A bot's output is in the output directory's <code>logs/</code>.</p>",
        ),
        (
            "matches",
            "Matches",
            '<p class="note">Each match id links to its replay, a page that steps through the '
            "match (both hands, exchanges, bids, tricks, faults, decision times), and "
            "<em>jsonl</em> to its record (JSON Lines, <code>docs/records.md</code>); print one "
            "with <code>aegis-ref replay FILE</code>, re-check them all with "
            "<code>aegis-ref verify OUTPUT_DIR</code>.</p>"
            + _matches_section(data.matches, played, records, replays),
        ),
    ]
    warnings = "".join(f'<p class="warning">{_e(warning)}</p>' for warning in standings.warnings)
    body = "".join(
        f'<section id="{anchor}"><h2>{_e(heading)}</h2>{content}</section>'
        for anchor, heading, content in sections
    )
    nav = "".join(f'<a href="#{anchor}">{_e(heading)}</a>' for anchor, heading, _ in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n"
        + (SEED_SHOWN + "\n" if show_seed else "")
        + "</head>\n<body>\n"
        f"<header><h1>{_e(title)}</h1>"
        f'<p class="meta" id="summary">{_e(summary)}</p>'
        + _settings(data.meta, show_seed)
        + f'<p class="meta">Generated by aegis-ref on {generated:%Y-%m-%d %H:%M} UTC.</p>'
        + (
            f'<p class="meta" id="live">Live: <a href="{_e(live_url)}">{_e(live_url)}</a> '
            "(the standings as each match finishes, the matches being played).</p>"
            if live_url
            else ""
        )
        + f"</header>\n<nav>{nav}</nav>\n{warnings}\n{body}\n"
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def build_report(
    connection: sqlite3.Connection,
    *,
    anchor: str | None = None,
    records: str = ".",
    points: int = MAX_PROGRESSION_POINTS,
    generated: datetime | None = None,
    show_seed: bool = False,
    live_url: str | None = None,
) -> str:
    """The report of the store behind ``connection``, read in one transaction; ``anchor``
    overrides the stored rating anchor (as ``aegis-ref standings --anchor`` does), and
    ``show_seed`` shows the master seed."""
    return render_report(
        read_report(connection, anchor=anchor, points=points),
        records=records,
        generated=generated,
        show_seed=show_seed,
        live_url=live_url,
    )


def write_replay_pages(
    output_dir: Path, matches: Sequence[StoredMatch], pages: Path, report: Path
) -> dict[str, str]:
    """Write a replay page in ``pages`` for each match, from its record in ``output_dir``
    (a page made from the same record and for the same report is kept: records never
    change); return each page's path relative to the report's directory, by match id.

    A match whose record cannot be read gets no page (the report links to its record).
    """
    written: dict[str, str] = {}
    folder = pages.resolve()
    report_dir = report.resolve().parent
    back = Path(os.path.relpath(report.resolve(), folder)).as_posix()
    for match in matches:
        record = output_dir / match.record_path
        page = pages / f"{Path(match.record_path).stem}.html"
        links = [
            ("report", back),
            ("record", Path(os.path.relpath(record.resolve(), folder)).as_posix()),
        ]
        try:
            write_replay_page(
                record,
                page,
                title=f"Replay: {match.match_id}, {match.seats[0]} vs {match.seats[1]}",
                links=links,
                reuse=True,
            )
        except (OSError, RecordReadError):
            continue
        relative = Path(os.path.relpath(page.resolve(), report_dir)).as_posix()
        written[match.match_id] = quote(relative, safe="/")
    return written


def write_report(
    output_dir: Path,
    destination: Path | None = None,
    *,
    anchor: str | None = None,
    show_seed: bool = False,
    live_url: str | None = None,
) -> Path:
    """Write the report of a tournament's output directory (default:
    ``OUTPUT_DIR/report.html``) and return its path, with a replay page for every match it
    lists in :data:`REPLAYS_DIR` beside it; the master seed is in it only with
    ``show_seed``; ``live_url``, if given, is linked as the run's live pages.

    Raises :class:`~tournaments.errors.TournamentError` if the directory holds no results
    store, if ``anchor`` names no bot, or if the report or its folder of replays cannot be
    written.
    """
    destination = destination if destination is not None else output_dir / REPORT_NAME
    connection = open_store(output_dir, read_only=True)
    try:
        if anchor is not None:
            known = [row.name for row in load_standings(connection).rows]
            if anchor not in known:
                raise TournamentError(f"--anchor: unknown bot {anchor!r}; bots: {', '.join(known)}")
        data = read_report(connection, anchor=anchor)
    finally:
        connection.close()
    pages = destination.parent / REPLAYS_DIR
    try:
        pages.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise TournamentError(
            f"cannot make the folder of replays {pages}: {error.strerror or error}"
        ) from None
    replays = write_replay_pages(output_dir, data.matches, pages, destination)
    records = os.path.relpath(output_dir.resolve(), destination.resolve().parent)
    text = render_report(
        data, records=records, replays=replays, show_seed=show_seed, live_url=live_url
    )
    try:
        write_atomically(destination, lambda stream: stream.write(text))
    except OSError as error:
        raise TournamentError(
            f"cannot write the report {destination}: {error.strerror or error}"
        ) from None
    return destination


def report_page_policy() -> str:
    """The Content-Security-Policy a server sends with the report: its own inline script
    (by hash) and styles alone, no fetch, no image. Styles are allowed inline because the
    likelihood-of-superiority cells carry their colour in a ``style`` attribute, which a
    hash cannot allow; every text in the page is escaped, so no stranger writes one."""
    return (
        f"default-src 'none'; script-src {inline_hash(_SCRIPT)}; style-src 'unsafe-inline'; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
