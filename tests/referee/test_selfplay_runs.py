"""Self-play runs: an interrupted run leaves the old record and no temporary file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from referee.records import match_lines
from referee.rules.options import RulesOptions
from referee.selfplay import PlayedMatch
from referee.selfplay_runs import run_selfplay

Line = dict[str, Any]


def _fail_after_first_match(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    real = match_lines

    def failing(played: PlayedMatch, players: Sequence[str], match_number: int = 1) -> list[Line]:
        if match_number > 1:
            raise error
        return real(played, players, match_number)

    monkeypatch.setattr("referee.selfplay_runs.match_lines", failing)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("disk on fire")])
def test_an_interrupted_run_leaves_the_old_record_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("old\n", encoding="utf-8")
    _fail_after_first_match(monkeypatch, error)
    with pytest.raises(type(error)):
        run_selfplay(
            matches=3, seed=1, policies=("random", "random"), options=RulesOptions(), record=path
        )
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["r.jsonl"]
