"""toolscript's MCP client speaking 2026-07-28 to the official Python SDK's modern server.

The upstream is the SDK's ``MCPServer`` (``SDK_SERVER`` below, written to a
temp dir and run with the test venv's python) over stdio and over its
Streamable HTTP app under uvicorn.  It records every method it is asked for
(stdio: each line read; HTTP: each request's ``Mcp-Method`` header, or
``POST -`` when a request has none, as a handshake-era ``initialize`` does),
so the tests can assert the client discovered instead of initializing.

Covered: the bare ``ClientSession`` (list, call, list_changed through
``subscriptions/listen``), the same upstream behind the gateway, a
handshake-era upstream (the fixture server) still handshaking, and the mixed
case: a modern upstream used by the SDK's handshake-era client through the
gateway.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import missing_prerequisite, wait_for
from mcp_servers.launch import ERA_SERVER, FIXTURE
from toolscript.config.load import ServerConfig
from toolscript.gateway.client import GatewayClient
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.client.connect import open_session
from toolscript.mcp.errors import McpError, RequestCancelled
from toolscript.mcp.protocol import modern_headers, param_header_annotations, param_headers


MODERN = "2026-07-28"


SDK_SERVER = r'''
import json, os, sys, threading
from typing import Annotated
from pydantic import Field
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

LOG = os.environ["SDK_SERVER_LOG"]
LOCK = threading.Lock()

def record(method):
    with LOCK, open(LOG, "a") as f:
        f.write(method + "\n")

mcp = MCPServer("sdk-modern")

@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

@mcp.tool()
def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Over HTTP the client must mirror region in an Mcp-Param-Region header."""
    return "in " + region

@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Log at info, then answer."""
    await ctx.info("hello from chatty")
    return "said hello"

@mcp.tool()
async def slow(ctx: Context) -> str:
    """Sleep a minute, noting whether it was cancelled."""
    import anyio
    try:
        await anyio.sleep(60)
    except BaseException:
        record("slow cancelled")
        raise
    return "slept"

def extra() -> str:
    """Only listed after grow."""
    return "extra!"

@mcp.tool()
async def grow(ctx: Context) -> str:
    """Add the extra tool and tell listeners the list changed."""
    mcp.add_tool(extra, name="extra")
    await ctx.notify_tools_changed()
    return "grown"

def stdio():
    # Read our real stdin through a pipe so every request can be logged on its way in.
    real = os.fdopen(os.dup(0), "rb")
    read_fd, write_fd = os.pipe()
    os.dup2(read_fd, 0)
    os.close(read_fd)
    def relay():
        with os.fdopen(write_fd, "wb") as out:
            for line in real:
                try:
                    record(json.loads(line).get("method") or "(answer)")
                except ValueError:
                    pass
                out.write(line)
                out.flush()
    threading.Thread(target=relay, daemon=True).start()
    mcp.run()

def http(port):
    import uvicorn
    app = mcp.streamable_http_app()
    async def logged(scope, receive, send):
        if scope["type"] == "http":
            method = dict(scope["headers"]).get(b"mcp-method", b"-").decode()
            record(scope["method"] + " " + method)
        await app(scope, receive, send)
    uvicorn.run(logged, host="127.0.0.1", port=port, log_level="warning")

if sys.argv[1] == "stdio":
    stdio()
else:
    http(int(sys.argv[2]))
'''


# The SDK's client in MODE against a URL: lists, calls TOOL with ARGS; one JSON report on stdout.
SDK_CLIENT = r'''
import asyncio, json, sys
from mcp import Client

async def main(url, mode, tool, args):
    async with Client(url, mode=mode, cache=None) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        result = await client.call_tool(tool, args)
        return {"protocol_version": client.protocol_version, "tools": tools,
                "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}

print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))))
'''


def sdk():
    try:
        import mcp  # noqa: F401
    except ImportError:
        missing_prerequisite("the mcp Python SDK is not installed (pip install -r tests/requirements.txt; needs Python >= 3.10)")


class SdkServer:
    """Where the SDK server's script and request log live; ``methods()`` reads the log."""

    def __init__(self, tmp_path):
        sdk()
        self.script = tmp_path / "sdk_modern_server.py"
        self.script.write_text(SDK_SERVER)
        self.log = tmp_path / "sdk_requests.log"
        self.env = {"SDK_SERVER_LOG": str(self.log)}

    def methods(self):
        return self.log.read_text().split("\n")[:-1] if self.log.exists() else []

    def stdio_config(self, name="modern"):
        return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[str(self.script), "stdio"], env=self.env, timeout=30.0)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def sdk_server(tmp_path):
    return SdkServer(tmp_path)


@pytest.fixture
def sdk_http(sdk_server):
    """The SDK's modern Streamable HTTP app on a local port: (SdkServer, url)."""
    port = free_port()
    env = dict(os.environ, **sdk_server.env)
    proc = subprocess.Popen([sys.executable, str(sdk_server.script), "http", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def listening():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return proc.poll() is not None

    try:
        assert wait_for(listening, timeout=30) and proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "never listened"
        yield sdk_server, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def http_config(url, name="modern"):
    return ServerConfig(name=name, type="http", source="test", url=url, timeout=30.0)


def check_session(session, seen_methods):
    """List and call over a session to the SDK server: the modern era, no initialize."""
    assert session.protocol_version == MODERN and session.modern
    assert session.server_info.get("name") == "sdk-modern"
    names = sorted(t["name"] for t in session.list_tools())
    assert names == ["add", "chatty", "grow", "slow", "where"]
    result = session.call_tool("add", {"a": 2, "b": 3})
    assert result["isError"] is False and result["structuredContent"] == {"result": 5}
    # The x-mcp-header argument is mirrored as Mcp-Param-Region (the SDK refuses the call otherwise).
    for region in ("eu-west", " zürich "):
        assert session.call_tool("where", {"region": region})["content"][0]["text"] == "in " + region
    # A call that wants its logs names a level in _meta (2026-07-28 has no logging/setLevel).
    logs = []
    assert session.call_tool("chatty", on_log=logs.append)["content"][0]["text"] == "said hello"
    assert [(m["level"], m["data"]) for m in logs] == [("info", "hello from chatty")]
    session.ping()  # 2026-07-28 has no ping; the session checks liveness with server/discover
    methods = seen_methods()
    assert methods[0].endswith("server/discover")
    assert not any("initialize" in m for m in methods), methods
    return methods


# -- the bare client session -----------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_session_speaks_2026_07_28_to_the_sdk_server_over_stdio(sdk_server):
    changed = threading.Event()
    session = open_session(sdk_server.stdio_config(), on_tools_changed=changed.set)
    try:
        check_session(session, sdk_server.methods)
        # list_changed arrives on the subscriptions/listen stream the session opened.
        assert wait_for(lambda: "subscriptions/listen" in sdk_server.methods())
        assert session.call_tool("grow")["content"][0]["text"] == "grown"
        assert changed.wait(20)
        assert "extra" in [t["name"] for t in session.list_tools()]
    finally:
        session.close()


@pytest.mark.timeout(90)
def test_session_speaks_2026_07_28_to_the_sdk_server_over_http(sdk_http):
    server, url = sdk_http
    changed = threading.Event()
    session = open_session(http_config(url), on_tools_changed=changed.set)
    try:
        methods = check_session(session, server.methods)
        # Every request was a POST that named its method in Mcp-Method (no GET stream, no handshake).
        assert all(m.startswith("POST ") and m != "POST -" for m in methods), methods
        assert wait_for(lambda: "POST subscriptions/listen" in server.methods())
        assert session.call_tool("grow")["content"][0]["text"] == "grown"
        assert changed.wait(20)
        assert "extra" in [t["name"] for t in session.list_tools()]
    finally:
        session.close()
    assert not any(m.startswith("DELETE") or m.startswith("GET") for m in server.methods())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_handshake_era_server_still_gets_initialize(transport, tmp_path):
    if transport == "stdio":
        config = ServerConfig(name="fixture", type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10.0)
        session = open_session(config)
    else:
        proc = subprocess.Popen([sys.executable, FIXTURE, "http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = int(proc.stdout.readline().split()[1])
            session = open_session(http_config(f"http://127.0.0.1:{port}/mcp", name="fixture"))
        except BaseException:
            proc.kill()
            raise
    try:
        assert session.protocol_version == "2025-11-25" and not session.modern
        assert "add" in [t["name"] for t in session.list_tools()]
        assert session.call_tool("add", {"a": 2, "b": 3})["structuredContent"] == {"sum": 5}
        session.ping()
    finally:
        session.close()
        if transport == "http":
            proc.kill()
            proc.wait()


def test_x_mcp_header_annotations_become_param_headers_and_invalid_ones_drop_the_tool():
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer", "x-mcp-header": "N"}}}
    annotations = param_header_annotations(schema)
    assert param_headers(annotations, {"region": "zürich", "n": 3, "other": 1}) == {"Mcp-Param-Region": "=?base64?esO8cmljaA==?=", "Mcp-Param-N": "3"}
    assert param_headers(annotations, {}) == {}
    assert param_header_annotations({"properties": {"x": {"type": "object", "x-mcp-header": "X"}}}) is None
    assert param_header_annotations({"properties": {"x": {"type": "string", "x-mcp-header": "bad header"}}}) is None


def test_modern_http_headers_name_the_method_and_encode_odd_names():
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "añadir"}}
    headers = modern_headers(message, MODERN)
    assert headers["MCP-Protocol-Version"] == MODERN and headers["Mcp-Method"] == "tools/call"
    assert headers["Mcp-Name"] == "=?base64?YcOxYWRpcg==?="
    assert modern_headers({"method": "tools/call", "params": {"name": "plain.name"}}, MODERN)["Mcp-Name"] == "plain.name"
    assert "Mcp-Name" not in modern_headers({"method": "tools/list", "params": {}}, MODERN)


# -- through the gateway -----------------------------------------------------------------------------


def servers_state(url):
    return {s["name"]: s for s in GatewayClient(url).get("/servers")["servers"]}


def gateway_tools(url):
    return sorted(t["id"] for t in GatewayClient(url).get("/tools")["tools"])


def run_sdk_client(tmp_path, url, mode, tool, args):
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_CLIENT)
    done = subprocess.run([sys.executable, str(script), url, mode, tool, json.dumps(args)], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.timeout(150)
def test_the_gateway_serves_modern_upstreams_over_stdio_and_http(gateway, sdk_http, tmp_path):
    server, url = sdk_http
    gw, gw_url = gateway(server.stdio_config("mstdio"), http_config(url, "mhttp"))
    assert wait_for(lambda: all(s["state"] == "ready" for s in servers_state(gw_url).values()), timeout=30), servers_state(gw_url)
    states = servers_state(gw_url)
    for name in ("mstdio", "mhttp"):
        assert states[name].get("protocolVersion") == MODERN, states[name]
    tools = gateway_tools(gw_url)
    assert {"mstdio__add", "mhttp__add", "mstdio__grow", "mhttp__grow"} <= set(tools)

    client = GatewayClient(gw_url)
    for name in ("mstdio", "mhttp"):
        result = client.post("/call", {"tool": f"{name}__add", "arguments": {"a": 20, "b": 22}})
        assert result["ok"] is True and result["data"]["structuredContent"] == {"result": 42}, result

    # list_changed: the upstream adds a tool and says so; the gateway lists it without a restart.
    for name in ("mstdio", "mhttp"):
        client.post("/call", {"tool": f"{name}__grow", "arguments": {}})
        assert wait_for(lambda: f"{name}__extra" in gateway_tools(gw_url), timeout=20), gateway_tools(gw_url)
    assert not any("initialize" in m for m in server.methods())

    # Mixed: the SDK's handshake-era client of the gateway reaches a modern upstream.
    legacy = run_sdk_client(tmp_path, gw_url + "/mcp", "legacy", "mhttp__add", {"a": 1, "b": 2})
    assert legacy["protocol_version"] == "2025-11-25"
    assert "mstdio__add" in legacy["tools"]
    assert legacy["result"]["structuredContent"] == {"result": 3} and legacy["result"]["isError"] is False


# -- era decisions, against a scripted stdio server (mcp_servers/era_server.py) --------------------


def era_server(tmp_path, mode, timeout=10.0):
    log = tmp_path / f"era-{mode}.log"
    config = ServerConfig(name="era", type="stdio", source="test", command=sys.executable, args=[ERA_SERVER, mode, str(log)], timeout=timeout)
    return config, lambda: log.read_text().split() if log.exists() else []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["legacy-listed", "silent"])
def test_no_modern_evidence_falls_back_to_initialize(tmp_path, mode):
    # -32022 naming only handshake versions is a legacy advertisement; on stdio an
    # unanswered probe (after half the connect timeout) is no evidence either.
    config, methods = era_server(tmp_path, mode, timeout=4.0)
    session = open_session(config)
    try:
        assert session.protocol_version == "2025-11-25" and not session.modern
        assert wait_for(lambda: methods()[:3] == ["server/discover", "initialize", "notifications/initialized"]), methods()
    finally:
        session.close()


@pytest.mark.timeout(30)
def test_a_modern_only_server_sharing_no_version_is_an_error(tmp_path):
    config, methods = era_server(tmp_path, "disjoint")
    with pytest.raises(McpError) as err:
        open_session(config)
    assert "speaks only MCP 2099-01-01" in str(err.value) and "2026-07-28" in str(err.value)
    assert "initialize" not in methods()


@pytest.mark.timeout(30)
def test_modern_requests_carry_the_envelope_and_refuse_results_we_cannot_complete(tmp_path):
    config, methods = era_server(tmp_path, "modern")
    session = open_session(config)
    try:
        assert session.protocol_version == MODERN and session.server_info == {"name": "era", "version": "1"}
        assert session.list_tools() == []
        with pytest.raises(McpError) as err:
            session.call_tool("anything")
        assert "resultType 'input_required'" in str(err.value)
    finally:
        session.close()
    # Every request carried the envelope; no listen request, as the server offers no listChanged.
    assert methods() == ["server/discover", "tools/list", "tools/call"]


@pytest.mark.timeout(60)
def test_servers_check_reports_the_modern_protocol_version(sdk_server):
    from toolscript.gateway.servers import probe

    report = probe(sdk_server.stdio_config())
    assert report["ok"] is True and report["protocolVersion"] == MODERN, report
    assert report["server"]["name"] == "sdk-modern" and report["tools"] == 5


@pytest.mark.timeout(30)
def test_a_listen_stream_that_ends_at_once_is_not_resent_in_a_loop(tmp_path):
    config, methods = era_server(tmp_path, "listen-ends")
    changed = []
    session = open_session(config, on_tools_changed=lambda: changed.append(1))
    try:
        assert wait_for(lambda: "subscriptions/listen" in methods())
        time.sleep(2)
        assert methods().count("subscriptions/listen") == 1, methods()
        assert changed == [1]  # the ended stream may have missed changes: the caller refetches
    finally:
        session.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_cancelling_a_modern_call_reaches_the_server(transport, request):
    # stdio: notifications/cancelled (with the envelope); HTTP: closing the response stream is the cancellation.
    if transport == "stdio":
        server = request.getfixturevalue("sdk_server")
        config = server.stdio_config()
    else:
        server, url = request.getfixturevalue("sdk_http")
        config = http_config(url)
    session = open_session(config)
    try:
        cancel = Cancel()
        threading.Timer(1.0, cancel.set).start()
        with pytest.raises(RequestCancelled):
            session.call_tool("slow", cancel=cancel)
        assert wait_for(lambda: "slow cancelled" in server.methods(), timeout=20), server.methods()
        cancelled = [m for m in server.methods() if "notifications/cancelled" in m]
        assert cancelled == (["notifications/cancelled"] if transport == "stdio" else [])
    finally:
        session.close()
