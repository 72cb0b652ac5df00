#!/usr/bin/env python3
"""Benchmark the code-mode MCP server's first call: how long an MCP client waits on ``toolscript mcp``.

An MCP client (Claude Desktop, Cursor, Claude Code) starts ``toolscript mcp``
when its session starts, lists the tools, and the model's first call is a
search.  Builds the zipapp of this tree and, per repeat, spawns
``python3 -I -S toolscript.pyz mcp`` with the stdlib fixture MCP server
configured, and times from the spawn:

- initialize: the answer to ``initialize``;
- tools_list: the answer to ``tools/list`` (the client can start the session);
- first_search: the answer to the first ``search_tools`` call (the gateway
  started and the fixture server connected and indexed meanwhile);
- warm_search: a second search, timed on its own;
- first_run: a ``run_script`` calling the fixture through the gateway, on its own.

Two ways the gateway is found: ``own`` (a fresh session: ``toolscript mcp``
starts a gateway, and stops it when the client closes stdin) and
``running`` (``--session`` names a gateway already up, as with the plugin).
Prints one JSON document of median/p95/n per way and figure.

    .venv/bin/python bench/mcp_mode.py [--repeats 20]
"""

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from security_overhead import build_head  # noqa: E402  (bench/security_overhead.py)
from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)

FIXTURE = os.path.join(ROOT, "tests", "mcp_servers", "fixture_server.py")
FIGURES = ("initialize", "tools_list", "first_search", "warm_search", "first_run")
RUN_CODE = "from toolscript import tools\nprint(tools.fixture.add(a=2, b=3)['sum'])"
READ_TIMEOUT = 60.0


class Client:
    """One ``toolscript mcp`` process and the requests a client sends it."""

    def __init__(self, argv, env, cwd):
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buffer = b""
        self.ids = 0

    def request(self, method, params=None):
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + READ_TIMEOUT
        while True:
            while b"\n" not in self.buffer:
                ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(self.proc.stdout.fileno(), 65536) if ready else b""
                if not chunk:
                    raise RuntimeError(f"toolscript mcp gave no answer to {method}")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            answer = json.loads(line)
            if answer.get("id") == self.ids:
                if "error" in answer or answer.get("result", {}).get("isError"):
                    raise RuntimeError(f"{method} failed: {line[:300]!r}")
                return answer["result"]

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(60)


def one_session(argv, env, cwd):
    """{figure: ms} of one client session."""
    times = {}
    started = time.perf_counter()

    def mark(name, since):
        times[name] = (time.perf_counter() - since) * 1000

    client = Client(argv, env, cwd)
    try:
        client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        mark("initialize", started)
        client.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        client.request("tools/list")
        mark("tools_list", started)
        found = client.call("search_tools", {"query": "add two integers"})
        mark("first_search", started)
        if not found["content"][0]["text"].startswith("fixture__add"):
            raise RuntimeError(f"the first search did not find fixture__add: {found}")
        again = time.perf_counter()
        client.call("search_tools", {"query": "echo a message"})
        mark("warm_search", again)
        run = time.perf_counter()
        ran = client.call("run_script", {"code": RUN_CODE})
        mark("first_run", run)
        if ran["content"][0]["text"].strip() != "5":
            raise RuntimeError(f"run_script did not print 5: {ran}")
    finally:
        client.close()
    return times


def main(argv=None):
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="toolscript-bench-mcp-")
    running = None
    try:
        pyz = build_head(scratch)
        home, work = os.path.join(scratch, "home"), os.path.join(scratch, "work")
        os.makedirs(home)
        os.makedirs(work)
        with open(os.path.join(home, ".toolscript.json"), "w") as f:
            json.dump({"mcpServers": {"fixture": {"command": sys.executable, "args": [FIXTURE, "stdio"]}}}, f)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TOOLSCRIPT_STATE_DIR": os.path.join(scratch, "state")}
        for name in ("TOOLSCRIPT_BWRAP", "TOOLSCRIPT_EXEC_LAYER"):
            if name in os.environ:
                env[name] = os.environ[name]
        mcp = [sys.executable, "-I", "-S", pyz, "mcp"]
        started = subprocess.run([sys.executable, "-I", "-S", pyz, "gateway", "start", "--detach", "--session", "bench", "--json"],
                                 env=env, cwd=work, capture_output=True, text=True, timeout=60, check=True)
        running = json.loads(started.stdout)
        ways = {"own": mcp, "running": mcp + ["--session", "bench"]}
        samples = {way: {figure: [] for figure in FIGURES} for way in ways}
        for round_number in range(args.repeats + 1):
            for way, command in (list(ways.items()) if round_number % 2 else list(ways.items())[::-1]):
                times = one_session(command, env, work)
                if round_number:  # the first round warms the page cache
                    for figure, value in times.items():
                        samples[way][figure].append(value)
        report = {"repeats": args.repeats, "python": sys.version.split()[0],
                  "ways": {way: {figure: summary(values) for figure, values in figures.items()} for way, figures in samples.items()}}
        print(json.dumps(report, indent=2))
    finally:
        if running is not None:
            subprocess.run([sys.executable, "-I", "-S", pyz, "gateway", "stop", "--session", "bench"], env=env, cwd=work,
                           capture_output=True, timeout=60)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
