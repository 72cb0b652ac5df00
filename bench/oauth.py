#!/usr/bin/env python3
"""Benchmark OAuth for remote MCP servers: what signing in and bearer tokens cost.

Everything runs on 127.0.0.1 in one run, against tests/mcp_servers/oauth_server.py
(the stdlib fixture's MCP tools behind an authorization server it also serves):

- sign_in: the whole ``toolscript auth remote`` process (discovery, dynamic
  client registration, PKCE, the test browser following the redirect to the
  local callback, the token exchange, the 0600 store write).
- call: a tools/call round trip through an in-process gateway to the protected
  server, interleaved with the same call to the same fixture served without
  OAuth (``fixture_server.py http``): the difference is the token's cost
  (header, store check) on every call.
- call_after_expiry: the server expired the access token just before the call:
  401, refresh (rotating refresh token, store write), retry.
- recovery: a server in ``needs-auth`` (no token), then ``toolscript auth``
  exits: time from the CLI's exit until the running gateway says ``ready``.

Prints one JSON document (n, median_ms, p95_ms per figure; progress on stderr).

    python3 bench/oauth.py [--calls 200] [--sign-ins 7] [--expiries 15] [--recoveries 5]
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)

from gateway import interleaved  # noqa: E402  (bench/gateway.py)
from stats import summary  # noqa: E402  (bench/stats.py)

from mcp_servers import launch, oauth_server  # noqa: E402
from toolscript.config.load import Config, ServerConfig  # noqa: E402
from toolscript.gateway.service import Gateway  # noqa: E402

BROWSER = " ".join(shlex.quote(word) for word in oauth_server.BROWSER)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sign_in(config_path: str, env: dict) -> float:
    """Run ``toolscript auth remote``; returns its wall time in ms."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "toolscript", "--config", config_path, "auth", "remote", "--force"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"toolscript auth failed: {proc.stderr.strip()[-500:]}")
    return elapsed


def gateway_for(servers, workspace: str) -> Gateway:
    gw = Gateway(Config(servers={s.name: s for s in servers}, files=[], warnings=[]), workspace=workspace)
    gw.start()
    if gw.wait_for_servers():
        raise SystemExit(f"servers not ready: {[(n, u.state, u.error) for n, u in gw.upstreams.items()]}")
    return gw


def call(gw: Gateway, tool: str) -> None:
    result = gw.call(tool, {"message": "hi"}, source="bench")
    if not result.ok:
        raise SystemExit(f"{tool} failed: {result}")


def wait_state(gw: Gateway, name: str, state: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while gw.upstreams[name].state != state:
        if time.monotonic() > deadline:
            raise SystemExit(f"{name} never became {state}: {gw.upstreams[name].state} {gw.upstreams[name].error}")
        time.sleep(0.002)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sign-ins", type=int, default=7)
    parser.add_argument("--expiries", type=int, default=15)
    parser.add_argument("--recoveries", type=int, default=5)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="toolscript-bench-oauth-")
    os.environ["TOOLSCRIPT_STATE_DIR"] = os.path.join(work, "state")
    env = dict(os.environ, TOOLSCRIPT_AUTH_BROWSER=BROWSER, PYTHONPATH=ROOT)
    figures = {}
    with oauth_server.start() as protected:
        config_path = os.path.join(work, "config.json")
        with open(config_path, "w") as f:
            json.dump({"mcpServers": {"remote": {"url": protected.url}}}, f)

        progress(f"sign_in x{args.sign_ins}")
        figures["sign_in"] = summary([sign_in(config_path, env) for _ in range(args.sign_ins)])

        plain = launch.start_fixture("http")
        try:
            servers = [ServerConfig(name="remote", type="http", source="bench", url=protected.url, timeout=20),
                       ServerConfig(name="plain", type="http", source="bench", url=plain.url, timeout=20)]
            gw = gateway_for(servers, work)
            try:
                progress(f"call x{args.calls} (protected vs plain, interleaved)")
                calls = interleaved({"oauth": lambda i: call(gw, "remote__echo"), "no_auth": lambda i: call(gw, "plain__echo")}, args.calls)
                figures["call"] = calls
                progress(f"call_after_expiry x{args.expiries}")
                samples = []
                for _ in range(args.expiries):
                    protected.admin("expire")
                    start = time.perf_counter()
                    call(gw, "remote__echo")
                    samples.append((time.perf_counter() - start) * 1000)
                figures["call_after_expiry"] = summary(samples)

                progress(f"recovery x{args.recoveries}")
                samples = []
                for _ in range(args.recoveries):
                    subprocess.run([sys.executable, "-m", "toolscript", "--config", config_path, "auth", "--logout", "remote"],
                                   cwd=ROOT, env=env, capture_output=True, timeout=60, check=True)
                    protected.admin("revoke")
                    gw.call("remote__echo", {"message": "hi"}, source="bench")  # the 401 that finds out
                    wait_state(gw, "remote", "needs-auth")
                    sign_in(config_path, env)
                    start = time.perf_counter()
                    wait_state(gw, "remote", "ready")
                    samples.append((time.perf_counter() - start) * 1000)
                figures["recovery_after_sign_in"] = summary(samples)
            finally:
                gw.stop()
        finally:
            plain.stop()
    print(json.dumps({"bench": "oauth", "python": platform.python_version(), "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
