"""``toolscript mcp``: code mode on stdio for any MCP client, as a client's config starts it.

Each test runs ``python -m toolscript mcp`` as a subprocess with its own HOME
and state directory and a config naming the fixture MCP server, speaks MCP to
it line by line, and looks at the gateways it finds, starts and stops.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import wait_for
from gateway_processes import base_env, fixture_server
from gateway_http import served
from mcp_servers.launch import FIXTURE
from toolscript.gateway import state
from toolscript.gateway.client import GatewayClient

READ_TIMEOUT = 60.0
ADD = "from toolscript import tools\nprint(tools.fixture.add(a=2, b=3)['sum'])"


class McpProcess:
    """``toolscript mcp ARGS`` with pipes; ``request`` sends one message and reads its answer."""

    def __init__(self, *args, env, cwd):
        self.proc = subprocess.Popen([sys.executable, "-m", "toolscript", "mcp", *args], env=env, cwd=str(cwd),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []  # every line it wrote to stdout
        self._buffer = b""
        self._ids = 0

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self):
        deadline = time.monotonic() + READ_TIMEOUT
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self.proc.stdout.fileno(), 65536) if ready else b""
            assert chunk, f"no answer from toolscript mcp; stderr: {self.proc.stderr.read1(10000) if self.proc.poll() is not None else ''}"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.lines.append(line)
        return json.loads(line)

    def request(self, method, params=None):
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            answer = self.read()
            if answer.get("id") == self._ids:
                return answer

    def initialize(self):
        answer = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})["result"]

    def close(self, timeout=30):
        """Close stdin as a client does; the exit status, what is left on stdout, and stderr."""
        out, err = self.proc.communicate(timeout=timeout)  # closes stdin first
        return self.proc.returncode, self._buffer + out, err.decode("utf-8", "replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)


@pytest.fixture
def world(tmp_path):
    """(env, cwd, config path) for a toolscript whose only server is the fixture."""
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"fixture": {"command": sys.executable, "args": [FIXTURE, "stdio"]}}}))
    work = tmp_path / "work"
    work.mkdir()
    env = base_env(tmp_path)
    for name in ("TOOLSCRIPT_BWRAP", "TOOLSCRIPT_EXEC_LAYER"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env, work, str(config)


@pytest.fixture
def spawn(world):
    started = []

    def _spawn(*args, **env):
        base, cwd, config = world
        process = McpProcess("--config", config, *args, env=dict(base, **env), cwd=cwd)
        started.append(process)
        return process

    yield _spawn
    for process in started:
        process.kill()


def gateway_states(env):
    """{session file name: state} of every gateway state file in the test's state dir."""
    directory = os.path.join(env["TOOLSCRIPT_STATE_DIR"], "gateways")
    found = {}
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                found[name] = json.load(f)
    return found


def state_dir_files(env):
    directory = os.path.join(env["TOOLSCRIPT_STATE_DIR"], "gateways")
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


@pytest.mark.timeout(120)
def test_code_mode_over_stdio_with_a_gateway_of_its_own_stopped_when_the_client_leaves(spawn, world):
    env = world[0]
    mcp = spawn()
    info = mcp.initialize()
    assert info["serverInfo"]["name"] == "toolscript" and "search_tools" in info["instructions"]
    assert info["capabilities"]["tools"] == {"listChanged": False}
    listed = mcp.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in listed] == ["search_tools", "get_types", "run_script"]
    assert all(t["_meta"] == {"anthropic/alwaysLoad": True} for t in listed)

    found = mcp.call("search_tools", {"query": "add two integers"})
    assert found["content"][0]["text"].startswith("fixture__add (")
    assert "def add(*, a: int, b: int)" in mcp.call("get_types", {"tools": ["fixture__add"]})["content"][0]["text"]
    assert mcp.call("run_script", {"code": ADD}) == {"content": [{"type": "text", "text": "5\n"}]}

    (name, gateway), = gateway_states(env).items()  # one gateway, of a session made up for this process
    assert name.startswith(f"mcp-{mcp.proc.pid}-") and state.pid_alive(gateway["pid"])
    status, rest, stderr = mcp.close()
    assert status == 0 and rest == b"", stderr
    assert all(json.loads(line) for line in mcp.lines)  # nothing but protocol messages on stdout
    assert wait_for(lambda: not state.pid_alive(gateway["pid"]), 15), "the gateway it started outlived the client"
    assert wait_for(lambda: state_dir_files(env) == [], 15), state_dir_files(env)  # no state, lock or log file left


@pytest.mark.timeout(120)
def test_a_running_sessions_gateway_is_used_and_left_running(spawn, world):
    env, cwd, config = world
    start = subprocess.run([sys.executable, "-m", "toolscript", "--config", config, "gateway", "start", "--detach", "--session", "s1", "--json"],
                           env=env, cwd=str(cwd), capture_output=True, text=True, timeout=60)
    assert start.returncode == 0, start.stderr
    running = json.loads(start.stdout)
    try:
        mcp = spawn(CLAUDE_CODE_SESSION_ID="s1")
        mcp.initialize()
        assert mcp.call("run_script", {"code": ADD})["content"][0]["text"] == "5\n"
        assert mcp.close()[0] == 0
        assert list(gateway_states(env)) == ["s1.json"] and state.pid_alive(running["pid"])
        assert GatewayClient(running["url"]).get("/health")["pid"] == running["pid"]
    finally:
        subprocess.run([sys.executable, "-m", "toolscript", "gateway", "stop", "--session", "s1"], env=env, cwd=str(cwd), timeout=60)


@pytest.mark.timeout(120)
def test_a_named_session_without_a_gateway_gets_one_stopped_at_the_end(spawn, world):
    env = world[0]
    mcp = spawn("--session", "named-one")
    mcp.initialize()
    assert mcp.call("search_tools", {"query": "echo"})["content"][0]["text"].startswith("fixture__echo")
    gateway = gateway_states(env)["named-one.json"]
    assert mcp.close()[0] == 0
    assert wait_for(lambda: not state.pid_alive(gateway["pid"]), 15)
    assert wait_for(lambda: gateway_states(env) == {}, 15)


@pytest.mark.timeout(120)
def test_a_gateway_named_by_url_is_used_as_it_is(spawn, world, tmp_path):
    env = world[0]
    with served(tmp_path, fixture_server("other")) as (gw, server, url):
        mcp = spawn("--gateway-url", url)
        mcp.initialize()
        assert mcp.call("search_tools", {"query": "add two integers"})["content"][0]["text"].startswith("other__add (")
        assert mcp.close()[0] == 0
        assert state_dir_files(env) == []  # nothing started, nothing stopped, no lock taken
        assert GatewayClient(url).get("/health")["status"] == "ok"


@pytest.mark.timeout(120)
def test_a_stale_gateway_url_in_the_environment_is_passed_over(spawn, world):
    env = world[0]
    mcp = spawn(TOOLSCRIPT_GATEWAY_URL="http://127.0.0.1:9/t/gone")
    mcp.initialize()
    assert mcp.call("run_script", {"code": ADD})["content"][0]["text"] == "5\n"
    assert len(gateway_states(env)) == 1
    assert mcp.close()[0] == 0


@pytest.mark.timeout(120)
def test_a_signal_stops_it_and_the_gateway_it_started(spawn, world):
    env = world[0]
    mcp = spawn()
    mcp.initialize()
    mcp.call("search_tools", {"query": "add"})
    (gateway,) = gateway_states(env).values()
    mcp.proc.send_signal(signal.SIGINT)  # what Claude Code sends a stdio server it closes
    assert mcp.proc.wait(30) == 0
    assert wait_for(lambda: not state.pid_alive(gateway["pid"]), 15)
    assert wait_for(lambda: gateway_states(env) == {}, 15)


@pytest.mark.timeout(120)
def test_a_gateway_that_cannot_start_is_a_tool_error_and_listing_still_works(tmp_path, world):
    env, cwd, _ = world
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    mcp = McpProcess("--config", str(broken), env=env, cwd=cwd)
    try:
        mcp.initialize()
        assert len(mcp.request("tools/list")["result"]["tools"]) == 3
        result = mcp.call("search_tools", {"query": "add"})
        assert result["isError"] is True
        (line,) = result["content"][0]["text"].splitlines()
        assert line.startswith("no gateway: the gateway exited with status") and "broken.json" in line
        assert mcp.close()[0] == 0
    finally:
        mcp.kill()


@pytest.mark.timeout(120)
def test_started_in_the_root_directory_its_gateway_shares_no_files(world):
    env, _, config = world
    mcp = McpProcess("--config", config, env=env, cwd="/")
    try:
        mcp.initialize()
        listed = mcp.call("run_script", {"code": "from toolscript import tools\nprint(tools.builtin.fs_list_dir(path='.')['entries'])"})
        assert listed == {"content": [{"type": "text", "text": "[]\n"}]}
        (gateway,) = gateway_states(env).values()
        assert gateway["workspace"] == os.path.join(env["TOOLSCRIPT_STATE_DIR"], "empty-workspace")
        status, _, stderr = mcp.close()
        assert status == 0 and "pass --workspace DIR to share one" in stderr
    finally:
        mcp.kill()


def test_help_gives_the_config_line(run_cli, clean_env):
    proc = run_cli("mcp", "--help", env=clean_env)
    assert proc.returncode == 0
    assert '{"mcpServers": {"toolscript": {"command": "toolscript", "args": ["mcp"]}}}' in proc.stdout
    listed = run_cli("--help", env=clean_env)
    assert "serve code mode to any MCP client (stdio)" in listed.stdout
