"""Play a tournament's matches on a Dask cluster: the executor of ``executor: {kind: dask}``.

The coordinator stays what it is (it schedules, keeps a window of matches in flight and alone
writes the store); only the executor changes. :func:`open_cluster` connects a
``distributed.Client`` to a running scheduler (or starts a ``LocalCluster`` for
``--local-cluster N``), checks that the workers can run the tournament's bots, and hands
the coordinator ``Client.get_executor(pure=False)``: a ``concurrent.futures.Executor`` whose
every submission is a task of its own (``pure=False`` gives each a unique key, so two
identical match tasks are never merged). Each task is
:func:`~tournaments.run.worker.play_match_task` (or, with ``batch_size`` above 1,
:func:`~tournaments.run.worker.play_match_batch`) on some worker thread, which keeps its bots
alive from match to match; at the end :func:`~tournaments.run.worker.close_worker_runner` runs
on every worker, so no bot outlives the tournament.

A worker that dies mid-match takes its task with it; the scheduler runs the task again on
another worker (up to ``distributed.scheduler.allowed-failures`` times, 3 by default) and the
coordinator stores whichever result arrives, once. See docs/cluster.md.

Dask is imported here only, and this module only when a config asks for Dask: the CLI starts
as fast without the ``cluster`` extra installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.bots import BotSpec
from referee.cgroups import detect_cgroups
from referee.time_control import Clock, TimeControl
from tournaments.config.tournament import ExecutorSetup
from tournaments.errors import ClusterError
from tournaments.run.worker import bot_problems, close_worker_runner

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "ClusterSession",
    "close_worker_runners",
    "open_cluster",
    "worker_facts",
]

_INSTALL_HINT = "pip install 'aegis-ref[cluster]'"
#: How often the coordinator asks the scheduler how many worker threads there are.
_CAPACITY_REFRESH_S = 2.0
#: Bounds on the clean-up at the end: stopping the bots on every worker, closing.
_CLOSE_RUNNERS_TIMEOUT_S = 60.0
_CLOSE_TIMEOUT_S = 20.0
_LOCAL_ADDRESS = re.compile(r"tcp://127\.0\.0\.1:[0-9]{1,5}")


def _package_version() -> str:
    try:
        return importlib.metadata.version("aegis-ref")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def worker_facts(
    bots: Sequence[BotSpec], time_control: TimeControl | None = None
) -> dict[str, Any]:
    """Run on a worker: its host, process, aegis-ref version and what stops it starting the
    bots (see :func:`bot_problems`), or keeping their clock: a ``time_control`` that
    requires ``clock: cpu`` where this worker's cgroups cannot count the bots' CPU time."""
    problems = bot_problems(bots)
    if time_control is not None and time_control.clock is Clock.CPU:
        missing = detect_cgroups().cpu_clock_problem()
        if missing is not None:
            problems.append(
                f"time_control.clock is cpu, but this worker has {missing} (run the worker "
                "where it can create cgroups: docs/cluster.md; or use clock: wall, or leave "
                "clock out to fall back to it)"
            )
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "version": _package_version(),
        "problems": problems,
    }


async def close_worker_runners() -> None:
    """Run on a worker: :func:`~tournaments.run.worker.close_worker_runner`, off the worker's
    event loop (stopping bots takes a while), in a thread of its own."""
    await asyncio.get_running_loop().run_in_executor(None, close_worker_runner)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as error:
        raise ClusterError(
            f"executor kind dask needs Dask's distributed scheduler ({error}): {_INSTALL_HINT}"
        ) from None
    return distributed


def _address_from_file(path: Path, timeout: float) -> str:
    """The scheduler address in a ``--scheduler-file``, waiting up to ``timeout`` seconds for
    the scheduler to write it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            address = json.loads(path.read_text(encoding="utf-8"))["address"]
            if isinstance(address, str) and address:
                return address
        except (OSError, ValueError, KeyError, TypeError):
            pass  # not written yet, or half written
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"no scheduler address in {path} after {timeout:g} s: is the scheduler "
                "started with --scheduler-file pointing there?"
            )
        time.sleep(0.1)


def _start_local_cluster(workers: int, timeout: float) -> tuple[subprocess.Popen[str], str]:
    """Start a Dask LocalCluster on the loopback (``workers`` processes of one thread each)
    in a helper process; return the helper and the scheduler's address.

    The helper (``python -m tournaments.run.cluster N``) runs in a session of its own, so Ctrl-C,
    which the terminal sends to its whole foreground process group, reaches the coordinator
    alone: it stops the run cleanly and then closes the cluster, instead of every Dask worker
    dying of KeyboardInterrupt mid-match. The helper closes the cluster when its standard
    input ends, which also happens if the coordinator is killed."""
    _import_distributed()  # a clear message here rather than a traceback from the helper
    helper = subprocess.Popen(
        [sys.executable, "-m", "tournaments.run.cluster", str(workers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert helper.stdout is not None
    line = ""
    deadline = time.monotonic() + timeout + 30  # the cluster's own timeout, and its start-up
    while not line:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or helper.poll() is not None:
            break
        readable, _, _ = select.select([helper.stdout], [], [], min(remaining, 0.5))
        if readable:
            line = helper.stdout.readline() or "-"
    address = line.strip()
    if not _LOCAL_ADDRESS.fullmatch(address):
        _stop_helper(helper)
        raise ClusterError(
            f"cannot start a local Dask cluster of {workers} worker(s)"
            + (f": {address}" if address and address != "-" else " (see the messages above)")
        )
    return helper, address


def _stop_helper(helper: subprocess.Popen[str]) -> None:
    """Close a local cluster's helper (it closes its cluster); kill its group if it hangs."""
    with contextlib.suppress(OSError):
        if helper.stdin is not None:
            helper.stdin.close()
    try:
        helper.wait(_CLOSE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(helper.pid, signal.SIGKILL)
        helper.wait(5.0)
    if helper.stdout is not None:
        helper.stdout.close()


def serve_local_cluster(workers: int) -> int:
    """The helper's body: start the LocalCluster, print its address, and close it when
    standard input ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides when to stop
    distributed = _import_distributed()
    try:
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            scheduler_port=0,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    except (OSError, RuntimeError, TimeoutError) as error:
        print(f"{type(error).__name__}: {error}", flush=True)
        return 1
    try:
        print(cluster.scheduler_address, flush=True)
        while sys.stdin.read(4096):
            pass
    finally:
        cluster.close(timeout=_CLOSE_TIMEOUT_S)
    return 0


def _connect(setup: ExecutorSetup, address: str) -> Client:
    distributed = _import_distributed()
    if setup.tls is not None:
        security = distributed.Security(
            tls_ca_file=str(setup.tls.ca_file),
            tls_client_cert=str(setup.tls.cert),
            tls_client_key=None if setup.tls.key is None else str(setup.tls.key),
            require_encryption=True,
        )
    else:
        security = distributed.Security()  # Dask's own configuration: distributed.comm.tls
        if address.startswith("tls://") and not security.get_connection_args("client").get(
            "ssl_context"
        ):
            # Checked here: a client that fails on it lingers, and hangs the exit.
            raise ClusterError(
                f"the scheduler at {address} speaks TLS: give executor.tls (ca_file, cert, "
                "key) in the config, or TLS files in Dask's configuration"
            )
    try:
        client: Client = distributed.Client(
            address,
            security=security,
            timeout=setup.connect_timeout_s,
            set_as_default=False,
        )
    except (OSError, ValueError, TypeError) as error:
        raise ClusterError(f"cannot connect to the Dask scheduler at {address}: {error}") from None
    return client


@dataclass(slots=True)
class ClusterSession:
    """A connected cluster: the executor the coordinator submits to, and its capacity."""

    client: Client
    executor: Executor
    #: Where the scheduler is, for messages.
    address: str
    #: The helper process of a local cluster (``--local-cluster``), closed with the session.
    helper: subprocess.Popen[str] | None = None
    _threads: int = 0
    _threads_at: float = float("-inf")

    def capacity(self) -> int:
        """Worker threads in the cluster now (refreshed every few seconds): the coordinator
        keeps two tasks in flight per thread, as it does per local worker process."""
        now = time.monotonic()
        if now - self._threads_at >= _CAPACITY_REFRESH_S and self.client.status == "running":
            self._threads_at = now
            # The last count stands while the scheduler cannot be asked (the client raises
            # AttributeError once it gave up reconnecting): the executor's futures say more.
            with contextlib.suppress(OSError, TimeoutError, AttributeError):
                self._threads = sum(self.client.nthreads().values())
        return max(1, self._threads)

    def check_workers(
        self, bots: Sequence[BotSpec], time_control: TimeControl | None = None
    ) -> list[dict[str, Any]]:
        """Ask every worker whether it can run the bots; raise :class:`ClusterError` naming
        the workers that cannot (aegis-ref missing or another version, a bot missing, no
        cgroup CPU accounting where ``time_control`` requires ``clock: cpu``)."""
        try:
            replies: Mapping[str, Any] = self.client.run(
                worker_facts, bots, time_control, on_error="return"
            )
        except (OSError, TimeoutError) as error:
            raise ClusterError(f"cannot reach the workers of {self.address}: {error}") from None
        mine = _package_version()
        problems: list[str] = []
        facts: list[dict[str, Any]] = []
        for worker, reply in sorted(replies.items()):
            if isinstance(reply, BaseException):
                problems.append(
                    f"worker {worker} cannot run aegis-ref tasks ({type(reply).__name__}: "
                    f"{reply}): install aegis-ref there, in the workers' environment"
                )
                continue
            facts.append(reply)
            if reply["version"] != mine:
                problems.append(
                    f"worker {worker} ({reply['host']}) has aegis-ref {reply['version']}, this "
                    f"coordinator {mine}: install the same version on every worker"
                )
            problems += [f"worker {worker} ({reply['host']}): {text}" for text in reply["problems"]]
        if problems:
            raise ClusterError(
                "the cluster's workers cannot play this tournament:\n  " + "\n  ".join(problems)
            )
        return facts

    def close(self) -> None:
        """Stop the bots on every worker, disconnect, and close a local cluster (bounded)."""
        if self.client.status == "running":  # not after losing the scheduler
            self._run_bounded(
                lambda: self.client.run(close_worker_runners, on_error="ignore"),
                _CLOSE_RUNNERS_TIMEOUT_S,
            )
        self._run_bounded(lambda: self.client.close(timeout=_CLOSE_TIMEOUT_S), _CLOSE_TIMEOUT_S)
        if self.helper is not None:
            _stop_helper(self.helper)

    @staticmethod
    def _run_bounded(action: Callable[[], object], timeout: float) -> None:
        """Run ``action`` in a helper thread; give up waiting after ``timeout`` seconds (a
        worker that hangs must not hang the coordinator's exit). Errors are logged: the
        matches are stored already, so clean-up problems do not fail the run."""

        def target() -> None:
            try:
                action()
            except Exception as error:  # a process boundary: the cluster's own failures
                logging.getLogger(__name__).warning("Dask clean-up failed: %r", error)

        thread = threading.Thread(target=target, daemon=True, name="aegis-dask-cleanup")
        thread.start()
        thread.join(timeout)


@contextlib.contextmanager
def open_cluster(
    setup: ExecutorSetup,
    bots: Sequence[BotSpec],
    note: Callable[[str], None],
    time_control: TimeControl | None = None,
) -> Iterator[ClusterSession]:
    """Connect to the configured cluster (or start a local one), check its workers (that
    they can start ``bots`` and keep ``time_control``'s clock), and yield the session; on
    leaving, stop every worker's bots and disconnect."""
    if not setup.is_dask:
        raise ValueError(f"executor kind {setup.kind!r} is not a cluster")
    helper = None
    if setup.local_workers is not None:
        helper, address = _start_local_cluster(setup.local_workers, setup.connect_timeout_s)
    elif setup.address is not None:
        address = setup.address
    else:
        assert setup.scheduler_file is not None  # the config checks for one or the other
        address = _address_from_file(setup.scheduler_file, setup.connect_timeout_s)
    try:
        client = _connect(setup, address)
    except BaseException:
        if helper is not None:
            _stop_helper(helper)
        raise
    session = ClusterSession(
        client=client,
        executor=client.get_executor(pure=False),
        address=address,
        helper=helper,
    )
    try:
        facts = session.check_workers(bots, time_control)
        threads = session.capacity()
        hosts = len({fact["host"] for fact in facts})
        started = " started here" if helper is not None else ""
        note(
            f"Playing on the Dask cluster{started} at {address}: {len(facts)} worker(s) on "
            f"{hosts} host(s), {threads if facts else 0} thread(s)"
            + ("; matches wait until workers join" if not facts else "")
        )
        yield session
    finally:
        session.close()


if __name__ == "__main__":
    sys.exit(serve_local_cluster(int(sys.argv[1])))
