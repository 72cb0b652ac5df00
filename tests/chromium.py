"""Drive a headless Chromium over its DevTools protocol, through a pipe (no WebSocket, no npm).

``--remote-debugging-pipe`` makes Chromium read protocol commands from its fd 3
and write answers and events to its fd 4, each message JSON ending in a NUL byte.
``Browser`` starts Debian's Chromium with a fresh profile, opens one page, and
keeps every console error, uncaught exception and error log entry the page
produces in ``errors``.
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--remote-debugging-pipe",
)


def chromium_path() -> Optional[str]:
    """Debian's Chromium, or None when it is not installed."""
    for candidate in (os.environ.get("TOOLSCRIPT_CHROMIUM", ""), CHROMIUM, shutil.which("chromium") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


class BrowserError(Exception):
    pass


class Browser:
    """One headless Chromium with one page attached; ``call`` sends a command to that page."""

    def __init__(self, executable: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="toolscript-chromium-")
        commands_read, commands_write = os.pipe()
        events_read, events_write = os.pipe()
        # The child needs them as fds 3 and 4: moved to 10 and above first, so the dup2s cannot clobber each other.
        child_in, child_out = fcntl_dup(commands_read), fcntl_dup(events_write)

        def as_fds_3_and_4() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        env = dict(os.environ, TZ="UTC", LANG="en_US.UTF-8")
        self.log = tempfile.TemporaryFile()  # Chromium's own stderr, for a failure's message
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            pass_fds=(3, 4), preexec_fn=as_fds_3_and_4, env=env,
        )
        os.close(child_in)
        os.close(child_out)
        self._out = os.fdopen(commands_write, "wb", buffering=0)
        self._in = os.fdopen(events_read, "rb", buffering=0)
        self._next_id = 0
        self._answers: Dict[int, Dict[str, Any]] = {}
        self._changed = threading.Condition()
        self.errors: List[str] = []
        self.closed = False
        self._reader = threading.Thread(target=self._read, name="chromium-reader", daemon=True)
        self._reader.start()
        self.session: Optional[str] = None
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    # -- the protocol ------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = self._in.read(65536)
            if not chunk:
                break
            buffer += chunk
            while b"\0" in buffer:
                raw, _, buffer = buffer.partition(b"\0")
                self._message(json.loads(raw))
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def _message(self, message: Dict[str, Any]) -> None:
        if "id" in message:
            with self._changed:
                self._answers[message["id"]] = message
                self._changed.notify_all()
            return
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append("uncaught: " + str(details.get("exception", {}).get("description") or details.get("text")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".strip())

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, session: bool = True) -> Dict[str, Any]:
        with self._changed:
            self._next_id += 1
            ident = self._next_id
        message: Dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self._out.write(json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + self.timeout
        with self._changed:
            while ident not in self._answers:
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    raise BrowserError(f"no answer to {method} ({'chromium exited' if self.closed else 'timed out'}); "
                                       f"its stderr ends: {self.stderr_tail()}")
                self._changed.wait(remaining)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def stderr_tail(self) -> str:
        self.log.seek(0)
        return self.log.read()[-2000:].decode("utf-8", "replace")

    # -- what tests do with a page -----------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 15.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout:g} s: {expression}")
            time.sleep(0.05)

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def screenshot(self, width: int = 1280, height: int = 800) -> bytes:
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self._out, self._in, self.log):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def fcntl_dup(fd: int) -> int:
    """A duplicate of ``fd`` numbered 10 or more (clear of 3 and 4), the original closed."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved
