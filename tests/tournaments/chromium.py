"""Headless Chromium for the tests of our pages: run it once on a page (dump its DOM, take a
screenshot), or drive it over the DevTools protocol (keys, clicks, reading the page).

The DevTools protocol runs over a pipe (``--remote-debugging-pipe``: JSON messages ended by
a NUL byte, Chromium reading on its descriptor 3 and writing on 4), so no port is opened and
no client library is needed. Chromium gets no network: every test page must be
self-contained, and the browser is told not to reach out by itself.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_TIMEOUT = 60.0
#: Flags of every run: headless, no sandbox (tests may run as root), nothing in the
#: background that would use the network.
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def chromium() -> str | None:
    """The Chromium program on PATH, if any."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> None:
    """Skip the test without Chromium, or fail it on CI, which always has it."""
    if chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but chromium is missing: .ci/run installs Debian's chromium")
        pytest.skip("chromium is not installed (apt-get install chromium); CI always runs this")


def _end_group(process: subprocess.Popen[Any]) -> None:
    # Chromium may leave helpers (zygote, renderers) in its process group: end them all, and
    # the browser itself if it overran its time.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_chromium(arguments: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium once with a throwaway profile; kill its whole process group
    whatever happens."""
    browser = chromium()
    assert browser is not None
    command = [browser, *_FLAGS, f"--user-data-dir={profile}", *arguments]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=CHROMIUM_TIMEOUT)
    finally:
        _end_group(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def png_size(path: Path) -> tuple[int, int]:
    """The width and height of a PNG file."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


class DevToolsError(AssertionError):
    """Chromium answered a DevTools command with an error, or not in time."""


class Page:
    """One tab of a headless Chromium driven over the DevTools protocol.

    Every event is kept (``events``), so that a test can ask afterwards what the page
    requested, printed or threw.
    """

    def __init__(self, process: subprocess.Popen[bytes], to_browser: int, from_browser: int):
        self.process = process
        self._to = to_browser
        self._from = from_browser
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None
        self.events: list[dict[str, Any]] = []

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DevToolsError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from], [], [], left)
            if ready:
                chunk = os.read(self._from, 1 << 20)
                if not chunk:
                    raise DevToolsError("Chromium closed its DevTools pipe")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def command(
        self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False
    ) -> dict[str, Any]:
        """Send a command (to the tab, or to the browser) and return its result."""
        identifier = self._send(method, params, None if browser else self._session)
        deadline = time.monotonic() + CHROMIUM_TIMEOUT
        while True:
            message = self._receive(deadline)
            if message.get("id") == identifier:
                if "error" in message:
                    raise DevToolsError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str, timeout: float = CHROMIUM_TIMEOUT) -> dict[str, Any]:
        """Wait for an event (or take it if it already came)."""
        for event in self.events:
            if event["method"] == method:
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if "method" in message:
                if message["method"] == method:
                    return message
                self.events.append(message)

    def attach(self, width: int, height: int) -> None:
        """Attach to the browser's first tab and watch it: network, console, dialogs."""
        targets = self.command("Target.getTargets", browser=True)["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        attached = self.command(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, browser=True
        )
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.command(f"{domain}.enable")
        self.command(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event; a ``url`` that only changes the
        fragment of the page shown stays in the page (no load: see :meth:`wait_until`)."""
        navigated = self.command("Page.navigate", {"url": url})
        if navigated.get("loaderId"):
            self.wait_for("Page.loadEventFired")

    def wait_until(self, expression: str, timeout: float = 10.0) -> None:
        """Wait until a JavaScript expression is true in the page."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise DevToolsError(f"never true: {expression}")
            time.sleep(0.02)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception fails the test)."""
        result = self.command("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise DevToolsError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def press(self, key: str, code: str | None = None, key_code: int = 0) -> None:
        """Press and release a key, as a person would."""
        base = {"key": key, "code": code or key, "windowsVirtualKeyCode": key_code}
        self.command("Input.dispatchKeyEvent", {"type": "rawKeyDown", **base})
        if len(key) == 1:
            self.command("Input.dispatchKeyEvent", {"type": "char", "text": key, **base})
        self.command("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def click(self, selector: str) -> None:
        """Click the middle of the element ``selector`` names, with the mouse."""
        box = self.evaluate(
            f"(function () {{ var r = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.command(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1},
            )

    def screenshot(self, path: Path) -> None:
        """A PNG of the whole page, however long, written to ``path``."""
        shot = self.command(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def requested(self) -> list[str]:
        """Every URL the page asked for so far."""
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event["method"] == "Network.requestWillBeSent"
        ]

    def problems(self) -> list[str]:
        """Exceptions thrown, dialogs opened, and errors logged (a refused script or style
        among them) so far."""
        found = []
        for event in self.events:
            method, params = event["method"], event["params"]
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Page.javascriptDialogOpening":
                found.append(f"dialog: {params.get('message')}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"log: {params['entry'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params["type"] == "error":
                found.append(f"console: {params['args']}")
        return found


def _pipe() -> tuple[int, int]:
    """A pipe whose ends are numbered 10 or more, out of the way of 3 and 4."""
    ends = []
    for descriptor in os.pipe():
        ends.append(fcntl.fcntl(descriptor, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(descriptor)
    return ends[0], ends[1]


@contextlib.contextmanager
def devtools_page(profile: Path, width: int = 1200, height: int = 900) -> Iterator[Page]:
    """A headless Chromium with one tab to drive; the whole process group is killed after."""
    browser = chromium()
    assert browser is not None
    commands_read, commands_write = _pipe()
    answers_read, answers_write = _pipe()
    # Chromium reads commands on its descriptor 3 and writes answers on 4: a small Python
    # program puts the pipes there and becomes Chromium (a preexec function could not: the
    # descriptors it made would be closed before the exec).
    arrange = (
        "import os, sys; "
        f"os.dup2({commands_read}, 3); os.dup2({answers_write}, 4); "
        f"os.close({commands_read}); os.close({answers_write}); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            arrange,
            browser,
            *_FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(commands_read, answers_write),
        start_new_session=True,
    )
    os.close(commands_read)
    os.close(answers_write)
    page = Page(process, commands_write, answers_read)
    try:
        page.attach(width, height)
        yield page
    finally:
        os.close(commands_write)
        os.close(answers_read)
        _end_group(process)
