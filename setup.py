"""The optional compiled hot path; all metadata lives in pyproject.toml.

``protocol/views.py`` builds the seat's observation map and events at every decision. A
regular install compiles it with mypyc, which halves its cost; the module is plain, fully
annotated Python and behaves the same either way (CI runs the engine and protocol tests
against both builds). Nothing is compiled:

- in an editable install (``pip install -e .``), where a compiled module next to its source
  would hide every later edit of that source;
- when ``AEGIS_PURE_PYTHON=1`` is set;
- when the build fails (no C compiler, no Python headers): the install goes on without it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

COMPILED = ["protocol/views.py"]


class OptionalBuildExt(build_ext):
    """Build the compiled modules if possible; otherwise leave none of them half built."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # a compiler error comes in several classes
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            print(
                f"aegis-ref: compiling {', '.join(COMPILED)} failed ({str(error)[:200]}); "
                "installing the pure-Python version",
                file=sys.stderr,
            )


def compiled_extensions() -> list[object]:
    if os.environ.get("AEGIS_PURE_PYTHON") == "1" or "editable_wheel" in sys.argv:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    return list(mypycify(COMPILED, opt_level="3"))


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": OptionalBuildExt})
