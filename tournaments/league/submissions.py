"""The store of submissions: the bots submitted to a league, as received, built and checked.

A submission is a bot's folder (or a ``.tar.gz``/``.zip`` of it) with its manifest,
``aegis-bot.toml`` (:mod:`tournaments.league.manifest`). :meth:`SubmissionStore.receive` checks
its files (:mod:`tournaments.league.uploads`) and its manifest and stores it as *received*;
:meth:`SubmissionStore.process` builds it in a sandbox (:mod:`referee.build`), takes the
checklist of ``check-bot`` through the built bot (:mod:`referee.conformance`), and
*accepts* or *rejects* it, with the reasons. Submissions never change: a new version is a
new submission of the same name, and every accepted name's latest version plays
(:func:`enter_submissions`), the older versions retired.

Layout of a store (the config's ``submissions.folder``)::

    .lock                   held while a submission is stored (one at a time)
    .league.lock            held by the running ``aegis-ref league``, if one runs
    .incoming/              uploads being unpacked (what a dead run leaves is cleared)
    NAME/VERSION/
        status.json         the manifest, the state, the reasons, the times
        source/             the files as submitted, never changed
        bot/                the built bot: the folder its sandbox shows when it plays
        build.log           the build's output
        check.json          the check-bot report
        .lock               held while it is built and checked

A build or check cut short (the league was killed) leaves the state *building* or
*checking* with no one holding the submission's lock: the next league (or ``submit``)
builds it again from its source.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from pydantic import ValidationError

from referee.atomic import write_atomically
from referee.bots import BotSpec
from referee.build import run_build
from referee.conformance import CheckSettings, ItemResult, Status, check_bot
from referee.sandbox import SandboxMode, SandboxPlan, SandboxUnavailableError, plan_sandbox
from tournaments.config.tournament import TournamentSetup, load_config
from tournaments.errors import (
    ConfigError,
    SubmissionRejectedError,
    TournamentError,
    UploadError,
)
from tournaments.league.manifest import MANIFEST_NAME, BotManifest, load_manifest
from tournaments.league.uploads import (
    UploadLimits,
    copy_folder,
    is_archive,
    unpack_archive,
    unpack_tar_stream,
)

__all__ = [
    "LEAGUE_CONFIG",
    "State",
    "Submission",
    "SubmissionStore",
    "enter_submissions",
    "league_config_path",
    "load_league",
]

#: The config file of a league folder.
LEAGUE_CONFIG = "league.yaml"
_STATUS = "status.json"
_LOCK = ".lock"
_LEAGUE_LOCK = ".league.lock"
_INCOMING = ".incoming"
_PARTIAL = ".bot-partial"
#: Lines of a failed build's output quoted with its rejection.
_TAIL_LINES = 12


class State(enum.StrEnum):
    """Where a submission is: received, then building, then checking, then accepted or
    rejected (final)."""

    RECEIVED = "received"
    BUILDING = "building"
    CHECKING = "checking"
    ACCEPTED = "accepted"
    REJECTED = "rejected"

    @property
    def is_final(self) -> bool:
        """True once accepted or rejected."""
        return self in (State.ACCEPTED, State.REJECTED)


@dataclass(frozen=True, slots=True)
class Submission:
    """One submission, as its ``status.json`` says."""

    folder: Path
    manifest: BotManifest
    state: State
    #: When it was received: what "latest" means (nanoseconds since the epoch).
    received_ns: int
    submitted_at: str
    files: int
    bytes: int
    #: Builds started (more than one: a build was cut short and started again).
    attempts: int = 0
    finished_at: str | None = None
    #: Why it was rejected, one reason each.
    reasons: tuple[str, ...] = ()
    #: A failed build's last lines of output.
    build_tail: tuple[str, ...] = ()
    build_seconds: float | None = None
    check_summary: str | None = None

    @property
    def name(self) -> str:
        """The bot's name."""
        return self.manifest.name

    @property
    def version(self) -> str:
        """This submission's version."""
        return self.manifest.version

    @property
    def player(self) -> str:
        """Its name in results: ``name@version``."""
        return self.manifest.player

    @property
    def source(self) -> Path:
        """The files as submitted."""
        return self.folder / "source"

    @property
    def bot(self) -> Path:
        """The built bot's folder."""
        return self.folder / "bot"

    @property
    def build_log(self) -> Path:
        """The build's whole output."""
        return self.folder / "build.log"

    def to_json(self) -> dict[str, Any]:
        """What ``status.json`` holds."""
        return {
            "manifest": self.manifest.model_dump(),
            "state": self.state.value,
            "received_ns": self.received_ns,
            "submitted_at": self.submitted_at,
            "files": self.files,
            "bytes": self.bytes,
            "attempts": self.attempts,
            "finished_at": self.finished_at,
            "reasons": list(self.reasons),
            "build_tail": list(self.build_tail),
            "build_seconds": self.build_seconds,
            "check_summary": self.check_summary,
        }

    @classmethod
    def from_json(cls, folder: Path, data: Mapping[str, Any]) -> Submission:
        """Read ``status.json``'s data; raises ``ValueError`` (or a subclass) if damaged."""
        return cls(
            folder=folder,
            manifest=BotManifest.model_validate(data["manifest"]),
            state=State(data["state"]),
            received_ns=int(data["received_ns"]),
            submitted_at=str(data["submitted_at"]),
            files=int(data["files"]),
            bytes=int(data["bytes"]),
            attempts=int(data.get("attempts", 0)),
            finished_at=data.get("finished_at"),
            reasons=tuple(str(reason) for reason in data.get("reasons", ())),
            build_tail=tuple(str(line) for line in data.get("build_tail", ())),
            build_seconds=data.get("build_seconds"),
            check_summary=data.get("check_summary"),
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def league_config_path(path: Path) -> Path:
    """A league's config: ``path`` itself, or ``path/league.yaml`` for a folder."""
    return path / LEAGUE_CONFIG if path.is_dir() else path


def load_league(path: Path) -> TournamentSetup:
    """The league at ``path`` (its folder or its config): a config with ``submissions``.
    Raises :class:`TournamentError` if it is none."""
    config = league_config_path(path)
    if path.is_dir() and not config.is_file():
        raise TournamentError(f"{path}: no {LEAGUE_CONFIG} here: not a league's folder")
    setup = load_config(config)
    if setup.submissions is None:
        raise TournamentError(
            f"{config}: no 'submissions' key: a league's config names the folder of its "
            "submissions (submissions: submissions)"
        )
    return setup


@contextlib.contextmanager
def _flock(path: Path, *, blocking: bool) -> Iterator[bool]:
    """Hold an exclusive lock on ``path`` (made if missing); yields False, holding
    nothing, when ``blocking`` is off and another process holds it."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        yield True
    finally:
        os.close(descriptor)


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write a JSON file atomically: a temporary file renamed into place."""

    def write(stream: TextIO) -> None:
        json.dump(data, stream, indent=2)
        stream.write("\n")

    write_atomically(path, write, durable=True)


class SubmissionStore:
    """The store of submissions of a league (``setup.submissions``), for receiving,
    building, checking and listing them."""

    def __init__(self, setup: TournamentSetup) -> None:
        if setup.submissions is None:
            raise ValueError("the setup has no store of submissions")
        self.setup = setup
        self.settings = setup.submissions
        self.folder = setup.submissions.folder
        #: Problems reading the store (a damaged status file), as found.
        self.problems: list[str] = []

    # -- reading -----------------------------------------------------------------------------

    def submissions(self) -> list[Submission]:
        """Every submission, in the order received."""
        found: list[Submission] = []
        self.problems = []
        if not self.folder.is_dir():
            return found
        for name in sorted(os.listdir(self.folder)):
            if name.startswith("."):
                continue
            folder = self.folder / name
            if not folder.is_dir() or folder.is_symlink():
                continue
            for version in sorted(os.listdir(folder)):
                status = folder / version / _STATUS
                if not status.is_file():
                    continue
                try:
                    data = json.loads(status.read_text(encoding="utf-8"))
                    found.append(Submission.from_json(folder / version, data))
                except (OSError, ValueError, KeyError, TypeError, ValidationError) as error:
                    self.problems.append(f"{status}: cannot read it ({error}); left out")
        return sorted(found, key=lambda submission: (submission.received_ns, submission.player))

    def pending(self) -> list[Submission]:
        """The submissions not yet accepted or rejected, in the order received."""
        return [submission for submission in self.submissions() if not submission.state.is_final]

    def current(self) -> dict[str, Submission]:
        """The latest accepted submission of each name: the versions that play."""
        latest: dict[str, Submission] = {}
        for submission in self.submissions():
            if submission.state is State.ACCEPTED:
                latest[submission.name] = submission
        return latest

    def fingerprint(self) -> tuple[tuple[str, str], ...]:
        """Each submission and its state: it changes when one arrives or moves on."""
        return tuple(
            (submission.player, submission.state.value) for submission in self.submissions()
        )

    def league_running(self) -> int | None:
        """The pid of the ``aegis-ref league`` using this store, or None."""
        path = self.folder / _LEAGUE_LOCK
        if not path.exists():
            return None
        with _flock(path, blocking=False) as held:
            if held:
                return None
        try:
            return int(path.read_text(encoding="ascii").strip() or 0) or -1
        except (OSError, ValueError):
            return -1

    @contextlib.contextmanager
    def league_lock(self) -> Iterator[None]:
        """Hold the store's league lock: one ``aegis-ref league`` per store. Raises
        :class:`TournamentError` if another holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with _flock(self.folder / _LEAGUE_LOCK, blocking=False) as held:
            if not held:
                raise TournamentError(
                    f"{self.folder} is in use by another aegis-ref league (pid "
                    f"{self.league_running()})"
                )
            yield

    # -- receiving ---------------------------------------------------------------------------

    def receive(
        self, upload: Path, *, admit: Callable[[BotManifest], None] | None = None
    ) -> Submission:
        """Take in the folder or archive ``upload``: check its files and its manifest and
        store it, received. Raises :class:`SubmissionRejectedError` with the reasons.
        ``admit`` sees the manifest before anything is stored, and refuses it by raising
        (a network submission: whose bot name it is)."""
        limits = UploadLimits(self.settings.max_upload_bytes, self.settings.max_files)
        incoming = self.folder / _INCOMING
        incoming.mkdir(parents=True, exist_ok=True)
        _clear_dead(incoming)
        staging = incoming / f"{os.getpid()}-{secrets.token_hex(6)}"
        try:
            if upload.is_dir():
                unpacked = copy_folder(upload, staging, limits)
            elif upload.is_file() and is_archive(upload):
                unpacked = unpack_archive(upload, staging, limits)
            elif not upload.exists():
                raise SubmissionRejectedError([f"{upload}: no such file or folder"])
            else:
                raise SubmissionRejectedError(
                    [f"{upload}: a submission is a folder, a .tar.gz, .tgz, .tar or .zip"]
                )
            root = self._root(staging, upload)
            inside = root.relative_to(staging)
            try:
                manifest = load_manifest(
                    root,
                    source=str(upload / inside / MANIFEST_NAME),
                    ceiling=self.settings.max_limits,
                    taken=self.setup.bot_names,
                )
            except ConfigError as error:
                raise SubmissionRejectedError([str(issue) for issue in error.issues]) from None
            if admit is not None:
                admit(manifest)
            return self._store(manifest, root, unpacked.files, unpacked.bytes)
        except UploadError as error:
            raise SubmissionRejectedError([str(error)]) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _root(staging: Path, upload: Path) -> Path:
        """The bot's folder in an upload: its root, or the one folder at its root (an
        archive of ``my-bot/``), whichever holds the manifest."""
        if (staging / MANIFEST_NAME).exists():
            return staging
        entries = list(staging.iterdir())
        only = entries[0] if len(entries) == 1 else None
        if only is not None and not only.is_symlink() and (only / MANIFEST_NAME).exists():
            return only
        listing = ", ".join(sorted(entry.name for entry in entries)[:10]) or "nothing"
        raise SubmissionRejectedError(
            [f"{upload}: no {MANIFEST_NAME} at the root of the bot's folder (found: {listing})"]
        )

    def _store(self, manifest: BotManifest, root: Path, files: int, size: int) -> Submission:
        with _flock(self.folder / _LOCK, blocking=True):
            folder = self.folder / manifest.name / manifest.version
            if folder.is_dir() and not (folder / _STATUS).exists():
                shutil.rmtree(folder)  # a receive that died half way (we hold the lock)
            if folder.exists():
                earlier = self._read(folder)
                when = f" on {earlier.submitted_at}, {earlier.state.value}" if earlier else ""
                raise SubmissionRejectedError(
                    [
                        f"{manifest.name} {manifest.version} was submitted already{when}: "
                        "submissions never change, so a new one needs a new version in "
                        f"{MANIFEST_NAME}"
                    ]
                )
            folder.mkdir(parents=True)
            root.rename(folder / "source")
            submission = Submission(
                folder=folder,
                manifest=manifest,
                state=State.RECEIVED,
                received_ns=time.time_ns(),
                submitted_at=_now(),
                files=files,
                bytes=size,
            )
            _write_json(folder / _STATUS, submission.to_json())
            return submission

    def _read(self, folder: Path) -> Submission | None:
        try:
            data = json.loads((folder / _STATUS).read_text(encoding="utf-8"))
            return Submission.from_json(folder, data)
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            return None

    def reload(self, submission: Submission) -> Submission:
        """The submission as its status file says now."""
        return self._read(submission.folder) or submission

    def _save(self, submission: Submission) -> Submission:
        _write_json(submission.folder / _STATUS, submission.to_json())
        return submission

    # -- building and checking ---------------------------------------------------------------

    def sandbox(self) -> SandboxPlan:
        """The sandbox of builds and checks: always on. Raises :class:`TournamentError`
        where bubblewrap cannot sandbox."""
        hidden = [self.setup.output.resolve()]
        if self.setup.source is not None:
            hidden.append(self.setup.source.resolve())
        hidden.extend(path.resolve() for path in self.setup.secret_files)
        try:
            return plan_sandbox(SandboxMode.REQUIRED, hidden=hidden, freeze_opponent=False)
        except SandboxUnavailableError as error:
            raise TournamentError(
                f"a submission is built and checked only in a sandbox: {error}"
            ) from None

    def bot_spec(self, submission: Submission) -> BotSpec:
        """How the built bot is started: its ``run`` in its folder, under its limits."""
        argv = list(submission.manifest.run_argv)
        folder = str(submission.bot)
        if "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = os.path.normpath(os.path.join(folder, argv[0]))
        return BotSpec(
            submission.player,
            tuple(argv),
            cwd=folder,
            limits=submission.manifest.resource_limits(self.settings.limits),
            home=folder,
        )

    def process(
        self,
        submission: Submission,
        *,
        say: Callable[[str], None] | None = None,
        on_item: Callable[[ItemResult], None] | None = None,
    ) -> Submission | None:
        """Build and check a submission not yet accepted or rejected, and accept or reject
        it; return it as it ends. None when another process is building it. ``say`` hears
        each step, ``on_item`` each check item's result. Raises :class:`TournamentError`
        only where nothing can be built (no sandbox)."""
        say = say or (lambda _text: None)
        with _flock(submission.folder / _LOCK, blocking=False) as held:
            if not held:
                return None
            submission = self.reload(submission)
            if submission.state.is_final:
                return submission
            plan = self.sandbox()
            if submission.state is not State.RECEIVED:
                say(
                    f"{submission.name} {submission.version}: its {submission.state.value} was "
                    "cut short (the league stopped); building it again"
                )
            try:
                submission = self._save(
                    replace(submission, state=State.BUILDING, attempts=submission.attempts + 1)
                )
                problem = self._build(submission, plan, say)
                if problem is not None:
                    return self._save(problem)
                submission = self._save(replace(submission, state=State.CHECKING))
                return self._save(self._check(submission, plan, say, on_item))
            except OSError as error:  # this machine's trouble (a full disk), not the bot's
                raise TournamentError(
                    f"cannot build and check {submission.name} {submission.version} here: "
                    f"{error.strerror or error}; it stays queued"
                ) from None

    def _reject(self, submission: Submission, *reasons: str, **changes: Any) -> Submission:
        return replace(
            submission, state=State.REJECTED, finished_at=_now(), reasons=reasons, **changes
        )

    def _build(
        self, submission: Submission, plan: SandboxPlan, say: Callable[[str], None]
    ) -> Submission | None:
        """Make ``bot/``; None when it is made, else the submission rejected."""
        partial = submission.folder / _PARTIAL
        for leftover in (partial, submission.bot):
            if leftover.is_symlink():
                leftover.unlink()
            shutil.rmtree(leftover, ignore_errors=True)
        settings = self.settings
        limits = UploadLimits(settings.build.size_mb * 1024 * 1024, settings.build_max_files)
        command = submission.manifest.build
        if command is None:
            try:
                copy_folder(submission.source, partial, limits)
            except UploadError as error:
                return self._reject(submission, f"its files: {error}")
            partial.rename(submission.bot)
            return self._runnable(submission)
        build = settings.build
        say(
            f"Building {submission.name} {submission.version}: {command} (sandboxed, no "
            f"network, {build.timeout_s:g} s, {build.size_mb} MiB)"
        )

        def receive(stream: BinaryIO) -> None:
            unpack_tar_stream(stream, partial, limits, "the built folder")

        submission.build_log.unlink(missing_ok=True)
        started = time.monotonic()
        try:
            result = run_build(
                command,
                source=submission.source,
                target=submission.bot,
                receive=receive,
                sandbox=plan,
                limits=build,
                env={
                    **settings.build_env,
                    "AEGIS_PYTHON": sys.executable,
                    "AEGIS_BOT_NAME": submission.name,
                    "AEGIS_BOT_VERSION": submission.version,
                },
                read_only=settings.build_read_only,
                log_path=submission.build_log,
            )
        except UploadError as error:
            # The build ran; what it made was refused: its last lines still tell why.
            shutil.rmtree(partial, ignore_errors=True)
            return self._reject(
                submission,
                f"its build: {error}",
                build_tail=_last_lines(submission.build_log, _TAIL_LINES),
                build_seconds=round(time.monotonic() - started, 3),
            )
        tail = tuple(result.log_tail[-_TAIL_LINES:])
        problem = result.problem(build)
        if problem is not None or not partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
            return self._reject(
                submission,
                problem or "the build left no folder",
                build_tail=tail,
                build_seconds=result.seconds,
            )
        partial.rename(submission.bot)
        say(f"Built in {result.seconds:.1f} s")
        return self._runnable(replace(submission, build_seconds=result.seconds))

    def _runnable(self, submission: Submission) -> Submission | None:
        """None when the ``run`` program is in place, else the submission rejected."""
        program = submission.manifest.run_argv[0]
        if "/" not in program or os.path.isabs(program):
            return None
        path = Path(self.bot_spec(submission).command[0])
        if not path.is_file():
            return self._reject(
                submission, f"run: {program} does not exist in the bot's folder after its build"
            )
        if not os.access(path, os.X_OK):
            return self._reject(submission, f"run: {program} is not executable")
        return None

    def _check(
        self,
        submission: Submission,
        plan: SandboxPlan,
        say: Callable[[str], None],
        on_item: Callable[[ItemResult], None] | None,
    ) -> Submission:
        settings = self.settings
        time_control = self.setup.time_control
        check = CheckSettings(
            decision_ms=settings.check_decision_ms or time_control.decision_ms,
            warmup_ms=settings.check_warmup_ms or time_control.warmup_ms,
            matches=settings.check_matches,
            sandbox=plan,
        )
        spec = self.bot_spec(submission)
        say(f"Checking {submission.name} {submission.version} (check-bot's checklist)")
        report = check_bot(spec, check, on_result=on_item)
        _write_json(submission.folder / "check.json", report.to_json())
        summary = report.summary()
        if report.passed:
            return replace(
                submission, state=State.ACCEPTED, finished_at=_now(), check_summary=summary
            )
        reasons = [
            f"check-bot {item.name}: {item.reason}"
            for item in report.items
            if item.status in (Status.FAIL, Status.SKIP)
        ]
        return self._reject(submission, *reasons, check_summary=summary)


def _clear_dead(incoming: Path) -> None:
    """Remove the uploads being unpacked by processes that are gone."""
    for entry in incoming.iterdir():
        pid = entry.name.partition("-")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue  # alive, someone else's


def enter_submissions(setup: TournamentSetup) -> TournamentSetup:
    """The setup with its league's bots: the latest accepted version of each submitted
    name joins the config's bots (sandboxed whatever the config says), and every older
    accepted version is retired. A setup without submissions is returned as it is."""
    if setup.submissions is None:
        return setup
    store = SubmissionStore(setup)
    house = set(setup.bot_names)
    accepted = [
        submission for submission in store.submissions() if submission.state is State.ACCEPTED
    ]
    latest: dict[str, Submission] = {}
    for submission in accepted:
        latest[submission.name] = submission
    playing = [
        submission
        for submission in latest.values()
        if submission.name not in house and submission.bot.is_dir()
    ]
    retired = tuple(
        (submission.player, latest[submission.name].player)
        for submission in accepted
        if latest[submission.name] is not submission
    )
    entered = replace(
        setup,
        bots=setup.bots + tuple(store.bot_spec(submission) for submission in playing),
        retired=retired,
        sandbox=SandboxMode.REQUIRED,
    )
    return entered if setup.seed is None else entered.with_seed(setup.seed)


def _last_lines(path: Path, count: int) -> tuple[str, ...]:
    """The last ``count`` lines of the text file ``path`` that are not blank (read from its
    last 64 KiB); none if it cannot be read."""
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, path.stat().st_size - 65536))
            text = stream.read().decode("utf-8", "replace")
    except OSError:
        return ()
    return tuple(line for line in text.splitlines() if line.strip())[-count:]
