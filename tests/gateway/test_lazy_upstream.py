"""A server taken from Claude Code's configuration: started only to list its tools and for calls, stopped when idle.

Claude Code runs its own copy of each such server.  The servers here are
tests/mcp_servers/lock_server.py, which allows one running copy (an exclusive
lock on a file) and logs every start, so each test can count the copies
toolscript started and check that a copy held elsewhere keeps working.
"""

import json
import os
import subprocess
import sys

import pytest

from claude_code_files import LOCK_SERVER, Layout, lock_entry, read_log
from conftest import running_gateway, wait_for
from toolscript.gateway import toolcache, upstream as upstream_module
from toolscript.gateway.client import GatewayClient
from toolscript.gateway.upstream import IDLE, LazyUpstream


@pytest.fixture
def layout(tmp_path, monkeypatch):
    found = Layout(tmp_path)
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", found.state)  # where the gateway keeps the tool lists
    monkeypatch.setattr(upstream_module, "LISTING_DELAY_SECONDS", 0.0)
    return found


def lock_server_config(layout, *options, name="locked", **extra):
    """The ServerConfig toolscript makes of a lock server in Claude Code's user scope, with its lock and log paths."""
    lock, log = os.path.join(layout.root, f"{name}.lock"), os.path.join(layout.root, f"{name}.log")
    layout.claude_json(user={name: lock_entry(lock, log, *options, **extra)})
    return layout.load().servers[name], lock, log


def starts(log):
    return [pid for pid, event in read_log(log) if event == "start"]


def test_a_cached_tool_list_serves_search_and_stubs_without_starting_the_server(layout, tmp_path):
    server, _lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "hold", "description": "Say which process holds the lock file.",
                              "inputSchema": {"type": "object", "properties": {}}}], server_info={"name": "locked", "version": "1.0"})
    with running_gateway([server], tmp_path) as (gw, url):
        assert gw.wait_for_servers() == []
        upstream = gw.upstreams["locked"]
        assert isinstance(upstream, LazyUpstream) and upstream.state == IDLE and upstream.listed == "cache"
        found = gw.derived.search("which process holds the lock", limit=3, threshold=0.0, servers=None)
        assert [hit["id"] for hit in found][:1] == ["locked__hold"]
        assert "def hold(" in gw.derived.types(lang="python")["code"]
        described = GatewayClient(url).get("/servers")["servers"][1]
        assert described["state"] == IDLE and described["source"] == "~/.claude.json (user scope)"
        assert described["lazy"] is True and described["running"] is False and described["listed"] == "cache"
        assert gw.health()["status"] == "ok"
    assert starts(log) == []


def test_without_a_cached_list_the_server_is_started_once_to_list_and_then_stopped(layout, tmp_path):
    server, _lock, log = lock_server_config(layout)
    with running_gateway([server], tmp_path) as (gw, _url):
        assert gw.wait_for_servers() == []
        upstream = gw.upstreams["locked"]
        assert wait_for(lambda: upstream.state == IDLE and [e for _, e in read_log(log)] == ["start", "exit"])
        assert [t["name"] for t in upstream.tools] == ["hold", "env"] and upstream.listed == "server"
    assert [tool["name"] for tool in toolcache.load(server)["tools"]] == ["hold", "env"]
    # The next gateway (the next session) uses the stored list.
    with running_gateway([server], tmp_path) as (gw, _url):
        assert gw.wait_for_servers() == [] and gw.upstreams["locked"].listed == "cache"
    assert len(starts(log)) == 1


def test_a_changed_entry_is_listed_afresh(layout, tmp_path):
    server, _lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "old_tool", "inputSchema": {"type": "object"}}])
    changed, _lock, _log = lock_server_config(layout, "--name", "renamed")
    assert changed.imported.key != server.imported.key
    with running_gateway([changed], tmp_path) as (gw, _url):
        gw.wait_for_servers()
        assert wait_for(lambda: gw.upstreams["locked"].state == IDLE)
        assert gw.catalog.get("locked__hold") is not None and gw.catalog.get("locked__old_tool") is None
    assert len(starts(log)) == 1


def test_a_call_starts_the_server_and_it_is_stopped_when_idle(layout, tmp_path, monkeypatch):
    monkeypatch.setattr(upstream_module, "IDLE_RELEASE_SECONDS", 0.5)
    server, _lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "hold", "inputSchema": {"type": "object", "properties": {}}}])
    with running_gateway([server], tmp_path) as (gw, _url):
        gw.wait_for_servers()
        first = gw.call("locked__hold", {}, source="test")
        second = gw.call("locked__hold", {}, source="test")
        assert first.ok and second.ok, (first.error, second.error)
        assert first.data["content"][0]["text"] == second.data["content"][0]["text"]  # one copy served both
        assert wait_for(lambda: gw.upstreams["locked"].state == IDLE and read_log(log)[-1][1] == "exit", timeout=10)
        third = gw.call("locked__hold", {}, source="test")
        assert third.ok and third.data["content"][0]["text"] != first.data["content"][0]["text"]
    assert len(starts(log)) == 2


def test_a_call_that_finds_the_tools_changed_refreshes_the_cached_list(layout, tmp_path):
    server, _lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "hold", "inputSchema": {"type": "object", "properties": {}}},
                             {"name": "gone", "inputSchema": {"type": "object", "properties": {}}}])
    with running_gateway([server], tmp_path) as (gw, _url):
        gw.wait_for_servers()
        assert gw.catalog.get("locked__gone") is not None
        assert gw.call("locked__hold", {}, source="test").ok
        assert gw.catalog.get("locked__gone") is None and gw.catalog.get("locked__env") is not None
    assert [tool["name"] for tool in toolcache.load(server)["tools"]] == ["hold", "env"]


def test_a_tool_missing_from_a_cached_list_is_looked_for_on_the_server(layout, tmp_path):
    server, _lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "hold", "inputSchema": {"type": "object", "properties": {}}}])
    with running_gateway([server], tmp_path) as (gw, _url):
        gw.wait_for_servers()
        result = gw.call("locked__env", {}, source="test")
        assert result.ok, result.error
        assert json.loads(result.data["content"][0]["text"])["cwd"] == layout.cwd
        unknown = gw.call("locked__nope", {}, source="test")
        assert not unknown.ok and "locked has: locked__hold, locked__env" in unknown.error["message"]
    assert len(starts(log)) == 1  # the second unknown name did not start it again


def test_a_copy_running_elsewhere_keeps_its_lock_and_toolscripts_call_says_why(layout, tmp_path):
    """Claude Code's copy holds the lock: the gateway never disturbs it, and a call fails with the server's reason."""
    server, lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "hold", "inputSchema": {"type": "object", "properties": {}}}])
    other = subprocess.Popen([sys.executable, LOCK_SERVER, "--lock", lock, "--log", log], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: starts(log) == [other.pid])
        with running_gateway([server], tmp_path) as (gw, _url):
            gw.wait_for_servers()
            refused = gw.call("locked__hold", {}, source="test")
            assert not refused.ok
            message = refused.error["message"]
            assert "the lock is taken" in message and "Claude Code's own copy" in message
            assert gw.upstreams["locked"].tools  # search and stubs still have its tools
            other.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}}\n')
            other.stdin.flush()
            assert f"held by {other.pid}".encode() in other.stdout.readline()
            other.stdin.close()
            other.wait(10)
            again = gw.call("locked__hold", {}, source="test")
            assert again.ok, again.error
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


def test_toolscript_releases_the_server_before_a_copy_elsewhere_needs_it(layout, tmp_path, monkeypatch):
    """A server that locks at its first call (a browser profile): toolscript's copy lets go when idle."""
    monkeypatch.setattr(upstream_module, "IDLE_RELEASE_SECONDS", 0.3)
    server, lock, log = lock_server_config(layout, "--lock-at", "call")
    with running_gateway([server], tmp_path) as (gw, _url):
        gw.wait_for_servers()
        assert gw.call("locked__hold", {}, source="test").ok
        assert wait_for(lambda: gw.upstreams["locked"].state == IDLE, timeout=10)
        other = subprocess.run([sys.executable, LOCK_SERVER, "--lock", lock, "--lock-at", "call"], capture_output=True, timeout=30,
                               input=b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}}\n')
        assert b"held by" in other.stdout and b"isError" not in other.stdout


def test_stopping_the_gateway_stops_a_running_lazy_server(layout, tmp_path):
    server, _lock, log = lock_server_config(layout)
    toolcache.store(server, [{"name": "hold", "inputSchema": {"type": "object", "properties": {}}}])
    with running_gateway([server], tmp_path) as (gw, _url):
        gw.wait_for_servers()
        assert gw.call("locked__hold", {}, source="test").ok
        assert gw.upstreams["locked"].describe()["running"] is True
    assert wait_for(lambda: read_log(log)[-1][1] == "exit", timeout=10)


def test_a_failed_listing_is_reported_and_the_next_call_tries_again(layout, tmp_path):
    server, lock, log = lock_server_config(layout)
    holder_log = os.path.join(layout.root, "holder.log")
    holder = subprocess.Popen([sys.executable, LOCK_SERVER, "--lock", lock, "--log", holder_log], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: starts(holder_log) == [holder.pid])  # it holds the lock
        with running_gateway([server], tmp_path) as (gw, _url):
            gw.wait_for_servers()
            upstream = gw.upstreams["locked"]
            assert upstream.state == "failed" and "the lock is taken" in upstream.stderr_tail
            assert "locked" in gw.derived.names()["unavailable"]
            holder.stdin.close()
            holder.wait(10)
            result = gw.call("locked__hold", {}, source="test")  # listed for the call, then called
            assert result.ok, result.error
            assert gw.catalog.get("locked__hold") is not None
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_claude_code_server_missing_a_variable_is_told_to_export_it(layout):
    """It gets the whole environment: the fix is exporting the variable, not an "env" line."""
    from toolscript.gateway import hints

    layout.claude_json(user={"brave": {"command": "npx", "args": ["-y", "brave-search"]}})
    server = layout.load().servers["brave"]
    fix = hints.missing_variable_hint(server, "Error: BRAVE_API_KEY environment variable is required", environ=layout.env())
    assert fix.startswith("BRAVE_API_KEY is not set: export BRAVE_API_KEY=...") and '"env"' not in fix
    assert "~/.claude.json (user scope)" in fix
    given = layout.load(BRAVE_API_KEY="k").servers["brave"]
    assert hints.missing_variable_hint(given, "BRAVE_API_KEY environment variable is required", environ=layout.env(BRAVE_API_KEY="k")) is None
