"""How reproducible a tournament is: the same config run in several ways, compared match by
match.

Plays one config (by default ``random``, ``random-2``, ``first`` and ``greedy``, 240 matches,
a fixed seed) as an organiser would, with the installed ``aegis-ref``:

- ``c1``: concurrency 1, uninterrupted (the reference);
- ``c2``, ``c2-again``: concurrency 2, twice from scratch;
- ``resumed``: concurrency 1, stopped by SIGKILL partway, then resumed;
- ``fresh``: every bot started afresh for each match (no ``keep_alive``);
- ``dask``: a local Dask cluster of two workers (with ``--dask``).

Each run's records are compared with the reference's, match by match, with the decision
times (``ms``) left out: the fraction of matches that differ at all, that have another
winner, and the largest difference in any bot's Elo. ``--aegis-ref PATH`` runs another
installation (an older checkout's venv) to compare before and after.

    python benchmarks/reproducibility.py [--matches-per-pair 40] [--dask] [--aegis-ref PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BOTS = (
    ("random", "random", {}),
    ("random-2", "random", {}),
    ("first", "first", {}),
    ("greedy", "greedy", {}),
)


def config_text(matches_per_pair: int, *, keep_alive: bool, seed: int) -> str:
    """The tournament's YAML."""
    lines = ["name: reproducibility", "bots:"]
    for name, command, env in BOTS:
        lines += [f"  - name: {name}", f"    command: {command}"]
        if keep_alive:
            lines.append("    keep_alive: true")
        if env:
            lines.append(f"    env: {json.dumps(env)}")
    lines += [
        "format: round_robin",
        f"matches_per_pair: {matches_per_pair}",
        "concurrency: 1",
        f"seed: {seed}",
        'sandbox: "off"',  # the same for every way of running; containment is not measured
    ]
    return "\n".join(lines) + "\n"


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_times(item) for key, item in value.items() if key != "ms"}
    if isinstance(value, list):
        return [_without_times(item) for item in value]
    return value


def records(directory: Path) -> dict[str, list[Any]]:
    """Each stored match's record lines, without decision times, by file name."""
    found = {}
    for path in sorted((directory / "records").glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found[path.name] = [_without_times(line) for line in lines]
    return found


def winner(lines: list[Any]) -> Any:
    """The winner's name of a match's record, None if void."""
    start = next(line for line in lines if line["type"] == "match_start")
    end = next(line for line in lines if line["type"] == "match_end")
    return None if end["winner"] is None else start["players"][end["winner"]]


def elo(aegis_ref: str, directory: Path) -> dict[str, float]:
    """Each bot's Elo, as ``standings --format json`` prints it."""
    shown = subprocess.run(
        [aegis_ref, "standings", str(directory), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {row["name"]: float(row["elo"]) for row in json.loads(shown.stdout)["bots"]}


def play(aegis_ref: str, config: Path, output: Path, *extra: str) -> float:
    """One whole run; its wall time."""
    started = time.monotonic()
    subprocess.run(
        [aegis_ref, "tournament", str(config), "--output", str(output), "--quiet", *extra],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - started


def play_killed(aegis_ref: str, config: Path, output: Path, after_matches: int) -> float:
    """A run stopped by SIGKILL once ``after_matches`` records exist, then resumed."""
    started = time.monotonic()
    run = subprocess.Popen(
        [aegis_ref, "tournament", str(config), "--output", str(output), "--quiet"],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and run.poll() is None:
        if len(list((output / "records").glob("*.jsonl"))) >= after_matches:
            os.killpg(run.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    run.wait()
    time.sleep(0.5)  # the pool's workers notice their coordinator is gone
    play(aegis_ref, config, output)
    return time.monotonic() - started


def compare(reference: dict[str, list[Any]], other: dict[str, list[Any]]) -> dict[str, Any]:
    """How ``other`` differs from ``reference``, match by match."""
    shared = sorted(set(reference) & set(other))
    differing = [name for name in shared if reference[name] != other[name]]
    winners = [name for name in shared if winner(reference[name]) != winner(other[name])]
    return {
        "matches": len(shared),
        "missing": len(set(reference) ^ set(other)),
        "differing": len(differing),
        "other_winner": len(winners),
    }


def main() -> None:
    """Run every way, compare with the reference, print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches-per-pair", type=int, default=40)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--dask", action="store_true", help="also a local Dask cluster")
    parser.add_argument(
        "--aegis-ref", default=str(Path(sys.executable).parent / "aegis-ref"), metavar="PATH"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    arguments = parser.parse_args()
    command = arguments.aegis_ref
    version = subprocess.run([command, "--version"], capture_output=True, text=True, check=True)
    print(version.stdout.strip())
    with tempfile.TemporaryDirectory(prefix="aegis-repro-") as temporary:
        root = Path(temporary)
        kept = root / "kept.yaml"
        kept.write_text(
            config_text(arguments.matches_per_pair, keep_alive=True, seed=arguments.seed)
        )
        fresh = root / "fresh.yaml"
        fresh.write_text(
            config_text(arguments.matches_per_pair, keep_alive=False, seed=arguments.seed)
        )
        total = len(BOTS) * (len(BOTS) - 1) // 2 * arguments.matches_per_pair
        ways: list[tuple[str, Any]] = [
            ("c1", lambda out: play(command, kept, out)),
            ("c2", lambda out: play(command, kept, out, "--concurrency", "2")),
            ("c2-again", lambda out: play(command, kept, out, "--concurrency", "2")),
            ("resumed", lambda out: play_killed(command, kept, out, total // 3)),
            ("fresh", lambda out: play(command, fresh, out, "--concurrency", "2")),
        ]
        if arguments.dask:
            ways.append(("dask", lambda out: play(command, kept, out, "--local-cluster", "2")))
        results: dict[str, Any] = {}
        reference: dict[str, list[Any]] = {}
        reference_elo: dict[str, float] = {}
        for name, run in ways:
            output = root / name
            seconds = run(output)
            played = records(output)
            ratings = elo(command, output)
            if name == "c1":
                reference, reference_elo = played, ratings
            figures = compare(reference, played)
            figures["elo_moved"] = max(
                abs(ratings[bot] - reference_elo[bot]) for bot in reference_elo
            )
            figures["seconds"] = round(seconds, 1)
            results[name] = figures
            print(
                f"{name:9} {figures['matches']:4} matches  "
                f"{figures['differing'] / max(1, figures['matches']):6.1%} differ  "
                f"{figures['other_winner'] / max(1, figures['matches']):6.1%} other winner  "
                f"Elo moved {figures['elo_moved']:5.1f}  missing {figures['missing']}  "
                f"({figures['seconds']} s)",
                flush=True,
            )
        if arguments.json:
            print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
