"""What a sandboxed tournament says about bots whose sandboxes show each other's files:
one line per shared folder, naming the bots, however many share it."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.tournaments.helpers import FAST_RULES
from tournaments.config import load_config
from tournaments.tournament import shared_folders

RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"
NAMES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def _config(root: Path, bots: list[dict[str, object]]) -> Path:
    config = root / "config.yaml"
    data = {
        "name": "shared",
        "bots": bots,
        "rules": dict(FAST_RULES),
        "matches_per_pair": 2,
        "seed": 2**40 + 11,
        "sandbox": "off",
        "output": str(root / "out"),
    }
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


def _script(folder: Path, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(RAWBOT.read_text())
    return f"{name}.py"


def test_eight_bots_in_one_folder_give_one_line_naming_them(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    bots: list[dict[str, object]] = [
        {"name": name, "command": [sys.executable, _script(shared, name)], "cwd": str(shared)}
        for name in NAMES
    ]
    problems = shared_folders(load_config(_config(tmp_path, bots)).bots)
    assert problems == [
        f"bots {', '.join(NAMES)} share the folder {shared.resolve()}: the sandbox of each "
        "shows it, and in it the files of the others; give each bot a folder of its own"
    ]


def test_a_folder_holding_two_bots_folders_gives_one_line(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    places = {"outer": outer, "left": outer / "l", "right": outer / "r", "apart": tmp_path / "a"}
    bots: list[dict[str, object]] = [
        {"name": name, "command": [sys.executable, str(place / _script(place, name))]}
        for name, place in places.items()
    ]
    problems = shared_folders(load_config(_config(tmp_path, bots)).bots)
    folder = outer.resolve()
    assert problems == [
        f"bot outer can read the files of bots left, right: its sandbox shows {folder}, which "
        f"holds {folder / 'l'}, {folder / 'r'}; give each bot a folder of its own"
    ]


def test_one_program_under_several_names_shares_its_folder_quietly(tmp_path: Path) -> None:
    folder = tmp_path / "one"
    script = _script(folder, "one")
    bots: list[dict[str, object]] = [
        {"name": name, "command": [sys.executable, script, "--name", "x"], "cwd": str(folder)}
        for name in NAMES[:3]
    ]
    assert shared_folders(load_config(_config(tmp_path, bots)).bots) == []
