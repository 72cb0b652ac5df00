"""The stdio transport: a server subprocess speaking newline-delimited JSON.

The child gets its own process group, so shutdown can reach grandchildren that
``npx`` or shell wrappers leave behind.  Its stderr is drained continuously
(a full pipe would block the server) into a bounded buffer whose tail goes
into error messages.  Lines on stdout that are not JSON are skipped and kept
for diagnostics: some servers print banners there.  A line is read with a
bound (``max_message_bytes``, see ``transport``), so a server that writes
without newlines cannot grow us without limit.

Shutdown follows the MCP spec: close stdin, wait, SIGTERM the group, wait,
SIGKILL the group, and always reap the child.  A server that never finished
the handshake gets SIGTERM at once: it already had its whole timeout.

What left the group (``setsid``) is ended too.  Where a cgroup can be made
(``system.cgroups``: root, or a delegated cgroup v2) the server starts in
one of its own, which nothing it starts can leave; elsewhere its process tree
is read from /proc before it is stopped (a daemon whose parent had already
exited is out of reach there).  Either way what is left after the server gets
SIGTERM, then SIGKILL.
"""

import collections
import io
import logging
import os
import shlex
import signal
import subprocess
import threading
import time
from typing import Callable, Deque, Dict, List, Mapping, Optional, Tuple, cast

from toolscript import log
from toolscript.system import cgroups
from toolscript.mcp import jsonrpc
from toolscript.mcp.errors import ConnectionClosed, MessageTooLarge, TransportError
from toolscript.mcp.client.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    HEAD_TAIL_BYTES,
    OnClose,
    OnMessage,
    OnRequestError,
    Oversized,
    PendingRequests,
    read_line,
)

logger = log.get("mcp.stdio")

# What a server inherits from our environment besides its configured ``env``.
# Like the MCP Python SDK, we do not leak the whole environment (tokens of
# other tools live there); proxies and CA settings are kept so servers that
# reach the network keep working behind corporate proxies.
INHERITED_ENV = (
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
    "SYSTEMROOT", "APPDATA", "USERPROFILE",
)
STDERR_TAIL_BYTES = 16 * 1024
GARBAGE_LINES_KEPT = 5
CLOSE_GRACE_SECONDS = 2.0


def child_environment(extra: Mapping[str, str], base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The environment a stdio server starts with: a safe subset plus its own ``env``."""
    base = os.environ if base is None else base
    env = {name: base[name] for name in INHERITED_ENV if name in base}
    env.update(extra)
    return env


class StdioTransport:
    """Runs ``command args`` and exchanges JSON-RPC messages over its stdin/stdout."""

    name = "stdio"
    relates_messages = False

    def __init__(
        self,
        command: str,
        args: Optional[List[str]] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        *,
        close_grace: float = CLOSE_GRACE_SECONDS,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        server_name: str = "",
    ) -> None:
        self.command = command
        self.args = list(args or [])
        self.env = child_environment(env or {})
        self.cwd = cwd
        self.close_grace = close_grace
        self.max_message_bytes = max_message_bytes
        self.protocol_version: Optional[str] = None
        self.process: Optional[subprocess.Popen] = None
        self._group: Optional[cgroups.Group] = None  # the server's own cgroup, where one could be made
        self._stderr: Deque[bytes] = collections.deque()
        self._stderr_size = 0
        self._garbage: Deque[str] = collections.deque(maxlen=GARBAGE_LINES_KEPT)
        self._write_lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self._closing = False
        self._closed = threading.Event()  # set once close() has reaped the process
        self._lifecycle = threading.Lock()  # start() and close() may race (a gateway stopping mid-handshake)
        self._initialized = False
        self._pending = PendingRequests(max_message_bytes, server_name, lambda request_id, error: None)

    # -- lifecycle ---------------------------------------------------------

    def start(self, on_message: OnMessage, on_close: OnClose, on_request_error: OnRequestError) -> None:
        self._pending.on_request_error = on_request_error
        with self._lifecycle:
            if self._closing:
                raise ConnectionClosed("the session was closed before the server started")
            self._popen()
        self._spawn(self._drain_stderr, "stderr")
        self._spawn(lambda: self._read_stdout(on_message, on_close), "stdout")

    def _popen(self) -> None:
        argv = [self.command] + self.args
        self._group = cgroups.create("server")
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                # Joined before the server's first instruction: nothing it starts is ever outside its cgroup.
                preexec_fn=self._group.joiner() if self._group is not None else None,
            )
        except FileNotFoundError as exc:
            self._remove_group()
            if self.cwd and not os.path.isdir(self.cwd):
                raise TransportError(f"working directory {self.cwd!r} does not exist (fix \"cwd\" in the config)") from exc
            raise TransportError(
                f"command not found: {self.command!r} (install it, or put its full path in \"command\")"
            ) from exc
        except PermissionError as exc:
            self._remove_group()
            raise TransportError(f"cannot run {self.command!r}: permission denied (is it executable?)") from exc
        except OSError as exc:
            self._remove_group()
            raise TransportError(f"cannot start {shlex.join(argv)!r}: {exc.strerror or exc}") from exc
        logger.debug("started pid %s: %s", self.process.pid, shlex.join(argv))

    def initialized(self) -> None:
        self._initialized = True

    def abandon(self, request_id: object) -> None:
        self._pending.pop(request_id)
        if self._pending.stuck:
            # The reader is discarding an oversized message that nobody waits
            # for any more and that may never end: stop the server writing it.
            self._signal_group(signal.SIGTERM)

    def _spawn(self, target: Callable[[], None], what: str) -> None:
        pid = self.process.pid if self.process else 0
        thread = threading.Thread(target=target, name=f"mcp-stdio-{what}-{pid}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def send(self, message: dict) -> None:
        if self.process is None or self.process.stdin is None:
            raise ConnectionClosed("the server process is not running")
        line = jsonrpc.encode(message) + b"\n"
        self._pending.add(message)
        with self._write_lock:
            try:
                self.process.stdin.write(line)
                self.process.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                self._pending.pop(message.get("id"))
                # A closed stdin means the process is ending: wait (bounded) for its
                # status, so the error says "exited with status N", not a guess.
                raise ConnectionClosed(self.exit_description(wait=True)) from exc

    def close(self) -> None:
        """Stop the server: close stdin, then SIGTERM and SIGKILL its process group.

        A second call (from another thread) waits for the first to finish.
        """
        with self._lifecycle:
            already, self._closing = self._closing, True
            proc = self.process
        if proc is None:
            self._closed.set()
            return
        if already:
            self._closed.wait()
            return
        try:
            self._stop(proc)
        finally:
            self._closed.set()

    def _stop(self, proc: subprocess.Popen) -> None:
        tree = self._tree(proc)
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        try:
            if not self._initialized:
                # It never finished the handshake, within its whole timeout:
                # waiting a grace period for it to notice EOF is time wasted.
                raise subprocess.TimeoutExpired(proc.args, 0)
            proc.wait(self.close_grace)
        except subprocess.TimeoutExpired:
            tree += self._tree(proc)  # what it started in the meantime, while it can still be found
            self._signal_group(signal.SIGTERM)
            try:
                proc.wait(self.close_grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                proc.wait()
        # The server may have exited but left children in its group (npx does), or outside it (setsid).
        self._signal_group(signal.SIGTERM)
        self._end_the_rest(tree)
        for stream in (proc.stdout, proc.stderr):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass

    def _tree(self, proc: subprocess.Popen) -> List[Tuple[int, int]]:
        """The server's descendants now, as (pid, start time): the fallback where it has no cgroup."""
        if self._group is not None or proc.poll() is not None:
            return []
        found = [cgroups.identity(pid) for pid in cgroups.descendants(proc.pid)]
        return [f for f in found if f is not None]

    def _end_the_rest(self, tree: List[Tuple[int, int]]) -> None:
        """SIGTERM what the server started and left running (in its cgroup, or found in its tree), then SIGKILL."""
        group = self._group
        if group is None and not tree:
            return
        deadline = time.monotonic() + min(self.close_grace, CLOSE_GRACE_SECONDS)
        if group is not None:
            group.signal_all(signal.SIGTERM)
            while group.pids() and time.monotonic() < deadline:
                time.sleep(0.02)
            self._remove_group()  # SIGKILLs what is still there
            return
        if cgroups.signal_identified(tree, signal.SIGTERM):
            while cgroups.signal_identified(tree, 0) and time.monotonic() < deadline:
                time.sleep(0.02)
            cgroups.signal_identified(tree, signal.SIGKILL)

    def kill_now(self) -> None:
        """SIGKILL the server's process group and everything in its cgroup (the emergency exit)."""
        if self.process is not None and self.process.poll() is None:
            self._signal_group(signal.SIGKILL)
        if self._group is not None:
            self._group.kill()

    def _remove_group(self) -> None:
        group, self._group = self._group, None
        if group is not None:
            group.remove()

    def _signal_group(self, sig: int) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # -- reading -----------------------------------------------------------

    def _read_stdout(self, on_message: OnMessage, on_close: OnClose) -> None:
        """The reader thread: deliver messages until EOF; whatever goes wrong is reported, never lost."""
        error: Optional[Exception] = None
        try:
            self._read_messages(on_message)
        except MessageTooLarge as exc:
            error = exc
        except (OSError, ValueError):
            if not self._closing:  # else: stdout closed under us by close()
                logger.debug("reading the server's stdout failed", exc_info=True)
                error = ConnectionClosed(self.exit_description(wait=True))
        except Exception as exc:  # a thread that dies silently would leave every call hanging
            logger.debug("reading the server's stdout failed", exc_info=True)
            error = TransportError(f"reading the server's output failed ({type(exc).__name__}: {exc})")
        if self._closing:
            error = None
        elif error is None:
            error = ConnectionClosed(self.exit_description(wait=True))
        else:
            self._signal_group(signal.SIGTERM)  # we stopped reading it: stop it too
        try:
            on_close(error)
        except Exception:
            logger.exception("the on_close callback failed")

    def _read_messages(self, on_message: OnMessage) -> None:
        stdout = self.process.stdout if self.process else None
        if stdout is None:
            return
        pending = self._pending
        limit = self.max_message_bytes

        def keep_reading(head: bytes) -> bool:
            return not self._closing and pending.keep_reading(head)

        while True:
            raw = read_line(stdout.readline, limit, keep_reading)
            if isinstance(raw, Oversized):
                if self._closing:
                    return
                logger.debug("discarded a %d-byte message over the %d-byte limit", raw.size, limit)
                pending.settle(raw)  # raises when nobody can be told
                continue
            if not raw:
                return
            line = raw.strip()
            if not line:
                continue
            try:
                messages = jsonrpc.decode(line)
            except ValueError as exc:
                self._undecodable(line, exc)
                continue
            for message in messages:
                pending.answered(message)
                on_message(message, None)

    def _undecodable(self, line: bytes, exc: ValueError) -> None:
        """A line that is not JSON: a banner to skip, or a broken answer to fail its request with."""
        request_id = self._pending.match(line[:HEAD_TAIL_BYTES], line[-HEAD_TAIL_BYTES:])
        if request_id is not None:
            what = self._pending.pop(request_id) or "a request"
            self._pending.on_request_error(request_id, TransportError(f"the server's answer to {what} is not valid JSON ({exc})"))
            return
        text = line[:200].decode("utf-8", errors="replace")
        self._garbage.append(text)
        logger.debug("ignoring non-JSON line on the server's stdout: %r", text)

    def _drain_stderr(self) -> None:
        stderr = cast(Optional[io.BufferedReader], self.process.stderr if self.process else None)
        if stderr is None:
            return
        try:
            for chunk in iter(lambda: stderr.read1(4096), b""):
                self._stderr.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size > STDERR_TAIL_BYTES and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.popleft())
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("[%s stderr] %s", self.command, chunk.decode("utf-8", "replace").rstrip())
        except (OSError, ValueError):
            pass

    # -- diagnostics ---------------------------------------------------------

    def stderr_tail(self, lines: int = 10) -> str:
        """The last lines the server wrote to stderr."""
        text = b"".join(self._stderr)[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace")
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def garbage_lines(self) -> List[str]:
        """Recent non-JSON lines the server printed on stdout."""
        return list(self._garbage)

    def exit_description(self, wait: bool = False) -> str:
        """One line: how the server ended, with the tail of its stderr."""
        proc = self.process
        status = None
        if proc is not None:
            try:
                status = proc.wait(1.0) if wait else proc.poll()
            except subprocess.TimeoutExpired:
                status = None
        # The stderr thread may still be reading the last words of the process.
        for thread in self._threads:
            if thread.name.startswith("mcp-stdio-stderr"):
                thread.join(0.5)
        if status is None:
            text = "the server closed its stdout"
        elif status < 0:
            try:
                text = f"the server was killed by {signal.Signals(-status).name}"
            except ValueError:
                text = f"the server was killed by signal {-status}"
        else:
            text = f"the server exited with status {status}"
        tail = self.stderr_tail(1)
        if tail:
            text += f"; stderr: {tail.strip()}"
        if self._garbage:
            text += f"; it printed non-JSON on stdout: {self._garbage[-1]!r}"
        return text
