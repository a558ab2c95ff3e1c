"""The ``sprt`` command: is a new bot better than an old one? Play duplicate pairs until the
sequential probability ratio test of :mod:`tournaments.stats.sprt` decides.

Pair k deals from ``derive_seed(seed, "match", k)``, the new bot in seat 0 in match 2k-1 and
the old bot in seat 0 in match 2k, exactly as ``aegis-ref match NEW OLD --seed S`` numbers
its matches. A forfeit is a loss for the offender; a pair with a void match (both bots
failed before the first game) is skipped.

Exit codes: 0 H1 accepted (the new bot is better); 1 H0 accepted (it is not); 3 undecided
when ``--max-matches`` ran out; 2 the test could not run (a malformed command line, a bot
name that resolves to nothing, an unwritable record, only void pairs); 130 interrupted
(Ctrl-C).

With ``--output DIR`` the test's status stays in ``DIR/sprt.json``
(:mod:`tournaments.run.sprt_live`): after each pair, and at the end how it ended, so that
``aegis-ref serve DIR`` shows the test while it runs and after.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.text import Text

from referee.faults import explain_fault
from referee.sandbox import SandboxMode
from referee.time_control import TimeControl
from tournaments.cli.common import resolve_two_bots, write_record_or_exit
from tournaments.cli.exit_codes import (
    EXIT_ERROR,
    EXIT_H0,
    EXIT_H1,
    EXIT_INTERRUPTED,
    EXIT_UNDECIDED,
)
from tournaments.cli.interrupts import interrupts_kept
from tournaments.cli.options import (
    BOT_HELP,
    DEFAULT_TIME_CONTROL,
    NO_RULES_FLAGS,
    BankMsOption,
    ClockOption,
    ConcurrencyOption,
    DecisionMsOption,
    RecordOption,
    RulesFlags,
    SandboxOption,
    SeedOption,
    WarmupMsOption,
    sandbox_from_flag,
    time_control_from_flags,
    with_rules_flags,
)
from tournaments.cli.serve import ServeFlag, served_beside
from tournaments.errors import TournamentError
from tournaments.run.headtohead import Duel, MatchPlayer, Played, Score
from tournaments.run.sprt_live import SPRT_STATUS, RunState, SprtStatusFile
from tournaments.stats.sprt import (
    Decision,
    PairOutcome,
    SprtStatus,
    SprtTest,
    StoppingRule,
    run_sprt,
)
from tournaments.stats.sprt_elo import sequential_estimate

__all__ = [
    "app",
    "final_estimate_text",
    "sprt",
    "status_text",
]

app = typer.Typer(no_args_is_help=True)

#: Void pairs in a row after which the bots are taken to be unable to play at all.
MAX_VOID_IN_A_ROW = 3
_MOVING = {StoppingRule.DYNAMIC: " less the overshoot", StoppingRule.WALD: " (wald)"}


def status_text(status: SprtStatus) -> Text:
    """One line: pairs and their W-D-L as 2-0/1-1/0-2, the LLR in its bounds, the Elo."""
    counts = status.counts
    text = Text()
    text.append(f"pairs {counts.pairs}", style="bold")
    text.append(f" ({counts.text()}")
    if status.void_pairs:
        text.append(f", void {status.void_pairs}")
    text.append(")  ")
    text.append("LLR ")
    style = {Decision.ACCEPT_H1: "bold green", Decision.ACCEPT_H0: "bold red"}.get(
        status.decision, "bold"
    )
    text.append(f"{status.llr:+.2f}", style=style)
    text.append(f" [{status.lower:+.2f}, {status.upper:+.2f}]  ")
    confidence = round(status.estimate.confidence * 100)
    text.append(f"Elo {status.estimate.text()} ({confidence} %)")
    return text


class _Display:
    """Live status on a terminal; otherwise one line per pair, for logs."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Live | None = None
        if console.is_terminal:
            self._live = Live(
                Text("playing the first pair…"),
                console=console,
                auto_refresh=False,
                transient=False,
            )
            self._live.start(refresh=True)

    def note(self, message: Text | str) -> None:
        """A line above the live status (a fault, a void match)."""
        self.console.print(message)

    def pair(self, number: int, outcome: PairOutcome | None, status: SprtStatus) -> None:
        """Show the status after pair ``number``."""
        line = status_text(status)
        if self._live is not None:
            self._live.update(line, refresh=True)
            return
        label = "void" if outcome is None else outcome.label
        self.console.print(Text(f"pair {number}: {label:4}  ") + line)

    def close(self) -> None:
        """Stop the live display, leaving the last status on screen."""
        if self._live is not None:
            self._live.stop()
            self._live = None


@app.command()
@with_rules_flags
def sprt(
    new: Annotated[str, typer.Argument(help=f"The new bot. {BOT_HELP}")],
    old: Annotated[str, typer.Argument(help="The old bot, in the same form.")],
    elo0: Annotated[float, typer.Option(help="H0: the new bot is this many Elo better.")] = 0.0,
    elo1: Annotated[float, typer.Option(help="H1: the new bot is this many Elo better.")] = 20.0,
    alpha: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Chance of accepting H1 when H0 holds.")
    ] = 0.05,
    beta: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Chance of accepting H0 when H1 holds.")
    ] = 0.05,
    bounds: Annotated[
        StoppingRule,
        typer.Option(
            case_sensitive=False,
            help="dynamic: Wald's LLR bounds moved inward by the overshoot measured on the "
            "LLR's path, as fishtest does (error rates close to alpha and beta); wald: Wald's "
            "bounds as they are (more pairs, error rates at or below alpha and beta).",
        ),
    ] = StoppingRule.DYNAMIC,
    max_matches: Annotated[
        int | None,
        typer.Option(min=2, help="Stop undecided (exit 3) after this many matches (whole pairs)."),
    ] = None,
    concurrency: ConcurrencyOption = 1,
    seed: SeedOption = 1,
    record: RecordOption = None,
    decision_ms: DecisionMsOption = DEFAULT_TIME_CONTROL.decision_ms,
    bank_ms: BankMsOption = DEFAULT_TIME_CONTROL.bank_ms,
    warmup_ms: WarmupMsOption = DEFAULT_TIME_CONTROL.warmup_ms,
    rules: RulesFlags = NO_RULES_FLAGS,
    sandbox: SandboxOption = SandboxMode.AUTO,
    serve: ServeFlag = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            file_okay=False,
            help="Keep the test's status in this folder (sprt.json), after each pair and "
            "when it ends: aegis-ref serve DIR shows it while it runs and after.",
        ),
    ] = None,
    clock: ClockOption = None,
) -> None:
    """Is NEW better than OLD? Play duplicate pairs of matches until the SPRT decides.

    The sequential probability ratio test weighs H1 (NEW is elo1 better) against H0 (NEW is
    elo0 better). Each pair, same deals with seats swapped, scores 1, 1/2 or 0 for NEW (2-0,
    1-1, 0-2); the LLR is fishtest's generalised one on logistic Elo. At the end: the Elo
    allowing for where the test stopped, its 95 % interval and the LOS. Exit 0: H1 accepted,
    1: H0 accepted, 3: undecided at --max-matches, 2: cannot run, 130: interrupted.
    """
    options = rules.options()
    if output is not None and (output / SPRT_STATUS).exists():
        typer.echo(
            f"--output: {output / SPRT_STATUS} exists: the folder holds an SPRT run "
            "already; give another folder",
            err=True,
        )
        raise typer.Exit(EXIT_ERROR)
    try:
        test = SprtTest(elo0, elo1, alpha, beta, bounds)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    plan = sandbox_from_flag(sandbox, exit_code=EXIT_ERROR)
    spec_new, spec_old = resolve_two_bots(
        (new, old), ("-new", "-old"), sandbox=plan, warmup_ms=warmup_ms, exit_code=EXIT_ERROR
    )
    console = Console(highlight=False, markup=False, soft_wrap=True)
    lower, upper = test.bounds
    console.print(
        f"SPRT {spec_new.name} (new) vs {spec_old.name} (old): H0 elo {elo0:+g}, "
        f"H1 elo {elo1:+g}, alpha {alpha:g}, beta {beta:g}; LLR bounds "
        f"[{lower:+.2f}, {upper:+.2f}]{_MOVING[bounds]}; seed {seed}"
    )
    control = time_control_from_flags(
        TimeControl(decision_ms=decision_ms, bank_ms=bank_ms, warmup_ms=warmup_ms, clock=clock),
        exit_code=EXIT_ERROR,
    )
    duel = Duel((spec_new, spec_old), seed, options, control, sandbox=plan, concurrency=concurrency)
    lines: list[str] | None = None if record is None else []  # kept only when asked for
    display = _Display(console)
    status: SprtStatus | None = None
    on_pair = display.pair
    # The status goes to a file that the server shows: in --output, or with --serve alone
    # in a folder of its own, gone with the run.
    scratch = (
        tempfile.TemporaryDirectory(prefix="aegis-sprt-") if serve and output is None else None
    )
    folder = output if scratch is None else Path(scratch.name)
    status_file = None
    if folder is not None:
        _make_folder(folder)
        status_file = SprtStatusFile(folder, test, (spec_new.name, spec_old.name))

        def on_pair(number: int, outcome: PairOutcome | None, status: SprtStatus) -> None:
            display.pair(number, outcome, status)
            status_file.update(number, outcome, status)

    try:
        with served_beside(folder or Path(), serve) as server:
            with MatchPlayer(duel) as player, interrupts_kept() as interrupts:
                last = None if max_matches is None else max_matches // 2 * 2
                matches = player.play(itertools.count(1) if last is None else range(1, last + 1))

                def play_pair(number: int) -> PairOutcome | None:
                    interrupts.check()
                    outcome = _play_pair(matches, spec_new.name, lines, display)
                    interrupts.check()
                    return outcome

                status = run_sprt(
                    test,
                    play_pair,
                    max_pairs=None if max_matches is None else max_matches // 2,
                    on_pair=on_pair,
                    max_void_in_a_row=MAX_VOID_IN_A_ROW,
                )
            display.close()
            _write(record, lines)
            console.print(
                Score.of_pairs((spec_new.name, spec_old.name), status.counts).score_text()
            )
            code, verdict = _conclude(
                console, status, spec_new.name, spec_old.name, test, max_matches
            )
            if status_file is not None:
                _finish(status_file, RunState.FINISHED, verdict, code)
                # Open pages get the verdict before the server stops with the run.
                server.linger("/api/v1/sprt", lambda shown: shown.get("state") != "running")
    except KeyboardInterrupt:
        display.close()
        console.print("interrupted: no decision")
        if status_file is not None:
            _finish(status_file, RunState.INTERRUPTED, "interrupted: no decision", EXIT_INTERRUPTED)
        _write(record, lines)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except TournamentError as error:
        display.close()
        if status_file is not None:
            _finish(status_file, RunState.FAILED, f"error: {error}", EXIT_ERROR)
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    finally:
        display.close()
        if status_file is not None and not status_file.finished:
            # Stopped otherwise (a record that cannot be written): never left "running".
            _finish(status_file, RunState.FAILED, "stopped by an error", EXIT_ERROR)
        if scratch is not None:
            scratch.cleanup()
    raise typer.Exit(code)


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        typer.echo(f"--output: cannot make {folder}: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_ERROR) from None


def _finish(status_file: SprtStatusFile, state: RunState, verdict: str, code: int) -> None:
    """The last status of the run; a failure to write it is said, and changes nothing else."""
    try:
        status_file.finish(state, verdict, code)
    except OSError as error:
        typer.echo(f"error: cannot write {status_file.path}: {error}", err=True)


def _play_pair(
    matches: Iterator[Played], new: str, lines: list[str] | None, display: _Display
) -> PairOutcome | None:
    """The next pair of ``matches``: the new bot in seat 0, then in seat 1, on the same
    deals (matches 2k-1 and 2k of :class:`~tournaments.run.headtohead.Duel`)."""
    won = 0
    void = False
    for played in itertools.islice(matches, 2):
        if lines is not None:
            lines.extend(played.record)
        _note_faults(display, played)
        void = void or played.void
        won += played.won_by(new)
    return None if void else PairOutcome(won)


def _note_faults(display: _Display, played: Played) -> None:
    if played.void:
        reasons = "; ".join(explain_fault(fault) for fault in played.faults)
        display.note(Text(f"match {played.number}: void ({reasons})", style="yellow"))
    elif played.forfeit is not None:
        display.note(
            Text(
                f"match {played.number}: forfeit by {played.forfeit.bot}: "
                f"{explain_fault(played.forfeit)}",
                style="yellow",
            )
        )


def _write(record: Path | None, lines: list[str] | None) -> None:
    if record is None or lines is None:
        return
    write_record_or_exit(record, lines, EXIT_ERROR)


def _conclude(
    console: Console,
    status: SprtStatus,
    new: str,
    old: str,
    test: SprtTest,
    max_matches: int | None,
) -> tuple[int, str]:
    """Print the verdict and the Elo of the test as it ended; return the exit code and
    the verdict."""
    code, verdict, style = _verdict(status, new, old, test, max_matches)
    console.print(verdict, style=style)
    if status.counts.pairs:
        console.print(final_estimate_text(test, status))
    return code, verdict


def final_estimate_text(test: SprtTest, status: SprtStatus) -> str:
    """The Elo of the test as it ended, median-unbiased for its stopping rule, with its
    95 % interval and the LOS (see :mod:`tournaments.stats.sprt_elo`)."""
    estimate = sequential_estimate(test, status.counts)
    text = (
        f"Elo {estimate.text()} (95 %), LOS {100 * estimate.los:.1f} %, allowing for where the "
        "test stopped"
    )
    if estimate.clamped:
        text += " (rough: too few pairs, or too little spread in them, for its approximation)"
    return text


def _verdict(
    status: SprtStatus,
    new: str,
    old: str,
    test: SprtTest,
    max_matches: int | None,
) -> tuple[int, str, str]:
    """The exit code, the verdict line and its style."""
    pairs = status.counts.pairs
    where = f"LLR {status.llr:+.2f} after {pairs} pairs ({2 * pairs} matches)"
    below, above = ("<=", ">=") if test.rule is StoppingRule.WALD else ("<", ">")
    if status.decision is Decision.ACCEPT_H1:
        return (
            EXIT_H1,
            f"H1 accepted: {new} is better than {old} "
            f"(elo {test.elo1:+g} rather than {test.elo0:+g}); {where} {above} {status.upper:+.2f}",
            "bold green",
        )
    if status.decision is Decision.ACCEPT_H0:
        return (
            EXIT_H0,
            f"H0 accepted: {new} is not better than {old} "
            f"(elo {test.elo0:+g} rather than {test.elo1:+g}); {where} {below} {status.lower:+.2f}",
            "bold red",
        )
    if status.void_in_a_row >= MAX_VOID_IN_A_ROW:
        return (
            EXIT_ERROR,
            f"no decision: {MAX_VOID_IN_A_ROW} void pairs in a row, the bots cannot play",
            "bold red",
        )
    return (
        EXIT_UNDECIDED,
        f"undecided: --max-matches {max_matches} reached; {where}, "
        f"inside [{status.lower:+.2f}, {status.upper:+.2f}]",
        "bold yellow",
    )
