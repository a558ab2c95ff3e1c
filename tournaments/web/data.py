"""The documents of the JSON API (version :data:`API_VERSION`), built from a run's store.

Each function takes an open read-only connection and reads in one short transaction
(:func:`~tournaments.store.snapshot`), so that a writer's WAL can always be checkpointed;
the service calls them once per change of the store, never once per viewer. Everything
here is plain data (``dict``, ``list``, ``str``, numbers): the pages draw it as text.

Never in a document: the master seed, the bots' command lines and environment, the
organiser's config beyond what the standings show.
"""

from __future__ import annotations

import re
import sqlite3
from collections import deque
from typing import Any
from urllib.parse import quote

from protocol.codes import FaultKind
from referee.faults import Fault, fault_reason
from tournaments.league.runner import bot_history
from tournaments.report.formats import standings_json
from tournaments.report.report_data import fault_summary, rating_progression
from tournaments.stats.standings import load_standings
from tournaments.store.database import (
    StoredMatch,
    recent_matches,
    snapshot,
    stored_activity,
    stored_bot_names,
    stored_match,
)

__all__ = [
    "API_VERSION",
    "LIVE_MATCHES",
    "MATCH_ID",
    "RECENT_MATCHES",
    "bot_document",
    "bots_document",
    "live_document",
    "match_document",
    "matches_document",
    "progression_document",
    "standings_document",
]

#: The version of the JSON API: its path is ``/api/v1/...``; a field may be added within a
#: version, never removed or changed in meaning.
API_VERSION = 1
#: Matches listed by ``/api/v1/matches`` (the latest) and on a bot's page.
RECENT_MATCHES = 50
#: Matches an ``update`` event carries (the latest).
LIVE_MATCHES = 10
#: Faults listed one by one on a bot's page (the latest).
BOT_FAULTS = 20
#: What a match id looks like (tournaments.schedule.match_id): anything else is not looked up.
MATCH_ID = re.compile(
    r"r[0-9]{1,9}-[A-Za-z0-9][A-Za-z0-9_.@-]{0,200}\+[A-Za-z0-9][A-Za-z0-9_.@-]{0,200}"
)


def _link(*parts: str) -> str:
    return "/" + "/".join(quote(part, safe="") for part in parts)


def _match_json(match: StoredMatch) -> dict[str, Any]:
    return {
        "match_id": match.match_id,
        "seats": list(match.seats),
        "winner": match.winner,
        "termination": match.termination,
        "scores": list(match.scores),
        "games": match.games,
        "forfeit_bot": match.forfeit_bot,
        "forfeit_kind": match.forfeit_kind,
        "duration_s": round(match.duration_s, 3),
        "replay": _link("replay", match.match_id),
        "record": _link("api", f"v{API_VERSION}", "matches", match.match_id, "record"),
    }


def standings_document(connection: sqlite3.Connection) -> dict[str, Any]:
    """``/api/v1/standings``: the standings as ``aegis-ref standings --format json`` prints
    them (the same table, intervals, crosstable and warnings), and the matches left to play."""
    standings = load_standings(connection)
    document = standings_json(standings)
    document["matches_to_play"] = max(standings.matches_scheduled - standings.matches_played, 0)
    return document


def live_document(connection: sqlite3.Connection) -> dict[str, Any]:
    """What an ``update`` event of ``/api/v1/events`` carries: the standings document and
    the latest :data:`LIVE_MATCHES` matches, read together (what the standings page
    draws, so that a thousand open pages cost no request at each change)."""
    with snapshot(connection):
        standings = standings_document(connection)
        recent = recent_matches(connection, LIVE_MATCHES)
    return {"standings": standings, "recent": [_match_json(match) for match in recent]}


def bots_document(connection: sqlite3.Connection) -> dict[str, Any]:
    """``/api/v1/bots``: every bot the store knows, with its rank if it plays now."""
    with snapshot(connection):
        standings = load_standings(connection)
        names = stored_bot_names(connection)
    ranked = {row.name: row for row in standings.rows}
    bots = []
    for name in names:
        row = ranked.get(name)
        bots.append(
            {
                "name": name,
                "plays": row is not None,
                "rank": row.rank if row else None,
                "elo": None if row is None or row.rating.elo is None else round(row.rating.elo, 1),
                "matches": row.record.matches if row else None,
                "page": _link("bots", name),
            }
        )
    return {"bots": bots}


def matches_document(connection: sqlite3.Connection) -> dict[str, Any]:
    """``/api/v1/matches``: the latest stored matches with links to their replays and
    records, and how many are left to play."""
    with snapshot(connection):
        standings = load_standings(connection)
        recent = recent_matches(connection, RECENT_MATCHES)
    return {
        "matches_played": standings.matches_played,
        "matches_to_play": max(standings.matches_scheduled - standings.matches_played, 0),
        "recent": [_match_json(match) for match in recent],
    }


def match_document(connection: sqlite3.Connection, match_id: str) -> dict[str, Any] | None:
    """``/api/v1/matches/ID``: one stored match; None for an id the store does not hold."""
    if not MATCH_ID.fullmatch(match_id):
        return None
    match = stored_match(connection, match_id)
    return None if match is None else _match_json(match)


def _explained(kind: str, seat: int, bot: str, detail: str, game: int | None,
               decision: int | None, tail: tuple[str, ...]) -> str:  # fmt: skip
    try:
        fault = Fault(FaultKind(kind), seat, bot, detail, game, decision, tail)
    except ValueError:  # a kind this version does not know: said as stored
        return f"{kind}: {detail}"
    return fault_reason(fault, hint=False)


def bot_document(connection: sqlite3.Connection, name: str) -> dict[str, Any] | None:
    """``/api/v1/bots/NAME``: a bot's versions, its results against each opponent, its
    faults with their explanation and its decision times; None for a bot the store never
    saw."""
    with snapshot(connection):
        versions = bot_history(connection, name)
        if not versions:
            return None
        standings = load_standings(connection)
        players = {version.player for version in versions}
        summary = fault_summary(connection, sorted(players), latest=0)
        faults: deque[dict[str, Any]] = deque(maxlen=BOT_FAULTS)
        matches: deque[dict[str, Any]] = deque(maxlen=RECENT_MATCHES)
        for activity in stored_activity(connection):
            if not players & set(activity.seats):
                continue
            matches.append({"match_id": activity.match_id})
            for fault in activity.faults:
                if fault.bot in players:
                    faults.append(
                        {
                            "match_id": activity.match_id,
                            "bot": fault.bot,
                            "kind": fault.kind,
                            "game": fault.game,
                            "decision": fault.decision,
                            "explanation": _explained(
                                fault.kind,
                                fault.seat,
                                fault.bot,
                                fault.detail,
                                fault.game,
                                fault.decision,
                                fault.stderr_tail,
                            ),
                            "replay": _link("replay", activity.match_id),
                        }
                    )
        shown = [stored_match(connection, entry["match_id"]) for entry in reversed(matches)]
    row = next((row for row in standings.rows if row.name in players), None)
    opponents = []
    for player in sorted(players):
        for other, (wins, losses) in sorted(standings.crosstable.get(player, {}).items()):
            pairs = standings.pairs.get(player, {}).get(other)
            opponents.append(
                {
                    "bot": player,
                    "opponent": other,
                    "wins": wins,
                    "losses": losses,
                    "pairs_won_both": pairs.won_both if pairs else None,
                    "pairs_split": pairs.split if pairs else None,
                    "pairs_lost_both": pairs.lost_both if pairs else None,
                }
            )
    times = []
    for player in sorted(players):
        spent = summary.bots[player]
        times.append(
            {
                "bot": player,
                "decisions": spent.decisions,
                "mean_ms": None if spent.mean_ms is None else round(spent.mean_ms, 3),
                "max_ms": None if spent.max_ms is None else round(spent.max_ms, 3),
                "faults_by_kind": dict(sorted(spent.faults.items())),
            }
        )
    return {
        "name": name,
        "rank": row.rank if row else None,
        "elo": None if row is None or row.rating.elo is None else round(row.rating.elo, 1),
        "elo_low": None if row is None or row.rating.low is None else round(row.rating.low, 1),
        "elo_high": None if row is None or row.rating.high is None else round(row.rating.high, 1),
        "versions": [
            {
                "player": version.player,
                "version": version.version,
                "current": version.current,
                "entered_at": version.entered_at,
                "retired_at": version.retired_at,
                "replaced_by": version.replaced_by,
                "matches": version.record.matches,
                "wins": version.record.wins,
                "losses": version.record.losses,
                "elo": None if version.elo is None else round(version.elo, 1),
            }
            for version in versions
        ],
        "opponents": opponents,
        "times": times,
        "faults": list(reversed(faults)),
        "matches": [_match_json(match) for match in shown if match is not None],
    }


def progression_document(connection: sqlite3.Connection, points: int = 20) -> dict[str, Any]:
    """``/api/v1/progression``: each playing bot's Elo after every k-th stored match (the
    report's rating progression, at fewer points)."""
    with snapshot(connection):
        standings = load_standings(connection)
        names = [row.name for row in standings.rows]
        progression = rating_progression(connection, names, anchor=standings.anchor, points=points)
    return {
        "bots": names,
        "points": [
            {
                "matches": point.matches,
                "elo": {bot: round(elo, 1) for bot, elo in point.elo.items()},
            }
            for point in progression
        ],
    }
