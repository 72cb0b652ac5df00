#!/usr/bin/env python3
"""Benchmark MCP 2026-07-28 (modern) against the handshake era, through toolscript.

Everything runs on 127.0.0.1 in one run:

- call: round trip of tools/call ``add`` through the gateway's MCP endpoint
  (one open Streamable HTTP session of our client) to two stdio upstreams of
  the same gateway: the official Python SDK's modern server (``MCPServer``,
  as tests/mcp/client/test_modern.py runs it; the gateway settles on
  2026-07-28 with ``server/discover``) and tests/mcp_servers/fixture_server.py
  (handshake era: ``initialize``).  Interleaved blocks, so noise hits both alike.
- first_call: a fresh session, connect + first tools/call, each time:
  ``discover`` = ``open_session`` (``server/discover``, the modern envelope, no
  handshake) vs ``initialize`` = ``ClientSession.initialize`` (initialize +
  notifications/initialized, then the call), against the SDK's modern server
  over Streamable HTTP and against the gateway's own MCP endpoint, both of
  which speak both eras.  No process start-up is included.

Prints one JSON document (n, median_ms, p95_ms per figure; progress on stderr).
Needs the test venv (the ``mcp`` SDK and uvicorn).

    .venv/bin/python bench/mcp_modern.py [--calls 300] [--connects 50]
"""

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gateway import GatewayProcess, close_all, interleaved, stop_group  # noqa: E402  (bench/gateway.py)
from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

from mcp_servers import launch  # noqa: E402  (tests/mcp_servers/launch.py: the stdlib fixture)
from toolscript.config.load import ServerConfig  # noqa: E402
from toolscript.mcp.client.connect import open_session  # noqa: E402
from toolscript.mcp.client.session import ClientSession  # noqa: E402
from toolscript.mcp.client.streamable_http import StreamableHttpTransport  # noqa: E402

START_TIMEOUT = 30.0  # seconds for the SDK's HTTP server to listen
TIMEOUT = 30.0  # seconds per request

# The SDK's modern server with the same ``add`` the fixture has; stdio or HTTP on a port.
SDK_SERVER = r'''
import sys
from mcp.server import MCPServer

mcp = MCPServer("sdk-modern")

@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

if sys.argv[1] == "stdio":
    mcp.run()
else:
    import uvicorn
    uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
'''


def progress(message):
    print(f"[bench/mcp_modern] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_sdk_http(script):
    """The SDK's modern Streamable HTTP server; returns (process, MCP URL)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, script, "http", str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the SDK's HTTP server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    stop_group(proc)
    raise RuntimeError(f"the SDK's HTTP server did not listen within {START_TIMEOUT:g}s")


def add_caller(session, tool):
    def call(i):
        result = session.call_tool(tool, {"a": i, "b": 1}, timeout=TIMEOUT)
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result}")

    return call


def first_call(url, tool, how, repeat):
    """Fresh session each time: connect (discover or initialize) + one tools/call; also checks the era."""
    samples = []
    for i in range(repeat):
        start = time.perf_counter()
        if how == "discover":
            session = open_session(ServerConfig(name="bench", type="http", source="bench", url=url, timeout=TIMEOUT))
        else:
            session = ClientSession(StreamableHttpTransport(url, {}, timeout=TIMEOUT))
            session.initialize(TIMEOUT)
        try:
            add_caller(session, tool)(i)
            samples.append((time.perf_counter() - start) * 1000)
            if session.modern != (how == "discover"):
                raise RuntimeError(f"{url}: a {how} session came out {'modern' if session.modern else 'handshake-era'}")
        finally:
            session.close()
    return summary(samples)


def run(calls, connects, tmp):
    script = os.path.join(tmp, "sdk_modern_server.py")
    with open(script, "w") as f:
        f.write(SDK_SERVER)
    fixture = launch.stdio_command()
    results = {}
    gateway = GatewayProcess(
        {
            "modern": {"command": sys.executable, "args": [script, "stdio"]},
            "legacy": {"command": fixture[0], "args": fixture[1:]},
        }
    )
    sdk_http, closers = None, []
    try:
        progress("gateway with a modern and a handshake-era upstream")
        _, started = gateway.start()
        gateway.wait_ready(["modern", "legacy"], started)
        via_mcp = ClientSession(StreamableHttpTransport(gateway.url + "/mcp", {}, timeout=TIMEOUT))
        closers.append(via_mcp.close)
        via_mcp.initialize(TIMEOUT)
        paths = {"modern_upstream": add_caller(via_mcp, "modern__add"), "handshake_upstream": add_caller(via_mcp, "legacy__add")}
        progress(f"calls: {calls} per upstream, interleaved")
        results["call_through_gateway"] = interleaved(paths, calls)

        progress("first call: the SDK's modern HTTP server")
        sdk_http, sdk_url = start_sdk_http(script)
        first_call(sdk_url, "add", "discover", 3)  # warm-up (imports, first connections)
        results["first_call_sdk_http_server"] = {
            "discover": first_call(sdk_url, "add", "discover", connects),
            "initialize": first_call(sdk_url, "add", "initialize", connects),
        }
        progress("first call: the gateway's MCP endpoint")
        gw_url = gateway.url + "/mcp"
        first_call(gw_url, "legacy__add", "discover", 3)
        results["first_call_gateway_endpoint"] = {
            "discover": first_call(gw_url, "legacy__add", "discover", connects),
            "initialize": first_call(gw_url, "legacy__add", "initialize", connects),
        }
    finally:
        close_all(closers)
        gateway.stop()
        if sdk_http is not None:
            stop_group(sdk_http)
    return results


def main(argv=None):
    exit_on_sigterm()  # the finally blocks stop every process we started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="measured calls per upstream (default 300)")
    parser.add_argument("--connects", type=int, default=50, help="fresh sessions per first-call figure (default 50)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolscript-bench-modern-") as tmp:
        results = run(args.calls, args.connects, tmp)
    report = {"python": platform.python_version(), "calls": args.calls, "connects": args.connects, "results": results}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
