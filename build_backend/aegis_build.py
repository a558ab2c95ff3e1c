"""The build backend: setuptools, asking for mypy only when the build compiles the hot path.

The compiled hot path is opt-in (``AEGIS_COMPILE=1``, see setup.py). A plain install then
needs nothing but setuptools to build, so it does not download and install mypy into pip's
build environment, which costs a fresh machine about ten seconds.
"""

from __future__ import annotations

import os

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403  (the backend's other hooks, unchanged)

#: What the compiled build needs on top of setuptools: mypy brings mypyc.
COMPILER = ["mypy>=2,<3"]


def compiling() -> bool:
    """Whether this build compiles the hot path (``AEGIS_COMPILE=1``)."""
    return os.environ.get("AEGIS_COMPILE") == "1"


def get_requires_for_build_wheel(config_settings: dict[str, object] | None = None) -> list[str]:
    """setuptools' wheel requirements, plus mypy when compiling."""
    required: list[str] = build_meta.get_requires_for_build_wheel(config_settings)
    return required + COMPILER if compiling() else required
