"""A real ladder through the referee: a field of sparring bots of known strengths.

Bot ``i`` of the field plays a random legal action with probability ``p_i`` and otherwise
as ``greedy`` (the bundled ``sparring`` bot, ``AEGIS_SPARRING_RANDOM``), so the true order
of the field is the order of ``p``: the ``--top`` strongest are spaced ``--top-step`` apart
from ``p = 0`` (or at ``--top-chances``), and the rest spread evenly from ``--rest-from`` to 1.
The ladder
(``format: ladder``, ``top: K``, ``max_matches`` = ``--share`` of a round robin's matches)
is played by ``aegis-ref tournament`` as any tournament is: real bot processes, sandboxed
where this machine can, ``--concurrency`` workers. Reports whether the standings' top K is
the true top K in order, what the certification says, the matches used as a share of the
round robin's (``n (n - 1)`` matches: one duplicate pair per pairing), and the wall time,
beside the round robin's estimated from its match count and this run's mean match time
(the round robin itself is not played: say so where the figures go).

    nice python benchmarks/ladder_field.py [--bots 64] [--top 5] [--share 0.15]
                                           [--concurrency 2] [--output DIR]
                                           [--seed N] [--final-share F]
                                           [--race-confidence C]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from tournaments.store.database import open_store, stored_matches

AEGIS_REF = Path(sys.executable).parent / "aegis-ref"


def strengths(
    bots: int, top: int, top_step: float, rest_from: float, best: list[float] | None = None
) -> list[float]:
    """Each bot's chance of a random action, strongest first (``best``: the top's own)."""
    best = best or [index * top_step for index in range(top)]
    rest = bots - top
    spread = [rest_from + (1 - rest_from) * index / max(1, rest - 1) for index in range(rest)]
    return best + spread


def add_field_arguments(parser: argparse.ArgumentParser) -> None:
    """The field's options: its size, its top, the strengths and the budget."""
    parser.add_argument("--bots", type=int, default=64)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--top-step", type=float, default=0.1)
    parser.add_argument("--top-chances", help="the top's chances instead, e.g. 0,0.15,0.3")
    parser.add_argument("--rest-from", type=float, default=0.6)
    parser.add_argument("--share", type=float, default=0.15, help="budget, of a round robin")


def field_chances(arguments: argparse.Namespace) -> list[float]:
    """The field of the options of :func:`add_field_arguments`."""
    return strengths(
        arguments.bots,
        arguments.top,
        arguments.top_step,
        arguments.rest_from,
        best_chances(arguments),
    )


def best_chances(arguments: argparse.Namespace) -> list[float] | None:
    """``--top-chances`` as numbers, one for each of the top (None when not given)."""
    if not arguments.top_chances:
        return None
    best = [float(part) for part in arguments.top_chances.split(",")]
    if len(best) != arguments.top:
        sys.exit(f"--top-chances has {len(best)} numbers for a top of {arguments.top}")
    return best


def sparring_bot(name: str, chance: float) -> dict[str, Any]:
    """A config's entry for a kept-alive ``sparring`` bot with this chance of a random action."""
    return {
        "name": name,
        "command": "sparring",
        "env": {"AEGIS_SPARRING_RANDOM": f"{chance:.4f}"},
        "keep_alive": True,
    }


def write_config(folder: Path, arguments: argparse.Namespace, chances: list[float]) -> Path:
    """The ladder's config; bot names carry their rank in the true order."""
    bots = [sparring_bot(f"spar-{rank:03d}", chance) for rank, chance in enumerate(chances, 1)]
    field = len(chances)
    data: dict[str, Any] = {
        "name": "ladder-field",
        "bots": bots,
        "format": "ladder",
        "ladder": {
            "top": arguments.top,
            "max_matches": int(arguments.share * field * (field - 1)),
            **({} if arguments.final_share is None else {"final_share": arguments.final_share}),
            **(
                {}
                if arguments.race_confidence is None
                else {"race_confidence": arguments.race_confidence}
            ),
        },
        "rules": {"target_score": arguments.target_score},
        "concurrency": arguments.concurrency,
        "seed": arguments.seed,
    }
    path = folder / "ladder-field.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def main() -> None:
    """Play the ladder and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_field_arguments(parser)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--target-score", type=int, default=25)
    parser.add_argument("--seed", type=int, default=2**40 + 64)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--final-share", type=float, default=None, help="final_share (default: the ladder's own)"
    )
    parser.add_argument(
        "--race-confidence",
        type=float,
        default=None,
        help="race_confidence (default: the ladder's own)",
    )
    arguments = parser.parse_args()
    folder = arguments.output or Path(tempfile.mkdtemp(prefix="ladder-field-"))
    folder.mkdir(parents=True, exist_ok=True)
    chances = field_chances(arguments)
    config = write_config(folder, arguments, chances)
    output = folder / "results"
    started = time.monotonic()
    played = subprocess.run(
        [str(AEGIS_REF), "tournament", str(config), "--output", str(output), "--quiet"],
        cwd=folder,
        check=False,
    )
    seconds = time.monotonic() - started
    if played.returncode != 0:
        sys.exit(f"the tournament failed ({played.returncode}); its output is in {output}")
    printed = subprocess.run(
        [str(AEGIS_REF), "standings", str(output), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    standings = json.loads(printed.stdout)
    field = arguments.bots
    round_robin = field * (field - 1)
    matches = standings["matches_played"]  # void ones too: they were played
    found = [bot["name"] for bot in standings["bots"][: arguments.top]]
    truth = [f"spar-{rank:03d}" for rank in range(1, arguments.top + 1)]
    # The round robin's wall time: this run's time outside matches (starting, preflight,
    # planning), plus its matches at this run's mean match time over the workers.
    connection = open_store(output, read_only=True)
    try:
        playing = sum(match.duration_s for match in stored_matches(connection))
    finally:
        connection.close()
    per_match = playing / max(1, matches) / arguments.concurrency
    overhead = seconds - per_match * matches
    estimate = overhead + round_robin * per_match
    print(f"field {field} sparring bots, top {arguments.top}, concurrency {arguments.concurrency}")
    print(f"strengths (random-action chance, best first): {[round(c, 3) for c in chances]}")
    print(f"certification: {standings['ladder']['certification']}")
    print(f"top {arguments.top} found: {found}; true: {truth}; in order: {found == truth}")
    print(f"top {arguments.top} set found: {set(found) == set(truth)}")
    print(
        f"matches {matches} = {100 * matches / round_robin:.1f} % of the round robin's "
        f"{round_robin}; rounds {standings['ladder']['round'] - 1}"
    )
    print(
        f"wall time {seconds:.0f} s, {overhead:.0f} s of it outside matches (starting the "
        f"bots, preflight, planning); mean match {per_match * arguments.concurrency:.3f} s"
    )
    print(
        f"the round robin's wall time, estimated (not played) as the same time outside "
        f"matches and its {round_robin} matches at this mean over {arguments.concurrency} "
        f"workers: {estimate:.0f} s"
    )
    if standings["void"]:
        print(f"void matches (both bots failed before game 1): {standings['void']}")
    print(f"output: {output}")


if __name__ == "__main__":
    main()
