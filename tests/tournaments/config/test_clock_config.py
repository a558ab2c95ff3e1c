"""The ``time_control`` clock of a config: how it is read, and a tournament that cannot keep
the clock it requires refusing to start."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from referee.cgroups import detect_cgroups
from referee.time_control import Clock, TimeControl
from tests.tournaments.helpers import AEGIS_REF, write_config
from tournaments.config.tournament import load_config
from tournaments.errors import ConfigError


def load(tmp_path: Path, clock: str) -> TimeControl:
    """The time control of a config whose ``time_control`` is ``clock``."""
    path = tmp_path / "config.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: clocked
            bots: [{{name: a, command: random}}, {{name: b, command: random}}]
            time_control: {clock}
            """
        ),
        encoding="utf-8",
    )
    return load_config(path).time_control


def run_aegis_ref(
    tmp_path: Path, arguments: list[str], environment: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``aegis-ref ARGUMENTS`` in tmp_path, with ``environment`` added."""
    return subprocess.run(
        [str(AEGIS_REF), *arguments],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", **environment},
        check=False,
    )


def run_tournament(
    tmp_path: Path, config: Path, environment: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``aegis-ref tournament`` on ``config``, output in tmp_path/out, with ``environment``."""
    return run_aegis_ref(
        tmp_path, ["tournament", str(config), "--output", str(tmp_path / "out")], environment
    )


def test_the_clock_is_cpu_where_possible_by_default_and_can_be_required_or_wall(
    tmp_path: Path,
) -> None:
    assert load(tmp_path, "{decision_ms: 50}") == TimeControl(50)
    assert load(tmp_path, "{clock: cpu, backstop: 5}") == TimeControl(clock=Clock.CPU, backstop=5)
    assert load(tmp_path, "{clock: wall}").clock is Clock.WALL


def test_a_bad_clock_names_the_line_key_and_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, "{clock: sundial, backstop: 0.5}")
    found = [str(issue).removeprefix(f"{tmp_path}/") for issue in caught.value.issues]
    assert found == [
        "config.yaml:4: time_control.clock: should be 'cpu' or 'wall', got 'sundial'",
        "config.yaml:4: time_control.backstop: should be greater than or equal to 1, got 0.5",
    ]


def test_a_required_cpu_clock_without_cgroups_refuses_to_start_naming_what_is_missing(
    tmp_path: Path,
) -> None:
    config, _ = write_config(
        tmp_path, ["alpha", "beta"], time_control={"decision_ms": 500, "clock": "cpu"}
    )
    done = run_tournament(tmp_path, config, {"AEGIS_CGROUPS": "off"})
    assert done.returncode == 2, done.stderr
    assert "time_control.clock is cpu, but this machine has no writable cgroup with" in (
        " ".join(done.stderr.split())
    )
    assert "CPU accounting" in done.stderr
    assert "nothing was played" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "results.sqlite").exists()


@pytest.mark.parametrize("cgroups", ["on", "off"])
def test_a_run_says_which_clock_its_bots_have(tmp_path: Path, cgroups: str) -> None:
    config, _ = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=2)
    done = run_tournament(tmp_path, config, {"AEGIS_CGROUPS": "off"} if cgroups == "off" else {})
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    cpu_clock = cgroups == "on" and detect_cgroups().cpu_clock_problem() is None
    if cpu_clock:
        assert "Bot clock: cpu for every started bot (charged the CPU time of all" in said
        assert "WARNING: the CPU clock is not available" not in said
    else:
        assert "Bot clock: wall for every bot" in said
        assert "WARNING: the CPU clock is not available" in said
    # The standings show each bot's wall time per decision, and its CPU charge on the CPU
    # clock (median, p95), and the largest charge over decision_ms.
    shown = subprocess.run(
        [str(AEGIS_REF), "standings", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
        check=True,
    ).stdout
    assert "Time per decision (ms): wall, and the CPU time charged on the CPU clock" in shown
    for name in ("alpha", "beta"):
        rows = [line.split() for line in shown.splitlines()]
        row = next(cells for cells in rows if len(cells) == 7 and cells[0] == name)
        assert re.fullmatch(r"\d+\.\d", row[2]), row  # wall median
        assert re.fullmatch(r"\d+\.\d" if cpu_clock else "-", row[4]), row  # CPU median
        assert re.fullmatch(r"\d+%", row[6]), row


def test_match_takes_a_clock_flag_and_refuses_a_cpu_clock_it_cannot_keep(tmp_path: Path) -> None:
    def match(clock: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
        arguments = ["match", "random", "first", "--matches", "2", "--clock", clock]
        return run_aegis_ref(tmp_path, arguments, environment)

    refused = match("cpu", {"AEGIS_CGROUPS": "off"})
    assert refused.returncode == 2, refused.stderr
    assert "error: time_control.clock is cpu, but this machine has no writable cgroup" in (
        " ".join(refused.stderr.split())
    )
    assert "Traceback" not in refused.stderr
    played = match("wall", {})
    assert played.returncode == 0, played.stderr
    defaulted = match("cpu", {}) if detect_cgroups().cpu_clock_problem() is None else played
    assert defaulted.returncode == 0, defaulted.stderr
