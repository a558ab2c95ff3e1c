"""Every exit code of the command line is named in tournaments/cli/exit_codes.py, and
nowhere else: no command defines one of its own or exits with a bare number."""

from __future__ import annotations

import ast
from pathlib import Path

from tournaments.cli import exit_codes

CLI = Path(exit_codes.__file__).resolve().parent


def _offences(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id.startswith("EXIT_")
            for target in node.targets
        ):
            found.append(f"{path.name}:{node.lineno} defines an exit code")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "Exit"
            and any(
                isinstance(argument, ast.Constant) and argument.value not in (0, None)
                for argument in [*node.args, *(keyword.value for keyword in node.keywords)]
            )
        ):
            found.append(f"{path.name}:{node.lineno} exits with a bare number")
    return found


def test_every_exit_code_is_named_in_one_module() -> None:
    modules = sorted(path for path in CLI.glob("*.py") if path.name != "exit_codes.py")
    assert len(modules) > 10
    assert [offence for path in modules for offence in _offences(path)] == []


def test_a_bare_exit_code_would_be_found(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("EXIT_ODD = 4\nraise typer.Exit(1)\nraise typer.Exit(code=0)\n")
    assert _offences(probe) == [
        "probe.py:1 defines an exit code",
        "probe.py:2 exits with a bare number",
    ]


def test_the_codes_keep_their_values() -> None:
    """Scripts rely on them (README.md names each)."""
    assert (exit_codes.EXIT_UNREADABLE, exit_codes.EXIT_USAGE, exit_codes.EXIT_ERROR) == (2, 2, 2)
    assert (exit_codes.EXIT_H1, exit_codes.EXIT_H0, exit_codes.EXIT_UNDECIDED) == (0, 1, 3)
    assert (exit_codes.EXIT_FAILED, exit_codes.EXIT_BOT, exit_codes.EXIT_INTERRUPTED) == (1, 3, 130)
