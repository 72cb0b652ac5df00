"""``Gateway``: built-in tools and upstream servers behind one catalog, and calls to both.

Each test serves a Gateway from this process (the ``gateway`` fixture) with our
fixture servers or server-everything as its upstreams, and talks to it over the
JSON API or calls it directly.
"""

import os
import sys
import threading
import time

import pytest

import peers
from conftest import missing_prerequisite, wait_for
from gateway_processes import fixture_server, pids_with, silent_server
from mcp_servers.launch import FIXTURE, start_fixture
from toolscript.config.load import Config, ServerConfig
from toolscript.gateway.catalog import Catalog
from toolscript.gateway.client import GatewayClient
from toolscript.gateway.service import Gateway


def test_zero_servers_serves_the_builtins(gateway, tmp_path):
    (tmp_path / "hello.txt").write_text("hi there")
    gw, url = gateway()
    client = GatewayClient(url)
    health = client.get("/health")
    assert health["status"] == "ok" and health["pid"] == os.getpid() and health["servers"] == {}
    assert [s["name"] for s in client.get("/servers")["servers"]] == ["builtin"]
    ids = [t["id"] for t in client.get("/tools")["tools"]]
    assert ids == ["builtin__time.now", "builtin__tools.echo", "builtin__shell.pwd", "builtin__fs.list_dir", "builtin__fs.read_file",
                   "builtin__memory.search", "builtin__memory.timeline", "builtin__memory.get",
                   "builtin__memory.remember"]
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
    before = gw.catalog.snapshot().version
    client.post("/call", {"tool": "fixture__change_tools", "arguments": {}})
    assert wait_for(lambda: gw.catalog.get("fixture__extra_tool") is not None)
    assert gw.catalog.snapshot().version > before
    assert client.post("/call", {"tool": "fixture__extra_tool", "arguments": {"message": "new"}})["ok"] is True


def test_discovery_waits_for_connecting_servers(gateway):
    slow = ServerConfig(name="slow", type="stdio", source="test", command=sys.executable,
                        args=["-c", f"import time, runpy, sys; time.sleep(1); sys.argv = [{FIXTURE!r}, 'stdio']; runpy.run_path({FIXTURE!r}, run_name='__main__')"])
    gw, url = gateway(slow)
    started = time.monotonic()
    answer = GatewayClient(url).get("/tools", server="slow")
    assert time.monotonic() - started >= 0.5  # it waited for the server rather than answering empty
    assert answer["pending"] == [] and len(answer["tools"]) == 14


@pytest.mark.timeout(60)
def test_upstream_reports_hidden_tools_with_their_reason(gateway):
    server = fixture_server()
    server.exclude_tools = ["echo"]
    gw, _url = gateway(server)
    gw.wait_for_servers()
    described = {s["name"]: s for s in gw.servers()["servers"]}
    assert described["fixture"]["hidden"] == {"includeTools/excludeTools": 1}
    assert described["fixture"]["toolsTotal"] == described["fixture"]["tools"] + 1
    assert described["builtin"]["hidden"] == {}
    assert gw.health()["hidden"] == {"includeTools/excludeTools": 1}


@pytest.mark.timeout(60)
def test_a_server_is_settled_only_once_its_tools_are_in_the_catalog(gateway, monkeypatch):
    # A server turns "ready" before the catalog's rebuild lists its tools: if wait_for_servers returned in between,
    # a call right after it would fail with "fixture has: no tools".  A slow rebuild widens that gap.
    original = Catalog.rebuild

    def slow_rebuild(self):
        time.sleep(0.3)
        return original(self)

    monkeypatch.setattr(Catalog, "rebuild", slow_rebuild)
    gw, _url = gateway(fixture_server())
    assert gw.wait_for_servers() == []
    assert gw.catalog.get("fixture__change_tools") is not None


@pytest.mark.timeout(60)
def test_a_servers_log_messages_go_only_to_the_call_they_belong_to(gateway):
    peer = start_fixture("http")
    try:
        server = ServerConfig(name="web", type="http", source="test", url=peer.url, timeout=10.0)
        gw, _url = gateway(server)
        gw.wait_for_servers()
        other_call_logs, own_logs = [], []
        slow = threading.Thread(
            target=gw.call, args=("web__slow", {"steps": 20, "delay": 0.05}), kwargs={"source": "test", "on_log": other_call_logs.append}
        )
        slow.start()
        result = gw.call("web__log", {"count": 3}, source="test", on_log=own_logs.append)
        slow.join(20)
        assert result.ok, result.error
        assert len(own_logs) == 3
        assert other_call_logs == [], "another call's log messages were relayed to this one"
    finally:
        peer.stop()


@pytest.mark.timeout(60)
def test_gateway_stop_has_one_deadline_for_all_servers(tmp_path):
    marker = f"toolscript-test-deadline-{os.getpid()}-{tmp_path.name}"
    servers = [silent_server(f"s{i}", marker) for i in range(3)]
    gw = Gateway(Config(servers={s.name: s for s in servers}, files=[], warnings=[]), workspace=str(tmp_path))
    gw.start()
    assert wait_for(lambda: len(pids_with(marker)) == 3)
    started = time.monotonic()
    gw.stop(timeout=2.0)
    # Generous: proves the one deadline holds (three servers joined in turn would take 3x).
    assert time.monotonic() - started < 2.0 * 5
    # The gateway process reaps what is left with kill_child_process_groups();
    # here (pytest's own children include other tests' servers) kill just ours.
    for pid in pids_with(marker):
        os.kill(pid, 9)
    assert wait_for(lambda: not pids_with(marker))


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
