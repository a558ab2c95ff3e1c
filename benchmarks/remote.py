"""Tournament throughput with remote bots against the same bots started by the referee.

A round robin of four bundled ``random`` bots (Python, the SDK), default rules, played by
``run_tournament`` into a fresh output directory, with concurrency 1 and 2:

- **local**: the referee starts the bots, one process each, kept alive from match to match
  (as a remote bot is);
- **remote**: the same program, started by this script as a remote bot's author would
  (``AEGIS_ENDPOINT`` and CurveZMQ keys, no token), two processes per bot (``connections:
  2``) dialling in to the tournament's listener on loopback; every message of a match then
  passes through the coordinator's hub, encrypted between it and the bot.

The settings alternate within each of ``--repeat`` rounds (local 1, remote 1, local 2,
remote 2) and the figures are medians, with each round's remote/local ratio: on a shared
machine single runs vary a lot. "Steady" is from the first stored match to the last (worker
and bot start-up left out); the remote bots are connected before the run starts.

    python benchmarks/remote.py [--matches-per-pair 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from statistics import median

# The benchmark next to this one (this script's folder is on sys.path when it runs).
from tournament import StoreClock

from referee.bots import BotSpec
from referee.bundled import resolve_bot
from referee.listeners import RemoteListener, generate_keys, listen_problem
from referee.rules.options import RulesOptions
from referee.time_control import TimeControl
from tournaments.config.tournament import TournamentSetup
from tournaments.run.coordinator import run_tournament

RANDOM_BOT = Path(__file__).resolve().parents[1] / "sample_bots" / "random" / "bot.py"
BOTS = 4
CONNECTIONS = 2


def _free_port() -> int:
    for port in range(17100, 17200):
        if listen_problem("127.0.0.1", port) is None:
            return port
    raise SystemExit("no free port in 17100-17199 on 127.0.0.1")


def _start_remote(
    endpoint: str, server_key: str, keys: tuple[str, str], count: int
) -> list[subprocess.Popen[bytes]]:
    environment = {key: value for key, value in os.environ.items() if key != "AEGIS_TOKEN"}
    environment.update(
        AEGIS_ENDPOINT=endpoint,
        AEGIS_SERVER_KEY=server_key,
        AEGIS_PUBLIC_KEY=keys[0],
        AEGIS_SECRET_KEY=keys[1],
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    return [
        subprocess.Popen(
            [sys.executable, str(RANDOM_BOT)],
            env=environment,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]


def throughput(
    remote: bool, concurrency: int, matches_per_pair: int, scratch: Path
) -> dict[str, float]:
    """Play the round robin (remote or local bots) into a fresh directory; its figures."""
    output = Path(tempfile.mkdtemp(prefix="run-", dir=scratch)) / "out"
    names = [f"random-{index}" for index in range(1, BOTS + 1)]
    processes: list[subprocess.Popen[bytes]] = []
    listener = None
    if remote:
        public, secret = generate_keys()
        port = _free_port()
        listener = RemoteListener("127.0.0.1", port, public, secret)
        bot_keys = {name: generate_keys() for name in names}
        bots = tuple(
            BotSpec(name, (), curve_public_key=keys[0], connections=CONNECTIONS)
            for name, keys in bot_keys.items()
        )
        for keys in bot_keys.values():
            processes += _start_remote(f"tcp://127.0.0.1:{port}", public, keys, CONNECTIONS)
    else:
        bots = tuple(replace(resolve_bot("random", name), keep_alive=True) for name in names)
    setup = TournamentSetup(
        name=f"bench-remote-{remote}-c{concurrency}",
        bots=bots,
        format="round_robin",
        gauntlet=(),
        matches_per_pair=matches_per_pair,
        options=RulesOptions(),
        time_control=TimeControl(decision_ms=1000, warmup_ms=10000),
        concurrency=concurrency,
        seed=1,
        output=output,
        listen=listener,
        remote_connect_s=30.0,
    )
    clock = StoreClock()
    try:
        started = time.perf_counter()
        summary, _ = run_tournament(setup, display=clock)
        elapsed = time.perf_counter() - started
    finally:
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert summary.complete, summary
    assert clock.first is not None
    assert clock.last is not None
    steady = clock.last - clock.first
    return {
        "matches_per_s": summary.played / elapsed,
        "games_per_s": clock.games / elapsed,
        "steady_matches_per_s": (summary.played - 1) / steady,
        "steady_games_per_s": clock.games_after_first / steady,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches-per-pair", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    runs: dict[tuple[bool, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="aegis-bench-remote-") as scratch:
        for round_number in range(1, arguments.repeat + 1):
            for concurrency in (1, 2):
                for remote in (False, True):
                    figures = throughput(
                        remote, concurrency, arguments.matches_per_pair, Path(scratch)
                    )
                    runs.setdefault((remote, concurrency), []).append(figures)
                    print(
                        f"round {round_number}: {'remote' if remote else 'local '} "
                        f"concurrency {concurrency}: "
                        f"{figures['steady_games_per_s']:.0f} games/s steady, "
                        f"{figures['games_per_s']:.0f} overall",
                        flush=True,
                    )
    print()
    print(
        "| bots | concurrency | games/s steady | matches/s steady | games/s overall "
        "| remote/local steady (rounds) | remote/local overall |"
    )
    print("|---|---|---|---|---|---|---|")
    for concurrency in (1, 2):
        for remote in (False, True):
            figures = runs[(remote, concurrency)]
            row = (
                f"| {'remote' if remote else 'local'} | {concurrency} "
                f"| {median(run['steady_games_per_s'] for run in figures):.0f} "
                f"| {median(run['steady_matches_per_s'] for run in figures):.1f} "
                f"| {median(run['games_per_s'] for run in figures):.0f} "
            )
            if remote:
                local = runs[(False, concurrency)]
                ratios = [
                    far["steady_games_per_s"] / near["steady_games_per_s"]
                    for far, near in zip(figures, local, strict=True)
                ]
                overall = [
                    far["games_per_s"] / near["games_per_s"]
                    for far, near in zip(figures, local, strict=True)
                ]
                shown = ", ".join(f"{ratio:.2f}" for ratio in ratios)
                row += f"| {median(ratios):.2f}x ({shown}) | {median(overall):.2f}x |"
            else:
                row += "| | |"
            print(row)


if __name__ == "__main__":
    main()
