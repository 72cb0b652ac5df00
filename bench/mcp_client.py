#!/usr/bin/env python3
"""Benchmark toolscript's MCP client against the official MCP Python SDK client.

Both clients talk to the same reference server (@modelcontextprotocol/server-everything
from tests/peers) in the same run:

- connect: start/connect + initialize + tools/list, repeated, per transport
  (stdio, Streamable HTTP, legacy SSE);
- call: round-trip latency of tools/call ``echo`` on one open session, per transport.

Prints one JSON document: median and p95 in milliseconds for each figure.  Run it
with ``make bench`` (needs the venv and npm peers that ``make test`` installs).

    .venv/bin/python bench/mcp_client.py [--connects 10] [--calls 200]
"""

import argparse
import asyncio
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import peers  # noqa: E402  (tests/peers.py: finds and starts the npm servers)
from stats import summary  # noqa: E402  (bench/stats.py)

from toolscript.config.load import ServerConfig  # noqa: E402
from toolscript.mcp.client.connect import open_session  # noqa: E402




def server_config(transport, url=None):
    if transport == "stdio":
        cmd = peers.everything_stdio_command()
        return ServerConfig(name="everything", type="stdio", source="bench", command=cmd[0], args=cmd[1:])
    return ServerConfig(name="everything", type=transport, source="bench", url=url)


# -- toolscript ---------------------------------------------------------------------


def ours_connect(server, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        session = open_session(server)
        session.list_tools()
        samples.append((time.perf_counter() - start) * 1000)
        session.close()
    return summary(samples)


def ours_calls(server, calls):
    session = open_session(server)
    try:
        for _ in range(10):  # warm-up
            session.call_tool("echo", {"message": "warm"})
        samples = []
        for i in range(calls):
            start = time.perf_counter()
            session.call_tool("echo", {"message": f"m{i}"})
            samples.append((time.perf_counter() - start) * 1000)
        return summary(samples)
    finally:
        session.close()


# -- the official SDK ---------------------------------------------------------------


def sdk_target(server):
    from mcp import StdioServerParameters

    if server.type == "stdio":
        return StdioServerParameters(command=server.command, args=server.args)
    if server.type == "http":
        return server.url
    from mcp.client.sse import sse_client  # the SDK reaches legacy SSE through a transport

    return sse_client(server.url)


async def _sdk_connect(server, repeat):
    from mcp import Client

    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        async with Client(sdk_target(server), mode="legacy") as client:
            await client.list_tools()
            samples.append((time.perf_counter() - start) * 1000)
    return summary(samples)


async def _sdk_calls(server, calls):
    from mcp import Client

    async with Client(sdk_target(server), mode="legacy") as client:
        for _ in range(10):
            await client.call_tool("echo", {"message": "warm"})
        samples = []
        for i in range(calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"message": f"m{i}"})
            samples.append((time.perf_counter() - start) * 1000)
    return summary(samples)


def sdk(fn, *args):
    try:
        import mcp  # noqa: F401
    except ImportError:
        return {"error": "the MCP Python SDK is not installed (make venv)"}
    try:
        return asyncio.run(fn(*args))
    except Exception as exc:  # report, don't hide: the peer's failure is a figure too
        return {"error": f"{type(exc).__name__}: {exc}"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connects", type=int, default=10, help="connect+list repetitions per transport")
    parser.add_argument("--calls", type=int, default=200, help="echo calls per transport")
    args = parser.parse_args(argv)
    results = {
        "benchmark": "mcp_client",
        "server": "@modelcontextprotocol/server-everything (tests/peers)",
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "transports": {},
    }
    http_peer = peers.start_everything("streamableHttp")
    sse_peer = peers.start_everything("sse")
    try:
        for transport, url in (("stdio", None), ("http", http_peer.url), ("sse", sse_peer.url)):
            server = server_config(transport, url)
            results["transports"][transport] = {
                "connect_and_list": {
                    "toolscript": ours_connect(server, args.connects),
                    "mcp_python_sdk": sdk(_sdk_connect, server, args.connects),
                },
                "call_round_trip": {
                    "toolscript": ours_calls(server, args.calls),
                    "mcp_python_sdk": sdk(_sdk_calls, server, args.calls),
                },
            }
    finally:
        http_peer.stop()
        sse_peer.stop()
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
