"""The report's and the replay pages' CSS, JavaScript and HTML are files of the package
(tournaments/report/assets/), read with importlib.resources, and a built wheel ships them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from tournaments.report import html_report, replay_page

ROOT = Path(__file__).resolve().parents[3]
ASSETS = ("report.css", "report.js", "replay.html", "replay.css", "replay.js")


def test_the_pages_inline_the_asset_files() -> None:
    folder = resources.files("tournaments.report.assets")
    read = {name: folder.joinpath(name).read_text(encoding="utf-8") for name in ASSETS}
    assert read["report.css"] == html_report._CSS
    assert read["report.js"] == html_report._SCRIPT
    assert (read["replay.html"], read["replay.css"], read["replay.js"]) == (
        replay_page._BODY,
        replay_page._CSS,
        replay_page._SCRIPT,
    )
    assert all(text.strip() for text in read.values())
    page = replay_page.render_replay_page([], title="t", source="s")
    assert read["replay.css"] in page
    assert read["replay.js"] in page


@pytest.mark.skipif(shutil.which("git") is None, reason="copies the tracked files with git")
def test_a_built_wheel_ships_the_assets(tmp_path: Path) -> None:
    """Built from a copy of the tracked files, as pip builds a release."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    source = tmp_path / "source"
    for name in filter(None, tracked.split("\0")):
        if not (ROOT / name).is_file() or name.startswith(("tests/", "benchmarks/", "docs/")):
            continue
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [*pip_wheel, "-q", "-w", str(tmp_path / "wheel"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("aegis_ref-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"tournaments/report/assets/{name}" for name in ASSETS} <= names
    assert "tournaments/report/assets/__init__.py" in names
