#!/usr/bin/env python3
"""Benchmark the toolscript gateway: start-up, call round trip, memory.

Everything runs on 127.0.0.1 in one run, and the gateway always runs as its own
process (``python -m toolscript gateway start --json``, as a user starts it):

- start: time from launching the gateway until its URL is printed (the port is
  open) and until ``GET /servers`` reports every server ``ready``, with 1 and
  with 5 stdio fixture servers (tests/mcp_servers/fixture_server.py);
- call: round trip of tools/call ``echo`` on @modelcontextprotocol/server-everything
  (stdio, from tests/peers), all from this one client process:
  direct (our ClientSession on stdio), through the gateway's JSON API
  (``POST /call`` on one keep-alive connection), through the gateway's MCP
  endpoint (our ClientSession over Streamable HTTP), and through mcp-proxy 0.13.0
  (a peer proxy a user might pick instead) fronting the same stdio command.
  The four are measured in interleaved blocks so machine noise hits all alike,
  with ``GET /healthz`` on the JSON API's connection as the gateway's HTTP floor;
- rss: VmRSS (KiB) of the gateway process after start and after the calls, and
  of the mcp-proxy process after the calls (the upstream node process excluded).

Prints one JSON document (median, p95 and n per figure; progress on stderr).
Run it with ``make bench``: that also installs mcp-proxy into its own venv,
``.venv/peers/mcp-proxy`` (it needs ``mcp`` 1.x; the test venv has 2.x).

    .venv/bin/python bench/gateway.py [--calls 300] [--repeats 5]
"""

import argparse
import http.client
import json
import os
import platform
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import peers  # noqa: E402  (tests/peers.py: finds and starts the npm servers)
from stats import exit_on_sigterm, summary  # noqa: E402  (bench/stats.py)
from mcp_servers import launch  # noqa: E402  (tests/mcp_servers/launch.py: the stdlib fixture)

from toolscript.config.load import ServerConfig  # noqa: E402
from toolscript.gateway.client import GatewayClient  # noqa: E402
from toolscript.mcp.client.connect import open_session  # noqa: E402
from toolscript.mcp.client.session import ClientSession  # noqa: E402
from toolscript.mcp.client.streamable_http import StreamableHttpTransport  # noqa: E402

MCP_PROXY = os.path.join(ROOT, ".venv", "peers", "mcp-proxy", "bin", "mcp-proxy")
START_TIMEOUT = 30.0  # seconds for a gateway or mcp-proxy to come up
STOP_TIMEOUT = 10.0  # seconds between SIGTERM and SIGKILL
WARMUP = 20  # calls per path before measuring
BLOCK = 25  # calls per path per interleaved block




def progress(message):
    print(f"[bench/gateway] {message}", file=sys.stderr, flush=True)


def rss_kib(pid):
    """VmRSS of one process in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def median_int(values):
    values = [v for v in values if v is not None]
    return int(statistics.median(values)) if values else None


def stop_group(proc, timeout=STOP_TIMEOUT):
    """SIGTERM the process and wait; then make sure its whole process group is gone."""
    if proc.returncode is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    # start_new_session=True made pid the group id; reap stragglers (its servers) too.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.2)
    if proc.returncode is None:
        proc.kill()
        proc.wait()


# -- the gateway as a subprocess -------------------------------------------------


class GatewayProcess:
    """``toolscript gateway start --json`` in a private temp HOME/state dir/cwd."""

    def __init__(self, servers):
        self.tmp = tempfile.mkdtemp(prefix="toolscript-bench-gw-")
        self.proc = None
        self.url = None
        self.log_path = os.path.join(self.tmp, "gateway.log")
        home, state, work = (os.path.join(self.tmp, d) for d in ("home", "state", "work"))
        for d in (home, state, work):
            os.makedirs(d)
        self.work = work
        # The user's own config: a project's .toolscript.json counts only once `toolscript trust` approves it.
        with open(os.path.join(home, ".toolscript.json"), "w") as f:
            json.dump({"mcpServers": servers}, f)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCRIPT_") and k != "CLAUDE_CODE_SESSION_ID"}
        env.update(PYTHONPATH=ROOT, HOME=home, TOOLSCRIPT_STATE_DIR=state)
        self.env = env

    def start(self):
        """Launch; returns (ms until the URL was printed)."""
        with open(self.log_path, "wb") as log:
            started = time.perf_counter()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "toolscript", "gateway", "start", "--json"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.work,
                env=self.env,
                start_new_session=True,
            )
        text = ""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.05)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            text += chunk.decode("utf-8", "replace")
            try:
                self.url = json.loads(text)["url"]
            except ValueError:
                continue
            return (time.perf_counter() - started) * 1000, started
        raise RuntimeError(f"the gateway printed no URL: {text!r}; log: {self.log_tail()}")

    def wait_ready(self, names, started):
        """Poll GET /servers until every server is ready; ms since launch."""
        client = GatewayClient(self.url, timeout=START_TIMEOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            states = {s["name"]: s["state"] for s in client.get("/servers")["servers"]}
            if all(states.get(n) == "ready" for n in names):
                return (time.perf_counter() - started) * 1000
            failed = [n for n in names if states.get(n) == "failed"]
            if failed:
                raise RuntimeError(f"server {failed[0]} failed in the gateway: {states}; log: {self.log_tail()}")
            time.sleep(0.005)
        raise RuntimeError(f"servers not ready within {START_TIMEOUT:g}s; log: {self.log_tail()}")

    def log_tail(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            stop_group(self.proc)
            self.proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def fixture_servers(count):
    command = launch.stdio_command()
    return {f"fixture{i}": {"command": command[0], "args": command[1:]} for i in range(1, count + 1)}


def gateway_start(count, repeats):
    servers = fixture_servers(count)
    to_url, to_ready, rss = [], [], []
    for _ in range(repeats):
        gateway = GatewayProcess(servers)
        try:
            url_ms, started = gateway.start()
            ready_ms = gateway.wait_ready(list(servers), started)
            to_url.append(url_ms)
            to_ready.append(ready_ms)
            rss.append(rss_kib(gateway.proc.pid))
        finally:
            gateway.stop()
    return {"to_url": summary(to_url), "to_all_ready": summary(to_ready)}, median_int(rss)


# -- the call round trip ---------------------------------------------------------------


def everything_stdio():
    cmd = peers.everything_stdio_command()
    return ServerConfig(name="everything", type="stdio", source="bench", command=cmd[0], args=cmd[1:])


def session_caller(session, tool):
    def call(i):
        result = session.call_tool(tool, {"message": f"m{i}"})
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result}")

    return call


class JsonApi:
    """POST /call on one reused keep-alive connection with TCP_NODELAY."""

    def __init__(self, url):
        rest = url.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.rpartition(":")
        self.target = "/" + path + "/call"
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, i):
        body = json.dumps({"tool": "everything__echo", "arguments": {"message": f"m{i}"}}).encode()
        self.conn.request("POST", self.target, body=body, headers={"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200 or not json.loads(data).get("ok"):
            raise RuntimeError(f"POST /call: {resp.status} {data[:300]!r}")

    def healthz(self, i):
        """GET /healthz on the same connection: the HTTP floor, no upstream, no JSON work."""
        self.conn.request("GET", "/healthz")
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET /healthz: {resp.status} {data[:300]!r}")

    def close(self):
        self.conn.close()


def start_mcp_proxy(log_path):
    """mcp-proxy fronting server-everything stdio; returns (process, MCP URL)."""
    port = peers.free_port()
    argv = [MCP_PROXY, "--port", str(port), "--host", "127.0.0.1", "--", *peers.everything_stdio_command()]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/status")
            if conn.getresponse().status == 200:
                conn.close()
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    stop_group(proc)
    with open(log_path, errors="replace") as f:
        raise RuntimeError(f"mcp-proxy did not start: {f.read()[-2000:]}")


def interleaved(paths, calls):
    """Warm up every path, then measure them in rotating blocks of BLOCK calls."""
    for call in paths.values():
        for i in range(WARMUP):
            call(i)
    samples = {name: [] for name in paths}
    done = 0
    while done < calls:
        block = min(BLOCK, calls - done)
        for name, call in paths.items():
            for i in range(done, done + block):
                start = time.perf_counter()
                call(i)
                samples[name].append((time.perf_counter() - start) * 1000)
        done += block
    return {name: summary(values) for name, values in samples.items()}


def close_all(closers):
    """Call each close function, the last opened first; a failure to close is no figure and must not hide one."""
    for close in reversed(closers):
        try:
            close()
        except Exception:
            pass


def call_benchmark(calls, tmp):
    """Round-trip figures per path, plus the RSS of the gateway and mcp-proxy afterwards."""
    results, rss, closers = {}, {}, []
    paths = {}
    everything = everything_stdio()
    gateway = GatewayProcess({"everything": {"command": everything.command, "args": everything.args}})
    proxy = None
    try:
        progress("calls: direct stdio session")
        direct = open_session(everything)
        closers.append(direct.close)
        paths["direct_stdio"] = session_caller(direct, "echo")

        progress("calls: gateway subprocess")
        _, started = gateway.start()
        gateway.wait_ready(["everything"], started)
        api = JsonApi(gateway.url)
        closers.append(api.close)
        paths["gateway_json_api"] = api.call
        paths["gateway_http_floor_healthz"] = api.healthz
        via_mcp = ClientSession(StreamableHttpTransport(gateway.url + "/mcp"))
        closers.append(via_mcp.close)
        via_mcp.initialize(30)
        paths["gateway_mcp_endpoint"] = session_caller(via_mcp, "everything__echo")

        if not os.path.exists(MCP_PROXY):
            results["mcp_proxy_0.13.0"] = {"error": "mcp-proxy not installed (make bench installs it)"}
        else:
            progress("calls: mcp-proxy")
            try:
                proxy, proxy_url = start_mcp_proxy(os.path.join(tmp, "mcp-proxy.log"))
                via_proxy = ClientSession(StreamableHttpTransport(proxy_url))
                closers.append(via_proxy.close)
                via_proxy.initialize(30)
                paths["mcp_proxy_0.13.0"] = session_caller(via_proxy, "echo")
            except Exception as exc:  # the peer's failure is a figure too
                results["mcp_proxy_0.13.0"] = {"error": f"{type(exc).__name__}: {exc}"}

        progress(f"calls: {calls} per path, interleaved in blocks of {BLOCK}")
        results.update(interleaved(paths, calls))
        rss["gateway_after_calls"] = rss_kib(gateway.proc.pid)
        if proxy is not None:
            rss["mcp_proxy_after_calls"] = rss_kib(proxy.pid)
    finally:
        close_all(closers)
        gateway.stop()
        if proxy is not None:
            stop_group(proxy)
    return results, rss


def main(argv=None):
    exit_on_sigterm()  # the finally blocks stop every process we started
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="measured echo calls per path")
    parser.add_argument("--repeats", type=int, default=5, help="gateway starts per server count")
    args = parser.parse_args(argv)
    results = {
        "benchmark": "gateway",
        "upstream_for_calls": "@modelcontextprotocol/server-everything stdio (tests/peers)",
        "upstream_for_start": "tests/mcp_servers/fixture_server.py stdio",
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "start": {},
        "call_round_trip": {},
        "rss_kib": {},
    }
    tmp = tempfile.mkdtemp(prefix="toolscript-bench-")
    try:
        for count in (1, 5):
            progress(f"start: {args.repeats} gateways with {count} fixture server(s)")
            results["start"][f"{count}_servers"], rss = gateway_start(count, args.repeats)
            results["rss_kib"][f"gateway_after_start_{count}_servers"] = rss
        results["call_round_trip"], rss = call_benchmark(args.calls, tmp)
        results["rss_kib"].update(rss)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
