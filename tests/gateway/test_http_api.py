"""The gateway's HTTP surfaces: who may ask (token, Host, Origin), and the MCP endpoint.

The limits on connections and request framing are tested in test_http_api_limits.py.
"""

import http.client
import json
import threading
import time
from urllib.parse import urlsplit

from conftest import missing_prerequisite
from gateway_processes import fixture_server
from toolscript.gateway.client import GatewayClient
from toolscript.mcp.client.session import ClientSession
from toolscript.mcp.client.streamable_http import StreamableHttpTransport


def raw(url, method="GET", path="/health", headers=None, body=None):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(method, parts.path + path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else None


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
