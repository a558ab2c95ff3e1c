"""Tournament config files: YAML validated by a pydantic model, errors with line numbers.

:func:`load_config` reads a file, composes its YAML node tree (to know the line of every key
and value), validates the data with :class:`TournamentConfig` and checks what a model cannot
(duplicate names, gauntlet names, bot commands, rules options). Every problem is reported at
once, as ``config.yaml:12: bots[2].command: ...``. The result is a :class:`TournamentSetup`:
bot specs ready to start, rules options and time control as the match runner takes them.

Keys and defaults are documented on the models below and in ``tournaments/examples/``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from referee.bots import BotSpec, ResourceLimits
from referee.build import BuildLimits
from referee.bundled import BOT_NAME_PATTERN, bundled_bot_names, sample_bots_dir
from referee.listeners import RemoteListener, read_secret_key
from referee.rules.errors import RulesOptionsError
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxMode, bot_home
from referee.seeds import derive_seed
from referee.time_control import Clock, TimeControl
from tournaments.config.ladder import LadderSettings, check_settings
from tournaments.config.sources import (
    BOT_NAME_RULE,
    DataPath,
    PathError,
    compose_yaml,
    is_arguments,
    locate_issue,
    matching,
    pydantic_issues,
    show_value,
)
from tournaments.errors import ConfigError, ConfigIssue

__all__ = [
    "BOT_NAME_PATTERN",
    "BotConfig",
    "DaskTLS",
    "ExecutorConfig",
    "ExecutorSetup",
    "LadderConfig",
    "LimitsConfig",
    "ListenConfig",
    "SubmissionsConfig",
    "SubmissionsSetup",
    "TLSConfig",
    "TimeControlConfig",
    "TournamentConfig",
    "TournamentSetup",
    "load_config",
    "parse_config",
]

_Z85_KEY = re.compile(r"[0-9A-Za-z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")
#: A Dask scheduler address: tcp:// or tls://, a host (name, IPv4 or [IPv6]) and a port.
_SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")
_DEFAULT_LIMITS = ResourceLimits()
_DEFAULT_TIME = TimeControl()
_DEFAULT_BUILD = BuildLimits()
_DEFAULT_LADDER = LadderSettings()

Format = Literal["round_robin", "gauntlet", "ladder"]
ExecutorKind = Literal["local", "dask"]


class _Model(BaseModel):
    # Strict: YAML already gives typed values, so "yes" or 1.5 for an integer is a mistake.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class LimitsConfig(_Model):
    """Resource limits of a started bot (``null``: no limit)."""

    cpu_seconds: int | None = Field(
        default=_DEFAULT_LIMITS.cpu_seconds,
        ge=1,
        description="CPU seconds over the process's life.",
    )
    address_space_mb: int | None = Field(
        default=_DEFAULT_LIMITS.address_space_mb, ge=16, description="Virtual memory cap in MiB."
    )
    open_files: int | None = Field(
        default=_DEFAULT_LIMITS.open_files, ge=16, description="Open file descriptors cap."
    )
    log_bytes: int = Field(
        default=_DEFAULT_LIMITS.log_bytes,
        ge=0,
        description="Bytes of the bot's output kept in its logs over the whole tournament "
        "(every process of it, on every worker, resumed runs included); the rest is discarded.",
    )
    memory_mb: int | None = Field(
        default=_DEFAULT_LIMITS.memory_mb,
        ge=16,
        description="Memory of the bot and everything it starts, in MiB (a cgroup limit; "
        "over it, the bot crashes with a fault that says so).",
    )
    processes: int | None = Field(
        default=_DEFAULT_LIMITS.processes,
        ge=8,
        description="Processes and threads of the bot and everything it starts (a cgroup "
        "limit: a fork bomb stops there).",
    )
    tmp_mb: int = Field(
        default=_DEFAULT_LIMITS.tmp_mb,
        ge=1,
        description="Size of the sandbox's private /tmp in MiB.",
    )
    file_size_mb: int | None = Field(
        default=_DEFAULT_LIMITS.file_size_mb,
        ge=1,
        description="Largest file the bot may write, in MiB (an rlimit).",
    )


class BotConfig(_Model):
    """One bot: a name and either a command to start it or the key of a remote bot."""

    name: str = Field(description="Unique name, used in records, standings and match ids.")
    command: str | list[str] | None = Field(
        default=None,
        description="A bundled bot's name (random, first), a command line (split like a "
        "shell would) or a list of arguments.",
    )
    remote_key: str | None = Field(
        default=None, description="CurveZMQ public key (Z85) of a bot that dials in instead."
    )
    connections: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="A remote bot: matches it may play at once, each on a connection of its "
        "own (default 1).",
    )
    cwd: str | None = Field(
        default=None, description="Working directory; relative to the config file's directory."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables for the bot."
    )
    limits: LimitsConfig = LimitsConfig()  # frozen: safe to share
    keep_alive: bool = Field(
        default=False,
        description="Reuse one process for every match of the bot (trusted bots only: a "
        "process remembers what it saw); by default every match starts it afresh.",
    )
    read_only: list[str] = Field(
        default_factory=list,
        description="More paths its sandbox shows, read-only (relative to the config file's "
        "directory); it always sees the system directories, its own directory and the "
        "referee's Python.",
    )

    @field_validator("name", mode="before")
    @classmethod
    def _check_name(cls, value: object) -> object:
        return matching(value, BOT_NAME_PATTERN, BOT_NAME_RULE)

    @field_validator("command", mode="before")
    @classmethod
    def _check_command(cls, value: object) -> object:
        if value is None or isinstance(value, str) or is_arguments(value):
            return value
        raise ValueError(
            "must be a bundled bot's name, a command line string or a non-empty list of strings"
        )


class TimeControlConfig(_Model):
    """The clock of every match (see ``referee.runner.TimeControl``)."""

    decision_ms: int = Field(
        default=_DEFAULT_TIME.decision_ms, ge=1, description="Per-decision limit."
    )
    bank_ms: int | None = Field(
        default=_DEFAULT_TIME.bank_ms, ge=0, description="Extra time per match to draw on, or null."
    )
    warmup_ms: int = Field(
        default=_DEFAULT_TIME.warmup_ms,
        ge=0,
        description="Allowance for the handshake, ready and each bot's first decision.",
    )
    clock: Literal["cpu", "wall"] | None = Field(
        default=None,
        description="What a decision is charged: 'cpu' (the CPU time of the bot's cgroup; "
        "required: the run refuses to start without it) or 'wall'; left out, CPU time where "
        "the machine counts it and wall time (with a warning) elsewhere. Remote bots: wall.",
    )
    backstop: float = Field(
        default=_DEFAULT_TIME.backstop,
        ge=1,
        description="On the CPU clock: the most wall time a decision may take, as a multiple "
        "of its CPU allowance (a bot that sleeps or blocks ends too).",
    )


class TLSConfig(_Model):
    """TLS files for the connection to a Dask scheduler (paths relative to the config file)."""

    ca_file: str = Field(description="CA certificate(s) that signed the cluster's (PEM).")
    cert: str = Field(description="This coordinator's client certificate (PEM).")
    key: str | None = Field(
        default=None, description="Its private key (PEM), if the certificate file lacks it."
    )


class ExecutorConfig(_Model):
    """Where matches are played: ``local`` (a process pool on this machine, ``concurrency``
    workers) or ``dask`` (the workers of a Dask cluster; see docs/cluster.md)."""

    kind: ExecutorKind = Field(default="local", description="local or dask.")
    address: str | None = Field(
        default=None,
        description="kind dask: the scheduler's address, tcp://host:8786 or tls://host:8786.",
    )
    scheduler_file: str | None = Field(
        default=None,
        description="kind dask, instead of address: the JSON file a scheduler started with "
        "--scheduler-file writes (relative to the config file).",
    )
    tls: TLSConfig | None = Field(
        default=None,
        description="kind dask: client certificate and CA for a tls:// scheduler (without it, "
        "a tls:// address takes the TLS settings of Dask's own configuration).",
    )
    connect_timeout_s: int = Field(
        default=30, ge=1, le=3600, description="kind dask: seconds to wait for the scheduler."
    )
    batch_size: int = Field(
        default=1,
        ge=1,
        le=100,
        description="kind dask: matches per task; more than 1 spreads the cost of a task over "
        "several short matches (a worker that dies plays its whole batch again elsewhere).",
    )
    affinity: bool = Field(
        default=True,
        description="kind local: each worker process and its bots keep to an equal share of "
        "the CPUs (one CPU each with as many workers as CPUs).",
    )


class ListenConfig(_Model):
    """Where remote bots (``remote_key``) dial in: a tcp address on this machine and the
    referee's CurveZMQ key (see docs/running-a-tournament.md)."""

    host: str = Field(
        default="0.0.0.0",
        min_length=1,
        description="Address to listen on: 0.0.0.0 for every interface, or one address.",
    )
    port: int = Field(ge=1, le=65535, description="TCP port the remote bots connect to.")
    key_file: str = Field(
        description="The referee's secret key, written by 'aegis-ref keygen' (relative to the "
        "config file); remote bots are given the public key from KEY_FILE.pub."
    )
    connect_timeout_s: int = Field(
        default=60,
        ge=1,
        le=86400,
        description="Seconds the tournament waits for a remote bot that is not connected "
        "while it plays other matches; then the bot forfeits its matches until it connects.",
    )
    advertise: str | None = Field(
        default=None,
        min_length=1,
        description="executor dask: the address of this machine by which the workers reach "
        "the listener (default: host, or the address this machine reaches the scheduler from "
        "when host is 0.0.0.0 or ::).",
    )


class BuildConfig(_Model):
    """What a submission's build may use (it runs sandboxed, without network)."""

    timeout_s: int = Field(
        default=int(_DEFAULT_BUILD.timeout_s), ge=1, le=86400, description="Wall-clock seconds."
    )
    size_mb: int = Field(
        default=_DEFAULT_BUILD.size_mb,
        ge=1,
        description="Size of the bot's folder after its build, in MiB (the build writes in a "
        "tmpfs of this size, which counts as its memory).",
    )
    max_files: int = Field(
        default=100_000, ge=1, description="Files and folders of the bot's folder after its build."
    )
    memory_mb: int | None = Field(
        default=_DEFAULT_BUILD.memory_mb, ge=64, description="Memory of the build (a cgroup limit)."
    )
    processes: int | None = Field(
        default=_DEFAULT_BUILD.processes,
        ge=8,
        description="Processes and threads of the build (a cgroup limit).",
    )
    tmp_mb: int = Field(
        default=_DEFAULT_BUILD.tmp_mb, ge=1, description="Size of the build's private /tmp, MiB."
    )
    log_bytes: int = Field(
        default=_DEFAULT_BUILD.log_bytes, ge=0, description="Bytes of the build's output kept."
    )
    read_only: list[str] = Field(
        default_factory=list,
        description="More paths every build sees, read-only (a toolchain, an offline package "
        "cache), relative to the config file's directory.",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="More environment variables of every build."
    )


class CheckConfig(_Model):
    """The check-bot checklist every built submission must pass."""

    matches: int = Field(default=2, ge=1, le=20, description="Matches of its several_matches item.")
    decision_ms: int | None = Field(
        default=None, ge=1, description="Deadline of a decision; default: the time_control's."
    )
    warmup_ms: int | None = Field(
        default=None, ge=1, description="Time to start up; default: the time_control's."
    )


class LadderConfig(_Model):
    """How a ladder (``format: ladder``) pairs its rounds and when it stops."""

    top: int | None = Field(
        default=None,
        ge=1,
        description="How many of the best bots to certify in order; leave it out to rank "
        "the whole field.",
    )
    confidence: float = Field(
        default=_DEFAULT_LADDER.confidence,
        gt=0.5,
        lt=1,
        description="Confidence of the certification (and of the intervals that decide it).",
    )
    max_matches: int | None = Field(
        default=None, ge=2, description="Budget in matches (a duplicate pair is 2 matches)."
    )
    rounds: int | None = Field(default=None, ge=1, description="Budget in rounds.")
    random_share: float = Field(
        default=_DEFAULT_LADDER.random_share,
        ge=0,
        le=1,
        description="Share of each round's pairs drawn at random across the field, which keeps "
        "the rating scale connected.",
    )
    repeat_penalty: float = Field(
        default=_DEFAULT_LADDER.repeat_penalty,
        ge=0,
        description="How strongly a pairing avoids bots that met already.",
    )
    finalists: int | None = Field(
        default=None,
        ge=2,
        description="Bots in the final; default: top and a margin.",
    )
    prior_games: float = Field(
        default=_DEFAULT_LADDER.prior_games,
        gt=0,
        description="Virtual games of each bot against an average one, which keep the "
        "ratings of bots with few results finite.",
    )
    final_share: float = Field(
        default=_DEFAULT_LADDER.final_share,
        ge=0,
        lt=1,
        description="With top and a budget: the share of the budget kept for the final, "
        "which then starts with the best finalists even if more bots are in the race.",
    )
    race_confidence: float | None = Field(
        default=None,
        gt=0.5,
        lt=1,
        description="With top: the one-sided confidence at which a bot leaves the race; "
        "default 1 - (1 - confidence) / top. Lower lets the leaders play sooner on a small "
        "budget, at a greater risk of sending a top bot away.",
    )

    def settings(self) -> LadderSettings:
        """The planner's settings."""
        return LadderSettings(**self.model_dump())


class SubmissionsConfig(_Model):
    """A store of submitted bots (``aegis-ref submit``): every accepted submission's latest
    version plays, besides the config's ``bots``."""

    folder: str = Field(
        min_length=1, description="The store of submissions, relative to the config file."
    )
    max_upload_mb: int = Field(
        default=64, ge=1, description="Largest submission (its files, unpacked), in MiB."
    )
    max_files: int = Field(
        default=20_000, ge=1, description="Most files and folders in one submission."
    )
    build: BuildConfig = BuildConfig()  # frozen: safe to share
    check: CheckConfig = CheckConfig()  # frozen: safe to share
    limits: LimitsConfig = Field(
        default=LimitsConfig(),  # frozen: safe to share
        description="Each submitted bot's limits, unless its manifest asks for others.",
    )
    max_limits: LimitsConfig | None = Field(
        default=None,
        description="The most a manifest may ask for, by limit; a limit not named here is "
        "as 'limits' says (a bot may ask for less, never for more).",
    )
    poll_s: float = Field(
        default=5.0, gt=0, le=3600, description="How often 'aegis-ref league' looks for new ones."
    )


class TournamentConfig(_Model):
    """A tournament config file, as validated (before bot commands are resolved)."""

    name: str = Field(min_length=1, max_length=200, description="The tournament's name.")
    bots: list[BotConfig] = Field(
        default_factory=list,
        description="The bots, at least two; or fewer, and the bots of 'submissions'.",
    )
    format: Format = Field(
        default="round_robin",
        description="round_robin: every pair plays; gauntlet: the bots named in 'gauntlet' "
        "each play every other bot; ladder: rounds of rating-driven pairs (see 'ladder').",
    )
    gauntlet: list[str] | None = Field(default=None, description="Bot names for format: gauntlet.")
    ladder: LadderConfig | None = Field(
        default=None,
        description="format: ladder: what to certify, the budget and how rounds are paired.",
    )
    matches_per_pair: int = Field(
        default=2,
        ge=2,
        description="Matches per pairing; even, since matches come in duplicate pairs "
        "(same seed, seats swapped).",
    )
    rules: dict[str, int] = Field(default_factory=dict, description="Rules options (RULES.md).")
    time_control: TimeControlConfig = TimeControlConfig()  # frozen: safe to share
    concurrency: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Matches played at the same time by the local executor (one worker "
        "process each); on a Dask cluster, as many as its workers have threads.",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        description="Master seed of every deal; leave it out to have a secret one drawn "
        "from the operating system when the results store is made, and kept there.",
    )
    output: str | None = Field(
        default=None,
        description="Output directory, relative to the current directory (to the config "
        "file's, for a league: a config with 'submissions'); default results/<name>.",
    )
    anchor: str | None = Field(
        default=None, description="A bot whose Elo is fixed at 1500; default: the mean is 1500."
    )
    executor: ExecutorConfig = Field(
        default=ExecutorConfig(),  # frozen: safe to share
        description="'local' (default), 'dask', or a mapping {kind: dask, address: ...}.",
    )
    listen: ListenConfig | None = Field(
        default=None, description="Where remote bots dial in; needed when a bot has remote_key."
    )
    sandbox: Literal["auto", "required", "off"] = Field(
        default="auto",
        description="auto: every started bot runs in a bubblewrap sandbox where bubblewrap "
        "works, unsandboxed (and said loudly) where not; required: refuse to start without "
        "it; off: never.",
    )
    freeze_opponent: bool = Field(
        default=True,
        description="Sandboxed bots: freeze a bot while its opponent decides, so that it "
        "cannot take CPU from it.",
    )
    submissions: SubmissionsConfig | None = Field(
        default=None,
        description="A store of submitted bots, whose latest accepted versions play too (a "
        "league): a folder, or a mapping {folder: ..., limits: ...}.",
    )

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_kind(cls, value: object) -> object:
        # ``executor: local`` is short for ``executor: {kind: local}``.
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("submissions", mode="before")
    @classmethod
    def _submissions_folder(cls, value: object) -> object:
        # ``submissions: DIR`` is short for ``submissions: {folder: DIR}``.
        return {"folder": value} if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class DaskTLS:
    """Resolved TLS files of a Dask connection (see :class:`TLSConfig`)."""

    ca_file: Path
    cert: Path
    key: Path | None = None


@dataclass(frozen=True, slots=True)
class ExecutorSetup:
    """Where matches are played, resolved: the local process pool, or a Dask cluster reached
    by ``address`` or ``scheduler_file``, or started here with ``local_workers`` workers
    (``--local-cluster N``)."""

    kind: ExecutorKind = "local"
    address: str | None = None
    scheduler_file: Path | None = None
    tls: DaskTLS | None = None
    connect_timeout_s: float = 30.0
    #: Start a Dask LocalCluster of this many single-threaded worker processes.
    local_workers: int | None = None
    #: Matches per task (a cluster's): more than one spreads a task's cost over them.
    batch_size: int = 1
    #: The local pool: each worker and its bots keep to an equal share of the CPUs.
    affinity: bool = True

    @property
    def is_dask(self) -> bool:
        """True when matches go to a Dask cluster."""
        return self.kind == "dask"


@dataclass(frozen=True, slots=True)
class SubmissionsSetup:
    """A store of submissions, resolved (see :class:`SubmissionsConfig`)."""

    folder: Path
    max_upload_bytes: int = 64 * 1024 * 1024
    max_files: int = 20_000
    build: BuildLimits = field(default_factory=BuildLimits)
    build_max_files: int = 100_000
    build_read_only: tuple[str, ...] = ()
    build_env: Mapping[str, str] = field(default_factory=dict)
    check_matches: int = 2
    #: The check's clock; None: the tournament's.
    check_decision_ms: int | None = None
    check_warmup_ms: int | None = None
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    #: The most a manifest may ask for, by limit (None: no limit).
    max_limits: Mapping[str, int | None] = field(default_factory=dict)
    poll_s: float = 5.0


@dataclass(frozen=True, slots=True)
class TournamentSetup:
    """A validated config with everything resolved: ready to schedule and play."""

    name: str
    bots: tuple[BotSpec, ...]
    format: Format
    #: The bots that play every other bot (format gauntlet); empty for a round robin.
    gauntlet: tuple[str, ...]
    matches_per_pair: int
    options: RulesOptions
    time_control: TimeControl
    concurrency: int
    #: The master seed of every deal; None: the results store's own (drawn when it is made,
    #: see :meth:`with_seed`).
    seed: int | None
    output: Path
    anchor: str | None = None
    #: Where matches are played (config key ``executor``).
    executor: ExecutorSetup = field(default_factory=ExecutorSetup)
    #: Where remote bots dial in, with the referee's key pair (config key ``listen``).
    listen: RemoteListener | None = None
    #: How long the run waits for a remote bot that is not connected before its matches are
    #: forfeited (until it connects).
    remote_connect_s: float = 60.0
    #: Dask: the address by which the workers reach the listener (``listen.advertise``).
    listen_advertise: str | None = None
    #: How started bots are contained (config key ``sandbox``).
    sandbox: SandboxMode = SandboxMode.AUTO
    #: Freeze a sandboxed bot while its opponent decides (config key ``freeze_opponent``).
    freeze_opponent: bool = True
    #: Files no sandbox may show besides the config and the output (the listener's key).
    secret_files: tuple[Path, ...] = ()
    #: The config file, if the setup came from one.
    source: Path | None = None
    #: The store of submitted bots (config key ``submissions``), if any; its bots join
    #: ``bots`` when a run starts (:func:`tournaments.league.submissions.enter_submissions`).
    submissions: SubmissionsSetup | None = None
    #: Bots replaced by a newer version of theirs, each with the bot replacing it: their
    #: unplayed matches leave the schedule, and their results the standings (they stay in
    #: the store, as history).
    retired: tuple[tuple[str, str], ...] = ()
    #: How a ladder pairs and stops (config key ``ladder``); None for other formats.
    ladder: LadderSettings | None = None

    @property
    def bot_names(self) -> tuple[str, ...]:
        """The bots' names in config order."""
        return tuple(spec.name for spec in self.bots)

    def with_seed(self, seed: int) -> TournamentSetup:
        """The setup playing from master seed ``seed``: the config's, or the one its results
        store drew (a config without ``seed`` knows it only once the store is open).

        Each bot whose ``env`` gives no ``AEGIS_SEED`` gets one derived from ``seed`` and its
        name, so that a run with concurrency 1 is reproducible move for move (bundled bots
        seed their randomness from it). The derivation is one-way: a bot cannot go back from
        its ``AEGIS_SEED`` to a long master seed, only try every small one.
        """
        if self.seed is not None and self.seed != seed:
            raise ValueError(f"the setup plays from seed {self.seed}, not {seed}")
        bots = tuple(
            spec
            if "AEGIS_SEED" in spec.env
            else replace(
                spec, env={**spec.env, "AEGIS_SEED": str(derive_seed(seed, "bot", spec.name))}
            )
            for spec in self.bots
        )
        return replace(self, seed=seed, bots=bots)

    def with_overrides(
        self,
        *,
        output: Path | None = None,
        concurrency: int | None = None,
        local_cluster: int | None = None,
    ) -> TournamentSetup:
        """The same setup with the command line's ``--output`` / ``--concurrency`` /
        ``--local-cluster`` applied (a local cluster replaces the config's executor)."""
        executor = self.executor
        if local_cluster is not None:
            executor = ExecutorSetup(
                kind="dask", local_workers=local_cluster, batch_size=executor.batch_size
            )
        return replace(
            self,
            output=self.output if output is None else output,
            concurrency=self.concurrency if concurrency is None else concurrency,
            executor=executor,
        )


# ---------------------------------------------------------------------------------------------
# Validation


_KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "top": tuple(TournamentConfig.model_fields),
    "bot": tuple(BotConfig.model_fields),
    "limits": tuple(LimitsConfig.model_fields),
    "time_control": tuple(TimeControlConfig.model_fields),
    "executor": tuple(ExecutorConfig.model_fields),
    "tls": tuple(TLSConfig.model_fields),
    "listen": tuple(ListenConfig.model_fields),
    "submissions": tuple(SubmissionsConfig.model_fields),
    "build": tuple(BuildConfig.model_fields),
    "check": tuple(CheckConfig.model_fields),
    "ladder": tuple(LadderConfig.model_fields),
}


def _known_keys(path: DataPath) -> tuple[str, ...]:
    """The keys allowed in the mapping at ``path``."""
    if len(path) == 0:
        return _KNOWN_KEYS["top"]
    if path[0] in ("time_control", "listen", "ladder"):
        return _KNOWN_KEYS[str(path[0])]
    if path[0] == "executor":
        return _KNOWN_KEYS["tls" if path[1:] == ("tls",) else "executor"]
    if path[0] == "bots" and len(path) == 2:
        return _KNOWN_KEYS["bot"]
    if path[0] == "bots" and len(path) == 3 and path[2] == "limits":
        return _KNOWN_KEYS["limits"]
    if path[0] == "submissions":
        if len(path) == 1:
            return _KNOWN_KEYS["submissions"]
        if len(path) == 2 and path[1] in ("build", "check"):
            return _KNOWN_KEYS[str(path[1])]
        if len(path) == 2 and path[1] in ("limits", "max_limits"):
            return _KNOWN_KEYS["limits"]
    return ()


def _check_rules(rules: Mapping[str, int]) -> tuple[RulesOptions, list[PathError]]:
    problems: list[PathError] = []
    known = RulesOptions().to_dict()
    for key, value in rules.items():
        if key not in known:
            problems.append(
                PathError(("rules", key), f"unknown rules option; known: {', '.join(known)}")
            )
            continue
        try:
            RulesOptions(**{key: value})
        except RulesOptionsError as error:
            problems.append(PathError(("rules", key), str(error)))
    if problems:
        return RulesOptions(), problems
    return RulesOptions(**rules), problems


def _resolve_command(command: str | list[str], cwd: Path, path: DataPath) -> tuple[str, ...]:
    """The argv of a bot: a bundled bot's run script, or the command with its program checked.

    A program given as a path (it has a ``/``) resolves against the bot's working directory,
    like everything else relative in the command.
    """
    if isinstance(command, str):
        text = command.strip()
        if text in bundled_bot_names():
            return (str(sample_bots_dir() / text / "run"),)
        try:
            argv = shlex.split(text)
        except ValueError as error:
            raise PathError(path, f"cannot split the command line {command!r}: {error}") from None
        if not argv:
            raise PathError(path, "empty command")
    else:
        argv = list(command)
        if not argv[0]:
            raise PathError((*path, 0), "empty program name")
    program = argv[0]
    if "/" in program:
        resolved = Path(os.path.normpath(cwd / program))
        if not resolved.is_file():
            raise PathError(path, f"program {program!r} does not exist (looked for {resolved})")
        if not os.access(resolved, os.X_OK):
            raise PathError(path, f"program {str(resolved)!r} is not executable")
        argv[0] = str(resolved)
    elif shutil.which(program) is None:
        known = ", ".join(bundled_bot_names()) or "none"
        raise PathError(
            path,
            f"{program!r} is neither a bundled bot ({known}) nor a program on PATH",
        )
    return tuple(argv)


def _resolve_bot(bot: BotConfig, index: int, base_dir: Path) -> BotSpec:
    path: DataPath = ("bots", index)
    if (bot.command is None) == (bot.remote_key is None):
        raise PathError(path, "give exactly one of 'command' (a bot to start) or 'remote_key'")
    # AEGIS_SEED, unless given here, comes from the master seed: TournamentSetup.with_seed.
    env = dict(bot.env)
    limits = ResourceLimits(**bot.limits.model_dump())
    if bot.remote_key is not None:
        if not _Z85_KEY.fullmatch(bot.remote_key):
            raise PathError((*path, "remote_key"), "a CurveZMQ public key is 40 Z85 characters")
        return BotSpec(
            bot.name, (), None, env, limits, bot.remote_key, connections=bot.connections or 1
        )
    if bot.connections is not None:
        raise PathError(
            (*path, "connections"),
            "only for a remote bot (remote_key): a started bot plays one match per process",
        )
    cwd = base_dir
    if bot.cwd is not None:
        cwd = Path(bot.cwd) if Path(bot.cwd).is_absolute() else base_dir / bot.cwd
        if not cwd.is_dir():
            raise PathError((*path, "cwd"), f"working directory {str(cwd)!r} does not exist")
    assert bot.command is not None
    argv = _resolve_command(bot.command, cwd, (*path, "command"))
    read_only = []
    for number, text in enumerate(bot.read_only):
        shown = Path(os.path.normpath(base_dir / Path(text).expanduser()))
        if not shown.exists():
            raise PathError((*path, "read_only", number), f"path {str(shown)!r} does not exist")
        read_only.append(str(shown))
    # The bot's own folder, shown in its sandbox: its cwd when the config names one, else the
    # folder of its program or script.
    home = str(cwd.resolve()) if bot.cwd is not None else bot_home(argv, str(cwd))
    return BotSpec(
        bot.name,
        argv,
        str(cwd.resolve()),
        env,
        limits,
        home=home,
        read_only=tuple(read_only),
        keep_alive=bot.keep_alive,
    )


def _resolve_file(text: str, base_dir: Path, path: DataPath, *, must_exist: bool = True) -> Path:
    """A file named in the config, resolved against its directory."""
    resolved = Path(os.path.normpath(base_dir / Path(text).expanduser()))
    if must_exist and not resolved.is_file():
        raise PathError(path, f"file {text!r} does not exist (looked for {resolved})")
    return resolved


def _resolve_executor(
    config: ExecutorConfig, base_dir: Path
) -> tuple[ExecutorSetup, list[PathError]]:
    """The executor's setup, or the problems with its keys (all of them)."""
    problems: list[PathError] = []
    if config.kind == "local":
        for key in ("address", "scheduler_file", "tls"):
            if getattr(config, key) is not None:
                problems.append(PathError(("executor", key), "only used with kind: dask"))
        if config.batch_size != 1:
            problems.append(PathError(("executor", "batch_size"), "only used with kind: dask"))
        return ExecutorSetup(affinity=config.affinity), problems
    if "affinity" in config.model_fields_set:
        problems.append(PathError(("executor", "affinity"), "only used with kind: local"))
    if (config.address is None) == (config.scheduler_file is None):
        problems.append(
            PathError(
                ("executor",),
                "kind dask needs exactly one of 'address' (tcp://host:8786) or 'scheduler_file'",
            )
        )
    if config.address is not None and not _SCHEDULER_ADDRESS.fullmatch(config.address):
        problems.append(
            PathError(
                ("executor", "address"),
                "a Dask scheduler address is tcp://HOST:PORT or tls://HOST:PORT",
            )
        )
    elif config.tls is not None and (config.address or "").startswith("tcp://"):
        problems.append(PathError(("executor", "address"), "the 'tls' files need a tls:// address"))
    scheduler_file = None
    if config.scheduler_file is not None:
        # The scheduler writes it when it starts: it need not exist yet.
        scheduler_file = _resolve_file(
            config.scheduler_file, base_dir, ("executor", "scheduler_file"), must_exist=False
        )
    tls = None
    if config.tls is not None:
        files: dict[str, Path | None] = {}
        for key in ("ca_file", "cert", "key"):
            text = getattr(config.tls, key)
            try:
                files[key] = (
                    None
                    if text is None
                    else _resolve_file(text, base_dir, ("executor", "tls", key))
                )
            except PathError as problem:
                problems.append(problem)
        ca_file, cert = files.get("ca_file"), files.get("cert")
        if ca_file is not None and cert is not None:
            tls = DaskTLS(ca_file, cert, files.get("key"))
    setup = ExecutorSetup(
        kind="dask",
        address=config.address,
        scheduler_file=scheduler_file,
        tls=tls,
        connect_timeout_s=float(config.connect_timeout_s),
        batch_size=config.batch_size,
    )
    return setup, problems


def _resolve_listen(
    config: TournamentConfig, base_dir: Path
) -> tuple[RemoteListener | None, list[PathError]]:
    """The remote bots' listener, or the problems that stop remote bots from playing."""
    remote = [index for index, bot in enumerate(config.bots) if bot.remote_key is not None]
    listen = config.listen
    if not remote:
        return None, []
    problems: list[PathError] = []
    owners: dict[str, int] = {}
    for index in remote:
        key = config.bots[index].remote_key or ""
        if key in owners:
            other = owners[key]
            problems.append(
                PathError(
                    ("bots", index, "remote_key"),
                    f"the same key as bots[{other}] ({config.bots[other].name}): each remote "
                    "bot needs a key pair of its own",
                )
            )
        owners.setdefault(key, index)
    if listen is None:
        problems.append(
            PathError(
                ("bots", remote[0], "remote_key"),
                "a remote bot needs a 'listen' section (port, key_file) to dial in to",
            )
        )
    if listen is not None and listen.advertise is not None and config.executor.kind != "dask":
        problems.append(PathError(("listen", "advertise"), "only used with executor kind: dask"))
    if listen is None:
        return None, problems
    listener = None
    try:
        key_file = _resolve_file(listen.key_file, base_dir, ("listen", "key_file"))
        public, secret = read_secret_key(key_file)
    except PathError as problem:
        problems.append(problem)
    except ValueError as error:
        problems.append(PathError(("listen", "key_file"), str(error)))
    else:
        listener = RemoteListener(listen.host, listen.port, public, secret)
    return listener, problems


def _cross_checks(config: TournamentConfig) -> list[PathError]:
    problems: list[PathError] = []
    names: dict[str, int] = {}
    for index, bot in enumerate(config.bots):
        if bot.name in names:
            problems.append(
                PathError(
                    ("bots", index, "name"),
                    f"duplicate bot name {bot.name!r} (also bots[{names[bot.name]}])",
                )
            )
        names.setdefault(bot.name, index)
    listing = ", ".join(names)
    if config.format == "gauntlet":
        if not config.gauntlet:
            problems.append(
                PathError(
                    ("format",),
                    "format gauntlet needs a 'gauntlet' list naming the bots that play all "
                    "the others",
                )
            )
        else:
            for index, name in enumerate(config.gauntlet):
                if name not in names:
                    problems.append(
                        PathError(("gauntlet", index), f"unknown bot {name!r}; bots: {listing}")
                    )
                elif name in config.gauntlet[:index]:
                    problems.append(PathError(("gauntlet", index), f"{name!r} given twice"))
            if set(names) <= set(config.gauntlet):
                problems.append(
                    PathError(("gauntlet",), "names every bot: nobody is left to play against")
                )
    elif config.gauntlet is not None:
        problems.append(PathError(("gauntlet",), "only used with format: gauntlet"))
    problems += _ladder_checks(config)
    if config.matches_per_pair % 2:
        problems.append(
            PathError(
                ("matches_per_pair",),
                f"{config.matches_per_pair} is odd: matches come in duplicate pairs (same "
                "seed, seats swapped), so give an even number such as "
                f"{config.matches_per_pair + 1}",
            )
        )
    if config.anchor is not None and config.anchor not in names:
        problems.append(PathError(("anchor",), f"unknown bot {config.anchor!r}; bots: {listing}"))
    if config.submissions is None and len(config.bots) < 2:
        problems.append(
            PathError(
                ("bots",),
                f"a tournament needs at least 2 bots, got {len(config.bots)} (or a "
                "'submissions' folder, whose bots play too)",
            )
        )
    if config.submissions is not None and config.sandbox == "off":
        problems.append(
            PathError(
                ("sandbox",),
                "submitted bots (and their builds) always run sandboxed: use auto or required",
            )
        )
    return problems


def _ladder_checks(config: TournamentConfig) -> list[PathError]:
    """A ladder's keys against its format and field: the planner's own checks, located at
    the key they name (a league's field is known only when it runs: the checks that need
    its size are made then)."""
    if config.format != "ladder":
        return (
            []
            if config.ladder is None
            else [PathError(("ladder",), "only used with format: ladder")]
        )
    problems = []
    if "matches_per_pair" in config.model_fields_set:
        problems.append(
            PathError(
                ("matches_per_pair",),
                "not used with format: ladder, whose rounds decide who meets how often; give "
                "a budget in 'ladder' (max_matches or rounds) instead",
            )
        )
    field_size = None if config.submissions is not None else len(config.bots)
    if field_size is None or field_size >= 2:
        settings = (config.ladder or LadderConfig()).settings()
        for key, message in check_settings(settings, field_size, fewest_bots=len(config.bots)):
            where = ("ladder", key) if config.ladder is not None else ("format",)
            problems.append(PathError(where, message))
    return problems


def _resolve_submissions(
    config: SubmissionsConfig | None, base_dir: Path
) -> tuple[SubmissionsSetup | None, list[PathError]]:
    """The store of submissions' setup, or the problems with its keys."""
    if config is None:
        return None, []
    problems: list[PathError] = []
    read_only = []
    for number, text in enumerate(config.build.read_only):
        shown = Path(os.path.normpath(base_dir / Path(text).expanduser()))
        if not shown.exists():
            problems.append(
                PathError(
                    ("submissions", "build", "read_only", number),
                    f"path {str(shown)!r} does not exist",
                )
            )
        read_only.append(str(shown))
    limits = config.limits.model_dump()
    ceiling = dict(limits)  # a limit max_limits leaves out: as 'limits' says
    if config.max_limits is not None:
        ceiling.update(config.max_limits.model_dump(include=config.max_limits.model_fields_set))
    for key, value in limits.items():
        most = ceiling.get(key)
        if most is not None and (value is None or value > most):
            problems.append(
                PathError(
                    ("submissions", "limits", key),
                    f"{value} is over max_limits.{key}, {most}: the most a bot may ask for",
                )
            )
    build = config.build
    setup = SubmissionsSetup(
        folder=Path(os.path.normpath(base_dir / Path(config.folder).expanduser())),
        max_upload_bytes=config.max_upload_mb * 1024 * 1024,
        max_files=config.max_files,
        build=BuildLimits(
            timeout_s=float(build.timeout_s),
            size_mb=build.size_mb,
            memory_mb=build.memory_mb,
            processes=build.processes,
            tmp_mb=build.tmp_mb,
            log_bytes=build.log_bytes,
        ),
        build_max_files=build.max_files,
        build_read_only=tuple(read_only),
        build_env=dict(build.env),
        check_matches=config.check.matches,
        check_decision_ms=config.check.decision_ms,
        check_warmup_ms=config.check.warmup_ms,
        limits=ResourceLimits(**limits),
        max_limits=ceiling,
        poll_s=config.poll_s,
    )
    return setup, problems


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "tournament"


def parse_config(
    text: str, *, source: str = "<config>", base_dir: Path | None = None
) -> TournamentSetup:
    """Validate config text; ``base_dir`` (default: the current directory) is where relative
    bot paths resolve. Raises :class:`ConfigError` listing every problem."""
    base_dir = (base_dir or Path.cwd()).resolve()
    data, lines = compose_yaml(text, source)
    if not isinstance(data, Mapping):
        raise ConfigError(
            [
                ConfigIssue(
                    source,
                    lines[()].value,
                    "",
                    f"a config is a mapping of keys ({', '.join(_KNOWN_KEYS['top'])}), got "
                    f"{show_value(data)}",
                )
            ]
        )
    try:
        config = TournamentConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(pydantic_issues(error, data, source, lines, _known_keys)) from None
    problems = _cross_checks(config)
    options, rule_problems = _check_rules(config.rules)
    problems += rule_problems
    executor, executor_problems = _resolve_executor(config.executor, base_dir)
    problems += executor_problems
    listener, listen_problems = _resolve_listen(config, base_dir)
    problems += listen_problems
    submissions, submission_problems = _resolve_submissions(config.submissions, base_dir)
    problems += submission_problems
    specs: list[BotSpec] = []
    for index, bot in enumerate(config.bots):
        try:
            specs.append(_resolve_bot(bot, index, base_dir))
        except PathError as problem:
            problems.append(problem)
    if problems:
        issues = [locate_issue(source, lines, problem) for problem in problems]
        issues.sort(key=lambda issue: issue.line or 0)
        raise ConfigError(issues)
    time_control = TimeControl(
        decision_ms=config.time_control.decision_ms,
        bank_ms=config.time_control.bank_ms,
        warmup_ms=config.time_control.warmup_ms,
        clock=None if config.time_control.clock is None else Clock(config.time_control.clock),
        backstop=config.time_control.backstop,
    )
    output = Path(config.output) if config.output else Path("results") / _slug(config.name)
    if submissions is not None and not output.is_absolute():
        # A league runs for weeks, restarted from anywhere: its results stay next to it.
        output = base_dir / output
    setup = TournamentSetup(
        name=config.name,
        bots=tuple(specs),
        format=config.format,
        gauntlet=tuple(config.gauntlet or ()),
        ladder=(config.ladder or LadderConfig()).settings() if config.format == "ladder" else None,
        matches_per_pair=config.matches_per_pair,
        options=options,
        time_control=time_control,
        concurrency=config.concurrency,
        seed=config.seed,
        output=output,
        anchor=config.anchor,
        executor=executor,
        listen=listener,
        remote_connect_s=float(config.listen.connect_timeout_s) if config.listen else 60.0,
        listen_advertise=config.listen.advertise if config.listen else None,
        sandbox=SandboxMode(config.sandbox),
        freeze_opponent=config.freeze_opponent,
        secret_files=(
            (Path(os.path.normpath(base_dir / Path(config.listen.key_file).expanduser())),)
            if config.listen is not None
            else ()
        ),
        submissions=submissions,
    )
    # Without a seed, the bots' AEGIS_SEED waits for the one the results store gives.
    return setup if config.seed is None else setup.with_seed(config.seed)


def load_config(path: Path) -> TournamentSetup:
    """Read and validate a config file; relative bot paths resolve against its directory.

    Raises :class:`ConfigError` for an unreadable file or any problem in it.
    """
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        issue = ConfigIssue(source, None, "", f"cannot read the config: {reason}")
        raise ConfigError([issue]) from None
    setup = parse_config(text, source=source, base_dir=path.resolve().parent)
    return replace(setup, source=path)
