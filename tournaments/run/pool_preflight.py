"""A tournament's preflight: every started bot once through its hello, before any match.

:func:`preflight` runs :func:`referee.preflight.preflight_bots` where the matches will run:
in this process for the local executor (same machine, same sandbox plan, limits,
environment and working directory as the workers use), or as one task per bot on a Dask
cluster (:func:`tournaments.run.worker.preflight_task`). A bot that does not get to a valid
``hello`` stops the run with :class:`~tournaments.errors.PreflightError`, which quotes its
fault, exit status and last lines of output. Remote bots dial in when their owners start
them: they are named and skipped.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from pathlib import Path

from referee.bots import BotSpec
from referee.faults import fault_reason, printable
from referee.preflight import PreflightResult, preflight_bots
from referee.sandbox import SandboxPlan
from tournaments.errors import ClusterError, PreflightError
from tournaments.run.worker import preflight_task, reaped

__all__ = ["LAST_LINES", "failure_text", "preflight", "preflight_log_dir"]

#: Lines of a failed bot's output quoted.
LAST_LINES = 5


def preflight_log_dir(output: Path) -> Path:
    """Where the preflight's bots write their output: ``logs/preflight/`` in the output
    directory."""
    return output / "logs" / "preflight"


def preflight(
    bots: Sequence[BotSpec],
    *,
    warmup_ms: int,
    sandbox: SandboxPlan,
    output: Path,
    note: Callable[[str], None],
    stopping: Callable[[], bool],
    concurrency: int = 1,
    cluster: Executor | None = None,
) -> list[PreflightResult]:
    """Start every started bot once and wait for its hello; raise :class:`PreflightError`
    naming each bot that did not get there. Here, bots start as ``concurrency`` matches
    start them, two per match, but never more at once than there are CPUs (at least two):
    a preflight must not fail a bot for a start-up slowed by the others. ``cluster``: a Dask
    cluster's executor, to start them on its workers rather than here. Returns early, with
    what was done, once ``stopping()`` is true."""
    remote = [spec.name for spec in bots if spec.is_remote]
    if remote:
        note(
            f"Preflight: remote bot(s) {', '.join(remote)} not started: they dial in when their "
            "owners start them (a match waits for them: 'remote_connect_s')"
        )
    started = [spec for spec in bots if not spec.is_remote]
    if not started:
        return []
    where = " on the cluster" if cluster is not None else ""
    note(f"Preflight: starting {len(started)} bot(s){where} as their matches will, up to hello")
    began = time.monotonic()
    if cluster is None:
        results = preflight_bots(
            [reaped(spec) for spec in started],
            warmup_ms=warmup_ms,
            sandbox=sandbox,
            log_dir=preflight_log_dir(output),
            log_budget_dir=preflight_log_dir(output).parent,  # the run's log caps
            parallel=min(2 * concurrency, max(2, len(os.sched_getaffinity(0)))),
            stopping=stopping,
        )
    else:
        results = _on_cluster(cluster, started, warmup_ms, sandbox, output, stopping)
    failed = [result for result in results if not result.ok]
    if failed:
        specs = {spec.name: spec for spec in started}
        raise PreflightError(
            failure_text(failed, specs, warmup_ms), [result.name for result in failed]
        )
    if len(results) == len(started):
        slowest = max(results, key=lambda result: result.elapsed_ms)
        note(
            f"Preflight: {len(results)} bot(s) started and said hello in "
            f"{time.monotonic() - began:.1f} s (slowest: {slowest.name}, "
            f"{slowest.elapsed_ms:.0f} ms)"
        )
    return results


def _on_cluster(
    cluster: Executor,
    bots: Sequence[BotSpec],
    warmup_ms: int,
    sandbox: SandboxPlan,
    output: Path,
    stopping: Callable[[], bool],
) -> list[PreflightResult]:
    """One task per bot on the cluster, so that its bots start where its matches do. A
    task that fails (its worker lost, say) is the cluster's problem, not the bot's."""
    where = str(output.resolve())  # the same path on the workers, as for the matches
    futures: dict[Future[PreflightResult], str] = {
        cluster.submit(preflight_task, spec, warmup_ms, sandbox, where): spec.name for spec in bots
    }
    results: dict[str, PreflightResult] = {}
    pending = set(futures)
    while pending and not stopping():
        done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
        for future in done:
            name = futures[future]
            problem = None if future.cancelled() else future.exception()
            if future.cancelled() or problem is not None:
                raise ClusterError(
                    f"Preflight: the task starting bot {name} on the cluster failed: "
                    f"{'cancelled' if problem is None else repr(problem)}; nothing was played"
                )
            results[name] = future.result()
    for future in pending:
        future.cancel()
    return [results[spec.name] for spec in bots if spec.name in results]


def _exit_status(result: PreflightResult) -> str:
    code = result.exit_code
    if not result.started:
        return "none: it could not be started"
    if code is None:
        return "still running when the preflight gave up on it (then stopped)"
    if code < 0:
        return f"killed by signal {-code}"
    return str(code)


def failure_text(
    failed: Sequence[PreflightResult], specs: dict[str, BotSpec], warmup_ms: int
) -> str:
    """The message of a failed preflight: per bot, why (the shared
    :func:`~referee.faults.fault_reason`), how it ended, its command and working directory,
    its last lines of output and its log; then what to do."""
    names = ", ".join(result.name for result in failed)
    lines = [
        f"Preflight: bot {names} cannot start as the tournament runs it; nothing was played."
        if len(failed) == 1
        else f"Preflight: bots {names} cannot start as the tournament runs them; nothing was "
        "played."
    ]
    for result in failed:
        assert result.fault is not None
        spec = specs[result.name]
        lines.append(f"{result.name}: {fault_reason(result.fault, spec.command)}")
        lines.append(f"  exit status: {_exit_status(result)}")
        if result.exit_code is None and result.started:
            lines.append(
                f"  (if it only needs longer than {warmup_ms} ms to start, raise "
                "time_control.warmup_ms)"
            )
        lines.append(f"  command: {printable(shlex.join(spec.command), 1000)}")
        if spec.cwd is not None:
            lines.append(f"  working directory: {printable(spec.cwd, 1000)}")
        tail = list(result.fault.stderr_tail)
        while tail and not tail[-1].strip():
            tail.pop()
        shown = tail[-LAST_LINES:]
        log = f" (all of it in {result.log_path})" if result.log_path else ""
        if shown:
            lines.append(f"  its last output{log}:")
            lines.extend(f"    {printable(line, 500)}" for line in shown)
        else:
            lines.append(f"  it wrote nothing{log}")
    lines.append(
        "Fix the bot (aegis-ref check-bot takes one through every check) and run the same "
        "command again, or skip this check with --no-preflight."
    )
    return "\n".join(lines)
