"""The coordinator: schedule, hand matches to an executor, store each result as it arrives.

:func:`run_tournament` is the whole of ``aegis-ref tournament`` minus argument parsing:

1. lock the output directory (one writer), open the store, check or write its meta (rules,
   time control and seed may not change under existing results; a config without a seed
   plays from the store's, drawn when the store is made), record the bots and make the
   config's schedule the store's current one (new matches added; those of removed bots, or
   of rounds no longer played, left out of the standings but kept);
2. unless told not to, start every bot once as its matches will, up to its hello
   (:mod:`tournaments.run.pool_preflight`): a bot that cannot get there stops the run here; then
   submit the matches not yet stored, in schedule order, to the executor, keeping only a
   small window of them in flight (never the whole schedule, never all results);
3. store each finished match (record file first, then its row in one transaction) and tell
   the display;
4. on a stop request (Ctrl-C, SIGTERM): submit nothing more, cancel what has not started
   (on a cluster, where cancelling loses a running match, let all in flight finish), store
   what finishes, shut the workers down (they stop their bots) and report.

The executor is the config's ``executor``: the local process pool of :func:`make_executor`,
or a Dask cluster's (:mod:`tournaments.run.cluster`, imported only then). Either way the workers
only play and return plain data; the coordinator alone writes the store.

A run that dies uncleanly (``kill -9``, power loss) loses at most the matches in flight;
running the same command again plays exactly the matches that are not stored.

A ladder (``format: ladder``) has no schedule upfront: its rounds are planned one at a time
from the stored results (:mod:`tournaments.run.ladder_run`), each played as above once the one
before is stored whole, and a run on a store first plans the stored rounds again.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import multiprocessing.context
import os
import signal
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from threadpoolctl import threadpool_limits

from referee.bots import BotSpec
from referee.cgroups import detect_cgroups
from referee.cpu_clock import ClockUnavailableError, clock_summary, resolve_clock
from referee.hub import RemoteHub
from referee.listeners import RemoteLink, listen_problem
from referee.sandbox import SandboxPlan, SandboxUnavailableError, plan_sandbox
from referee.time_control import Clock
from tournaments.config.tournament import TournamentSetup
from tournaments.errors import StoreError, TournamentError
from tournaments.run.display import TournamentDisplay
from tournaments.run.in_play import InPlayNotes
from tournaments.run.ladder_run import Ladder, ladder_budget, settings_for_field
from tournaments.run.pool_preflight import preflight as preflight_bots
from tournaments.run.remote import RemoteGate, advertised_host
from tournaments.run.worker import (
    MatchOutcome,
    MatchTask,
    init_worker,
    play_match_batch,
    play_match_task,
)
from tournaments.run.worker_boot import first_in_workers
from tournaments.schedule.pairings import ScheduledMatch, schedule, schedule_size
from tournaments.schedule.seeds import small_seed_warning
from tournaments.stats.forfeits import BotForfeits, ForfeitTally
from tournaments.stats.ladder import LadderSettings, RoundPlan, check_settings
from tournaments.stats.standings import Standings, load_standings
from tournaments.store.database import (
    add_schedule,
    count_unscheduled,
    ensure_meta,
    is_stored,
    lock_output,
    open_store,
    record_containment,
    record_path,
    remove_stale_temporaries,
    retire_bots,
    retired_counts,
    save_result,
    set_schedule,
    write_record,
)

__all__ = [
    "RunSummary",
    "StopRequest",
    "cpus_text",
    "handle_stop_signals",
    "make_executor",
    "run_tournament",
    "tournament_schedule",
    "worker_cpus",
]


@dataclass(slots=True)
class StopRequest:
    """Set by a signal handler (or a test) to stop a run cleanly."""

    signal_number: int | None = None
    _event: threading.Event = field(default_factory=threading.Event)

    @property
    def requested(self) -> bool:
        """True once a stop was asked for."""
        return self._event.is_set()

    def request(self, signal_number: int = signal.SIGINT) -> None:
        """Ask the run to stop after the matches in progress."""
        if self.signal_number is None:
            self.signal_number = signal_number
        self._event.set()


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run did."""

    output: Path
    #: Matches in this config's schedule, and how many of them were stored before the run.
    total: int
    stored_before: int
    #: Matches this run played and stored.
    played: int
    #: A stop was requested (the run may still have completed).
    interrupted: bool
    #: Why the run gave up, if it did (a worker died, a match raised, a result could not be
    #: stored).
    failure: str | None = None
    #: The bots that lost most of this run's matches to their own faults, worst first.
    forfeits: tuple[BotForfeits, ...] = ()
    #: The run gave up because the store could not be written (a full disk, say).
    store_failed: bool = False
    #: A ladder with rounds still to play (its ``total`` counts the rounds planned so far).
    rounds_open: bool = False

    @property
    def stored(self) -> int:
        """Matches of the schedule now stored."""
        return self.stored_before + self.played

    @property
    def complete(self) -> bool:
        """True when every scheduled match is stored (and a ladder has stopped)."""
        return self.stored == self.total and not self.rounds_open


def tournament_schedule(setup: TournamentSetup) -> Iterator[ScheduledMatch]:
    """The config's schedule, in playing order; the setup's seed must be known
    (:meth:`TournamentSetup.with_seed`)."""
    if setup.seed is None:
        raise ValueError("the schedule needs the master seed, which the results store gives")
    return schedule(
        setup.bot_names,
        format=setup.format,
        gauntlet=setup.gauntlet,
        matches_per_pair=setup.matches_per_pair,
        master_seed=setup.seed,
    )


class _WorkerProcess(multiprocessing.context.SpawnProcess):
    """A pool worker that dies with its coordinator from its first line on
    (:mod:`tournaments.run.worker_boot` runs before its imports), started with SIGINT blocked:
    Ctrl-C reaches the whole foreground process group, and a worker still importing must not
    die of it. :func:`init_worker` then ignores SIGINT and unblocks it (the coordinator alone
    decides how to stop)."""

    def start(self) -> None:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with first_in_workers():
                super().start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


class _WorkerContext(multiprocessing.context.SpawnContext):
    Process = _WorkerProcess


def worker_cpus(concurrency: int) -> list[tuple[int, ...]] | None:
    """The CPUs of each of ``concurrency`` workers: the CPUs this process may use, split into
    equal groups in order (one CPU each when there are as many CPUs as workers; every CPU for
    a single worker); None when there are fewer CPUs than workers. CPUs left over when the
    split is not even are left to the coordinator."""
    allowed = sorted(os.sched_getaffinity(0))
    size = len(allowed) // concurrency
    if size == 0:
        return None
    return [tuple(allowed[index * size : (index + 1) * size]) for index in range(concurrency)]


def cpus_text(cpus: Sequence[int]) -> str:
    """``0``, ``0-3`` or ``0,2,5``: a group of CPUs for people."""
    if len(cpus) > 1 and list(cpus) == list(range(cpus[0], cpus[-1] + 1)):
        return f"{cpus[0]}-{cpus[-1]}"
    return ",".join(str(cpu) for cpu in cpus)


def make_executor(
    concurrency: int, *, cpu_groups: Sequence[tuple[int, ...]] | None = None
) -> ProcessPoolExecutor:
    """The default executor: ``concurrency`` worker processes, started fresh (spawn: no
    inherited threads or sockets), each keeping its own bots alive across matches. A worker
    dies the moment its coordinator does (:mod:`tournaments.run.worker_boot`), or rather the
    thread that started it: submit from a thread that outlives the pool.

    With ``cpu_groups`` (:func:`worker_cpus`), each worker and the bots it starts keep to a
    group of CPUs of their own: matches side by side never compete for a CPU, and with one
    CPU per worker the hand-offs between referee and bots never wait for another CPU to wake.
    """
    context = _WorkerContext()
    slots = None
    if cpu_groups is not None:
        slots = context.Queue()
        for group in cpu_groups:
            slots.put(group)  # each worker takes one as it starts
    return ProcessPoolExecutor(
        max_workers=concurrency, mp_context=context, initializer=init_worker, initargs=(slots,)
    )


@contextlib.contextmanager
def handle_stop_signals(stop: StopRequest, on_first: str, on_second: str) -> Iterator[None]:
    """While inside: the first SIGINT or SIGTERM requests a clean stop (printing
    ``on_first``); a second one ends the process at once (printing ``on_second``), leaving
    the workers to notice and kill their bots. Only in the main thread; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(number: int, _frame: FrameType | None) -> None:
        if stop.requested:
            if os.isatty(1):
                os.write(1, b"\x1b[?25h")  # a live display hid the cursor: show it again
            os.write(2, f"\n{on_second}\n".encode())
            os._exit(128 + (stop.signal_number or number))
        os.write(2, f"\n{on_first}\n".encode())
        stop.request(number)

    previous = {
        number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


#: Matches with remote bots held back at most, waiting for a connection, while later ones play.
_LOOKAHEAD = 1000


def _runner_key(setup: TournamentSetup, link: RemoteLink | None = None) -> str:
    text = repr((setup.options, setup.time_control, setup.bots, link))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Coordinator:
    """The state of one run: the store connection, the executor and the window."""

    def __init__(
        self,
        setup: TournamentSetup,
        executor: Executor,
        display: TournamentDisplay,
        stop: StopRequest,
        *,
        capacity: Callable[[], int] | None = None,
        drain_on_stop: bool = False,
        batch_size: int = 1,
        sandbox: SandboxPlan | None = None,
        remote: tuple[RemoteGate, RemoteLink] | None = None,
    ) -> None:
        self.setup = setup
        #: How the workers start the bots (resolved once, here, for every worker).
        self.sandbox = sandbox
        self.output = setup.output
        self.executor = executor
        self.display = display
        self.stop = stop
        #: Remote bots: which match may go now, and how workers reach the bots (the hub).
        self.gate: RemoteGate | None = None
        self.link: RemoteLink | None = None
        if remote is not None:
            self.gate, self.link = remote
        self.key = _runner_key(setup, self.link)
        #: Matches held back for a remote bot's connection, in schedule order.
        self.held: deque[ScheduledMatch] = deque()
        self.specs = {spec.name: spec for spec in setup.bots}
        self.played = 0
        self.failure: str | None = None
        self.forfeits = ForfeitTally()
        self.store_failed = False
        #: Matches the executor plays at once (worker processes or threads), asked anew as
        #: the window refills: a cluster's workers may come and go.
        self.capacity = capacity or (lambda: setup.concurrency)
        #: On a stop request, let every match in flight finish instead of cancelling those not
        #: started: a Dask future cancels even a running match (whose result is then lost).
        self.drain_on_stop = drain_on_stop
        #: Matches per submitted task (a cluster's ``batch_size``).
        self.batch_size = batch_size
        #: The matches in flight, as written for the web service (in_play.py).
        self.in_play = InPlayNotes(self.output)

    def task(self, match: ScheduledMatch, absent: tuple[str, ...] = ()) -> MatchTask:
        """The plain-data task of a scheduled match; ``absent``: the remote bots it does not
        wait for."""
        return MatchTask(
            match_id=match.match_id,
            seed=match.seed,
            bots=(self.specs[match.seats[0]], self.specs[match.seats[1]]),
            options=self.setup.options,
            time_control=self.setup.time_control,
            output=str(self.output.resolve()),
            runner_key=self.key,
            remote_link=self.link,
            remote_connect_s=self.setup.remote_connect_s,
            absent=absent,
            sandbox=self.sandbox,
        )

    def store(
        self, connection: sqlite3.Connection, match: ScheduledMatch, outcome: MatchOutcome
    ) -> None:
        """Write the record, then the row; tell the display."""
        returned = outcome.row
        if returned.match_id != match.match_id or returned.seats != match.seats:
            raise TournamentError(f"a worker returned {returned.match_id!r} for {match.match_id!r}")
        path = record_path(self.output, match.match_id)
        write_record(path, outcome.record)  # the record first: never a row without it
        row = returned.stored_at(str(path.relative_to(self.output)))
        if save_result(connection, row):
            self.played += 1
            self.forfeits.add(row)
            self.display.match_stored(row)

    def submit(self, batch: list[tuple[ScheduledMatch, tuple[str, ...]]]) -> Future[Any]:
        """Hand one match (or a batch of them) to the executor."""
        if len(batch) == 1:
            return self.executor.submit(play_match_task, self.task(*batch[0]))
        return self.executor.submit(play_match_batch, [self.task(*item) for item in batch])

    def next_batch(
        self, pending: Iterator[ScheduledMatch]
    ) -> list[tuple[ScheduledMatch, tuple[str, ...]]]:
        """The next matches to submit, each with the remote bots it does not wait for: a
        held-back match whose remote bots can play now, else the next ones of the schedule
        (a match with a remote bot alone; those that must wait are held back). Empty when
        nothing may go now."""
        gate = self.gate
        if gate is not None:
            for index, match in enumerate(self.held):
                absent = gate.admit(match)
                if absent is not None:
                    del self.held[index]
                    return [(match, absent)]
        batch: list[tuple[ScheduledMatch, tuple[str, ...]]] = []
        while len(batch) < self.batch_size and len(self.held) < _LOOKAHEAD:
            upcoming = next(pending, None)
            if upcoming is None:
                break
            if gate is None or not gate.involves(upcoming):
                batch.append((upcoming, ()))
                continue
            absent = None if batch else gate.admit(upcoming)
            if absent is None:
                self.held.append(upcoming)  # its turn comes when its bots can play
                continue
            return [(upcoming, absent)]
        return batch

    def finished(self, batch: list[ScheduledMatch]) -> None:
        """The matches of a task are over (played, failed or cancelled)."""
        if self.gate is not None:
            for match in batch:
                if self.gate.involves(match):
                    self.gate.done(match)

    def run(self, connection: sqlite3.Connection, pending: Iterator[ScheduledMatch]) -> None:
        """Keep a window of matches in flight until none is pending or a stop is asked."""
        in_flight: dict[Future[Any], list[ScheduledMatch]] = {}
        try:
            self._run(connection, pending, in_flight)
        finally:
            self._note_in_play({}, final=True)

    def _note_in_play(
        self, in_flight: dict[Future[Any], list[ScheduledMatch]], *, final: bool = False
    ) -> None:
        """Tell the web service which matches are in flight, when that changed (a few
        times a second at most; ``final``: at once)."""
        matches = [match for batch in in_flight.values() for match in batch]
        with contextlib.suppress(OSError):  # for display only: never stops a run
            self.in_play.note(matches, time.monotonic(), final=final)

    def _run(
        self,
        connection: sqlite3.Connection,
        pending: Iterator[ScheduledMatch],
        in_flight: dict[Future[Any], list[ScheduledMatch]],
    ) -> None:
        while True:
            # Two tasks per worker: one playing, one queued, so a worker never waits for the
            # coordinator; never more, so memory stays flat and a stop cancels little.
            window = 2 * max(1, self.capacity())
            while not self.stop.requested and self.failure is None and len(in_flight) < window:
                planned = self.next_batch(pending)
                if not planned:
                    break
                batch = [match for match, _absent in planned]
                try:
                    future = self.submit(planned)
                except (BrokenProcessPool, RuntimeError) as error:
                    self.failure = f"cannot submit match {batch[0].match_id}: {error}"
                    self.finished(batch)
                    break
                in_flight[future] = batch
            if self.failure is not None or (self.stop.requested and not self.drain_on_stop):
                for future in in_flight:
                    future.cancel()  # only those not started; running matches finish
            if not in_flight:
                if not self.held or self.stop.requested or self.failure is not None:
                    return
                time.sleep(0.1)  # every match left waits for a remote bot's connection
                self.display.tick()
                continue
            self._note_in_play(in_flight)
            finished, _ = wait(in_flight, timeout=0.25, return_when=FIRST_COMPLETED)
            self.display.tick()
            # In the order submitted: results are stored in schedule order (matches held back
            # for a remote bot's connection aside), and a failure reported is the first one.
            for future in [future for future in in_flight if future in finished]:
                batch = in_flight.pop(future)
                self.finished(batch)
                first = batch[0].match_id
                if future.cancelled():
                    if self.failure is None and not self.stop.requested:
                        # Not our doing: a cluster that lost its scheduler cancels everything.
                        self.failure = (
                            f"match {first} was cancelled by the executor (a cluster "
                            "client that lost its scheduler cancels every match)"
                        )
                    continue
                problem = future.exception()
                if problem is not None:
                    if self.failure is None:
                        self.failure = f"match {first} failed in its worker: {problem!r}"
                    continue
                result = future.result()
                outcomes: list[MatchOutcome] = [result] if len(batch) == 1 else list(result)
                if len(outcomes) != len(batch):
                    raise TournamentError(
                        f"a worker returned {len(outcomes)} results for {len(batch)} matches"
                    )
                for match, outcome in zip(batch, outcomes, strict=True):
                    try:
                        self.store(connection, match, outcome)
                    except StoreError as error:  # disk full, say: stop cleanly
                        if self.failure is None:
                            self.failure = f"cannot store match {match.match_id}: {error}"
                            self.store_failed = True
                        break


def _open_coordinator(
    setup: TournamentSetup,
    executor: Executor | None,
    display: TournamentDisplay,
    stop: StopRequest,
    resources: contextlib.ExitStack,
    sandbox: SandboxPlan,
) -> _Coordinator:
    """The coordinator with its executor: the given one, the local pool or a Dask cluster's;
    ``resources`` shuts a pool down or disconnects from a cluster when the run ends, and
    closes the remote bots' hub after the workers."""
    hub = _open_hub(setup, resources)
    remote = None
    if hub is not None:
        gate = RemoteGate(
            setup.bots,
            hub.counts,
            wait_s=setup.remote_connect_s,
            note=display.note,
            rejection=hub.rejection,
        )
        remote = (gate, hub.local_link())
    if executor is not None:
        return _Coordinator(setup, executor, display, stop, sandbox=sandbox, remote=remote)
    if setup.executor.is_dask:
        from tournaments.run.cluster import open_cluster  # Dask only when asked for

        session = resources.enter_context(
            open_cluster(setup.executor, setup.bots, display.note, setup.time_control)
        )
        if hub is not None and remote is not None and setup.listen is not None:
            # Workers elsewhere reach the bots through the listener, with the run's key.
            host = setup.listen_advertise or advertised_host(setup.listen.host, session.address)
            remote = (remote[0], hub.tcp_link(host))
            display.note(f"Workers reach the remote bots through {remote[1].endpoint}")
        return _Coordinator(
            setup,
            session.executor,
            display,
            stop,
            capacity=session.capacity,
            drain_on_stop=True,
            batch_size=setup.executor.batch_size,
            sandbox=sandbox,
            remote=remote,
        )
    groups = worker_cpus(setup.concurrency) if setup.executor.affinity else None
    pool = make_executor(setup.concurrency, cpu_groups=groups)
    if setup.executor.affinity:
        display.note(
            f"Each worker and its bots keep to CPUs of their own: "
            f"{' | '.join(cpus_text(group) for group in groups)}"
            if groups is not None
            else f"Workers are not pinned to CPUs: {setup.concurrency} workers, "
            f"{len(os.sched_getaffinity(0))} CPUs"
        )
    resources.callback(pool.shutdown, wait=True, cancel_futures=True)
    return _Coordinator(setup, pool, display, stop, sandbox=sandbox, remote=remote)


def _open_hub(setup: TournamentSetup, resources: contextlib.ExitStack) -> RemoteHub | None:
    """The remote bots' listener, if the tournament has remote bots: one for the whole run,
    in this process, closed (every remote bot told ``shutdown``) when the run ends."""
    remote = {spec.curve_public_key: spec.connections for spec in setup.bots if spec.is_remote}
    if not remote or setup.listen is None:
        return None
    try:
        hub = RemoteHub(setup.listen, {key: limit for key, limit in remote.items() if key})
    except OSError as error:
        raise TournamentError(f"listen: {error}") from None
    resources.callback(hub.close)
    return hub


def _check_remote_bots(setup: TournamentSetup) -> None:
    """Remote bots need a listener this machine can bind; the config checks that it is
    given, but the command line may change it."""
    remote = [spec.name for spec in setup.bots if spec.is_remote]
    if not remote:
        return
    names = ", ".join(remote)
    if setup.listen is None:
        raise TournamentError(f"remote bot(s) {names} need a 'listen' section to dial in to")
    problem = listen_problem(setup.listen.host, setup.listen.port)
    if problem is not None:
        raise TournamentError(f"listen: {problem} (remote bot(s) {names} dial in there)")


def tournament_sandbox(setup: TournamentSetup) -> SandboxPlan:
    """How this tournament's bots are started: the config's ``sandbox`` resolved on this
    machine, hiding the config file and the output directory from every sandbox. Raises
    :class:`TournamentError` for ``required`` where bubblewrap cannot sandbox."""
    hidden = [setup.output.resolve()]
    if setup.source is not None:
        hidden.append(setup.source.resolve())
    hidden.extend(path.resolve() for path in setup.secret_files)  # the CurveZMQ secret key
    try:
        return plan_sandbox(setup.sandbox, hidden=hidden, freeze_opponent=setup.freeze_opponent)
    except SandboxUnavailableError as error:
        raise TournamentError(f"{error}; nothing was played") from None


def tournament_clock(setup: TournamentSetup) -> tuple[Clock, str | None]:
    """The clock of this tournament's started bots on this machine, and a warning if the
    default CPU clock falls back to wall time. Raises :class:`TournamentError` when the
    config requires ``clock: cpu`` and the machine cannot keep it."""
    try:
        return resolve_clock(setup.time_control, detect_cgroups())
    except ClockUnavailableError as error:
        raise TournamentError(f"{error}; nothing was played") from None


def shared_folders(bots: Sequence[BotSpec]) -> list[str]:
    """One problem per folder that a started bot's sandbox shows and that holds the files of
    other bots: a sandbox shows a bot its folder, so each bot shown it can read them (their
    code, their data). Bots of the same command in the same folder (one program, several
    names) are not a problem."""
    homes: dict[str, list[BotSpec]] = {}
    for spec in bots:
        if spec.home is not None:
            homes.setdefault(spec.home, []).append(spec)
    problems = []
    for home, shown in homes.items():
        inside = [
            other
            for other in bots
            if other.home is not None and other.home.startswith(home.rstrip("/") + "/")
        ]
        sharing = len({spec.command for spec in shown}) > 1
        if not sharing and not inside:
            continue
        readers = ", ".join(spec.name for spec in shown)
        names = ", ".join(spec.name for spec in inside)
        folders = ", ".join(sorted({str(spec.home) for spec in inside}))
        if sharing:
            problem = (
                f"bots {readers} share the folder {home}: the sandbox of each shows it, and "
                "in it the files of the others"
            )
            if inside:
                problem += f" and of bot(s) {names} ({folders})"
        else:
            problem = (
                f"bot{'s' if len(shown) > 1 else ''} {readers} can read the files of "
                f"bot{'s' if len(inside) > 1 else ''} {names}: "
                f"{'their sandboxes show' if len(shown) > 1 else 'its sandbox shows'} {home}, "
                f"which holds {folders}"
            )
        problems.append(problem + "; give each bot a folder of its own")
    return problems


def _open_ladder(
    setup: TournamentSetup, connection: sqlite3.Connection, display: TournamentDisplay
) -> Ladder:
    """The ladder's rounds planned again from the store, up to the one to play now."""
    settings = setup.ladder
    if settings is not None:
        # A league's field is known only now, and may still be smaller than its top.
        field = len(setup.bots)
        if setup.submissions is not None:
            settings = settings_for_field(settings, field)
        problems = check_settings(settings, field)
        if problems:
            raise TournamentError(
                "; ".join(f"ladder.{key}: {message}" for key, message in problems)
            )
    ladder = Ladder(setup, connection)
    ladder.replay()
    plan = ladder.plan
    if plan is not None and plan.round_number > 1:
        field_note = ""
        if ladder.before_bots_added:
            field_note = (
                f" (begun before bots were added, who join from round {plan.round_number + 1},"
                " where the budget counts from again)"
            )
        elif not plan.stop and ladder.field_first_round == plan.round_number:
            field_note = " (the field changed: the budget counts from this round)"
        display.note(
            f"Ladder: {plan.round_number - 1} round(s) stored, "
            + ("finished" if plan.stop else f"round {plan.round_number} next{field_note}")
            + f"; {plan.certification.text()}"
        )
    elif plan is not None:
        display.note(_round_line(plan, ladder))
    return ladder


def _ladder_display_total(setup: TournamentSetup, ladder: Ladder, planned: int) -> int:
    """The progress bar's total for a ladder, whose schedule grows round by round: its
    budget in matches; else its rounds of Swiss pairs (final rounds may have more); else,
    as a scale, a round robin's matches. The budget counts from the round the field last
    changed (a league's), so the matches played before that come on top."""
    settings = setup.ladder or LadderSettings()
    field = len(setup.bots)
    budget = ladder_budget(settings)
    if budget is None and settings.rounds is not None:
        budget = settings.rounds * 2 * (field // 2)
    if budget is None:
        budget = field * (field - 1)
    return max(ladder.matches_before_budget() + budget, planned)


def _play_ladder(coordinator: _Coordinator, connection: sqlite3.Connection, ladder: Ladder) -> None:
    """Play round after round (the current one was played already) until the ladder stops,
    a stop is requested or the run fails; each round is planned once the one before is
    stored whole."""
    display = coordinator.display
    while not (ladder.finished or coordinator.stop.requested or coordinator.failure):
        missing = list(ladder.missing())
        if missing:
            coordinator.failure = (
                f"round {ladder.round_number} left {len(missing)} match(es) unplayed, "
                f"first {missing[0].match_id}"
            )
            return
        plan = ladder.advance()
        display.note(_round_line(plan, ladder))
        if plan.stop:
            return
        add_schedule(connection, ladder.current_matches())
        coordinator.run(connection, ladder.missing())


def _round_line(plan: RoundPlan, ladder: Ladder) -> str:
    """A line for people on a round just planned."""
    # The budget counts from the round the field last changed (a league's new bot or
    # version): rounds and matches are told against it from there.
    budget = ladder_budget(ladder.settings)
    first = ladder.field_first_round
    since = f" since round {first}" if first > 1 else ""
    spent = f"{ladder.field_matches_played}" + (f" of {budget}" if budget is not None else "")
    if plan.stop:
        rounds_told = f"{plan.round_number - 1} round(s)" + (
            f" ({plan.round_number - first} since the field changed in round {first})"
            if first > 1
            else ""
        )
        return f"Ladder finished after {rounds_told}, {spent} matches{since}: " + (
            plan.certification.text()
        )
    rounds = ladder.settings.rounds
    of_rounds = f" of {rounds}" if rounds else ""
    heading = (
        f"Round {plan.round_number}{of_rounds} ({plan.phase})"
        if first == 1
        else f"Round {plan.round_number} ({plan.phase}; "
        f"{plan.round_number - first + 1}{of_rounds} since the field changed in round {first})"
    )
    byes = f", bye: {', '.join(plan.byes)}" if plan.byes else ""
    out = sum(status == "out" for status in plan.status.values())
    return (
        f"{heading}: {len(plan.pairs)} pair(s){byes}"
        + (f", {out} bot(s) out of the race" if out else "")
        + f"; {spent} matches played{since}; {plan.certification.text()}"
    )


def run_tournament(
    setup: TournamentSetup,
    *,
    display: TournamentDisplay,
    executor: Executor | None = None,
    stop: StopRequest | None = None,
    warn: Callable[[str], None] | None = None,
    preflight: bool = True,
) -> tuple[RunSummary, Standings | None]:
    """Play every scheduled match not yet stored; return what was done and the standings.

    ``executor`` defaults to the setup's: :func:`make_executor` with its concurrency, or a
    Dask cluster (:func:`tournaments.run.cluster.open_cluster`), shut down or disconnected at the
    end; a given executor is used with the setup's concurrency and left running. A setup
    without a seed plays from its store's (:func:`~tournaments.store.database.ensure_meta`). A seed
    small enough for a bot to find (:func:`~tournaments.schedule.seeds.small_seed_warning`) is
    reported to ``warn`` (default: the display's notes) before anything is played. With
    ``preflight``, when matches are left to play, every started bot is first started once
    and must say hello (:mod:`tournaments.run.pool_preflight`). Raises :class:`TournamentError`
    (config, store, lock or cluster problems; :class:`~tournaments.errors.PreflightError`: a
    bot that cannot start) before any match is played. A league's setup comes with its
    submitted bots already entered by the caller
    (:func:`~tournaments.league.submissions.enter_submissions`).
    """
    _check_remote_bots(setup)
    sandbox = tournament_sandbox(setup)
    clock, clock_warning = tournament_clock(setup)
    stop = stop or StopRequest()
    output = setup.output
    # The coordinator shares the CPUs with the workers and their bots: a BLAS thread per
    # core for the standings' and the planner's fits spins against them (a fit of 1,000
    # bots took 60 times longer on a busy two-core machine than on one thread).
    with lock_output(output), threadpool_limits(limits=1, user_api="blas"):
        connection = open_store(output)
        try:
            seed = ensure_meta(
                connection,
                name=setup.name,
                rules=setup.options.to_dict(),
                time_control=setup.time_control.to_json(),
                seed=setup.seed,
                anchor=setup.anchor,
                directory=output,
            )
            if setup.seed is None:
                # The store's seed, drawn now or on the run that made the store: from here
                # on the schedule and the bots' AEGIS_SEED follow from it as from a config's.
                setup = setup.with_seed(seed)
            warning = small_seed_warning(seed)
            if warning is not None:
                (warn or display.note)(warning)
            if not sandbox.enabled:
                (warn or display.note)(
                    f"WARNING: {sandbox.summary}. Every bot can read and signal what this "
                    "user can (the results, the config, the other bots): "
                    "docs/running-a-tournament.md, 'Containment'"
                )
            record_containment(connection, sandbox.enabled, sandbox.summary)
            cgroups = detect_cgroups()
            display.note(f"Bot limits on this machine: {cgroups.describe()}")
            remote_bots = [bot.name for bot in setup.bots if bot.is_remote]
            display.note(f"Bot clock: {clock_summary(clock, setup.time_control, remote_bots)}")
            if clock_warning is not None:
                (warn or display.note)(f"WARNING: {clock_warning}")
            missing = [name for name in ("memory", "pids") if not cgroups.has(name)]
            if missing:
                (warn or display.note)(
                    f"WARNING: no cgroup {' or '.join(missing)} limit here: a bot's memory "
                    "and processes are bounded by rlimits only (per process)"
                )
            if sandbox.enabled:
                for problem in shared_folders(setup.bots):
                    (warn or display.note)(f"WARNING: {problem}")
            if setup.retired:
                retire_bots(connection, dict(setup.retired))
            remove_stale_temporaries(output)
            ladder = None
            if setup.format == "ladder":
                # Its rounds so far, planned again from the stored results.
                ladder = _open_ladder(setup, connection, display)
                added = set_schedule(connection, ladder.planned, setup.bots)
                stored_before = sum(
                    1 for match in ladder.planned if is_stored(connection, match.match_id)
                )
                total = stored_before + sum(1 for _match in ladder.missing())
            else:
                added = set_schedule(connection, tournament_schedule(setup), setup.bots)
                total = schedule_size(
                    setup.bot_names,
                    format=setup.format,
                    gauntlet=setup.gauntlet,
                    matches_per_pair=setup.matches_per_pair,
                )
                stored_before = sum(
                    1
                    for match in tournament_schedule(setup)
                    if is_stored(connection, match.match_id)
                )
            # Replaced versions of a league's bots are out of the config too: say so apart.
            history = retired_counts(connection)[1]
            others = max(0, count_unscheduled(connection) - history)
            if stored_before:
                display.note(
                    f"Resuming in {output}: {stored_before} of {total} matches already stored"
                    + (f", {added} newly scheduled" if added else "")
                )
            if others:
                display.note(
                    f"{others} stored match(es) are not in this config's schedule (a bot "
                    "removed, or fewer matches per pair): kept in the store, left out of the "
                    "standings and the report while the config leaves them out"
                )
            if history:
                display.note(
                    f"{history} stored match(es) of replaced versions stay in the store as "
                    "their history, out of the standings"
                )
            if setup.listen is not None and any(spec.is_remote for spec in setup.bots):
                remote = ", ".join(spec.name for spec in setup.bots if spec.is_remote)
                host, port = setup.listen.host, setup.listen.port
                where = (
                    f"port {port} of any address of this machine"
                    if host in ("0.0.0.0", "::", "*")
                    else f"tcp://{host}:{port}"
                )
                display.note(
                    f"Remote bots ({remote}) dial in to {where} with the referee's public "
                    f"key {setup.listen.public_key}"
                )
            pending = (
                ladder.missing()
                if ladder is not None
                else (
                    match
                    for match in tournament_schedule(setup)
                    if not is_stored(connection, match.match_id)
                )
            )
            to_play = stored_before < total if ladder is None else not ladder.finished
            started = False
            try:
                with contextlib.ExitStack() as resources:
                    # The executor first: a cluster that cannot be used fails before the
                    # display starts, with nothing played.
                    coordinator = _open_coordinator(
                        setup, executor, display, stop, resources, sandbox
                    )
                    if preflight and to_play:
                        preflight_bots(
                            setup.bots,
                            warmup_ms=setup.time_control.warmup_ms,
                            sandbox=sandbox,
                            output=output,
                            note=display.note,
                            stopping=lambda: stop.requested,
                            concurrency=setup.concurrency,
                            cluster=(
                                coordinator.executor
                                if executor is None and setup.executor.is_dask
                                else None
                            ),
                        )
                    display.start(
                        setup.name,
                        total if ladder is None else _ladder_display_total(setup, ladder, total),
                        stored_before,
                        lambda: load_standings(connection),
                    )
                    started = True
                    coordinator.run(connection, pending)
                    if ladder is not None:
                        _play_ladder(coordinator, connection, ladder)
            except BaseException:
                if started:
                    display.finish(None)  # leave the terminal tidy for the error message
                raise
            standings = load_standings(connection)
            if ladder is not None:
                total = len(ladder.planned)
            summary = RunSummary(
                output=output,
                total=total,
                stored_before=stored_before,
                played=coordinator.played,
                interrupted=stop.requested,
                failure=coordinator.failure,
                forfeits=tuple(coordinator.forfeits.troubled()),
                store_failed=coordinator.store_failed,
                rounds_open=ladder is not None and not ladder.finished,
            )
            display.finish(standings)
            return summary, standings
        finally:
            connection.close()
