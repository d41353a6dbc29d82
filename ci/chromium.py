"""Drive headless Chromium (Debian's `chromium` package) over the DevTools protocol on a pipe; stdlib only.

`--remote-debugging-pipe` makes Chromium read commands from fd 3 and write replies and events to fd 4, one JSON
message each, ended by a NUL byte: no port, no websocket library, nothing downloaded.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
DEB_HINT = "install Debian's package: apt-get update && apt-get install -y chromium"


PLACE_PIPES = (
    "import os, sys\n"
    "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


class BrowserError(Exception):
    """Chromium is missing, died, or a page did not do what a check expected; the message is one line."""


def find_chromium(env: dict[str, str] | None = None) -> str:
    """$CHROMIUM, else the first of chromium / chromium-browser / google-chrome on PATH."""
    given = (env if env is not None else os.environ).get("CHROMIUM")
    if given:
        if not shutil.which(given):
            raise BrowserError(f"CHROMIUM={given!r} is not an executable")
        return given
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError(f"no headless Chromium found (looked for {', '.join(CANDIDATES)} on PATH); {DEB_HINT}")


def _high(fd: int) -> int:
    """A close-on-exec copy above fd 4, so placing the pipe ends on fds 3 and 4 never clobbers one another."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


class Browser:
    """One headless Chromium with one page; `evaluate` runs JavaScript in it and returns the value."""

    def __init__(self, binary: str, *, width: int = 1400, height: int = 900, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next = 0
        self._buffer = b""
        self._profile = tempfile.TemporaryDirectory(prefix="specmatrix-chromium-")
        cmd_read, cmd_write = (_high(fd) for fd in os.pipe())
        out_read, out_write = (_high(fd) for fd in os.pipe())

        self._log = Path(self._profile.name) / "chromium.log"
        # A small Python step puts the pipe ends on fds 3 and 4, closes the originals and becomes Chromium (dash,
        # Debian's sh, cannot name fds above 9 in a redirection).
        args = [
            sys.executable,
            "-c",
            PLACE_PIPES,
            str(cmd_read),
            str(out_write),
            binary,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-sandbox",  # CI containers run as root, where Chromium's sandbox refuses to start
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            f"--user-data-dir={self._profile.name}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        with self._log.open("wb") as log:  # a file, not a pipe: Chromium's chatter can never fill it and block
            self.process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(cmd_read, out_write)
            )
        os.close(cmd_read)
        os.close(out_write)
        self._write, self._read = cmd_write, out_read
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._read], [], [], left)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium exited: {self._stderr_tail()}")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def _stderr_tail(self) -> str:
        self.process.poll()
        lines = self._log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self.process.returncode}"

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False) -> dict[str, Any]:
        """Send one command and wait for its reply (events that arrive meanwhile are kept in `events`)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        reply = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=True
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"script failed: {str(text).splitlines()[0]}")
        return reply["result"].get("value")

    def open(self, path: Path, *, ready: str, timeout: float = 30.0) -> float:
        """Load a local file and wait until `ready` (a JavaScript expression) is truthy; the seconds it took."""
        started = time.monotonic()
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        while time.monotonic() - started < timeout:
            if self.evaluate(ready):
                return time.monotonic() - started
            time.sleep(0.02)
        raise BrowserError(f"{path}: the page was not ready after {timeout:.0f} s ({ready})")

    def console_errors(self) -> list[str]:
        """Errors the page logged (a Content-Security-Policy violation is one)."""
        out = []
        for event in self.events:
            if event.get("method") == "Log.entryAdded" and event["params"]["entry"].get("level") == "error":
                out.append(event["params"]["entry"].get("text", ""))
            if event.get("method") == "Runtime.exceptionThrown":
                out.append(event["params"]["exceptionDetails"].get("text", ""))
        return out

    def screenshot(self, path: Path, *, full_page: bool = False) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(BrowserError):  # already gone: the wait below reaps it
            self.call("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._write, self._read):
            os.close(fd)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
