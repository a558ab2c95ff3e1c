"""An SPRT run that keeps its status (``aegis-ref sprt ... --output DIR``): served after it
ended, an open page that switches to the final state when the run ends, and ``--serve``
showing the verdict before its server stops. Real ``aegis-ref sprt`` runs, the real server,
a real headless Chromium."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx

from tests.tournaments.chromium import devtools_page, require_chromium
from tests.tournaments.helpers import AEGIS_REF, free_port
from tests.tournaments.web.serving import served, wait_until_answers

#: A short test that cannot decide: bounds far apart, three pairs of short matches.
SHORT = ["first", "random", "--elo0", "0", "--elo1", "3", "--max-matches", "6"]
SHORT += ["--target-score", "5"]
#: What the three pairs end with (exit 3).
UNDECIDED = "undecided: --max-matches 6 reached; LLR "


def _sprt(*arguments: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(AEGIS_REF), "sprt", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )


def _final_checks(status: dict[str, object]) -> None:
    assert status["state"] == "finished"
    assert status["exit_code"] == 3
    assert isinstance(status["verdict"], str)
    assert status["verdict"].startswith(UNDECIDED)
    assert status["pairs"] == 3
    assert status["decision"] == "continue"
    assert isinstance(status["elo"], dict)
    assert status["elo"]["elo"] is not None
    assert status["lower"] < status["llr"] < status["upper"]  # type: ignore[operator]


def test_a_finished_sprt_run_is_served_from_its_output(tmp_path: Path) -> None:
    require_chromium()
    output = tmp_path / "out" / "sprt"
    run = _sprt(*SHORT, "--output", str(output), cwd=tmp_path)
    printed, errors = run.communicate(timeout=120)
    assert run.returncode == 3, errors
    kept = json.loads((output / "sprt.json").read_text())
    _final_checks(kept)
    assert kept["verdict"] in printed  # the line the terminal printed
    with served(output) as base:
        front = httpx.get(base + "/", timeout=5)
        assert front.status_code == 303
        assert front.headers["location"] == "/sprt"
        document = httpx.get(base + "/api/v1/sprt", timeout=5).json()
        _final_checks(document)
        with devtools_page(tmp_path / "profile") as page:
            page.open(base + "/sprt")
            page.wait_until("document.body.dataset.state === 'finished'", timeout=20)
            verdict = page.evaluate("document.getElementById('verdict').textContent")
            assert verdict == "Ended: " + kept["verdict"]
            status = page.evaluate("document.getElementById('status').textContent")
            assert status == "The test has ended: this is its final state."
            assert page.evaluate("document.querySelectorAll('#chart polyline').length") == 3
            assert page.problems() == []
            assert [url for url in page.requested() if not url.startswith(base + "/")] == []
    # The folder holds a run: a second one is refused and changes nothing.
    again = _sprt(*SHORT, "--output", str(output), cwd=tmp_path)
    _, errors = again.communicate(timeout=60)
    assert again.returncode == 2
    assert "sprt.json exists" in errors
    assert json.loads((output / "sprt.json").read_text()) == kept


def test_an_open_page_switches_to_the_final_state_when_the_run_ends(tmp_path: Path) -> None:
    require_chromium()
    output = tmp_path / "sprt"
    with served(output) as base, devtools_page(tmp_path / "profile") as page:
        # The page is open before the run starts: whatever it shows after came live.
        page.open(base + "/sprt")
        page.wait_until("document.body.dataset.version !== undefined", timeout=20)
        summary = page.evaluate("document.getElementById('summary').textContent")
        assert summary == "Waiting for the test to play its first pair."
        page.evaluate("window.notReloaded = true")
        run = _sprt(*SHORT, "--output", str(output), cwd=tmp_path)
        try:
            page.wait_until("document.body.dataset.state === 'finished'", timeout=120)
        finally:
            _, errors = run.communicate(timeout=120)
        assert run.returncode == 3, errors
        assert page.evaluate("window.notReloaded") is True
        verdict = page.evaluate("document.getElementById('verdict').textContent")
        assert verdict.startswith("Ended: " + UNDECIDED)
        assert page.evaluate("document.getElementById('title').textContent") == "first vs random"
        figures = page.evaluate("document.getElementById('figures').innerText")
        assert "LLR" in figures
        assert page.problems() == []


def test_an_interrupted_run_says_so(tmp_path: Path) -> None:
    output = tmp_path / "sprt"
    command = ["first", "random", "--elo0", "0", "--elo1", "3", "--max-matches", "100000"]
    run = _sprt(*command, "--target-score", "5", "--output", str(output), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (output / "sprt.json").exists():
            assert time.monotonic() < deadline, "no status written"
            time.sleep(0.05)
        running = json.loads((output / "sprt.json").read_text())
        assert running["state"] == "running"
        assert running["verdict"] is None
    finally:
        run.send_signal(2)  # SIGINT, as Ctrl-C
        _, errors = run.communicate(timeout=60)
    assert run.returncode == 130, errors
    ended = json.loads((output / "sprt.json").read_text())
    assert ended["state"] == "interrupted"
    assert ended["verdict"] == "interrupted: no decision"
    assert ended["exit_code"] == 130
    assert ended["pairs"] >= running["pairs"]


def test_serve_shows_the_verdict_before_the_server_stops(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    run = _sprt(*SHORT, "--serve", f"127.0.0.1:{port}", cwd=tmp_path)
    seen: list[str] = []
    try:
        wait_until_answers(base, run)
        while run.poll() is None:
            try:
                response = httpx.get(base + "/api/v1/sprt", timeout=5)
            except httpx.TransportError:  # stopped between two looks
                continue
            if response.status_code == 200:
                seen.append(response.json()["state"])
            time.sleep(0.05)
    finally:
        _, errors = run.communicate(timeout=120)
    assert run.returncode == 3, errors
    assert "finished" in seen
