"""A bot's manifest: ``aegis-bot.toml`` at the root of its folder, what a league needs to
build it and start it.

::

    name = "my-bot"              # letters, digits, _ . - (its name in every league)
    version = "1.0"              # a new version is a new submission of the same name
    author = "Ada <ada@example.org>"
    language = "Python 3"        # free text, shown to people
    build = "make bot"           # optional: a shell command, run in the bot's folder
    run = "./bot"                # how to start it, split like a shell would

    [limits]                     # optional: what it needs, within the league's limits
    memory_mb = 1024

:func:`load_manifest` reads and validates one, and reports every problem at once with the
file, the line and the key, as a tournament config does (``aegis-bot.toml:5: run: ...``).
TOML (the standard library's ``tomllib``) gives no line numbers, so the line of each key is
found in the text itself (:func:`key_lines`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from referee.bots import ResourceLimits
from referee.bundled import BOT_NAME_PATTERN
from tournaments.config.sources import (
    BOT_NAME_RULE,
    DataPath,
    Lines,
    PathError,
    is_arguments,
    locate_issue,
    matching,
    pydantic_issues,
)
from tournaments.config.tournament import LimitsConfig
from tournaments.errors import ConfigError, ConfigIssue

__all__ = [
    "MANIFEST_NAME",
    "VERSION_PATTERN",
    "BotManifest",
    "ManifestLimits",
    "key_lines",
    "load_manifest",
    "parse_manifest",
]

MANIFEST_NAME = "aegis-bot.toml"
#: A version becomes part of the bot's name in results (``my-bot@1.0``): no ``+`` or ``@``.
VERSION_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
#: A manifest is a few lines; anything much larger is not one.
_MAX_BYTES = 64 * 1024


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ManifestLimits(_Model):
    """What a bot asks for, each within the league's ``max_limits``; a limit it does not
    name is the league's ``limits``. The keys are those of a config's ``limits``."""

    cpu_seconds: int | None = Field(default=None, ge=1)
    address_space_mb: int | None = Field(default=None, ge=16)
    open_files: int | None = Field(default=None, ge=16)
    log_bytes: int | None = Field(default=None, ge=0)
    memory_mb: int | None = Field(default=None, ge=16)
    processes: int | None = Field(default=None, ge=8)
    tmp_mb: int | None = Field(default=None, ge=1)
    file_size_mb: int | None = Field(default=None, ge=1)


class BotManifest(_Model):
    """A validated ``aegis-bot.toml``."""

    name: str = Field(description="The bot's name, the same for every version.")
    version: str = Field(description="This version; each submission of a name has its own.")
    author: str = Field(min_length=1, max_length=200, description="Who wrote it.")
    language: str = Field(min_length=1, max_length=100, description="Free text.")
    build: str | None = Field(
        default=None,
        min_length=1,
        max_length=10_000,
        description="A shell command run in the bot's folder, sandboxed, before it plays.",
    )
    run: str | list[str] = Field(
        description="The command that starts the bot in its folder: a command line (split "
        "like a shell would) or a list of arguments."
    )
    limits: ManifestLimits = ManifestLimits()

    @field_validator("name", mode="before")
    @classmethod
    def _check_name(cls, value: object) -> object:
        return matching(value, BOT_NAME_PATTERN, BOT_NAME_RULE)

    @field_validator("version", mode="before")
    @classmethod
    def _check_version(cls, value: object) -> object:
        rule = (
            "a version is 1 to 32 letters, digits, '_', '.' or '-', starting with a letter "
            "or digit (1.0, 2024-06-01, v3)"
        )
        return matching(value, VERSION_PATTERN, rule)

    @field_validator("run", mode="before")
    @classmethod
    def _check_run(cls, value: object) -> object:
        if isinstance(value, str) or is_arguments(value):
            return value
        raise ValueError("must be a command line string or a non-empty list of strings")

    @property
    def player(self) -> str:
        """Its name in results, standings and match ids: ``name@version``."""
        return f"{self.name}@{self.version}"

    @property
    def run_argv(self) -> tuple[str, ...]:
        """The ``run`` command as arguments (a valid manifest's splits)."""
        return tuple(shlex.split(self.run) if isinstance(self.run, str) else self.run)

    def resource_limits(self, league: ResourceLimits) -> ResourceLimits:
        """The limits it plays under: what it asks for, the league's for the rest."""
        asked = {key: value for key, value in self.limits.model_dump().items() if value is not None}
        return replace(league, **asked)


_KNOWN = {
    "top": tuple(BotManifest.model_fields),
    "limits": tuple(ManifestLimits.model_fields),
}
assert set(_KNOWN["limits"]) == set(LimitsConfig.model_fields)  # one list of limits


def _known_keys(path: DataPath) -> tuple[str, ...]:
    if path == ():
        return _KNOWN["top"]
    if path == ("limits",):
        return _KNOWN["limits"]
    return ()


# ---------------------------------------------------------------------------------------------
# The line of each key

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})(?:\s*\.\s*(?:{_BARE}|{_QUOTED}))*"
_TABLE = re.compile(rf"\[\[?\s*({_KEY})\s*\]\]?\s*(#.*)?$")
_ASSIGNMENT = re.compile(rf"({_KEY})\s*=(.*)$")
_INLINE_KEY = re.compile(rf"[{{,]\s*({_KEY})\s*=")
_KEY_PART = re.compile(rf"{_BARE}|{_QUOTED}")


def _key_parts(text: str) -> tuple[str, ...]:
    parts = []
    for part in _KEY_PART.findall(text):
        if part[:1] in "\"'":
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


def key_lines(text: str) -> dict[DataPath, Lines]:
    """The line of every key of a TOML document, by its path (``("limits", "memory_mb")``):
    the line where it is assigned, or where its ``[table]`` starts. Keys inside an inline
    table count on its line; text inside multi-line strings is skipped."""
    return _scan(text)[0]


def _scan(text: str) -> tuple[dict[DataPath, Lines], list[PathError]]:
    """:func:`key_lines`, and a problem for each key assigned twice."""
    lines: dict[DataPath, Lines] = {(): Lines(1, 1)}
    twice: list[PathError] = []
    assigned: dict[DataPath, int] = {}
    table: DataPath = ()
    open_string: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if open_string is not None:
            if line.count(open_string) % 2 == 1:
                open_string = None
            continue
        if not line or line.startswith("#"):
            continue
        header = _TABLE.match(line)
        if header:
            table = _key_parts(header.group(1))
            lines.setdefault(table, Lines(number, number))
            continue
        assignment = _ASSIGNMENT.match(line)
        if not assignment:
            continue
        key = (*table, *_key_parts(assignment.group(1)))
        if key in assigned:
            message = f"key given twice (first on line {assigned[key]})"
            twice.append(PathError(key, message, number))
        assigned.setdefault(key, number)
        for length in range(len(table) + 1, len(key) + 1):
            lines.setdefault(key[:length], Lines(number, number))
        value = assignment.group(2)
        for quotes in ('"""', "'''"):
            if value.count(quotes) % 2 == 1:
                open_string = quotes
        if value.lstrip().startswith("{"):
            for inner in _INLINE_KEY.findall(value):
                lines.setdefault((*key, *_key_parts(inner)), Lines(number, number))
    return lines, twice


# ---------------------------------------------------------------------------------------------
# Reading and checking


def _check_run(manifest: BotManifest) -> list[PathError]:
    if isinstance(manifest.run, str):
        try:
            argv = shlex.split(manifest.run)
        except ValueError as error:
            return [PathError(("run",), f"cannot split the command line: {error}")]
        if not argv:
            return [PathError(("run",), "empty command")]
    else:
        argv = list(manifest.run)
    program = argv[0]
    if not program:
        return [PathError(("run",), "empty program name")]
    if "/" in program:
        if not os.path.isabs(program):
            inside = os.path.normpath(program)
            if inside == ".." or inside.startswith("../"):
                return [PathError(("run",), f"program {program!r} is outside the bot's folder")]
        return []
    if shutil.which(program) is None:
        return [
            PathError(
                ("run",),
                f"program {program!r} is not on the league's PATH (a program of the bot's "
                f"own folder is './{program}')",
            )
        ]
    return []


def _check_limits(
    manifest: BotManifest, ceiling: Mapping[str, int | None] | None
) -> list[PathError]:
    if ceiling is None:
        return []
    problems = []
    for key, value in manifest.limits.model_dump().items():
        most = ceiling.get(key)
        if value is not None and most is not None and value > most:
            problems.append(
                PathError(("limits", key), f"{value} is over the league's limit of {most}")
            )
    return problems


def parse_manifest(
    text: str,
    *,
    source: str = MANIFEST_NAME,
    ceiling: Mapping[str, int | None] | None = None,
    taken: Collection[str] = (),
) -> BotManifest:
    """Validate a manifest's text. ``ceiling``: the most each limit may ask for (a
    league's ``max_limits``; None: no limit); ``taken``: names the bot may not have (the
    league's own bots). Raises :class:`ConfigError` listing every problem."""
    lines, twice = _scan(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        if twice:
            raise ConfigError([locate_issue(source, lines, problem) for problem in twice]) from None
        message = str(error)
        found = re.search(r"\(at line (\d+), column \d+\)", message)
        line = int(found.group(1)) if found else None
        problem = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
        raise ConfigError([ConfigIssue(source, line, "", f"not valid TOML: {problem}")]) from None
    try:
        manifest = BotManifest.model_validate(data)
    except ValidationError as error:
        issues = pydantic_issues(error, data, source, lines, _known_keys)
        raise ConfigError(sorted(issues, key=lambda issue: issue.line or 0)) from None
    problems = _check_run(manifest) + _check_limits(manifest, ceiling)
    if manifest.name in taken:
        problems.append(
            PathError(("name",), f"{manifest.name!r} is the name of one of the league's own bots")
        )
    if problems:
        issues = [locate_issue(source, lines, problem) for problem in problems]
        raise ConfigError(sorted(issues, key=lambda issue: issue.line or 0))
    return manifest


def load_manifest(
    folder: Path,
    *,
    source: str | None = None,
    ceiling: Mapping[str, int | None] | None = None,
    taken: Collection[str] = (),
) -> BotManifest:
    """Read and validate ``folder/aegis-bot.toml`` (see :func:`parse_manifest`); ``source``
    is how messages name the file (default: its path)."""
    path = folder / MANIFEST_NAME
    shown = source or str(path)
    try:
        if path.is_symlink() or not path.is_file():
            raise ConfigError(
                [
                    ConfigIssue(
                        shown, None, "", f"no {MANIFEST_NAME} at the root of the bot's folder"
                    )
                ]
            )
        if path.stat().st_size > _MAX_BYTES:
            raise ConfigError(
                [ConfigIssue(shown, None, "", f"over {_MAX_BYTES // 1024} KiB: not a manifest")]
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ConfigError([ConfigIssue(shown, None, "", f"cannot read it: {reason}")]) from None
    return parse_manifest(text, source=shown, ceiling=ceiling, taken=taken)
