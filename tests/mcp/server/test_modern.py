"""MCP 2026-07-28 (the stateless per-request envelope) on the gateway's /mcp endpoint.

The official MCP Python SDK's own client is the judge: in ``mode="auto"`` it
probes ``server/discover`` and, when that answers, speaks the modern envelope
with no ``initialize`` and no session; in ``mode="legacy"`` it does the
handshake.  Both run against one gateway (built-ins + the fixture server)
served from the test process, and against the bare endpoint
(``mcp_fixtures.Provider``, the in-test provider) for progress, logs,
cancellation and ``subscriptions/listen``.  Raw ``http.client`` requests check
the envelope's error rules (codes and HTTP statuses as the SDK's server maps them).

What the SDK client sent first, captured by ``SDK_SCRIPT`` against the gateway
(2026-07-28, ``mode="auto"``); every request is one POST with no Mcp-Session-Id::

    POST  MCP-Protocol-Version: 2026-07-28, Mcp-Method: server/discover
    {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
      "io.modelcontextprotocol/protocolVersion":"2026-07-28",
      "io.modelcontextprotocol/clientInfo":{"name":"mcp","version":"0.1.0"},
      "io.modelcontextprotocol/clientCapabilities":{}}}}
    POST  MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/list
    {"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{...the same three keys...}}}
    POST  MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/call, Mcp-Name: builtin__time.now
    {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"builtin__time.now","arguments":{},"_meta":{...}}}

and in ``mode="legacy"``: ``initialize`` (protocolVersion 2025-11-25, no
version header), ``notifications/initialized`` with the minted
Mcp-Session-Id, a GET stream, then tools/list and tools/call on the session,
and a DELETE at the end.
"""

import asyncio
import http.client
import json
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from conftest import wait_for
from mcp_fixtures import ACCEPT_BOTH, base_tools, eventually, sdk, sdk_tool_names, serve, served  # noqa: F401  (fixtures)
from mcp_servers.launch import FIXTURE
from toolscript.config.load import ServerConfig
from toolscript.gateway.client import GatewayClient


MODERN = "2026-07-28"


VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"


SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


# Run with the test venv's python: the SDK's client against URL in MODE; one JSON report on stdout.
SDK_SCRIPT = r'''
import asyncio, json, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

ROUTING = ("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id")

def dump(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)

async def main(url, mode):
    sent = []

    async def record(request):
        body = await request.aread()
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() in ROUTING}
        sent.append({"method": request.method, "headers": headers, "body": json.loads(body) if body else None})

    report = {"sent": sent}
    async with httpx2.AsyncClient(event_hooks={"request": [record]}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:
            report["protocol_version"] = client.protocol_version
            report["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            report["time_now"] = dump(await client.call_tool("builtin__time.now", {}))
            report["add"] = dump(await client.call_tool("fixture__add", {"a": 2, "b": 3}))
            report["fail"] = dump(await client.call_tool("fixture__fail", {"message": "boom"}))
            try:
                report["unknown"] = {"result": dump(await client.call_tool("fixture__no_such_tool", {}))}
            except MCPError as exc:
                report["unknown"] = {"error": {"code": exc.error.code, "message": exc.error.message}}
    return report

print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
'''


def fixture_server():
    return ServerConfig(name="fixture", type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio"], timeout=10.0)


def run_sdk_client(tmp_path, url, mode):
    script = tmp_path / "sdk_client.py"
    script.write_text(SDK_SCRIPT)
    done = subprocess.run([sys.executable, str(script), url, mode], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def request(method, params=None, request_id=1, version=MODERN):
    """A 2026-07-28 request: the envelope rides in params._meta."""
    params = dict(params or {})
    params["_meta"] = {VERSION_KEY: version, CAPS_KEY: {}, "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def modern_headers(message, **extra):
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": message.get("method", "")}
    name = (message.get("params") or {}).get("name")
    if name is not None:
        headers["Mcp-Name"] = name
    headers.update(extra)
    return headers


def post(port, path, message, headers, accept=ACCEPT_BOTH, raw_headers=(), content_length=None):
    """POST to path; (status, response, JSON body or raw bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    conn.putrequest("POST", path)
    fields = [("Content-Type", "application/json"), ("Accept", accept), ("Content-Length", str(len(body) if content_length is None else content_length))]
    fields += list(headers.items()) + list(raw_headers)
    for name, value in fields:
        conn.putheader(name, value)
    conn.endheaders(body)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    if (resp.getheader("Content-Type") or "").startswith("application/json") and data:
        data = json.loads(data)
    return resp.status, resp, data


# -- the SDK's own clients, both eras, against one gateway ---------------------------------------


@pytest.mark.timeout(120)
def test_sdk_modern_and_handshake_clients_against_the_gateway(gateway, tmp_path):
    sdk()
    gw, url = gateway(fixture_server())
    assert wait_for(lambda: {s["name"]: s["state"] for s in GatewayClient(url).get("/servers")["servers"]}.get("fixture") == "ready")

    modern = run_sdk_client(tmp_path, url + "/mcp", "auto")
    legacy = run_sdk_client(tmp_path, url + "/mcp", "legacy")

    # The modern client discovered, then spoke 2026-07-28: no initialize, no session, ever.
    assert modern["protocol_version"] == MODERN
    first = modern["sent"][0]
    assert first["body"]["method"] == "server/discover"
    assert first["headers"]["mcp-protocol-version"] == MODERN and first["headers"]["mcp-method"] == "server/discover"
    assert first["body"]["params"]["_meta"][VERSION_KEY] == MODERN
    assert all(s["method"] == "POST" for s in modern["sent"])
    assert not any(s["body"]["method"] == "initialize" for s in modern["sent"])
    assert not any("mcp-session-id" in s["headers"] for s in modern["sent"])
    # The handshake-era client did its handshake and got a session.
    assert legacy["protocol_version"] == "2025-11-25"
    assert legacy["sent"][0]["body"]["method"] == "initialize"
    assert any("mcp-session-id" in s["headers"] for s in legacy["sent"][1:])

    for report in (modern, legacy):
        assert "builtin__time.now" in report["tools"] and "fixture__add" in report["tools"]
        assert report["time_now"]["isError"] is False and "iso" in report["time_now"]["structuredContent"]
        assert report["add"]["structuredContent"] == {"sum": 5} and report["add"]["isError"] is False
        assert report["fail"]["isError"] is True and report["fail"]["content"][0]["text"] == "boom"
        assert report["unknown"]["error"]["code"] == -32602 and "fixture__no_such_tool" in report["unknown"]["error"]["message"]
    # Modern results name the server in _meta, as 2026-07-28 servers should.
    assert modern["add"]["_meta"][SERVER_INFO_KEY]["name"] == "toolscript-gateway"
    assert SERVER_INFO_KEY not in legacy["add"].get("_meta", {})


def test_gateway_rules_hold_for_modern_requests(gateway):
    gw, url = gateway(builtin_tools=["time.now"])
    parts = urlsplit(url)
    port, prefix = parts.port, parts.path
    message = request("tools/list")
    status, _, body = post(port, prefix + "/mcp", message, modern_headers(message))
    assert status == 200 and [t["name"] for t in body["result"]["tools"]] == ["builtin__time.now"]
    # The token is still the key: the bare path without it is refused.
    status, _, _ = post(port, "/mcp", message, modern_headers(message))
    assert status == 401
    # A foreign Origin is still refused (DNS rebinding).
    status, _, _ = post(port, prefix + "/mcp", message, modern_headers(message, Origin="http://evil.example"))
    assert status == 403
    # The body limit still applies, before anything is read.
    status, _, _ = post(port, prefix + "/mcp", b"{}", modern_headers(message), content_length=64 * 1024 * 1024)
    assert status == 413


# -- the SDK's modern client against the bare endpoint: progress, logs, cancel, listen -----------


def test_sdk_modern_client_gets_progress_logs_cancellation_and_list_changed(served):
    mcp = sdk()
    from mcp.client.subscriptions import ToolsListChanged

    progress, logs = [], []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async def on_log(params):
        logs.append((params.level, params.logger, params.data))

    async def main():
        async with mcp.Client(served.url, logging_callback=on_log, log_level="info") as client:
            assert client.protocol_version == MODERN
            # page_size=2: cursors work in the modern envelope too
            assert await sdk_tool_names(client) == [t["name"] for t in base_tools()]
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added.structured_content == {"sum": 3} and not added.is_error
            assert added.meta["test/trace"] == "abc"  # the tool's own _meta survives the stamping
            failed = await client.call_tool("fail", {"why": "sdk"})
            assert failed.is_error and failed.content[0].text == "the tool broke: sdk"
            slow = await client.call_tool("slow", {"steps": 2}, progress_callback=on_progress)
            assert slow.content[0].text == "done"
            with pytest.raises(mcp.MCPError) as unknown:
                await client.call_tool("nope", {})
            assert unknown.value.error.code == -32602
            # Cancelling is closing the response: the SDK does that on its own timeout.
            with pytest.raises(mcp.MCPError):
                await client.call_tool("sleep", {"seconds": 10}, read_timeout_seconds=0.3)
            await eventually(served.provider.sleep_cancelled.is_set)
            assert served.provider.sleep_cancelled.is_set()
            # subscriptions/listen replaces the GET stream for list_changed.
            async with client.listen(tools_list_changed=True) as subscription:
                await eventually(served.provider.listener_count)
                served.provider.set_tools(base_tools()[:1])
                event = await asyncio.wait_for(subscription.__anext__(), 10)
                assert isinstance(event, ToolsListChanged)
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]

    asyncio.run(asyncio.wait_for(main(), 30))
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert logs == [("info", "slow", {"step": 1}), ("info", "slow", {"step": 2})]


def test_logs_only_for_requests_that_opt_in(served):
    message = request("tools/call", {"name": "slow", "arguments": {"steps": 1}})
    status, resp, body = post(served.port, "/mcp", message, modern_headers(message))
    # No logLevel in _meta (and no progressToken): nothing to stream, so plain JSON.
    assert status == 200 and resp.getheader("Content-Type") == "application/json"
    assert body["result"]["content"][0]["text"] == "done"


# -- the envelope's rules, over raw HTTP -----------------------------------------------------------


def test_discover_says_what_the_server_speaks(served):
    message = request("server/discover")
    status, resp, body = post(served.port, "/mcp", message, modern_headers(message))
    assert status == 200 and resp.getheader("Mcp-Session-Id") is None
    result = body["result"]
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["instructions"] == "Test instructions."
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "private"
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "test-gateway", "version": "9.9.9"}


def test_tools_list_carries_cache_hints(served):
    message = request("tools/list")
    status, _, body = post(served.port, "/mcp", message, modern_headers(message))
    assert status == 200
    result = body["result"]
    assert [t["name"] for t in result["tools"]] == ["echo", "add"] and "nextCursor" in result
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "private"


def test_unsupported_version_is_32022_with_the_supported_list(served):
    message = request("tools/list", version="2099-01-01")
    status, _, body = post(served.port, "/mcp", message, modern_headers(message, **{"MCP-Protocol-Version": "2099-01-01"}))
    assert status == 400
    assert body["id"] == 1
    assert body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


@pytest.mark.parametrize(
    "headers",
    [
        {"Mcp-Method": "tools/list"},  # the body says tools/call
        {"Mcp-Name": "echo"},  # the body names add
        {"MCP-Protocol-Version": "2025-11-25"},  # disagrees with _meta: routed as handshake-era, no session
    ],
)
def test_routing_headers_must_match_the_body(served, headers):
    message = request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    status, _, body = post(served.port, "/mcp", message, modern_headers(message, **headers))
    assert status == 400
    if "MCP-Protocol-Version" not in headers:
        assert body["error"]["code"] == -32020


def test_a_modern_body_without_headers_is_told_they_are_missing(served):
    message = request("tools/list")
    status, _, body = post(served.port, "/mcp", message, {})
    assert status == 400 and body["error"]["code"] == -32020


def test_a_duplicated_routing_header_is_refused(served):
    message = request("tools/list")
    status, _, body = post(served.port, "/mcp", message, modern_headers(message), raw_headers=[("Mcp-Method", "tools/list")])
    assert status == 400 and body["error"]["code"] == -32020


def test_the_envelope_is_required(served):
    bare = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    status, _, body = post(served.port, "/mcp", bare, modern_headers(bare))
    assert status == 400 and body["id"] == 7 and body["error"]["code"] == -32602
    no_caps = request("tools/list")
    del no_caps["params"]["_meta"][CAPS_KEY]
    status, _, body = post(served.port, "/mcp", no_caps, modern_headers(no_caps))
    assert status == 400 and body["error"]["code"] == -32602 and CAPS_KEY in body["error"]["message"]


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "initialize", "no/such"])
def test_methods_the_revision_does_not_have_are_404(served, method):
    message = request(method)
    status, _, body = post(served.port, "/mcp", message, modern_headers(message))
    assert status == 404 and body["error"]["code"] == -32601


def test_a_tool_name_in_base64_sentinel_matches(served):
    message = request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    status, _, body = post(served.port, "/mcp", message, modern_headers(message, **{"Mcp-Name": "=?base64?ZWNobw==?="}))
    assert status == 200 and body["result"]["content"][0]["text"] == "hi"


def test_notifications_are_acknowledged_and_batches_refused(served):
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    status, _, _ = post(served.port, "/mcp", note, {"MCP-Protocol-Version": MODERN, "Mcp-Method": note["method"]})
    assert status == 202
    status, _, body = post(served.port, "/mcp", [request("tools/list")], {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert status == 400 and body["error"]["code"] == -32600


def test_get_and_delete_are_405_for_modern_clients(served):
    for method in ("GET", "DELETE"):
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
        conn.request(method, "/mcp", headers={"MCP-Protocol-Version": MODERN, "Accept": "text/event-stream"})
        resp = conn.getresponse()
        resp.read()
        conn.close()
        assert resp.status == 405 and resp.getheader("Allow") == "POST"


def test_handshake_sessions_still_work_beside_modern_requests(served):
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    status, resp, body = post(served.port, "/mcp", init, {})
    assert status == 200 and body["result"]["protocolVersion"] == "2025-11-25"
    session = resp.getheader("Mcp-Session-Id")
    message = request("tools/list")
    status, _, _ = post(served.port, "/mcp", message, modern_headers(message))
    assert status == 200
    status, _, body = post(served.port, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    assert status == 200 and body["result"] == {}
    # A handshake-era request without a session is still told so, not served statelessly.
    status, _, body = post(served.port, "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {})
    assert status == 400 and "Mcp-Session-Id" in body["error"]["message"]


def test_mcp_param_headers_must_say_what_the_arguments_say(served):
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "text": {"type": "string"},
        },
    }
    served.endpoint.page_size = 100  # one page, so the SDK sees the annotated tool
    served.provider.set_tools(base_tools() + [{"name": "routed", "description": "Routed by region.", "inputSchema": schema}])
    message = request("tools/call", {"name": "routed", "arguments": {"region": "eu-west", "limit": 42}})

    def call(**headers):
        return post(served.port, "/mcp", message, modern_headers(message, **headers))

    status, _, body = call(**{"Mcp-Param-Region": "eu-west", "Mcp-Param-Limit": "42.0"})  # 42.0 is the integer 42
    assert status == 200 and body["result"]["content"][0]["text"] == "called routed"
    status, _, body = call(**{"Mcp-Param-Region": "=?base64?ZXUtd2VzdA==?=", "Mcp-Param-Limit": "42"})
    assert status == 200
    status, _, body = call(**{"Mcp-Param-Region": "us-east", "Mcp-Param-Limit": "42"})
    assert status == 400 and body["error"]["code"] == -32020 and "Mcp-Param-Region" in body["error"]["message"]
    status, _, body = call(**{"Mcp-Param-Region": "eu-west"})  # Limit is in the body but not in the headers
    assert status == 400 and body["error"]["code"] == -32020 and "Mcp-Param-Limit" in body["error"]["message"]
    # No Mcp-Param-* header at all: nothing could be routed wrongly, so the call is served.
    status, _, body = call()
    assert status == 200
    # The SDK's client mirrors the annotated arguments itself (base64 for non-ASCII) and is served.
    mcp = sdk()

    async def main():
        async with mcp.Client(served.url) as client:
            await client.list_tools()  # the client learns the annotations from the listing
            return await client.call_tool("routed", {"region": "eü west ", "limit": 7})

    result = asyncio.run(asyncio.wait_for(main(), 20))
    assert not result.is_error and result.content[0].text == "called routed"
