#!/usr/bin/env python3
"""Benchmark live configuration: how long a gateway with 50 servers takes to follow an edit.

The gateway runs as its own process (``toolscript gateway start --detach``, as a
user starts it) with 50 stdio fixture servers (tests/mcp_servers/fixture_server.py)
in ``~/.toolscript.json``.  Each edit changes one server's entry (its ``--tools``
count, so its tool list changes too), written atomically, and measures from the
write until:

- ``detected``: the gateway has applied the new configuration (``configReloads`` in
  ``/health`` went up): the poll interval (1 s) and the quiet time (0.3 s) dominate;
- ``ready``: the changed server is ``ready`` again and ``/tools`` lists its new tools;
- ``searchable``: ``/search`` finds them;
- ``applied_to_ready``: from ``detected`` to ``ready``: the gateway's own work (stop
  the old copy, start the new one, rebuild the catalog).

It also checks that the 49 other servers kept their processes through every edit,
and measures in this process what the watcher costs when nothing changed: one poll
(``stat`` of every watched file) and a reload that finds nothing to do (reading
the configuration of 50 servers again and comparing it).

Prints one JSON document (median, p95 and n per figure; progress on stderr).

    .venv/bin/python bench/reload.py [--servers 50] [--edits 20]
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)
from mcp_servers.launch import FIXTURE  # noqa: E402  (tests/mcp_servers/launch.py: the stdlib fixture)

from toolscript.config.load import load_config  # noqa: E402
from toolscript.gateway.client import GatewayClient  # noqa: E402
from toolscript.gateway.reload import diff_servers, snapshot, watched_files  # noqa: E402

TIMEOUT = 60.0  # seconds for any one wait
POLL = 0.005  # seconds between two looks at the gateway
FILLERS = 4  # tools a changed server gains (or loses)


def progress(message):
    print(f"[bench/reload] {message}", file=sys.stderr, flush=True)


def server_entries(count, marker, fillers):
    """``{name: entry}``: fixture servers named ``s00``.., their marker in the arguments; ``fillers`` {name: --tools}."""
    entries = {}
    for i in range(count):
        name = f"s{i:02d}"
        args = [FIXTURE, "stdio", "--name", f"{marker}-{name}"]
        if fillers.get(name):
            args += ["--tools", str(fillers[name])]
        entries[name] = {"command": sys.executable, "args": args}
    return entries


def write_config(path, entries):
    temporary = path + ".writing"
    with open(temporary, "w") as f:
        json.dump({"mcpServers": entries}, f)
    os.replace(temporary, path)


def server_pids(marker):
    """{server name: pid} of the fixture processes carrying ``marker`` (Linux /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        for arg in argv:
            if arg.startswith(marker + "-") and FIXTURE in argv:
                found[arg[len(marker) + 1:]] = int(entry)
    return found


def wait(predicate, what):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL)
    raise RuntimeError(f"timed out waiting for {what}")


def one_edit(client, config_path, entries, name, tools_after):
    """Change ``name``'s entry; return the four timings in ms."""
    before = client.get("/health")["configReloads"]
    args = entries[name]["args"]
    entries[name]["args"] = args[:4] + (["--tools", str(tools_after)] if tools_after else [])
    started = time.perf_counter()
    write_config(config_path, entries)
    wait(lambda: client.get("/health")["configReloads"] > before, "the reload")
    detected = time.perf_counter()

    def listed():
        if client.get("/health")["servers"].get(name) != "ready":
            return False
        ids = [t["id"] for t in client.get("/tools", server=name)["tools"]]
        return sum(1 for i in ids if "filler_" in i) == tools_after

    wait(listed, f"{name} ready with its new tools")
    ready = time.perf_counter()

    def found():
        results = client.get("/search", q="filler tool number", server=name, limit="10")["results"]
        return (sum(1 for r in results if "filler_" in r["id"]) > 0) == (tools_after > 0)

    wait(found, f"search to reflect {name}")
    searchable = time.perf_counter()
    return {
        "detected": (detected - started) * 1000,
        "ready": (ready - started) * 1000,
        "searchable": (searchable - started) * 1000,
        "applied_to_ready": (ready - detected) * 1000,
    }


def idle_costs(home, work, env, servers, repeats=20):
    """One poll of the watched files, and a reload of unchanged files, in this process (ms)."""
    files = watched_files(None, work, env)
    polls, reloads = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        snapshot(files)
        polls.append((time.perf_counter() - started) * 1000)
    first = load_config(cwd=work, environ=env)
    for _ in range(repeats):
        started = time.perf_counter()
        again = load_config(cwd=work, environ=env)
        changes = diff_servers(first.servers, again.servers)
        reloads.append((time.perf_counter() - started) * 1000)
        assert not changes, changes
    assert len(first.servers) == servers
    return {"files_watched": len(files), "poll": summary(polls, 4), "noop_reload": summary(reloads)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args(argv)
    exit_on_sigterm()
    tmp = tempfile.mkdtemp(prefix="toolscript-bench-reload-")
    home, state, work = (os.path.join(tmp, d) for d in ("home", "state", "work"))
    for d in (home, state, work):
        os.makedirs(d)
    marker = f"bench-reload-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCRIPT_") and k != "CLAUDE_CODE_SESSION_ID"}
    env.update(PYTHONPATH=ROOT, HOME=home, TOOLSCRIPT_STATE_DIR=state)
    config_path = os.path.join(home, ".toolscript.json")
    entries = server_entries(args.servers, marker, {})
    write_config(config_path, entries)
    session = f"bench-reload-{os.getpid()}"

    def toolscript(*argv):
        return subprocess.run([sys.executable, "-m", "toolscript", *argv, "--session", session], cwd=work, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)

    try:
        started = toolscript("gateway", "start", "--detach", "--json")
        if started.returncode != 0:
            raise RuntimeError(f"the gateway did not start: {started.stderr}")
        client = GatewayClient(json.loads(started.stdout)["url"], timeout=TIMEOUT)
        wait(lambda: all(state == "ready" for state in client.get("/health")["servers"].values())
             and len(client.get("/health")["servers"]) == args.servers, f"{args.servers} servers ready")
        progress(f"{args.servers} servers ready")
        first_pids = server_pids(marker)
        edits = []
        changed = set()
        for i in range(args.edits):
            name = f"s{(i * 7) % args.servers:02d}"
            fillers = 0 if "--tools" in entries[name]["args"] else FILLERS
            edits.append(one_edit(client, config_path, entries, name, fillers))
            changed.add(name)
            progress(f"edit {i + 1}/{args.edits}: {name} ready after {edits[-1]['ready']:.0f} ms")
        now = server_pids(marker)
        untouched = [name for name in first_pids if name not in changed]
        kept = all(now.get(name) == first_pids[name] for name in untouched)
        report = {
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
            "servers": args.servers,
            "reload": {key: summary([r[key] for r in edits]) for key in ("detected", "applied_to_ready", "ready", "searchable")},
            "untouched_servers": len(untouched),
            "untouched_servers_kept_their_process": kept,
            "idle": idle_costs(home, work, env, args.servers),
        }
        print(json.dumps(report, indent=2))
        return 0 if kept else 1
    finally:
        toolscript("gateway", "stop")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
