"""``aegis-ref serve`` as a command, and ``--serve`` on ``tournament``: where it serves,
what it refuses, and that it ends with the run."""

from __future__ import annotations

import ssl
import subprocess
import time
from pathlib import Path

import httpx

from tests.tournaments.helpers import (
    AEGIS_REF,
    free_port,
    run_cli,
    wait_no_processes,
    write_config,
)
from tests.tournaments.web.serving import slow_config, tournament_running, wait_for_version


def test_tournament_serve_runs_a_server_beside_the_run_and_ends_it(tmp_path: Path) -> None:
    config, marker = slow_config(tmp_path, ["one", "two"], matches_per_pair=6)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tournament_running(config, tmp_path / "out", "--serve", f"127.0.0.1:{port}"):
        standings = wait_for_version(base, timeout=60)
        assert standings["matches_scheduled"] == 6
    # The server ended with the run.
    deadline = time.monotonic() + 15
    while True:
        try:
            httpx.get(f"{base}/api/v1/standings", timeout=1)
        except httpx.TransportError:
            break
        assert time.monotonic() < deadline, "the server outlived its run"
        time.sleep(0.1)
    assert wait_no_processes(marker) == []


def test_serve_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    not_a_run = tmp_path / "notes.txt"
    not_a_run.write_text("hello")
    refused = run_cli("serve", str(not_a_run), cwd=tmp_path)
    assert refused.returncode == 2
    assert "neither a league nor a tournament's output folder" in refused.stderr
    half_tls = run_cli("serve", str(tmp_path), "--certfile", str(not_a_run), cwd=tmp_path)
    assert half_tls.returncode == 2
    assert "give both --certfile and --keyfile" in half_tls.stderr
    config, _ = write_config(tmp_path, ["one", "two"])
    bad_address = run_cli("tournament", str(config), "--serve", "nowhere", cwd=tmp_path)
    assert bad_address.returncode == 2
    assert "--serve: 'nowhere': give HOST:PORT" in bad_address.stderr
    assert not list(tmp_path.rglob("results.sqlite"))  # refused before anything ran


def _serve_until_it_answers(
    arguments: list[str], url: str, **client: object
) -> tuple[httpx.Response, str]:
    """Start ``aegis-ref serve ARGUMENTS``, GET ``url`` once it answers, stop it; return
    the answer and what the server printed."""
    process = subprocess.Popen(
        [str(AEGIS_REF), "serve", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.communicate()
            try:
                response = httpx.get(url, timeout=2, **client)  # type: ignore[arg-type]
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer in time"
                time.sleep(0.1)
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=15)
    return response, errors


def test_tls_with_a_certificate_and_a_key(tournament_output: Path, tmp_path: Path) -> None:
    certificate, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(certificate)],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    arguments = [str(tournament_output), "--port", str(port)]
    arguments += ["--certfile", str(certificate), "--keyfile", str(key)]
    response, errors = _serve_until_it_answers(
        arguments,
        f"https://127.0.0.1:{port}/static/live.css",
        verify=ssl.create_default_context(cafile=str(certificate)),
    )
    assert response.status_code == 200
    assert f"at https://127.0.0.1:{port}/" in errors
    assert "Warning" not in errors


def test_plain_http_beyond_loopback_warns(tournament_output: Path) -> None:
    port = free_port()
    arguments = [str(tournament_output), "--host", "0.0.0.0", "--port", str(port)]
    response, errors = _serve_until_it_answers(
        arguments, f"http://127.0.0.1:{port}/static/live.css"
    )
    assert response.status_code == 200
    assert "Warning: serving plain HTTP on 0.0.0.0" in errors
