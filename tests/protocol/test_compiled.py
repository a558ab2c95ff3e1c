"""The compiled build of the hot path (setup.py) behaves exactly as the pure-Python one.

An install with ``AEGIS_COMPILE=1`` compiles the engine (``referee/rules/cards.py``,
``referee/rules/game.py``) and the seat's view (``protocol/views.py``) with mypyc; a plain or
development install, and so the rest of this suite, runs the pure-Python source. Here a copy of
the project is built in place, the same seeded games are run through both builds and compared,
and the tests of the engine, the records, the views and real matches run again against the
compiled modules.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.build_info import HOT_PATH, hot_path_build
from tests.protocol.views_digest import digest

ROOT = Path(__file__).resolve().parents[2]
COPIED = (
    "referee",
    "protocol",
    "tests",
    "docs",
    "RULES.md",
    "README.md",
    "setup.py",
    "build_backend",
    "pyproject.toml",
)
COMPILED = tuple(module.replace(".", "/") for module in HOT_PATH)
#: The tests that exercise the compiled modules most (about 25 s).
RERUN = (
    "tests/protocol/test_views.py",
    "tests/referee/rules/test_game.py",
    "tests/referee/rules/test_actions.py",
    "tests/referee/rules/test_cards.py",
    "tests/referee/test_records.py",
    "tests/referee/rules/test_match.py",
    "tests/referee/rules/test_scoring.py",
    "tests/referee/rules/test_properties.py",
    "tests/referee/test_runner.py",
)


@pytest.fixture(scope="module")
def compiled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with the hot path compiled next to its source."""
    if shutil.which(shlex.split(os.environ.get("CC", "cc"))[0]) is None:
        pytest.skip("no C compiler: the install would fall back to pure Python")
    tree = tmp_path_factory.mktemp("compiled")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.so")
            )
        else:
            shutil.copy2(source, tree / name)
    build = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tree,
        env={**os.environ, "AEGIS_COMPILE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    assert "failed" not in build.stderr, build.stderr[-3000:]
    for module in COMPILED:
        assert list(tree.glob(f"{module}.*.so")), (module, build.stdout[-3000:])
    return tree


def _run_in(tree: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=tree,
        # tests/conftest.py fails a run whose hot path is not the build it expects.
        env={**os.environ, "PYTHONPATH": str(tree), "AEGIS_EXPECT_BUILD": "compiled"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_compiled_views_say_what_the_pure_ones_say(compiled_tree: Path) -> None:
    assert hot_path_build() == "pure Python"  # this suite runs the source
    run = _run_in(compiled_tree, "-m", "tests.protocol.views_digest")
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout)
    assert outcome["build"] == "compiled"
    assert outcome["digest"] == digest()


def test_the_engine_view_and_match_tests_pass_compiled(compiled_tree: Path, tmp_path: Path) -> None:
    run = _run_in(
        compiled_tree,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--basetemp={tmp_path / 'nested'}",
        *RERUN,
    )
    assert run.returncode == 0, run.stdout[-5000:]


def _build_requirements(compile_flag: str | None) -> list[str]:
    environment = {key: value for key, value in os.environ.items() if key != "AEGIS_COMPILE"}
    if compile_flag is not None:
        environment["AEGIS_COMPILE"] = compile_flag
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, aegis_build\n"
            "print(json.dumps(aegis_build.get_requires_for_build_wheel()))",
        ],
        cwd=ROOT,
        env={**environment, "PYTHONPATH": str(ROOT / "build_backend")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    # setuptools runs setup.py to answer, which may print first.
    requirements: list[str] = json.loads(run.stdout.splitlines()[-1])
    return requirements


def test_only_a_compiling_build_asks_pip_for_mypy() -> None:
    """A first install must not download mypy into pip's build environment (README)."""
    for plain in (None, "0", ""):
        assert not any(r.startswith("mypy") for r in _build_requirements(plain)), plain
    assert any(r.startswith("mypy") for r in _build_requirements("1"))


def test_a_build_without_aegis_compile_compiles_nothing(tmp_path: Path) -> None:
    environment = {key: value for key, value in os.environ.items() if key != "AEGIS_COMPILE"}
    build = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "build_ext",
            "--build-lib",
            str(tmp_path / "lib"),
            "--build-temp",
            str(tmp_path / "temp"),
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    assert not list(tmp_path.rglob("*.so")), build.stdout[-3000:]
    assert not list(tmp_path.rglob("*.c"))
