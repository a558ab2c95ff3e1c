"""The web service under a thousand live viewers, beside a running tournament.

A round robin of four bundled ``random`` bots kept alive (``--matches-per-pair`` matches per
pair, concurrency 1, target score 25) is played by ``aegis-ref tournament`` into a fresh folder,
alternately (``--repeat`` rounds of each):

- alone;
- beside ``aegis-ref serve`` on loopback with ``--viewers`` clients (one process of
  asyncio connections) holding ``/api/v1/events`` open and reading every ``update``.

The viewers' process stands for browsers on other machines: it runs at the lowest priority
(nice 19), so that on this machine it takes the CPU the tournament and the server leave.

Measured: the tournament's throughput (matches/s from its first stored match to its last)
and, per round, its ratio with viewers to without (the two runs of a round are played one
after the other); the CPU seconds per match of the tournament (the ``tournament`` process
and every process it waited for: the bots) and of the server (utime + stime from
``/proc``), which load on other work moves far less than the throughput; the viewers'
process's CPU; for every stored match and every viewer, how long after the match was
committed the viewer read an update that counts it (commits are seen by this process
polling the store's ``data_version`` every 5 ms); and the first load of the standings page
(its HTML, script, style and first event, as a browser fetches them).

    python benchmarks/serve.py [--viewers 1000] [--matches-per-pair 10] [--repeat 6]

``--per-change N`` measures instead what a change costs the server: a short tournament is
played once, then served twice, to no viewer and to ``--viewers``, while this process
makes N changes (it rewrites the folder's ``in-play.json`` every 0.6 s, which the server
takes as a change: it reads the store again and sends every stream the new event). The
server's CPU per change, and the difference per viewer, is the cost of a viewer.

    python benchmarks/serve.py --per-change 30 [--viewers 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path
from statistics import median, quantiles
from typing import Any

import yaml

AEGIS_REF = Path(sys.executable).parent / "aegis-ref"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: The viewers stand for browsers on other machines: they get what CPU is left.
_LOW_PRIORITY = ("nice", "-n", "19")

#: The viewers: asyncio connections reading the event stream; each line of an update is
#: searched for the matches played, and (arrival, count) noted when it grows.
_VIEWERS = textwrap.dedent(
    """
    import asyncio, json, re, sys, time
    port, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    played = re.compile(rb'"matches_played":(\\d+)')
    seen = [[] for _ in range(count)]
    connected = 0

    async def viewer(index):
        global connected
        for attempt in range(100):
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        writer.write(b"GET /api/v1/events HTTP/1.1\\r\\nHost: bench\\r\\n\\r\\n")
        connected += 1
        best = -1
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                found = played.search(line)
                if found and int(found.group(1)) > best:
                    best = int(found.group(1))
                    seen[index].append((time.monotonic(), best))
        except (ConnectionError, asyncio.CancelledError):
            return

    async def main():
        tasks = [asyncio.create_task(viewer(i)) for i in range(count)]
        while connected < count:
            await asyncio.sleep(0.05)
        print("connected", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with open(out, "w") as stream:
            json.dump(seen, stream)

    asyncio.run(main())
    """
)


def _config(folder: Path, matches_per_pair: int) -> Path:
    data = {
        "name": "serve-benchmark",
        # Kept alive: a match in tens of milliseconds, so results come many times a second.
        "bots": [
            {"name": f"random-{n}", "command": "random", "keep_alive": True} for n in range(1, 5)
        ],
        "matches_per_pair": matches_per_pair,
        "concurrency": 1,
        "output": str(folder / "out"),
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


class _Commits:
    """Polls the store's data_version every 5 ms; notes (time, matches stored) at each
    change."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.seen: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch)
        self.thread.start()

    def _watch(self) -> None:
        connection = None
        last = -1
        while not self.stop.wait(0.005):
            if connection is None:
                if not self.database.exists():
                    continue
                try:
                    connection = sqlite3.connect(f"{self.database.as_uri()}?mode=ro", uri=True)
                    connection.execute("SELECT count(*) FROM results").fetchone()
                except sqlite3.Error:
                    connection = None
                    continue
            version = connection.execute("PRAGMA data_version").fetchone()[0]
            if version != last:
                last = version
                (count,) = connection.execute("SELECT count(*) FROM results").fetchone()
                if not self.seen or count > self.seen[-1][1]:
                    self.seen.append((time.monotonic(), count))
        if connection is not None:
            connection.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def _wait_http(url: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _first_load(base: str) -> dict[str, int]:
    """Bytes of what a browser loads for the standings page, and of its first event."""
    sizes = {}
    for name, path in (("html", "/"), ("js", "/static/live.js"), ("css", "/static/live.css")):
        with urllib.request.urlopen(base + path, timeout=10) as response:
            sizes[name] = len(response.read())
    with urllib.request.urlopen(base + "/api/v1/events", timeout=10) as response:
        sizes["first event"] = len(response.readline()) + len(response.readline())
    sizes["total"] = sum(sizes.values())
    return sizes


def _run(folder: Path, matches_per_pair: int, viewers: int) -> dict[str, Any]:
    folder.mkdir()
    config = _config(folder, matches_per_pair)
    database = folder / "out" / "results.sqlite"
    server = viewer_process = None
    result: dict[str, Any] = {"viewers": viewers}
    port = 0
    if viewers:
        server, port = _start_server(folder / "out")
        viewer_process = _start_viewers(folder, port, viewers)
    commits = _Commits(database)
    server_cpu = _cpu_seconds(server.pid) if server else 0.0
    viewers_cpu = _cpu_seconds(viewer_process.pid) if viewer_process else 0.0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run(
        [str(AEGIS_REF), "tournament", str(config), "--quiet", "--no-preflight"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.monotonic() - started
    # The tournament and the processes it waited for (its bots): the only child reaped here.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tournament_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    time.sleep(3.0)  # the last updates reach the viewers
    commits.close()
    stored = commits.seen
    steady = stored[-1][0] - stored[0][0]
    result["matches"] = stored[-1][1]
    result["steady matches/s"] = (stored[-1][1] - stored[0][1]) / steady
    result["wall s"] = wall
    result["tournament cpu s/match"] = tournament_cpu / stored[-1][1]
    if server is not None and viewer_process is not None:
        result["server core share"] = (_cpu_seconds(server.pid) - server_cpu) / (wall + 3.0)
        result["server cpu s/match"] = (_cpu_seconds(server.pid) - server_cpu) / stored[-1][1]
        # The simulated viewers run on this machine too, and take CPU from the tournament.
        used = _cpu_seconds(viewer_process.pid) - viewers_cpu
        result["viewers core share"] = used / (wall + 3.0)
        result["first load bytes"] = _first_load(f"http://127.0.0.1:{port}")
        viewer_process.communicate("stop\n", timeout=60)
        seen = json.loads((folder / "seen.json").read_text())
        delays = []
        for view in seen:
            for committed, count in stored[1:]:
                arrived = next((when for when, played in view if played >= count), None)
                delays.append(float("inf") if arrived is None else arrived - committed)
        delays.sort()
        result["updates within 2 s"] = sum(delay <= 2.0 for delay in delays) / len(delays)
        result["delay p50 s"] = delays[len(delays) // 2]
        result["delay p95 s"] = delays[int(len(delays) * 0.95)]
        result["delay max s"] = delays[-1]
        server.terminate()
        server.wait(timeout=30)
    return result


def _start_server(output: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``aegis-ref serve OUTPUT`` on a free loopback port, once it answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(AEGIS_REF), "serve", str(output), "--port", str(port)], stderr=subprocess.DEVNULL
    )
    _wait_http(f"http://127.0.0.1:{port}/static/live.css")
    return server, port


def _start_viewers(folder: Path, port: int, viewers: int) -> subprocess.Popen[str]:
    seen_path = str(folder / "seen.json")
    viewer_process = subprocess.Popen(
        [*_LOW_PRIORITY, sys.executable, "-c", _VIEWERS, str(port), str(viewers), seen_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert viewer_process.stdout is not None
    assert viewer_process.stdout.readline().strip() == "connected"
    return viewer_process


def _per_change(folder: Path, changes: int, viewers: int) -> None:
    """Print the server's CPU per change with no viewer and with ``viewers``."""
    folder.mkdir()
    subprocess.run(
        [str(AEGIS_REF), "tournament", str(_config(folder, 2)), "--quiet", "--no-preflight"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    costs = {}
    for count in (0, viewers):
        server, port = _start_server(folder / "out")
        viewer_process = _start_viewers(folder, port, count) if count else None
        time.sleep(2.0)  # connected and served their first event
        before = _cpu_seconds(server.pid)
        for change in range(changes):
            (folder / "out" / "in-play.json").write_text("[]" + " " * (change % 2))
            time.sleep(0.6)
        time.sleep(1.0)
        costs[count] = (_cpu_seconds(server.pid) - before) / changes
        if viewer_process is not None:
            viewer_process.communicate("stop\n", timeout=60)
        server.terminate()
        server.wait(timeout=30)
        print(f"viewers {count}: server CPU {1000 * costs[count]:.1f} ms per change")
    extra = (costs[viewers] - costs[0]) / viewers
    print(f"per viewer and change: {1e6 * extra:.1f} µs of the server's CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--matches-per-pair", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--per-change", type=int, default=0, metavar="CHANGES")
    arguments = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    if arguments.per_change:
        with tempfile.TemporaryDirectory(prefix="aegis-serve-bench-") as scratch:
            _per_change(Path(scratch) / "per-change", arguments.per_change, arguments.viewers)
        print(f"load average after: {os.getloadavg()}")
        return
    results: dict[int, list[dict[str, Any]]] = {0: [], arguments.viewers: []}
    with tempfile.TemporaryDirectory(prefix="aegis-serve-bench-") as scratch:
        for round_number in range(arguments.repeat):
            for viewers in (0, arguments.viewers):
                folder = Path(scratch) / f"r{round_number}-v{viewers}"
                result = _run(folder, arguments.matches_per_pair, viewers)
                results[viewers].append(result)
                print(json.dumps(result, default=str))
    for viewers, runs in results.items():
        rates = [run["steady matches/s"] for run in runs]
        cpu = [run["tournament cpu s/match"] for run in runs]
        print(
            f"viewers {viewers}: steady {median(rates):.1f} matches/s "
            f"(runs: {', '.join(f'{rate:.1f}' for rate in rates)}); tournament CPU "
            f"{1000 * median(cpu):.1f} ms/match (runs: {', '.join(f'{1000 * c:.1f}' for c in cpu)})"
        )
    with_viewers = results[arguments.viewers]
    ratios = [
        loaded["steady matches/s"] / alone["steady matches/s"]
        for alone, loaded in zip(results[0], with_viewers, strict=True)
    ]
    if len(ratios) >= 2:
        low, _, high = quantiles(ratios, n=4, method="inclusive")
        print(
            f"throughput with / without viewers, per round: median {median(ratios):.2f}, "
            f"quartiles {low:.2f}-{high:.2f}, range {min(ratios):.2f}-{max(ratios):.2f} "
            f"(rounds: {', '.join(f'{ratio:.2f}' for ratio in ratios)})"
        )
    if with_viewers:
        server_ms = [1000 * run["server cpu s/match"] for run in with_viewers]
        print(
            f"server CPU {median(server_ms):.1f} ms/match "
            f"(runs: {', '.join(f'{ms:.1f}' for ms in server_ms)})"
        )
        print(
            f"server: {median(run['server core share'] for run in with_viewers):.1%} of a core "
            f"(the viewers' process: "
            f"{median(run['viewers core share'] for run in with_viewers):.1%}); "
            f"updates within 2 s: {min(run['updates within 2 s'] for run in with_viewers):.1%}; "
            f"p95 delay {max(run['delay p95 s'] for run in with_viewers):.2f} s; "
            f"first load {with_viewers[0]['first load bytes']}"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
