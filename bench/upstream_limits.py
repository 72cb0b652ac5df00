#!/usr/bin/env python3
"""Hostile-upstream figures for the MCP client's message cap (maxMessageBytes, default 8 MiB).

Each scenario runs in a fresh child process, so its peak RSS (``ru_maxrss``) is
its own, against tests/mcp_servers/spew_server.py over stdio:

- ``endless_line``: the server writes 200 MB of "x" with no newline during a call;
- ``huge_result_head``: a 100 MB tools/call result, id first (Python SDK order);
- ``huge_result_tail``: a 100 MB tools/call result, id last (TypeScript SDK order);
- ``baseline``: one small call, for the RSS the client needs anyway.

For each: the error the call got, seconds until it failed (median and p95 over
``--repeat`` runs), peak RSS in MiB, and whether the next call on the same
session worked (for the endless line the server is stopped, so a new session
is opened, as the gateway's backoff would).  Prints one JSON document.

    .venv/bin/python bench/upstream_limits.py [--repeat 3]
"""

import argparse
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from stats import summary  # noqa: E402  (bench/stats.py)

SPEW = os.path.join(ROOT, "tests", "mcp_servers", "spew_server.py")

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, ROOT)
from toolscript.config.load import ServerConfig
from toolscript.mcp.client.connect import open_session
from toolscript.mcp.errors import McpError

server = ServerConfig(name="big", type="stdio", source="bench", command=sys.executable, args=[SPEW], timeout=30)
session = open_session(server)
tool, args = SCENARIO
error = None
started = time.perf_counter()
try:
    session.call_tool(tool, args, timeout=120)
except McpError as exc:
    error = str(exc)
seconds = time.perf_counter() - started
if session.closed:
    session.close()
    session = open_session(server)  # what the gateway's backoff does after an unattributable message
next_ok = session.call_tool("echo", {"message": "next"})["content"][0]["text"] == "Echo: next"
session.close()
print(json.dumps({"error": error, "seconds": seconds, "next_call_ok": next_ok,
                  "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
"""

SCENARIOS = {
    "baseline": ("echo", {"message": "small"}),
    "endless_line": ("spew", {"bytes": 200 * 1024 * 1024}),
    "huge_result_head": ("big", {"size": 100 * 1024 * 1024, "order": "head"}),
    "huge_result_tail": ("big", {"size": 100 * 1024 * 1024, "order": "tail"}),
}


def run(scenario):
    code = CHILD.replace("ROOT", repr(ROOT), 1).replace("SPEW]", repr(SPEW) + "]", 1).replace("SCENARIO", repr(SCENARIOS[scenario]), 1)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"{scenario} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    results = {}
    for scenario in SCENARIOS:
        runs = [run(scenario) for _ in range(opts.repeat)]
        results[scenario] = {
            "error": runs[0]["error"],
            "time_to_fail": summary([r["seconds"] * 1000 for r in runs]),
            "peak_rss_mib_max": round(max(r["maxrss_mib"] for r in runs), 1),
            "next_call_ok": all(r["next_call_ok"] for r in runs),
        }
    print(json.dumps({"python": platform.python_version(), "max_message_bytes": 8 * 1024 * 1024, "scenarios": results}, indent=2))


if __name__ == "__main__":
    main()
