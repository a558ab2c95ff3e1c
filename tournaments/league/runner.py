"""A league: a tournament that takes in submitted bots as they arrive, until stopped.

:func:`run_league` is ``aegis-ref league`` minus argument parsing. In a loop, until a stop
request:

1. build and check every submission waiting (:meth:`SubmissionStore.process`), one at a
   time and never during a match (a build would take CPU from the bots on the clock);
   one whose build was cut short by a killed league is built again from its source;
2. play the tournament of the config's bots and the latest accepted version of each
   submitted bot (:func:`~tournaments.run.coordinator.run_tournament`): the store schedules only
   the pairings it lacks, so a new bot (or version) plays everyone, nobody else plays
   again, and a version replaced by a newer one is retired (its unplayed matches leave the
   schedule; its results leave the standings and stay in the store as its history); with
   ``format: ladder``, a new bot joins the ladder's next round instead and is placed by its
   pairing (:mod:`tournaments.run.ladder_run`);
3. when a submission arrives during a round, finish the matches in progress, then go back
   to 1; when everything is played, look for submissions every ``poll_s`` seconds.

Every match is stored once, whatever the restarts: the store's own guarantee.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tournaments.config.tournament import TournamentSetup
from tournaments.league.submissions import State, Submission, SubmissionStore, enter_submissions
from tournaments.run.coordinator import StopRequest, run_tournament
from tournaments.run.display import TournamentDisplay
from tournaments.stats.ratings import fit_elo
from tournaments.stats.standings import BotRecord, tally, win_counts
from tournaments.store.database import result_groups, retired_bots, stored_bots

__all__ = [
    "LeagueSummary",
    "VersionHistory",
    "bot_history",
    "describe_verdict",
    "run_league",
]

_STOP_CHECK_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class LeagueSummary:
    """What a league run did before it stopped."""

    rounds: int
    played: int
    accepted: int
    rejected: int
    #: Why the league gave up, if it did (a worker died, a match raised).
    failure: str | None = None


def describe_verdict(submission: Submission) -> str:
    """One line (two or more for a rejection) on how a submission ended."""
    title = f"{submission.name} {submission.version}"
    if submission.state is State.ACCEPTED:
        return f"Accepted {title} ({submission.manifest.language}, by {submission.manifest.author})"
    if submission.state is State.REJECTED:
        lines = [f"Rejected {title}:", *(f"  - {reason}" for reason in submission.reasons)]
        if submission.build_tail:
            lines.append(f"  the build's last lines (all of them in {submission.build_log}):")
            lines += [f"    | {line}" for line in submission.build_tail]
        return "\n".join(lines)
    return f"{title}: {submission.state.value}"


def _stopped(stop: StopRequest) -> bool:
    return stop.requested


def _sleep(stop: StopRequest, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not stop.requested and time.monotonic() < deadline:
        time.sleep(min(_STOP_CHECK_SECONDS, max(0.0, deadline - time.monotonic())))


def _watch(
    store: SubmissionStore,
    fingerprint: object,
    stop: StopRequest,
    round_stop: StopRequest,
    over: threading.Event,
    poll_s: float,
) -> None:
    """Stop the round when the league is asked to stop, or when the store of submissions
    changes (one arrived): then the league takes it in and plays on."""
    next_look = time.monotonic() + poll_s
    while not over.wait(_STOP_CHECK_SECONDS):
        if stop.requested:
            round_stop.request(stop.signal_number or 2)
            return
        if time.monotonic() >= next_look:
            next_look = time.monotonic() + poll_s
            if store.fingerprint() != fingerprint:
                round_stop.request()
                return


def run_league(
    setup: TournamentSetup,
    *,
    display: TournamentDisplay,
    stop: StopRequest,
    say: Callable[[str], None],
    once: bool = False,
    poll_s: float | None = None,
) -> LeagueSummary:
    """Run the league of ``setup`` (a config with ``submissions``) until ``stop`` is
    requested; with ``once``, until every waiting submission is processed and every match
    played. ``say`` hears what happens to the submissions. Raises :class:`TournamentError`
    before anything is done for a store another league holds, or without a sandbox."""
    store = SubmissionStore(setup)
    assert setup.submissions is not None
    poll = poll_s if poll_s is not None else setup.submissions.poll_s
    rounds = played = accepted = rejected = 0
    with store.league_lock():
        store.sandbox()  # no sandbox, no league: fail now, not at the first submission
        say(f"League {setup.name}: submissions in {store.folder}, results in {setup.output}")
        settled: object = None  # the store's state when everything was last played
        warned: set[str] = set()
        while not _stopped(stop):
            waiting = store.pending()
            for problem in set(store.problems) - warned:
                say(f"WARNING: {problem}")
                warned.add(problem)
            for submission in waiting:
                if _stopped(stop):
                    break
                done = store.process(submission, say=say)
                if done is not None and done.state.is_final:
                    accepted += done.state is State.ACCEPTED
                    rejected += done.state is State.REJECTED
                    say(describe_verdict(done))
            if _stopped(stop):
                break
            fingerprint = store.fingerprint()
            if fingerprint != settled:
                entered = enter_submissions(setup)
                if len(entered.bots) < 2:
                    say(f"Waiting for submissions: {len(entered.bots)} bot(s) so far, 2 needed")
                    settled = fingerprint
                    continue
                round_stop = StopRequest()
                over = threading.Event()
                watcher = threading.Thread(
                    target=_watch,
                    args=(store, fingerprint, stop, round_stop, over, poll),
                    name="league-watch",
                    daemon=True,
                )
                watcher.start()
                try:
                    summary, _ = run_tournament(entered, display=display, stop=round_stop, warn=say)
                finally:
                    over.set()
                    watcher.join()
                rounds += 1
                played += summary.played
                if summary.failure is not None:
                    return LeagueSummary(rounds, played, accepted, rejected, summary.failure)
                if summary.complete:
                    settled = fingerprint
                continue
            if once:
                break
            _sleep(stop, poll)
    return LeagueSummary(rounds, played, accepted, rejected)


@dataclass(frozen=True, slots=True)
class VersionHistory:
    """One version of a bot in a league's results: when it entered, when it was
    replaced, and its record over every match it played."""

    player: str
    #: None for a bot of the config (no version).
    version: str | None
    entered_at: str
    retired_at: str | None
    replaced_by: str | None
    record: BotRecord
    #: Its Elo over every stored match of every version (None before its first result).
    elo: float | None

    @property
    def current(self) -> bool:
        """True for the version that plays now."""
        return self.retired_at is None


def bot_history(connection: sqlite3.Connection, name: str) -> list[VersionHistory]:
    """Every version of the bot ``name`` in the store behind ``connection``, oldest first
    (a config's bot ``name`` has one); empty for a name the store never saw."""
    bots = stored_bots(connection)
    retired = retired_bots(connection)
    mine = [bot for bot in bots if bot.name == name or bot.name.startswith(f"{name}@")]
    if not mine:
        return []
    # A replaced version's matches have left the current schedule, not its history.
    groups = list(result_groups(connection, unscheduled_too=True))
    everyone = [bot.name for bot in bots]
    records = tally(everyone, groups)
    ratings = fit_elo(list(records), win_counts(groups)).ratings
    history = []
    for bot in mine:
        gone = retired.get(bot.name)
        history.append(
            VersionHistory(
                player=bot.name,
                version=bot.name.partition("@")[2] or None,
                entered_at=bot.first_seen,
                retired_at=gone.retired_at if gone else None,
                replaced_by=gone.replaced_by if gone else None,
                record=records[bot.name],
                elo=ratings[bot.name].elo,
            )
        )
    return history
