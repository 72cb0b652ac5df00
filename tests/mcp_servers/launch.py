"""Start the stdlib fixture server (``fixture_server.py``) for tests and benchmarks."""

import os
import select
import subprocess
import sys
import tempfile
import time
from typing import List

import peers

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture_server.py")
# A scripted stdio server for protocol-era decisions (see its docstring): python ERA_SERVER MODE LOG.
ERA_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "era_server.py")
PATHS = {"http": "/mcp", "sse": "/sse"}


def stdio_command(*options: str) -> List[str]:
    """argv running the fixture on stdio."""
    return [sys.executable, FIXTURE, "stdio", *options]


def listening_port(process: subprocess.Popen, log_path: str, what: str, timeout: float) -> int:
    """Wait for ``process`` to print ``LISTENING <port>``; kill it and raise with its log if it does not."""
    deadline = time.monotonic() + timeout
    line = b""
    while time.monotonic() < deadline and not line.endswith(b"\n"):
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(process.stdout.fileno(), 256)
            if not chunk:
                break
            line += chunk
    if not line.startswith(b"LISTENING "):
        process.kill()
        process.wait()
        with open(log_path, errors="replace") as f:
            raise RuntimeError(f"{what} did not start: {line!r}; log: {f.read()[-2000:]}")
    return int(line.split()[1])


def start_fixture(mode: str, *options: str, timeout: float = 10.0) -> peers.Peer:
    """Run the fixture in ``http`` or ``sse`` mode on a free port; returns a stoppable Peer."""
    log = tempfile.NamedTemporaryFile(prefix=f"fixture-{mode}-", suffix=".log", delete=False)
    process = subprocess.Popen(
        [sys.executable, FIXTURE, mode, "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    port = listening_port(process, log.name, f"fixture {mode}", timeout)
    return peers.Peer(url=f"http://127.0.0.1:{port}{PATHS[mode]}", port=port, process=process, mode=mode, log_path=log.name)
