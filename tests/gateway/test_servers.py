"""``toolscript servers check`` (``servers.probe_all``) end to end: the built pyz, run isolated (``python3 -I``),
against server-everything on stdio, Streamable HTTP and legacy SSE, plus our fixture
servers failing in the ways users meet (exit at start, hang, wrong credentials); and
``servers.probe`` of one server in process.
"""

import json
import os
import subprocess
import sys

import pytest

import peers
from conftest import missing_prerequisite
from mcp_servers.launch import FIXTURE, start_fixture, stdio_command
from toolscript.config.load import ServerConfig

@pytest.fixture(scope="module")
def everything_peers():
    try:
        entry = peers.everything_entry()
        http_peer = peers.start_everything("streamableHttp")
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    sse_peer = peers.start_everything("sse")
    yield entry, http_peer, sse_peer
    http_peer.stop()
    sse_peer.stop()


def check(pyz, cwd, *args):
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-I", pyz, "servers", "check", *args],
        cwd=str(cwd), env=env, capture_output=True, text=True, timeout=120,
    )


def test_all_three_transports_connect(pyz, everything_peers, tmp_path):
    entry, http_peer, sse_peer = everything_peers
    config = {"mcpServers": {
        "everything-stdio": {"command": "node", "args": [entry, "stdio"]},
        "everything-http": {"url": http_peer.url},
        "everything-sse": {"type": "sse", "url": sse_peer.url},
    }}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    result = check(pyz, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for name, transport in (("everything-stdio", "stdio"), ("everything-http", "http"), ("everything-sse", "sse")):
        line = next(l for l in lines if l.startswith(name + " "))
        assert line.split()[1:4] == ["ok", transport, "2025-11-25"], line
        # One of its 13 tools needs tasks, which toolscript does not do: it is hidden (servers.visible_tools).
        assert "mcp-servers/everything" in line and " 12 tools " in line, line
    assert lines[-1] == "3 of 3 servers connected"

    as_json = json.loads(check(pyz, tmp_path, "--json").stdout)
    assert [(r["name"], r["ok"], r["transport"], r["tools"], r["toolsTotal"], r["hidden"]) for r in as_json] == [
        (name, True, transport, 12, 13, {"needs tasks": 1})
        for name, transport in (("everything-stdio", "stdio"), ("everything-http", "http"), ("everything-sse", "sse"))
    ]
    assert all(r["server"]["name"] == "mcp-servers/everything" and r["seconds"] > 0 for r in as_json)


def test_include_and_exclude_tools_shape_the_count(pyz, everything_peers, tmp_path):
    entry, _, _ = everything_peers
    config = {"mcpServers": {"e": {"command": "node", "args": [entry, "stdio"], "includeTools": ["get-*", "echo"], "excludeTools": ["get-env"]}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    [report] = json.loads(check(pyz, tmp_path, "--json").stdout)
    assert report["toolsTotal"] == 13
    # echo + get-annotated-message, get-resource-links, get-resource-reference, get-structured-content, get-sum, get-tiny-image
    assert report["tools"] == 7


def test_failures_are_reported_per_server(pyz, tmp_path):
    http_peer = start_fixture("http", "--require-header", "Authorization=Bearer right")
    try:
        config = {"mcpServers": {
            "good": {"command": sys.executable, "args": [FIXTURE, "stdio"]},
            "dies": {"command": sys.executable, "args": [FIXTURE, "stdio", "--exit-at-start", "5"]},
            "silent": {"command": sys.executable, "args": ["-c", "import time; time.sleep(30)"], "timeout": 1},
            "denied": {"url": http_peer.url, "headers": {"Authorization": "Bearer wrong"}},
            "off": {"command": "nothing-here", "disabled": True},
        }}
        (tmp_path / ".toolscript.json").write_text(json.dumps(config))
        result = check(pyz, tmp_path)
        out = result.stdout
        assert result.returncode == 1
        assert "off" not in [l.split()[0] for l in out.splitlines() if l.strip()]  # disabled servers are not checked
        assert "exited with status 5" in out and "| fatal: fixture configured to exit" in out
        assert "no answer to initialize within 1s" in out
        assert "HTTP 401" in out and "headers" in out
        assert out.splitlines()[-1] == "1 of 4 servers connected; 3 failed"

        # Naming a server checks only it (even a disabled one); exit 0 when it connects.
        only = check(pyz, tmp_path, "good")
        assert only.returncode == 0 and only.stdout.splitlines()[-1] == "1 of 1 servers connected"
    finally:
        http_peer.stop()


def test_probe_reports_hidden_tools(tmp_path):
    from toolscript.gateway.servers import probe

    cmd = stdio_command()
    server = ServerConfig(name="f", type="stdio", source="test", command=cmd[0], args=cmd[1:], exclude_tools=["crash", "hang"])
    report = probe(server)
    assert report["ok"] and report["toolsTotal"] == report["tools"] + 2
    assert report["hidden"] == {"includeTools/excludeTools": 2}
