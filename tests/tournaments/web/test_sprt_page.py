"""An SPRT run served while it plays (``aegis-ref sprt ... --serve``): its page in a real
headless Chromium, its JSON, and the server gone with the run."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.tournaments.chromium import devtools_page, require_chromium
from tests.tournaments.helpers import AEGIS_REF, free_port
from tests.tournaments.web.serving import wait_until_answers


def _sprt_status(base: str) -> dict[str, object] | None:
    response = httpx.get(f"{base}/api/v1/sprt", timeout=5)
    if response.status_code != 200:
        return None
    document: dict[str, object] = response.json()
    return document


def test_the_sprt_page_shows_the_running_test(tmp_path: Path) -> None:
    require_chromium()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # Bounds far apart in Elo terms: the test runs on while the page watches; it is
    # interrupted at the end.
    command = [str(AEGIS_REF), "sprt", "first", "random", "--elo0", "0", "--elo1", "3"]
    command += ["--max-matches", "100000", "--target-score", "5", "--serve", f"127.0.0.1:{port}"]
    run = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        wait_until_answers(base, run)
        deadline = time.monotonic() + 60
        while (status := _sprt_status(base)) is None or status["pairs"] == 0:
            assert time.monotonic() < deadline, "no pair in the status"
            time.sleep(0.1)
        assert status["new"] == "first"
        assert status["old"] == "random"
        assert status["decision"] == "continue"
        assert status["lower"] < status["llr"] < status["upper"]  # type: ignore[operator]
        # The folder has no standings: its front page is the test's.
        front = httpx.get(base + "/", timeout=5)
        assert front.status_code == 303
        assert front.headers["location"] == "/sprt"
        with devtools_page(tmp_path / "profile") as page:
            page.open(base + "/sprt")
            page.wait_until("document.body.dataset.version !== undefined", timeout=20)
            assert page.evaluate("document.getElementById('title').textContent") == (
                "first vs random"
            )
            first = page.evaluate("Number(document.body.dataset.version)")
            # Live: a later pair shows without a reload.
            page.wait_until(f"Number(document.body.dataset.version) > {first}", timeout=10)
            figures = page.evaluate("document.getElementById('figures').innerText")
            assert "LLR" in figures
            assert "score of first" in figures
            assert page.evaluate("document.querySelectorAll('#chart polyline').length") == 3
            assert page.problems() == []
            outside = [url for url in page.requested() if not url.startswith(base + "/")]
            assert outside == []
    finally:
        run.send_signal(signal.SIGINT)
        _, errors = run.communicate(timeout=60)
    assert run.returncode == 130, errors
    try:
        httpx.get(base + "/sprt", timeout=2)
        raise AssertionError("the server outlived its SPRT run")
    except httpx.TransportError:
        pass
