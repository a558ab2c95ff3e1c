"""An ordinary user for the tests of what an unprivileged organiser gets, and a way to run
the project's code as that user with the system Python (the tests' own interpreter may lie
in a home folder that user cannot read)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ORGANISER = "aegis-ref-organiser"
PROJECT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")


def organiser_problem() -> str | None:
    """Why an ordinary user cannot run the project here, or None (the user is made then)."""
    if os.geteuid() != 0:
        return "needs root, to make an ordinary user and become it"
    if shutil.which("setpriv") is None:
        return "needs setpriv, to become an ordinary user"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    said = ""
    if SYSTEM_PYTHON.exists():
        said = subprocess.run(
            [str(SYSTEM_PYTHON), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    if said != version:
        return f"needs {SYSTEM_PYTHON} of Python {version} (the tests' packages are built for it)"
    try:
        pwd.getpwnam(ORGANISER)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ORGANISER],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            pwd.getpwnam(ORGANISER)  # made here, or by another test process meanwhile
        except KeyError:
            return f"cannot make the user {ORGANISER}: {made.stderr.strip()}"
    readable = subprocess.run(
        [*as_organiser(), str(SYSTEM_PYTHON), "-c", "import referee.cgroups, zmq, pydantic"],
        capture_output=True,
        text=True,
        env=organiser_environment(),
        cwd="/",
        check=False,
    )
    if readable.returncode != 0:
        return f"{ORGANISER} cannot import the project: {readable.stderr.strip()[-300:]}"
    return None


def organiser_ids() -> tuple[int, int]:
    """The organiser's uid and gid."""
    entry = pwd.getpwnam(ORGANISER)
    return entry.pw_uid, entry.pw_gid


def as_organiser() -> list[str]:
    """The command prefix that runs a program as the organiser, with no other group."""
    return ["setpriv", f"--reuid={ORGANISER}", f"--regid={ORGANISER}", "--clear-groups"]


def organiser_environment(home: Path | None = None) -> dict[str, str]:
    """An environment for the system Python with this project and its installed packages."""
    site_packages = sysconfig.get_paths()["purelib"]
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{PROJECT}:{site_packages}",
        "HOME": str(home or "/nonexistent"),
        "LANG": "C.UTF-8",
    }


def organiser_venv(folder: Path) -> Path:
    """A virtual environment in ``folder`` of the system Python that holds this project and
    the tests' packages (a ``.pth`` file naming them), as an organiser's install would:
    processes started with ``python -I`` (the reaper) import the project too. Return its
    Python."""
    subprocess.run(
        [str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(folder)],
        check=True,
        capture_output=True,
    )
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_packages = folder / "lib" / version / "site-packages"
    (site_packages / "aegis-ref-tests.pth").write_text(
        f"{PROJECT}\n{sysconfig.get_paths()['purelib']}\n"
    )
    return folder / "bin" / "python"
