"""Reading a config file with the line of every key and value, and reporting its problems
there: ``config.yaml:12: bots[2].command: ...``.

A tournament config (YAML, :mod:`tournaments.config.tournament`) and a bot's manifest (TOML,
:mod:`tournaments.league.manifest`) share these: a problem is a :class:`PathError` located by
its :data:`DataPath` in the data, placed on a line by :func:`locate_issue` from the
:class:`Lines` of each path, and pydantic's errors become such issues
(:func:`pydantic_issues`). :func:`compose_yaml` reads YAML with those lines (TOML has none:
the manifest finds them in the text itself). The checks of a name and of a command that both
files validate are here too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from tournaments.errors import ConfigError, ConfigIssue

__all__ = [
    "BOT_NAME_RULE",
    "DataPath",
    "Lines",
    "PathError",
    "compose_yaml",
    "is_arguments",
    "locate_issue",
    "matching",
    "pydantic_issues",
    "show_value",
]

#: What a bot name must be, said when one is not (referee.bundled.BOT_NAME_PATTERN).
BOT_NAME_RULE = (
    "a bot name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"
)


def matching(value: object, pattern: re.Pattern[str], rule: str) -> object:
    """``value``, unless it is a string that ``pattern`` does not match whole: then a
    ``ValueError`` saying ``rule`` (a field validator's check of a name)."""
    if isinstance(value, str) and not pattern.fullmatch(value):
        raise ValueError(rule)
    return value


def is_arguments(value: object) -> bool:
    """True for a non-empty list of strings: a command as arguments."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)


#: A place in a file's data: the keys and list indexes from its top, ``("bots", 2, "command")``.
DataPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Lines:
    """The line of a key and the line where its value starts (1-based)."""

    key: int
    value: int


class PathError(Exception):
    """A problem found while resolving, located by a data path."""

    def __init__(self, path: DataPath, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        #: Where it is, when the path alone cannot say (a key given twice).
        self.line = line


def compose_yaml(text: str, source: str) -> tuple[Any, dict[DataPath, Lines]]:
    """The YAML document's data and the line of every key and value in it."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ConfigError([ConfigIssue(source, 1, "", "the file is empty: expected a mapping")])
        lines: dict[DataPath, Lines] = {}
        problems: list[PathError] = []
        _walk(node, (), node.start_mark.line + 1, lines, problems)
        if problems:
            raise ConfigError([locate_issue(source, lines, problem) for problem in problems])
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = None if mark is None else mark.line + 1
        problem = " ".join(part for part in (error.context, error.problem) if part)
        raise ConfigError([ConfigIssue(source, line, "", f"not valid YAML: {problem}")]) from None
    except yaml.YAMLError as error:
        raise ConfigError([ConfigIssue(source, None, "", f"not valid YAML: {error}")]) from None
    finally:
        loader.dispose()
    return data, lines


def _walk(
    node: yaml.Node,
    path: DataPath,
    key_line: int,
    lines: dict[DataPath, Lines],
    problems: list[PathError],
) -> None:
    lines[path] = Lines(key_line, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(
                    PathError((*path, key), f"key given twice (first on line {seen[key]})", line)
                )
                continue
            seen[key] = line
            _walk(value_node, (*path, key), line, lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), item.start_mark.line + 1, lines, problems)


def _show_path(path: DataPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def show_value(value: object) -> str:
    text = (
        repr(value)
        if isinstance(value, str)
        else yaml.safe_dump(value, default_flow_style=True, width=1000)
        .strip()
        .removesuffix("...")
        .strip()
    )
    return text if len(text) <= 60 else text[:57] + "..."


def locate_issue(
    source: str, lines: Mapping[DataPath, Lines], problem: PathError, *, at_key: bool = False
) -> ConfigIssue:
    """Locate ``problem``: the line of its value (of its key with ``at_key``), else of the
    nearest enclosing value."""
    path = problem.path
    line = problem.line
    for length in range(len(path), -1, -1):
        if line is not None:
            break
        found = lines.get(path[:length])
        if found is not None:
            line = found.key if (at_key and length == len(path)) else found.value
            break
    return ConfigIssue(source, line, _show_path(path), problem.message)


def _data_path(data: Any, loc: Sequence[str | int]) -> DataPath:
    """The part of a pydantic error location that walks into the data (pydantic appends the
    union member or validator it tried, which is not a place in the file)."""
    path: list[str | int] = []
    for part in loc:
        inside_mapping = isinstance(data, Mapping) and part in data
        inside_list = isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        if inside_mapping or inside_list:
            data = data[part]
        else:
            path.append(part)
            break
        path.append(part)
    return tuple(path)


def pydantic_issues(
    error: ValidationError,
    data: Any,
    source: str,
    lines: Mapping[DataPath, Lines],
    known_keys: Callable[[DataPath], tuple[str, ...]],
) -> list[ConfigIssue]:
    """Each of pydantic's errors as an issue at its line; ``known_keys`` lists the keys
    allowed at a place (a config's, a manifest's), for an unknown key's message."""
    issues: list[ConfigIssue] = []
    seen: set[DataPath] = set()
    for item in error.errors(include_url=False):
        kind = item["type"]
        path = _data_path(data, item["loc"])
        if kind == "missing":
            key = path[-1]
            issues.append(
                locate_issue(source, lines, PathError(path[:-1], f"missing required key {key!r}"))
            )
            continue
        if kind == "extra_forbidden":
            known = ", ".join(known_keys(path[:-1]))
            message = f"unknown key{f'; known keys here: {known}' if known else ''}"
            issues.append(locate_issue(source, lines, PathError(path, message), at_key=True))
            continue
        if path in seen:  # one message per place (a union reports each member)
            continue
        seen.add(path)
        message = item["msg"].removeprefix("Value error, ")
        message = re.sub(r"^Input should be", "should be", message)
        message = re.sub(r"^(List|String|Dictionary) should", r"should", message)
        issues.append(
            locate_issue(
                source, lines, PathError(path, f"{message}, got {show_value(item['input'])}")
            )
        )
    return issues
