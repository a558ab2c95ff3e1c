"""benchmarks/protocol_overhead.py measures what docs/benchmarks.md says it measures: (b)
and (c) keep the same two bot processes from match to match (the referee's cost per
decision), and (f), a fresh pair per match, is measured apart."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "protocol_overhead.py"


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("protocol_overhead", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _counting_bot(tmp_path: Path, benchmark: ModuleType) -> tuple[list[str], Path]:
    """The benchmark's first-legal bot, writing its process id to a file as it starts."""
    pids = tmp_path / "pids"
    bot = tmp_path / "first_legal.py"
    bot.write_text(
        f"import os\nwith open({str(pids)!r}, 'a') as f: f.write(f'{{os.getpid()}}\\n')\n"
        + benchmark._FIRST_LEGAL_BOT
    )
    return [sys.executable, str(bot)], pids


def test_b_keeps_its_two_bots_alive_and_f_starts_a_pair_per_match(tmp_path: Path) -> None:
    benchmark = _benchmark()
    command, pids = _counting_bot(tmp_path, benchmark)
    decisions, games, matches = benchmark.referee_rate(0.3, command)
    assert decisions > 0
    assert games > 0
    assert matches > 0
    assert len(set(pids.read_text().split())) == 2
    pids.unlink()
    _, _, matches = benchmark.referee_rate(0.3, command, keep_alive=False)
    started = set(pids.read_text().split())
    # The warm-up match and every match measured: a fresh pair each.
    assert len(started) >= 4
    assert len(started) % 2 == 0
