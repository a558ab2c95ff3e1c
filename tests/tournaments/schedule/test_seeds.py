"""Master seeds: drawn ones are long, stored and kept on resume; explicit ones deal as they
always did; small ones get a warning, and a hostile bot does find them."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import time
from pathlib import Path

import pytest
import yaml

from referee.seeds import derive_seed
from tests.tournaments.helpers import (
    FAST_RULES,
    RAWBOT,
    run_cli,
    wait_no_processes,
    write_config,
)
from tournaments.config.tournament import load_config
from tournaments.schedule.pairings import match_seed
from tournaments.schedule.seeds import SMALL_SEED, draw_seed, small_seed_warning
from tournaments.store.database import StoredMeta, open_store, read_meta

SEED_GUESSER = Path(__file__).resolve().parents[2] / "bots" / "seed_guesser.py"


def test_drawn_seeds_are_long_and_new() -> None:
    seeds = [draw_seed() for _ in range(100)]
    assert all(SMALL_SEED <= seed < 2**64 for seed in seeds)
    assert len(set(seeds)) == len(seeds)
    assert all(small_seed_warning(seed) is None for seed in seeds)


@pytest.mark.parametrize("seed", [0, 1, 42, 2024, SMALL_SEED - 1])
def test_a_small_seed_gets_a_warning(seed: int) -> None:
    warning = small_seed_warning(seed)
    assert warning is not None
    assert warning.startswith(f"Warning: seed {seed} is small (below 2**32)")
    assert "trying seeds until one deals its own first hand" in warning
    assert "in milliseconds" in warning
    assert "Leave 'seed' out of the config" in warning
    assert "long secret one" in warning


@pytest.mark.parametrize("seed", [SMALL_SEED, 2**63 + 12345, 2**64 - 1])
def test_a_long_seed_gets_none(seed: int) -> None:
    assert small_seed_warning(seed) is None


# ---------------------------------------------------------------------------------------------
# Whole tournaments


MARKER = "seed-tests"


def seeded_config(directory: Path, seed: int | None, **settings: object) -> Path:
    """A config of two rawbots carrying :data:`MARKER`, with ``seed`` or none at all; alpha
    first prints its AEGIS_SEED on stderr (into its log)."""
    config, _ = write_config(directory, ["alpha", "beta"], marker=MARKER, **settings)
    data = yaml.safe_load(config.read_text())
    del data["seed"]
    if seed is not None:
        data["seed"] = seed
    data["bots"][0]["command"] = [
        "/bin/sh",
        "-c",
        'echo "AEGIS_SEED=$AEGIS_SEED" >&2; exec "$@"',
        "sh",
        sys.executable,
        str(RAWBOT),
        "--name",
        "alpha",
    ]
    # Its own folder is the interpreter's (the first file its command names): show the
    # script's too, or it cannot be opened in its sandbox.
    data["bots"][0]["read_only"] = [str(RAWBOT.parent)]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


def stored_meta(output: Path) -> StoredMeta:
    connection = open_store(output, read_only=True)
    try:
        meta = read_meta(connection)
    finally:
        connection.close()
    assert meta is not None
    return meta


def scheduled_seeds(output: Path) -> dict[str, tuple[int, int]]:
    """Each scheduled match's round and seed, by match id."""
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT match_id, round, seed FROM schedule").fetchall()
    finally:
        connection.close()
    return {match_id: (number, seed) for match_id, number, seed in rows}


def bot_log(output: Path, name: str) -> str:
    """Everything the bot ``name`` wrote, over every worker process."""
    return "".join(path.read_text() for path in sorted(output.glob(f"logs/*/{name}.log")))


def test_a_drawn_seed_is_stored_and_kept_on_resume(tmp_path: Path) -> None:
    """No seed: the first run draws a long one and deals from it, the resume reuses it (for
    the deals and AEGIS_SEED alike), a config naming another seed is refused without the
    drawn one shown, and neither the standings nor the report show it unless asked to."""
    config = seeded_config(tmp_path, None, matches_per_pair=2)
    output = tmp_path / "out"
    first = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "Warning" not in first.stderr
    meta = stored_meta(output)
    seed = meta.seed
    assert meta.seed_drawn
    assert seed >= SMALL_SEED
    assert scheduled_seeds(output) == {
        "r0001-alpha+beta": (1, match_seed(seed, 1)),
        "r0001-beta+alpha": (1, match_seed(seed, 1)),
    }
    record = output / "records" / "match-r0001-alpha+beta.jsonl"
    assert json.loads(record.read_text().splitlines()[0])["seed"] == match_seed(seed, 1)
    aegis_seed = f"AEGIS_SEED={derive_seed(seed, 'bot', 'alpha')}"
    assert aegis_seed in bot_log(output, "alpha")
    # Resume with a round more: the same seed, no mismatch, no new draw.
    config = seeded_config(tmp_path, None, matches_per_pair=4)
    again = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "Resuming in" in again.stdout
    assert "Warning" not in again.stderr
    assert stored_meta(output).seed == seed
    seeds = scheduled_seeds(output)
    assert len(seeds) == 4
    assert {seeds[match_id] for match_id in seeds} == {
        (1, match_seed(seed, 1)),
        (2, match_seed(seed, 2)),
    }
    lines = re.findall(r"AEGIS_SEED=\S*", bot_log(output, "alpha"))
    assert len(lines) >= 2
    assert set(lines) == {aegis_seed}
    # A config that now names a seed of its own: refused, the stored one kept secret.
    config = seeded_config(tmp_path, 11, matches_per_pair=4)
    refused = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert refused.returncode == 2
    assert "seed: stored (secret: drawn for it), config 11" in refused.stderr
    assert str(seed) not in refused.stderr + refused.stdout
    # The standings and the report work, and show the seed only when asked to.
    for form in ("table", "json", "markdown"):
        standings = run_cli("standings", str(output), "--format", form, cwd=tmp_path)
        assert standings.returncode == 0, standings.stderr
        assert "alpha" in standings.stdout
        assert str(seed) not in standings.stdout
    report = run_cli("report", str(output), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (output / "report.html").read_text()
    assert str(seed) not in page
    assert "drawn for this tournament, not shown (aegis-ref report --show-seed shows it)" in page
    shown = run_cli("report", str(output), "--show-seed", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"<dt>seed</dt><dd>{seed}</dd>" in (output / "report.html").read_text()
    assert wait_no_processes(MARKER) == []


def test_an_explicit_seed_deals_as_it_always_did(tmp_path: Path) -> None:
    """A long seed in the config: no warning; the schedule and AEGIS_SEED derive from it
    (already in the loaded config), the store keeps it, and a config without a seed then
    resumes with it."""
    seed = 2**40 + 7
    config = seeded_config(tmp_path, seed, matches_per_pair=2)
    setup = load_config(config)
    assert setup.seed == seed
    assert setup.bots[1].env["AEGIS_SEED"] == str(derive_seed(seed, "bot", "beta"))
    output = tmp_path / "out"
    result = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr
    meta = stored_meta(output)
    assert (meta.seed, meta.seed_drawn) == (seed, False)
    assert set(scheduled_seeds(output).values()) == {(1, match_seed(seed, 1))}
    assert f"AEGIS_SEED={derive_seed(seed, 'bot', 'alpha')}" in bot_log(output, "alpha")
    config = seeded_config(tmp_path, None, matches_per_pair=4)
    again = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert stored_meta(output).seed == seed
    assert (2, match_seed(seed, 2)) in set(scheduled_seeds(output).values())
    report = run_cli("report", str(output), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (output / "report.html").read_text()
    assert "<dt>seed</dt><dd>not shown (aegis-ref report --show-seed shows it)</dd>" in page
    assert wait_no_processes(MARKER) == []


def guesser_tournament(directory: Path, seed: int | None) -> tuple[str, str]:
    """Play the seed guesser against the bundled random bot, two matches; return the
    command's stderr and the guesser's log."""
    directory.mkdir()
    data: dict[str, object] = {
        "name": "guess",
        "bots": [
            {"name": "guesser", "command": [sys.executable, str(SEED_GUESSER)]},
            {"name": "random", "command": "random"},
        ],
        # No game scores 8 points, so every match has a second game to check a guess on.
        "rules": {**FAST_RULES, "target_score": 10, "cold_margin": 8},
        # The guesser's search takes seconds, in its first decision of a match.
        "time_control": {"decision_ms": 60000, "warmup_ms": 60000},
        "matches_per_pair": 2,
    }
    if seed is not None:
        data["seed"] = seed
    config = directory / "config.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    output = directory / "out"
    result = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=directory)
    assert result.returncode == 0, result.stderr
    connection = sqlite3.connect(f"{(output / 'results.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        faults = connection.execute("SELECT forfeit_kind FROM results").fetchall()
    finally:
        connection.close()
    assert faults == [(None,), (None,)]
    return result.stderr, bot_log(output, "guesser")


def test_a_seed_guesser_finds_a_small_seed_and_not_a_drawn_one(tmp_path: Path) -> None:
    """A bot that tries every seed below 10**6 against its own hand finds seed 42 (and the
    tournament warned about it), and finds nothing when the tournament draws its seed."""
    started = time.monotonic()
    stderr, log = guesser_tournament(tmp_path / "small", 42)
    assert small_seed_warning(42) in stderr
    assert "SEED-GUESSER found 42" in log
    assert "found nothing" not in log
    stderr, log = guesser_tournament(tmp_path / "drawn", None)
    assert "Warning" not in stderr
    assert "SEED-GUESSER found nothing" in log
    assert re.search(r"SEED-GUESSER found \d", log) is None
    print(f"seed guesser tournaments: {time.monotonic() - started:.1f} s")
