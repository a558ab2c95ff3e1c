"""Every exit code of ``aegis-ref``, in one place (README.md and each command's help name
them too). 0 is success, 2 a command that cannot run at all (as typer's own usage errors),
130 a run stopped by Ctrl-C; 1 and 3 are a command's own verdicts, named here by command."""

from __future__ import annotations

__all__ = [
    "EXIT_BOT",
    "EXIT_DISAGREEMENT",
    "EXIT_DONE",
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_H0",
    "EXIT_H1",
    "EXIT_INTERRUPTED",
    "EXIT_LEFT",
    "EXIT_NOTHING_MATCHES",
    "EXIT_REJECTED",
    "EXIT_UNDECIDED",
    "EXIT_UNREADABLE",
    "EXIT_UNUSABLE",
    "EXIT_USAGE",
]

# -- every command ---------------------------------------------------------------------------

#: A command that cannot read or write a file, or cannot use its arguments.
EXIT_UNREADABLE = 2
#: A command refused before it ran: 2, like typer's own usage errors.
EXIT_USAGE = 2
#: 128 + SIGINT, as a shell reports a process ended by Ctrl-C.
EXIT_INTERRUPTED = 130

# -- tournament, league, check-bot -----------------------------------------------------------

#: ``tournament``, ``league``: the run failed (a worker died, a match raised); ``check-bot``:
#: some item did not pass.
EXIT_FAILED = 1
#: ``tournament``: a bot failed the preflight, or lost every match it played in the run to
#: its own faults.
EXIT_BOT = 3
#: ``check-bot``: the bot could not be checked at all.
EXIT_UNUSABLE = 2

# -- sprt ------------------------------------------------------------------------------------

#: H1 accepted: NEW is better than OLD by ``--elo1``.
EXIT_H1 = 0
#: H0 accepted: NEW is not better than OLD by more than ``--elo0``.
EXIT_H0 = 1
#: Undecided at ``--max-matches``.
EXIT_UNDECIDED = 3
#: 2, like typer's own usage errors: a script can tell a refused command from a verdict.
EXIT_ERROR = 2

# -- play, submit, verify, replay ------------------------------------------------------------

#: ``play``: the match was played to its end.
EXIT_DONE = 0
#: ``play``: the match was left unfinished (``q``, or the bot could not go on).
EXIT_LEFT = 1
#: ``submit``: the submission was rejected.
EXIT_REJECTED = 1
#: ``verify``: a record disagrees with the engine (2 when one cannot be read).
EXIT_DISAGREEMENT = 1
#: ``replay``: nothing to show (no match or game matches ``--match`` and ``--game``, or
#: the records hold no game).
EXIT_NOTHING_MATCHES = 1
