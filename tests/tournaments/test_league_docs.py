"""The league section of docs/running-a-tournament.md names the paths the program uses."""

from __future__ import annotations

import re
from pathlib import Path

from tournaments.submissions import load_league

PROJECT = Path(__file__).resolve().parents[2]
GUIDE = PROJECT / "docs" / "running-a-tournament.md"


def test_the_standings_commands_name_the_leagues_output(tmp_path: Path) -> None:
    """The guide's league ``spring`` is its ``league.yaml`` in a folder ``spring``: its
    ``aegis-ref standings`` commands must name the folder that league writes its results to,
    or the command answers ``no results.sqlite: not a tournament output``."""
    section = GUIDE.read_text(encoding="utf-8").split("## Leagues: submitted bots", 1)[1]
    section = section.split("\n## ", 1)[0]
    config = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert config is not None
    league = tmp_path / "spring"
    league.mkdir()
    (league / "league.yaml").write_text(config.group(1), encoding="utf-8")
    (league / "submissions").mkdir()
    output = load_league(league).output
    named = re.findall(r"^aegis-ref standings (\S+)", section, flags=re.MULTILINE)
    assert named
    for path in named:
        assert (tmp_path / path).resolve() == output.resolve(), path
