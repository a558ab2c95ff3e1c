"""Which build of the hot path is running: a regular install compiles it (setup.py)."""

from __future__ import annotations

from importlib import import_module

__all__ = ["HOT_PATH", "hot_path_build"]

#: The modules a regular install compiles with mypyc where a C compiler is present.
HOT_PATH = ("referee.rules.cards", "referee.rules.game", "protocol.views")


def hot_path_build() -> str:
    """``"compiled"``, ``"pure Python"``, or ``"partly compiled"`` (a broken install)."""
    compiled = [not str(import_module(name).__file__).endswith(".py") for name in HOT_PATH]
    if all(compiled):
        return "compiled"
    return "partly compiled" if any(compiled) else "pure Python"
