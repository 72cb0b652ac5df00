"""One upstream server as the gateway keeps it: restarts, reconnects, tool refreshes, and no process left behind."""

import os
import threading
import time

import pytest

from conftest import wait_for
from gateway_processes import fixture_server, pids_with, silent_server
from mcp_servers.launch import start_fixture
from toolscript.config.load import ServerConfig
from toolscript.gateway import state
from toolscript.gateway.client import GatewayClient
from toolscript.gateway.upstream import Upstream


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


@pytest.mark.timeout(60)
def test_a_list_changed_burst_is_one_refresh_on_the_upstream_worker(gateway):
    gw, _url = gateway(fixture_server())
    gw.wait_for_servers()
    upstream = gw.upstreams["fixture"]
    before = gw.catalog.snapshot().version
    for _ in range(20):
        upstream._tools_changed()
    assert not [t for t in threading.enumerate() if t.name.startswith("refresh-")]
    result = gw.call("fixture__change_tools", {}, source="test")
    assert result.ok, result.error
    assert wait_for(lambda: gw.catalog.get("fixture__extra_tool") is not None)
    assert gw.catalog.snapshot().version > before


@pytest.mark.timeout(60)
def test_upstream_stop_closes_a_session_mid_handshake(tmp_path):
    marker = f"toolscript-test-handshake-{os.getpid()}-{tmp_path.name}"
    upstream = Upstream(silent_server("slow", marker), lambda u: None)
    upstream.start()
    try:
        assert wait_for(lambda: pids_with(marker))
        upstream.stop(time.monotonic() + 10)
        assert wait_for(lambda: not pids_with(marker), timeout=5)
    finally:
        upstream.stop(time.monotonic() + 60)


@pytest.mark.timeout(60)
def test_upstream_closes_the_session_on_session_hands_it(tmp_path, monkeypatch):
    """Our side of the on_session contract, with a stand-in open_session that keeps it."""
    from toolscript.gateway import upstream as upstream_module
    from toolscript.mcp.client.connect import _handshake
    from toolscript.mcp.client.session import ClientSession
    from toolscript.mcp.client.stdio import StdioTransport

    def contract_open_session(server, *, on_tools_changed=None, on_log=None, on_close=None, on_session=None, era=None, auth=None):
        transport = StdioTransport(server.command, server.args, server.env, server.cwd)
        session = ClientSession(transport, on_tools_changed=on_tools_changed, on_log=on_log, on_close=on_close)
        on_session(session)
        return _handshake(session, server.connect_timeout)

    monkeypatch.setattr(upstream_module, "open_session", contract_open_session)
    marker = f"toolscript-test-contract-{os.getpid()}-{tmp_path.name}"
    upstream = Upstream(silent_server("slow", marker), lambda u: None)
    upstream.start()
    try:
        assert wait_for(lambda: pids_with(marker))
        upstream.stop(time.monotonic() + 20)
        assert not pids_with(marker), "stop() left the server of a session mid-handshake running"
        assert upstream.state == "connecting"  # stopping is not a failure
    finally:
        upstream.stop(time.monotonic() + 60)


@pytest.mark.timeout(60)
def test_emergency_exit_kills_every_server_process_group():
    upstream = Upstream(fixture_server(), lambda u: None)
    upstream.start()
    try:
        assert upstream.settled.wait(20) and upstream.state == "ready"
        [session] = upstream._sessions
        pid = session.transport.process.pid
        upstream.kill_now()
        assert wait_for(lambda: session.transport.process.poll() is not None, timeout=10)
        assert not state.pid_alive(pid)
    finally:
        upstream.stop(time.monotonic() + 10)


@pytest.mark.timeout(60)
def test_a_caller_waiting_for_a_connecting_server_wakes_once_the_catalog_has_its_tools():
    """The state turns "ready" before the gateway's catalog takes the tools in; a waiting call must not
    slip into that window and find the server "ready" with no tools."""
    caught = threading.Event()
    catalog = []

    def on_change(upstream):
        if upstream.state == "ready":
            time.sleep(0.5)  # a catalog rebuild (the search part of a large server) takes a while
            catalog.extend(t["name"] for t in upstream.tools)

    upstream = Upstream(fixture_server(), on_change)
    seen = []

    def call_soon():
        caught.set()
        upstream.wait_while_connecting(30)
        seen.append(list(catalog))

    waiter = threading.Thread(target=call_soon)
    waiter.start()
    assert caught.wait(5)
    upstream.start()
    try:
        waiter.join(40)
        assert seen and "echo" in seen[0]
    finally:
        upstream.stop(time.monotonic() + 10)
