"""What the commands say of the servers taken from Claude Code: where each comes from, and that it stays idle.

``list-servers`` asks a gateway; ``servers check`` and ``doctor`` read the
configuration themselves.  A server of Claude Code's is named by file and
scope, and ``doctor`` does not start one whose tool list is cached: Claude
Code's own copy may be running.
"""

import json
import os

import pytest

from claude_code_files import Layout, lock_entry, read_log
from conftest import run_cli, running_gateway, wait_for
from toolscript.cli import doctor
from toolscript.gateway import toolcache, upstream as upstream_module


@pytest.fixture
def layout(tmp_path, monkeypatch):
    found = Layout(tmp_path)
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", found.state)
    monkeypatch.setattr(upstream_module, "LISTING_DELAY_SECONDS", 0.0)
    return found


def test_list_servers_names_each_servers_source_and_idle_ones(layout, tmp_path):
    log = os.path.join(layout.root, "locked.log")
    layout.claude_json(user={"locked": lock_entry(os.path.join(layout.root, "lock"), log)})
    layout.write_json(os.path.join(layout.repo, ".mcp.json"), {"mcpServers": {"pending": {"command": "/bin/true"}}})
    config = layout.load()
    with running_gateway(list(config.servers.values()), tmp_path, untrusted=config.untrusted) as (gw, url):
        assert wait_for(lambda: gw.upstreams["locked"].state == "idle")
        shown = run_cli("--gateway-url", url, "list-servers", env=layout.env(), cwd=layout.cwd)
        assert shown.returncode == 0, shown.stderr
        rows = {line.split()[0]: line for line in shown.stdout.splitlines() if line.strip()}
        assert "idle" in rows["locked"] and "~/.claude.json (user scope)" in rows["locked"]
        assert "starts when a script calls it" in rows["locked"]
        assert "untrusted" in rows["pending"] and "(project scope)" in rows["pending"]
        listed = json.loads(run_cli("--gateway-url", url, "--json", "list-servers", env=layout.env(), cwd=layout.cwd).stdout)
        (locked,) = [s for s in listed["servers"] if s["name"] == "locked"]
        assert locked["source"] == "~/.claude.json (user scope)" and locked["lazy"] is True and locked["running"] is False


def test_servers_check_names_the_source_and_stores_the_tool_list(layout):
    log = os.path.join(layout.root, "locked.log")
    layout.claude_json(user={"locked": lock_entry(os.path.join(layout.root, "lock"), log)})
    checked = run_cli("servers", "check", env=layout.env(), cwd=layout.cwd)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "from ~/.claude.json (user scope)" in checked.stdout
    assert [event for _, event in read_log(log)] == ["start", "exit"]
    cached = toolcache.load(layout.load().servers["locked"])
    assert [tool["name"] for tool in cached["tools"]] == ["hold", "env"]


def test_doctor_reports_a_cached_claude_code_server_without_starting_it(layout):
    log = os.path.join(layout.root, "locked.log")
    layout.claude_json(user={"locked": lock_entry(os.path.join(layout.root, "lock"), log),
                             "fresh": lock_entry(os.path.join(layout.root, "fresh.lock"), os.path.join(layout.root, "fresh.log"))})
    toolcache.store(layout.load().servers["locked"], [{"name": "hold", "inputSchema": {"type": "object"}}],
                    server_info={"name": "locked", "version": "1.0"})
    lines = {line.check: line for line in doctor.run_checks(environ=layout.env(), cwd=layout.cwd, gateway_url=None)}
    cached = lines["server:locked"]
    assert cached.status == "ok" and "1 tool" in cached.detail and "not started now" in cached.detail
    assert cached.detail.endswith("from ~/.claude.json (user scope)")
    assert read_log(log) == []
    probed = lines["server:fresh"]  # no list yet: doctor lists it (and keeps the list)
    assert probed.status == "ok" and "2 tools" in probed.detail and "from ~/.claude.json (user scope)" in probed.detail
    assert lines["config"].status == "ok" and "2 servers from Claude Code (~/.claude.json)" in lines["config"].detail
