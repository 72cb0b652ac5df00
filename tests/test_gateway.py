"""The gateway with real upstreams: our fixture servers and server-everything.

Most tests run a Gateway in this process (fast, and its internals are
inspectable); the lifecycle tests run ``toolscript gateway start --detach`` /
``stop`` as separate processes, as a user or hook would.
"""

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit


import peers
from conftest import REPO_ROOT, missing_prerequisite, wait_for
from mcp_servers.launch import FIXTURE, start_fixture
from toolscript.config.load import ServerConfig
from toolscript.gateway.catalog import Catalog, split_id, tool_id
from toolscript.gateway.client import GatewayClient
from toolscript.gateway.state import pid_alive
from toolscript.mcp.client.session import ClientSession
from toolscript.mcp.client.streamable_http import StreamableHttpTransport


def fixture_server(name="fixture", *options, timeout=10.0):
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio", *options], timeout=timeout)


def raw(url, method="GET", path="/health", headers=None, body=None):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(method, parts.path + path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else None


# -- naming and the catalog ---------------------------------------------------------------


def test_tool_ids_split_on_the_first_separator():
    assert tool_id("github", "search_issues") == "github__search_issues"
    assert split_id("github__search_issues") == ("github", "search_issues")
    assert split_id("srv__tool__with__underscores") == ("srv", "tool__with__underscores")
    assert split_id("no-separator") == ("", "no-separator")


def test_catalog_notifies_only_on_real_changes():
    tools = {"a": [{"name": "x", "inputSchema": {}}]}
    catalog = Catalog(lambda: list(tools.items()))
    fired = []
    remove = catalog.add_listener(lambda: fired.append(catalog.version))
    assert [e.id for e in catalog.entries()] == ["a__x"]
    assert catalog.rebuild() is False and fired == []
    tools["b"] = [{"name": "y", "inputSchema": {}, "title": "Why"}]
    assert catalog.rebuild() is True and len(fired) == 1
    assert catalog.get("b__y").describe() == {"id": "b__y", "server": "b", "name": "y", "title": "Why", "inputSchema": {}, "description": ""}
    assert catalog.get("b__y").as_mcp_tool()["name"] == "b__y"
    remove()
    tools.pop("a")
    catalog.rebuild()
    assert len(fired) == 1 and catalog.get("a__x") is None


# -- the JSON API ------------------------------------------------------------------------------


def test_zero_servers_serves_the_builtins(gateway, tmp_path):
    (tmp_path / "hello.txt").write_text("hi there")
    gw, url = gateway()
    client = GatewayClient(url)
    health = client.get("/health")
    assert health["status"] == "ok" and health["pid"] == os.getpid() and health["servers"] == {}
    assert [s["name"] for s in client.get("/servers")["servers"]] == ["builtin"]
    ids = [t["id"] for t in client.get("/tools")["tools"]]
    assert ids == ["builtin__time.now", "builtin__tools.echo", "builtin__shell.pwd", "builtin__fs.list_dir", "builtin__fs.read_file",
                   "builtin__memory.search", "builtin__memory.timeline", "builtin__memory.get"]
    read = client.post("/call", {"tool": "builtin__fs.read_file", "arguments": {"path": "hello.txt"}})
    assert read["ok"] is True and read["data"]["content"] == "hi there"
    escape = client.post("/call", {"tool": "builtin__fs.read_file", "arguments": {"path": "../../etc/passwd"}})
    assert escape["ok"] is False and escape["error"]["code"] == "execution_error" and "outside the workspace" in escape["error"]["message"]


def test_builtin_allow_list_from_config(gateway):
    gw, url = gateway(builtin_tools=["time.now"])
    assert [t["id"] for t in GatewayClient(url).get("/tools")["tools"]] == ["builtin__time.now"]


def test_calls_through_the_json_api_keep_results_whole(gateway):
    gw, url = gateway(fixture_server())
    client = GatewayClient(url)
    servers = {s["name"]: s for s in client.get("/servers")["servers"]}
    assert servers["fixture"]["state"] == "ready" and servers["fixture"]["serverInfo"]["name"] == "fixture"
    added = client.post("/call", {"tool": "fixture__add", "arguments": {"a": 2, "b": 3}})
    assert added["ok"] is True and added["data"]["structuredContent"] == {"sum": 5}
    assert added["meta"]["tool"] == "fixture__add" and added["meta"]["server"] == "fixture"
    failed = client.post("/call", {"tool": "fixture__fail", "arguments": {"message": "no luck"}})
    assert failed["ok"] is False and failed["data"]["isError"] is True
    assert failed["error"] == {"code": "execution_error", "message": "no luck"}
    meta = client.post("/call", {"tool": "fixture__meta", "arguments": {}})
    assert meta["data"]["_meta"] == {"fixture/trace": "abc"}


def test_arguments_are_validated_before_the_call(gateway):
    gw, url = gateway(fixture_server())
    client = GatewayClient(url)
    bad = client.post("/call", {"tool": "fixture__add", "arguments": {"a": "two", "b": 3}})
    assert bad["ok"] is False and bad["error"] == {"code": "invalid_args", "message": "/a: expected integer, got string"}
    missing = client.post("/call", {"tool": "fixture__nope", "arguments": {}})
    assert missing["error"]["code"] == "tool_not_found" and "fixture__echo" in missing["error"]["message"]
    no_server = client.post("/call", {"tool": "ghost__x", "arguments": {}})
    assert no_server["error"]["code"] == "tool_not_found" and "no server 'ghost'" in no_server["error"]["message"]


def test_include_and_exclude_filter_the_catalog(gateway):
    server = fixture_server()
    server.include_tools = ["e*", "add"]
    server.exclude_tools = ["expire_session"]
    gw, url = gateway(server)
    ids = [t["id"] for t in GatewayClient(url).get("/tools", server="fixture")["tools"]]
    assert ids == ["fixture__echo", "fixture__add"]
    hidden = GatewayClient(url).post("/call", {"tool": "fixture__fail", "arguments": {}})
    assert hidden["error"]["code"] == "tool_not_found"


def test_pagination_of_upstream_tools_is_followed(gateway):
    gw, url = gateway(fixture_server("fixture", "--tools", "120", "--page-size", "25"))
    tools = GatewayClient(url).get("/tools", server="fixture")["tools"]
    assert len(tools) == 14 + 120 and tools[-1]["id"] == "fixture__filler_119"


def test_a_failed_server_is_reported_and_calls_fail_fast(gateway):
    broken = ServerConfig(name="broken", type="stdio", source="test", command="toolscript-test-no-such-command")
    gw, url = gateway(broken)
    client = GatewayClient(url)
    server = next(s for s in client.get("/servers")["servers"] if s["name"] == "broken")
    assert server["state"] == "failed" and "command not found" in server["error"]
    assert client.get("/health")["status"] == "degraded"
    started = time.monotonic()
    result = client.post("/call", {"tool": "broken__anything", "arguments": {}})
    # Fast means: the call did not wait out the 30 s connect or 60 s call timeout (generous bound).
    assert time.monotonic() - started < 15
    assert result["error"]["code"] == "execution_error" and "command not found" in result["error"]["message"]


def test_crashed_upstream_is_restarted(gateway):
    gw, url = gateway(fixture_server())
    client = GatewayClient(url)
    assert gw.wait_for_servers() == []
    first_pid = gw.upstreams["fixture"]._session.transport.process.pid
    crashed = client.post("/call", {"tool": "fixture__crash", "arguments": {}})
    assert crashed["ok"] is False and "exited with status 3" in crashed["error"]["message"]
    assert wait_for(lambda: gw.upstreams["fixture"].state == "ready" and gw.upstreams["fixture"].restarts == 1)
    assert gw.upstreams["fixture"]._session.transport.process.pid != first_pid
    assert client.post("/call", {"tool": "fixture__echo", "arguments": {"message": "back"}})["ok"] is True


def test_hung_upstream_call_times_out(gateway):
    gw, url = gateway(fixture_server(timeout=1.0))
    started = time.monotonic()
    result = GatewayClient(url).post("/call", {"tool": "fixture__hang", "arguments": {}})
    assert time.monotonic() - started < 10  # the 1 s timeout fired (the server never answers)
    assert result["error"]["code"] == "execution_error" and "no answer within 1s" in result["error"]["message"]
    # The per-call timeout in the request wins over the server's.
    quick = GatewayClient(url).post("/call", {"tool": "fixture__hang", "arguments": {}, "timeout": 0.3})
    assert "0.3s" in quick["error"]["message"]


def test_list_changed_refreshes_the_catalog(gateway):
    gw, url = gateway(fixture_server())
    client = GatewayClient(url)
    before = gw.catalog.version
    client.post("/call", {"tool": "fixture__change_tools", "arguments": {}})
    assert wait_for(lambda: gw.catalog.get("fixture__extra_tool") is not None)
    assert gw.catalog.version > before
    assert client.post("/call", {"tool": "fixture__extra_tool", "arguments": {"message": "new"}})["ok"] is True


def test_discovery_waits_for_connecting_servers(gateway):
    slow = ServerConfig(name="slow", type="stdio", source="test", command=sys.executable,
                        args=["-c", f"import time, runpy, sys; time.sleep(1); sys.argv = [{FIXTURE!r}, 'stdio']; runpy.run_path({FIXTURE!r}, run_name='__main__')"])
    gw, url = gateway(slow)
    started = time.monotonic()
    answer = GatewayClient(url).get("/tools", server="slow")
    assert time.monotonic() - started >= 0.5  # it waited for the server rather than answering empty
    assert answer["pending"] == [] and len(answer["tools"]) == 14


# -- authority ----------------------------------------------------------------------------------


def test_requests_need_the_token(gateway):
    gw, url = gateway()
    base = url.split("/t/")[0]
    assert raw(base, path="/health")[0] == 401
    assert raw(base + "/t/wrong-token", path="/health")[0] == 401
    assert raw(base, path="/healthz") == (200, {"ok": True})
    status, body = raw(base, path="/health", headers={"Authorization": f"Bearer {gw.token}"})
    assert status == 200 and body["status"] == "ok"
    assert raw(base + "/t/wrong", method="POST", path="/call", body=b'{"tool": "builtin__time.now"}', headers={"Content-Type": "application/json"})[0] == 401


def test_foreign_host_or_origin_is_refused(gateway):
    gw, url = gateway()
    assert raw(url, headers={"Host": "evil.example.com"})[0] == 403
    assert raw(url, headers={"Origin": "http://evil.example.com"})[0] == 403
    assert raw(url, headers={"Origin": f"http://localhost:{urlsplit(url).port}"})[0] == 200


def test_one_sessions_token_is_refused_by_another_gateway(gateway):
    gw_a, url_a = gateway()
    gw_b, url_b = gateway()
    token_a = url_a.split("/t/")[1]
    base_b = url_b.split("/t/")[0]
    assert raw(f"{base_b}/t/{token_a}")[0] == 401
    assert gw_a.token != gw_b.token


# -- the MCP endpoint ---------------------------------------------------------------------------


def test_mcp_endpoint_relays_calls_progress_and_list_changed(gateway):
    gw, url = gateway(fixture_server())
    changed = threading.Event()
    session = ClientSession(StreamableHttpTransport(url + "/mcp"), on_tools_changed=changed.set)
    try:
        session.initialize(10)
        names = [t["name"] for t in session.list_tools()]
        assert names[:5] == ["builtin__time.now", "builtin__tools.echo", "builtin__shell.pwd", "builtin__fs.list_dir", "builtin__fs.read_file"]
        assert "fixture__add" in names
        assert session.call_tool("fixture__add", {"a": 1, "b": 1})["structuredContent"] == {"sum": 2}
        assert session.call_tool("fixture__fail", {"message": "x"})["isError"] is True
        now = session.call_tool("builtin__time.now")
        assert set(now["structuredContent"]) == {"timestamp", "iso"}
        progress = []
        session.call_tool("fixture__slow", {"steps": 3, "delay": 0.01}, on_progress=progress.append)
        assert [p["progress"] for p in progress] == [1, 2, 3]
        time.sleep(0.3)  # the GET stream opens after the handshake
        session.call_tool("fixture__change_tools")
        assert changed.wait(10)
    finally:
        session.close()


def test_mcp_endpoint_with_the_official_sdk(gateway):
    try:
        import asyncio

        from mcp import Client
    except ImportError:
        missing_prerequisite("the MCP Python SDK is not installed (make venv)")
    gw, url = gateway(fixture_server())

    async def run():
        async with Client(url + "/mcp", mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("fixture__add", {"a": 20, "b": 22})
            failed = await client.call_tool("fixture__fail", {"message": "sdk"})
            return names, result, failed

    names, result, failed = asyncio.run(run())
    assert "fixture__echo" in names and "builtin__fs.read_file" in names
    assert result.structured_content == {"sum": 42} and not result.is_error
    assert failed.is_error and failed.content[0].text == "sdk"


# -- server-everything over all three transports ----------------------------------------------


def test_gateway_over_server_everything(gateway):
    try:
        cmd = peers.everything_stdio_command()
        http_peer = peers.start_everything("streamableHttp")
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    sse_peer = peers.start_everything("sse")
    try:
        gw, url = gateway(
            ServerConfig(name="ev_stdio", type="stdio", source="t", command=cmd[0], args=cmd[1:], timeout=20),
            ServerConfig(name="ev_http", type="http", source="t", url=http_peer.url, timeout=20),
            ServerConfig(name="ev_sse", type="sse", source="t", url=sse_peer.url, timeout=20),
        )
        client = GatewayClient(url)
        servers = {s["name"]: s for s in client.get("/servers")["servers"]}
        for name, transport in (("ev_stdio", "stdio"), ("ev_http", "http"), ("ev_sse", "sse")):
            assert servers[name]["state"] == "ready" and servers[name]["transport"] == transport
            assert servers[name]["tools"] == 12  # 13, less simulate-research-query (needs task augmentation)
            echo = client.post("/call", {"tool": f"{name}__echo", "arguments": {"message": name}})
            assert echo["data"]["content"][0]["text"] == f"Echo: {name}"
            weather = client.post("/call", {"tool": f"{name}__get-structured-content", "arguments": {"location": "Chicago"}})
            assert "temperature" in weather["data"]["structuredContent"]
            bad = client.post("/call", {"tool": f"{name}__get-structured-content", "arguments": {"location": "Mars"}})
            assert bad["error"]["code"] == "invalid_args" and "/location: expected one of" in bad["error"]["message"]
    finally:
        http_peer.stop()
        sse_peer.stop()


# -- the gateway as a process -------------------------------------------------------------------


def toolscript(*args, env, cwd, timeout=60):
    return subprocess.run([sys.executable, "-m", "toolscript", *args], env=env, cwd=str(cwd), capture_output=True, text=True, timeout=timeout)


def _children_of(pid):
    out = subprocess.run(["ps", "-eo", "pid,ppid"], capture_output=True, text=True).stdout.split("\n")[1:]
    pairs = [tuple(map(int, line.split())) for line in out if line.strip()]
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in pairs if parent in frontier} - found
        found |= frontier
    return found


def test_detached_gateway_lifecycle_leaves_no_processes(tmp_path):
    config = {"mcpServers": {"fixture": {"command": sys.executable, "args": [FIXTURE, "stdio"]}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    started = toolscript("gateway", "start", "--detach", "--session", "s1", "--json", env=dict(env, DEBUG="1"), cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["url"].startswith("http://127.0.0.1:") and "/t/" in info["url"]
    state_file = tmp_path / "state" / "gateways" / "s1.json"
    assert oct(state_file.stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "state" / "gateways").stat().st_mode & 0o777) == "0o700"

    # A second start for the same session reuses the live gateway.
    again = toolscript("gateway", "start", "--detach", "--session", "s1", "--json", env=env, cwd=tmp_path)
    assert json.loads(again.stdout)["pid"] == info["pid"] and json.loads(again.stdout)["alreadyRunning"]

    status = toolscript("gateway", "status", "--session", "s1", env=env, cwd=tmp_path)
    assert status.returncode == 0 and "fixture" in status.stdout and "ready" in status.stdout
    assert info["url"].split("/t/")[1] not in status.stdout  # the token is not printed
    assert wait_for(lambda: _children_of(info["pid"]))  # the fixture server runs under the gateway
    children = _children_of(info["pid"])

    invoked = toolscript("tools", "invoke", "fixture__echo", "--args", '{"message": "cli"}', "--session", "s1", env=env, cwd=tmp_path)
    assert invoked.returncode == 0 and json.loads(invoked.stdout)["data"]["content"][0]["text"] == "Echo: cli"

    # The token is a secret: the debug log of a gateway that served requests never shows it.
    log = (tmp_path / "state" / "gateways" / "s1.log").read_text()
    assert "GET /t/****/health" in log and info["url"].split("/t/")[1] not in log

    stopped = toolscript("gateway", "stop", "--session", "s1", env=env, cwd=tmp_path)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not state_file.exists()
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in children | {info["pid"]}), timeout=10)

    after = toolscript("gateway", "status", "--session", "s1", env=env, cwd=tmp_path)
    assert after.returncode == 1 and "not running" in after.stdout and "gateway start --detach" in after.stdout
    # A cleanly stopped gateway leaves no session log behind.
    assert not (tmp_path / "state" / "gateways" / "s1.log").exists()


def test_client_commands_without_a_gateway_say_how_to_start_one(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    listed = toolscript("list-servers", env=env, cwd=tmp_path)
    assert listed.returncode == 1 and "toolscript gateway start --detach" in listed.stderr
    assert len(listed.stderr.strip().splitlines()) == 1
    # Built-ins still work in-process.
    now = toolscript("tools", "invoke", "time.now", env=env, cwd=tmp_path)
    assert now.returncode == 0 and json.loads(now.stdout)["meta"]["tool"] == "time.now"
    mcp_tool = toolscript("tools", "invoke", "github__search", env=env, cwd=tmp_path)
    assert mcp_tool.returncode == 1 and "needs the gateway" in mcp_tool.stderr
    dead = dict(env, TOOLSCRIPT_GATEWAY_URL=f"http://127.0.0.1:{peers.free_port()}/t/abc")
    unreachable = toolscript("list-servers", env=dead, cwd=tmp_path)
    assert unreachable.returncode == 1 and "not reachable" in unreachable.stderr


def test_plain_mcp_tool_names_keep_prefixes_only_on_collisions(gateway):
    gw, url = gateway(fixture_server("a"), fixture_server("b", "--tools", "1"), builtin_tools=["time.now"], mcp_tool_names="plain")
    session = ClientSession(StreamableHttpTransport(url + "/mcp"))
    try:
        session.initialize(10)
        names = [t["name"] for t in session.list_tools()]
        assert "time.now" in names and "filler_000" in names  # unique: plain
        assert "a__echo" in names and "b__echo" in names and "echo" not in names  # shared: prefixed
        assert session.call_tool("filler_000")["content"][0]["text"] == "filler 0"
        assert session.call_tool("a__add", {"a": 1, "b": 2})["structuredContent"] == {"sum": 3}
    finally:
        session.close()
    # The JSON API and CLI keep gateway ids whatever the MCP naming.
    assert GatewayClient(url).post("/call", {"tool": "b__filler_000", "arguments": {}})["ok"] is True


def test_idle_http_upstream_that_dies_is_noticed_and_reconnected(gateway, monkeypatch):
    from toolscript.gateway import upstream as upstream_module

    monkeypatch.setattr(upstream_module, "PING_INTERVAL", 0.3)
    peer = start_fixture("http")
    port = peer.port
    gw, url = gateway(ServerConfig(name="remote", type="http", source="t", url=peer.url, timeout=2))
    assert gw.wait_for_servers() == [] and gw.upstreams["remote"].state == "ready"
    peer.stop()
    assert wait_for(lambda: gw.upstreams["remote"].state == "failed", timeout=10)
    assert "connection refused" in gw.upstreams["remote"].error
    revived = start_fixture("http", "--port", str(port))
    try:
        assert wait_for(lambda: gw.upstreams["remote"].state == "ready", timeout=15)
        echo = GatewayClient(url).post("/call", {"tool": "remote__echo", "arguments": {"message": "again"}})
        assert echo["ok"] is True
    finally:
        revived.stop()


def test_outdated_session_url_falls_back_and_never_orphans_the_live_gateway(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    started = toolscript("gateway", "start", "--detach", "--session", "s2", "--json", env=env, cwd=tmp_path)
    info = json.loads(started.stdout)
    dead = f"http://127.0.0.1:{peers.free_port()}/t/old-token"
    session_env = dict(env, TOOLSCRIPT_GATEWAY_URL=dead, CLAUDE_CODE_SESSION_ID="s2")
    try:
        # The session's environment still names a gateway that was replaced: the state file wins.
        listed = toolscript("list-servers", env=session_env, cwd=tmp_path)
        assert listed.returncode == 0 and "builtin" in listed.stdout
        status = toolscript("gateway", "status", env=session_env, cwd=tmp_path)
        assert status.returncode == 0 and f"pid {info['pid']}" in status.stdout
        # Stopping by the dead URL must not delete the live gateway's state file.
        stopped = toolscript("gateway", "stop", "--gateway-url", dead, "--session", "s2", env=env, cwd=tmp_path)
        assert stopped.returncode == 0 and "not running" in stopped.stdout
        assert (tmp_path / "state" / "gateways" / "s2.json").exists()
        assert "old-token" not in stopped.stdout + stopped.stderr
    finally:
        toolscript("gateway", "stop", "--session", "s2", env=env, cwd=tmp_path)
    assert wait_for(lambda: not pid_alive(info["pid"]))
