#!/usr/bin/env python3
"""A stdio MCP server that allows one running copy: it holds an exclusive lock on a file.

    python3 lock_server.py --lock FILE [--lock-at start|call] [--log FILE] [--name NAME]

``--lock-at start`` (the default) takes the lock (``flock``, non-blocking) as
it starts and holds it while it runs; when another copy holds it, it prints
"the lock is taken" on stderr and exits with status 3, as a server bound to a
fixed port or a database file does.  ``--lock-at call`` takes it at the first
tool call and holds it until it exits, as a browser-profile server does once
it has opened its browser; a call that finds the lock taken fails.

Tools: ``hold`` answers ``held by <pid>``; ``env`` answers a JSON object with
the server's ``env``, ``cwd`` and ``argv``.  ``--log`` appends one line per
event (``<pid> start|taken|call|exit``) so a test can tell copies apart.
Stdlib only; newline-delimited JSON-RPC on stdin/stdout.
"""

import argparse
import fcntl
import json
import os
import sys

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOLS = [
    {"name": "hold", "description": "Say which process holds the lock file.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "env", "description": "Report this server's environment, working directory and arguments.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def note(log, event):
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {event}\n")


def take(lock_path):
    """The locked descriptor, or None when another copy holds the lock."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lock", required=True)
    parser.add_argument("--lock-at", choices=("start", "call"), default="start")
    parser.add_argument("--log")
    parser.add_argument("--name", default="lock-server")
    options = parser.parse_args()
    held = None
    if options.lock_at == "start":
        held = take(options.lock)
        if held is None:
            note(options.log, "taken")
            sys.stderr.write(f"{options.name}: the lock is taken: another copy of this server is running ({options.lock})\n")
            return 3
    note(options.log, "start")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            asked = (message.get("params") or {}).get("protocolVersion")
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
                "capabilities": {"tools": {}}, "serverInfo": {"name": options.name, "version": "1.0"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = (message.get("params") or {}).get("name")
            if held is None and options.lock_at == "call":
                held = take(options.lock)
                if held is None:
                    note(options.log, "taken")
                    send({"jsonrpc": "2.0", "id": request_id, "result": {
                        "content": [{"type": "text", "text": "the lock is taken: another copy of this server holds it"}], "isError": True}})
                    continue
            note(options.log, "call")
            if name == "env":
                text = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv})
            else:
                text = f"held by {os.getpid()}"
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})
    note(options.log, "exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
