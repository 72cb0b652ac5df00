#!/usr/bin/env python3
"""Benchmark the plugin's hot paths: the hooks Claude Code waits for, and cold start.

- SessionStart hook wall time (the plugin's own script, event JSON on stdin)
  with 0 and with 5 configured stdio servers: the hook returns once the
  gateway's port is open, so server count should barely matter;
- SessionEnd hook wall time (Claude Code allows it ~1.5 s by default);
- ``python3 toolscript.pyz --version`` cold start next to a bare
  ``python3 -c pass`` and ``python3 -I -S -c pass`` in the same run (the floor).

Prints one JSON document (median_ms, p95_ms, n).  Run with ``make bench``
(or ``python3 bench/plugin.py --repeats 10``).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import summary  # noqa: E402  (bench/stats.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(ROOT, "plugins", "toolscript")
FIXTURE = os.path.join(ROOT, "tests", "mcp_servers", "fixture_server.py")




def timed(argv, *, stdin=None, env=None, cwd=None):
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, text=True)
    return (time.perf_counter() - started) * 1000


def hooks(servers, repeats):
    scratch = tempfile.mkdtemp(prefix="toolscript-bench-plugin-")
    try:
        project = os.path.join(scratch, "project")
        os.makedirs(project)
        config = {"mcpServers": {f"s{i}": {"command": sys.executable, "args": [FIXTURE, "stdio"]} for i in range(servers)}}
        with open(os.path.join(project, ".toolscript.json"), "w") as f:
            json.dump(config, f)
        env = {
            "PATH": "/usr/bin:/bin:" + os.path.dirname(sys.executable),
            "HOME": scratch,
            "CLAUDE_PLUGIN_ROOT": PLUGIN,
            "CLAUDE_ENV_FILE": os.path.join(scratch, "env.sh"),
            "TOOLSCRIPT_STATE_DIR": os.path.join(scratch, "state"),
        }
        # The user approves the project's file once, as they would with `toolscript trust`.
        subprocess.run([sys.executable, os.path.join(PLUGIN, "bin", "toolscript.pyz"), "trust", "--yes"], cwd=project, env=env,
                       stdout=subprocess.DEVNULL, check=True)
        start, end = [], []
        for i in range(repeats):
            event = json.dumps({"session_id": f"bench-{servers}-{i}", "cwd": project, "source": "startup"})
            start.append(timed([os.path.join(PLUGIN, "hooks", "hook.sh"), "session-start"], stdin=event, env=env))
            time.sleep(0.3)  # let the servers connect, as they would during a real session
            end.append(timed([os.path.join(PLUGIN, "hooks", "hook.sh"), "session-end"], stdin=json.dumps({"session_id": f"bench-{servers}-{i}"}), env=env))
        time.sleep(1.0)  # stopping gateways finish closing their servers
        return summary(start, digits=1), summary(end, digits=1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    pyz = os.path.join(PLUGIN, "bin", "toolscript.pyz")
    python = shutil.which("python3") or sys.executable
    results = {"benchmark": "plugin", "python": sys.version.split()[0], "repeats": args.repeats}
    start0, end0 = hooks(0, args.repeats)
    start5, end5 = hooks(5, args.repeats)
    results["session_start_hook"] = {"servers_0": start0, "servers_5": start5}
    results["session_end_hook"] = {"servers_0": end0, "servers_5": end5}
    results["cold_start"] = {
        "toolscript_pyz_version": summary([timed([python, pyz, "--version"]) for _ in range(args.repeats)], digits=1),
        "toolscript_pyz_version_isolated": summary([timed([python, "-I", "-S", pyz, "--version"]) for _ in range(args.repeats)], digits=1),
        "python_c_pass": summary([timed([python, "-c", "pass"]) for _ in range(args.repeats)], digits=1),
        "python_I_S_c_pass": summary([timed([python, "-I", "-S", "-c", "pass"]) for _ in range(args.repeats)], digits=1),
    }
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
