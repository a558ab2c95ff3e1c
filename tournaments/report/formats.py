"""The standings as plain text: JSON, CSV, Markdown and an HTML table (``aegis-ref standings
--format``), and the cells the terminal's tables share with them. No rich: the HTML report
and the web service read the standings from here, and only the terminal renderer
(:mod:`tournaments.report.terminal`) draws tables."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Callable, Mapping
from typing import Any

from tournaments.stats.ratings import PAIR_UNIT
from tournaments.stats.standings import Standings, StandingsRow

__all__ = [
    "CSV_COLUMNS",
    "CSV_LADDER_COLUMNS",
    "FORMATS",
    "column_headings",
    "crosstable_cell",
    "ladder_line",
    "row_cells",
    "standings_json",
    "summary_line",
    "to_csv",
    "to_html",
    "to_json",
    "to_markdown",
]

#: The columns of the CSV form, in order.
CSV_COLUMNS = (
    "rank",
    "name",
    "elo",
    "elo_low",
    "elo_high",
    "matches",
    "wins",
    "losses",
    "win_pct",
    "games",
    "games_won",
    "avg_points_for",
    "avg_points_against",
    "forfeits",
    "void",
    "elo_match_low",
    "elo_match_high",
)

#: The column a ladder's CSV adds after :data:`CSV_COLUMNS`: each bot's place in the race
#: ("contender", "out" of the race or "finalist"); other formats have no race, so no column.
CSV_LADDER_COLUMNS = ("status",)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


_NONE = "-"


def _elo(value: float | None) -> str:
    return _NONE if value is None else f"{value:.0f}"


def _half_width(elo: float | None, high: float | None) -> str:
    """Half the width of a confidence interval, which is symmetric: ``±43``."""
    return _NONE if elo is None or high is None else f"±{high - elo:.0f}"


def _by_pair(standings: Standings) -> bool:
    """True if the intervals treat a duplicate pair as the unit (the match one is shown too)."""
    return standings.fit.unit == PAIR_UNIT


def _percent(value: float | None) -> str:
    return _NONE if value is None else f"{100 * value:.1f}"


def _average(value: float | None) -> str:
    return _NONE if value is None else f"{value:.2f}"


def _forfeits(row: StandingsRow) -> str:
    kinds = row.record.forfeits
    total = sum(kinds.values())
    if not total:
        return "0"
    return f"{total} ({', '.join(f'{kind} {count}' for kind, count in sorted(kinds.items()))})"


def crosstable_cell(
    table: Mapping[str, Mapping[str, tuple[int, int]]], row: str, column: str
) -> str:
    """A crosstable's cell: the ``row`` bot's wins-losses against the ``column`` bot."""
    if row == column:
        return "·"
    found = table.get(row, {}).get(column)
    return "" if found is None else f"{found[0]}-{found[1]}"


# ---------------------------------------------------------------------------------------------
# Plain data


def standings_json(standings: Standings) -> dict[str, Any]:
    """The standings as JSON-ready data (the ``--format json`` document)."""
    names = [row.name for row in standings.rows]
    return {
        "tournament": standings.name,
        "matches_played": standings.matches_played,
        "matches_scheduled": standings.matches_scheduled,
        "matches_unscheduled": standings.matches_unscheduled,
        "unscheduled_bots": list(standings.unscheduled_bots),
        "games": standings.games,
        "void": standings.void,
        "anchor": standings.anchor,
        "confidence": standings.fit.confidence,
        "interval_unit": standings.fit.unit,
        "virtual_draws": standings.fit.virtual_draws,
        "warnings": list(standings.warnings),
        **_ladder_json(standings),
        "bots": [
            {
                "rank": row.rank,
                "name": row.name,
                "elo": _round(row.rating.elo, 1),
                "elo_low": _round(row.rating.low, 1),
                "elo_high": _round(row.rating.high, 1),
                "elo_stderr": _round(row.rating.stderr, 1),
                "elo_match_low": _round(row.rating.match_low, 1),
                "elo_match_high": _round(row.rating.match_high, 1),
                "elo_match_stderr": _round(row.rating.match_stderr, 1),
                "matches": row.record.matches,
                "wins": row.record.wins,
                "losses": row.record.losses,
                "win_pct": _round(
                    None if row.record.win_rate is None else 100 * row.record.win_rate, 2
                ),
                "void": row.record.void,
                "games": row.record.games,
                "games_won": row.record.games_won,
                "avg_points_for": _round(row.record.points_for_per_game, 3),
                "avg_points_against": _round(row.record.points_against_per_game, 3),
                "forfeits": sum(row.record.forfeits.values()),
                "forfeits_by_kind": dict(sorted(row.record.forfeits.items())),
                **({"status": standings.status(row.name)} if standings.ladder else {}),
            }
            for row in standings.rows
        ],
        "crosstable": {
            name: {
                other: {"wins": found[0], "losses": found[1]}
                for other in names
                if (found := standings.crosstable.get(name, {}).get(other)) is not None
            }
            for name in names
        },
        "pairs": {
            name: {
                other: {
                    "won_both": pairs.won_both,
                    "split": pairs.split,
                    "lost_both": pairs.lost_both,
                }
                for other in names
                if (pairs := standings.pairs.get(name, {}).get(other)) is not None
            }
            for name in names
        },
        "los": {
            name: {other: round(value, 4) for other, value in standings.fit.los[name].items()}
            for name in names
            if name in standings.fit.los
        },
    }


def _ladder_json(standings: Standings) -> dict[str, Any]:
    """A ladder's round, phase and certification (nothing for the other formats)."""
    ladder = standings.ladder
    if ladder is None:
        return {}
    return {
        "ladder": {
            "round": ladder.round,
            "phase": ladder.phase,
            "finished": ladder.stop,
            "certification": ladder.certification,
            "byes": list(ladder.byes),
        }
    }


def ladder_line(standings: Standings) -> str | None:
    """``Ladder round 4 (swiss): top 3 certified at 95 %`` for a ladder, else None."""
    ladder = standings.ladder
    if ladder is None:
        return None
    where = (
        f"finished after {ladder.round - 1} round(s)"
        if ladder.stop
        else f"round {ladder.round} ({ladder.phase})"
    )
    return f"Ladder {where}: {ladder.certification}"


def to_json(standings: Standings) -> str:
    """The standings as an indented JSON document."""
    return json.dumps(standings_json(standings), indent=2, ensure_ascii=False) + "\n"


def to_csv(standings: Standings) -> str:
    """One line per bot under a header of :data:`CSV_COLUMNS` (and, for a ladder,
    :data:`CSV_LADDER_COLUMNS`); empty cells for no value."""
    columns = CSV_COLUMNS + (CSV_LADDER_COLUMNS if standings.ladder else ())
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(columns)
    for bot in standings_json(standings)["bots"]:
        writer.writerow(["" if bot[column] is None else bot[column] for column in columns])
    return stream.getvalue()


def column_headings(standings: Standings, *, short: bool = False) -> list[str]:
    """Column headings of the human forms: ``short`` ones fit a terminal of 80 columns. A
    void column only when some match was void; the interval by duplicate pair and the one by
    match when the fit had the pairs, else the one by match."""
    confidence = f"±{100 * standings.fit.confidence:.0f}%"
    if not _by_pair(standings):
        intervals = [confidence]
    elif short:
        intervals = ["±pair", "±match"]
    else:
        intervals = [f"{confidence} pair", f"{confidence} match"]
    headings = [
        "#",
        "bot",
        "Elo",
        *intervals,
        "W-L",
        "win%" if short else "win %",
        "games" if short else "games won",
        "pts/g" if short else "pts/game",
        "opp/g" if short else "opp/game",
        "forfeits",
        *(["status"] if standings.ladder else []),
    ]
    return [*headings, "void"] if standings.void else headings


def row_cells(row: StandingsRow, standings: Standings) -> list[str]:
    """A bot's cells under :func:`column_headings`."""
    record, rating = row.record, row.rating
    intervals = [_half_width(rating.elo, rating.high)]
    if _by_pair(standings):
        intervals.append(_half_width(rating.elo, rating.match_high))
    cells = [
        str(row.rank),
        row.name,
        _elo(rating.elo),
        *intervals,
        f"{record.wins}-{record.losses}",
        _percent(record.win_rate),
        f"{record.games_won}/{record.games}",
        _average(record.points_for_per_game),
        _average(record.points_against_per_game),
        _forfeits(row),
        *([standings.status(row.name) or "-"] if standings.ladder else []),
    ]
    return [*cells, str(record.void)] if standings.void else cells


def summary_line(standings: Standings) -> str:
    """The line above the standings: matches, games, mean Elo (and the ladder's status)."""
    ladder = ladder_line(standings)
    return (
        (
            f"{standings.matches_played}/{standings.matches_scheduled} matches, "
            if ladder is None  # a ladder's schedule grows round by round
            else f"{standings.matches_played} matches, "
        )
        + f"{standings.games} games"
        + (f", {standings.void} void" if standings.void else "")
        + (f"; Elo anchor {standings.anchor} = 1500" if standings.anchor else "; mean Elo 1500")
        + (f". {ladder}" if ladder else "")
    )


def to_markdown(standings: Standings) -> str:
    """The standings and the crosstable as Markdown tables."""

    def escape(text: str) -> str:
        return text.replace("|", "\\|")

    headings = column_headings(standings)
    lines = [
        f"## Standings: {escape(standings.name)}",
        "",
        summary_line(standings),
        "",
        "| " + " | ".join(headings) + " |",
        "|" + "|".join("---" if heading == "bot" else "---:" for heading in headings) + "|",
    ]
    lines += [
        "| " + " | ".join(escape(cell) for cell in row_cells(row, standings)) + " |"
        for row in standings.rows
    ]
    for warning in standings.warnings:
        lines += ["", f"> Warning: {escape(warning)}"]
    names = [row.name for row in standings.rows]
    lines += [
        "",
        "### Crosstable: row's wins-losses against column",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    lines += [
        f"| {name} | "
        + " | ".join(crosstable_cell(standings.crosstable, name, other) for other in names)
        + " |"
        for name in names
    ]
    return "\n".join(lines) + "\n"


def to_html(standings: Standings) -> str:
    """A standalone HTML page with the standings and the crosstable."""
    escape = html.escape
    headings = column_headings(standings)
    names = [row.name for row in standings.rows]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        f"<title>Standings: {escape(standings.name)}</title>",
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin:1em 0}"
        "th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right}"
        "td.name,th.name{text-align:left}</style>",
        "</head>",
        "<body>",
        f"<h1>Standings: {escape(standings.name)}</h1>",
        f"<p>{escape(summary_line(standings))}</p>",
    ]
    parts += [
        f'<p class="warning">Warning: {escape(warning)}</p>' for warning in standings.warnings
    ]
    parts.append('<table class="standings">')
    parts.append(
        "<tr>"
        + "".join(
            f'<th class="name">{escape(h)}</th>' if h == "bot" else f"<th>{escape(h)}</th>"
            for h in headings
        )
        + "</tr>"
    )
    for row in standings.rows:
        cells = row_cells(row, standings)
        parts.append(
            "<tr>"
            + "".join(
                (
                    f'<td class="name">{escape(cell)}</td>'
                    if index == 1
                    else f"<td>{escape(cell)}</td>"
                )
                for index, cell in enumerate(cells)
            )
            + "</tr>"
        )
    parts.append("</table>")
    parts.append("<h2>Crosstable: row's wins-losses against column</h2>")
    parts.append('<table class="crosstable">')
    parts.append("<tr><th></th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>")
    for name in names:
        parts.append(
            f'<tr><th class="name">{escape(name)}</th>'
            + "".join(
                f"<td>{escape(crosstable_cell(standings.crosstable, name, other))}</td>"
                for other in names
            )
            + "</tr>"
        )
    parts += ["</table>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


#: The text forms of ``aegis-ref standings --format``.
FORMATS: dict[str, Callable[[Standings], str]] = {
    "csv": to_csv,
    "json": to_json,
    "markdown": to_markdown,
    "html": to_html,
}
