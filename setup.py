"""The optional compiled hot path; all metadata lives in pyproject.toml.

At every decision the referee runs the engine (``referee/rules/cards.py``,
``referee/rules/game.py``) and builds the seat's view (``protocol/views.py``). An install
with ``AEGIS_COMPILE=1`` compiles these modules with mypyc, which halves the cost of that
work; it is opt-in because the compilation takes most of a minute on two cores, which a
first install should not cost. They are plain,
fully annotated Python and behave the same either way: their entry points are annotated for
everything they accept, so a compiled build refuses bad input with the same errors as the
source (which the test suite checks by running the engine, record and match tests against a
compiled copy, and by comparing the two builds over many seeded matches). Nothing is compiled:

- unless ``AEGIS_COMPILE=1`` is set (build_backend/aegis_build.py then also asks pip for mypy);
- in an editable install (``pip install -e .``), where a compiled module next to its source
  would hide every later edit of that source;
- when the build fails (no C compiler, no Python headers): the install goes on without it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

# referee/build_info.py names the same modules, to tell which build is running.
COMPILED = ["referee/rules/cards.py", "referee/rules/game.py", "protocol/views.py"]


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


#: The setup commands that build the package; the others (metadata, sdist, editable) need
#: no compiled modules, and mypyc would only cost them time and files in the tree.
_BUILDING = {"bdist_wheel", "build", "build_ext", "install"}


def compiled_extensions() -> list[object]:
    if os.environ.get("AEGIS_COMPILE") != "1" or "editable_wheel" in sys.argv:
        return []
    if not _BUILDING.intersection(sys.argv):
        return []
    try:
        from mypyc.build import mypycify

        return list(mypycify(COMPILED, opt_level="3"))
    except (SystemExit, Exception) as error:  # no mypyc, or it exits on a compile error
        print(f"aegis-ref: not compiling ({error!r}); installing pure Python", file=sys.stderr)
        return []


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": OptionalBuildExt})
