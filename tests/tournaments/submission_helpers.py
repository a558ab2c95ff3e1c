"""Leagues and submitted bots for the tests: a league folder, and bot folders in Python, C
and JavaScript with their manifests."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from referee.bundled import sample_bots_dir
from tests.tournaments.helpers import FAST_RULES, RAWBOT

SAMPLE_BOTS = sample_bots_dir()


def write_league(folder: Path, *, house: bool = True, **submissions: Any) -> Path:
    """A league folder with its ``league.yaml``: one bot of the config (``house``, a rawbot
    kept alive) unless ``house`` is off, and the store of submissions in
    ``folder/submissions`` with ``submissions`` as its settings; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {"folder": "submissions", "check": {"matches": 1}}
    settings.update(submissions)
    bots = [
        {
            "name": "house",
            "command": [sys.executable, str(RAWBOT), "--name", "house"],
            "keep_alive": True,
        }
    ]
    data = {
        "name": "test-league",
        "bots": bots if house else [],
        "submissions": settings,
        "rules": dict(FAST_RULES),
        "time_control": {"decision_ms": 2000, "warmup_ms": 10000},
        "seed": 2**40 + 3,
        "output": "results",
    }
    (folder / "league.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder


def manifest(
    name: str,
    version: str,
    *,
    run: str,
    build: str | None = None,
    language: str = "Python",
    extra: str = "",
) -> str:
    """The text of an ``aegis-bot.toml``."""
    lines = [
        f"name = {json.dumps(name)}",
        f"version = {json.dumps(version)}",
        'author = "Tess Tester"',
        f"language = {json.dumps(language)}",
    ]
    if build is not None:
        lines.append(f"build = {json.dumps(build)}")
    lines.append(f"run = {json.dumps(run)}")
    return "\n".join(lines) + "\n" + extra


def python_bot(
    folder: Path,
    name: str,
    version: str = "1.0",
    *,
    build: str | None = '"$AEGIS_PYTHON" -m py_compile bot.py',
    code: Path = SAMPLE_BOTS / "first" / "bot.py",
    arguments: str = "",
) -> Path:
    """A Python bot on the SDK (the bundled ``first`` by default) started by a ``run``
    script with the referee's Python."""
    folder.mkdir(parents=True)
    shutil.copy(code, folder / "bot.py")
    run = folder / "run"
    run.write_text(f'#!/bin/sh\nexec "$AEGIS_PYTHON" "$(dirname "$0")/bot.py" {arguments}\n')
    run.chmod(0o755)
    (folder / "aegis-bot.toml").write_text(
        manifest(name, version, run="./run", build=build), encoding="utf-8"
    )
    return folder


def c_bot(folder: Path, name: str, version: str = "1.0", *, build: str | None = "make bot") -> Path:
    """The C sample bot as a submission: its source and Makefile, built by ``build``; with
    ``build`` None, its binary (``sample_bots/c/bot``, built already) instead."""
    folder.mkdir(parents=True)
    if build == "make bot":
        for file in ("bot.c", "Makefile"):
            shutil.copy(SAMPLE_BOTS / "c" / file, folder / file)
    else:
        shutil.copy(SAMPLE_BOTS / "c" / "bot", folder / "bot")
    (folder / "aegis-bot.toml").write_text(
        manifest(name, version, run="./bot", build=build, language="C"), encoding="utf-8"
    )
    return folder


def js_bot(folder: Path, name: str, version: str = "1.0") -> Path:
    """The JavaScript sample bot with its packages (``node_modules``) inside, as the author
    of a JavaScript bot submits it: a build has no network to fetch them."""
    folder.mkdir(parents=True)
    for file in ("bot.js", "package.json", "package-lock.json"):
        shutil.copy(SAMPLE_BOTS / "js" / file, folder / file)
    shutil.copytree(
        SAMPLE_BOTS / "js" / "node_modules",
        folder / "node_modules",
        symlinks=True,
        copy_function=_link_or_copy,  # 40 MB: a hard link where it can be
    )
    build = "node --check bot.js && node -e \"require('zeromq'); require('@msgpack/msgpack')\""
    (folder / "aegis-bot.toml").write_text(
        manifest(name, version, run="node bot.js", build=build, language="JavaScript"),
        encoding="utf-8",
    )
    return folder


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def status(league: Path, name: str, version: str) -> dict[str, Any]:
    """A submission's ``status.json``."""
    path = league / "submissions" / name / version / "status.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
