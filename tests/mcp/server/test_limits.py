"""The MCP endpoint's bounds, through the gateway's HTTP server: deep JSON, batch size, hanging up.

A body nested too deeply is a -32700 parse error with a 400; a 2025-03-26
batch is bounded in messages and in the bytes of its answer; a client that
hangs up during a tools/call (alone or in a batch) cancels the call upstream.
"""

import http.client
import json
from urllib.parse import urlsplit

import pytest

from conftest import wait_for
from gateway_http import cancellations, fixture_server, nested, served
from toolscript.gateway.client import GatewayClient
from toolscript.http1 import MAX_JSON_DEPTH


def mcp_connection(url, timeout=30):
    """An HTTP connection to the gateway at ``url``, and the path of its MCP endpoint."""
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout), parts.path + "/mcp"


def mcp_post(conn, path, message, session=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", path, body=message if isinstance(message, bytes) else json.dumps(message).encode(), headers=headers)
    return conn.getresponse()


def mcp_session(conn, path):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = mcp_post(conn, path, init)
    response.read()
    session = response.getheader("Mcp-Session-Id")
    mcp_post(conn, path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).read()
    return session


@pytest.mark.parametrize("depth", [100_000, MAX_JSON_DEPTH + 800])
def test_json_nested_too_deep_is_a_clear_400_on_mcp(tmp_path, depth):
    with served(tmp_path) as (gw, server, url):
        conn, endpoint = mcp_connection(url)
        session = mcp_session(conn, endpoint)
        message = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "builtin__tools.echo", "arguments": {"x": ' + nested(depth) + "}}}"
        response = mcp_post(conn, endpoint, message.encode(), session)
        payload = json.loads(response.read())
        assert response.status == 400
        assert payload["error"]["code"] == -32700 and f"nested deeper than {MAX_JSON_DEPTH} levels" in payload["error"]["message"]
        conn.close()


@pytest.mark.timeout(120)
def test_hanging_up_during_an_mcp_tools_call_cancels_it_upstream(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []
        conn, endpoint = mcp_connection(url)
        session = mcp_session(conn, endpoint)
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture__hang", "arguments": {}}}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session}
        conn.request("POST", endpoint, body=json.dumps(message).encode(), headers=headers)
        assert wait_for(lambda: server.open_connections().get("busy"))
        conn.sock.close()
        conn.close()
        assert wait_for(lambda: cancellations(client), timeout=20), "the upstream call was not cancelled"


@pytest.mark.timeout(120)
def test_hanging_up_during_an_mcp_batch_cancels_its_call_upstream(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []
        conn, endpoint = mcp_connection(url)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        response = mcp_post(conn, endpoint, init)
        response.read()
        session = response.getheader("Mcp-Session-Id")
        batch = [
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture__hang", "arguments": {}}},
        ]
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session}
        conn.request("POST", endpoint, body=json.dumps(batch).encode(), headers=headers)
        assert wait_for(lambda: server.open_connections().get("busy"))
        conn.sock.close()
        conn.close()
        assert wait_for(lambda: cancellations(client), timeout=20), "the upstream call was not cancelled"


# -- MCP batches are bounded: in messages, and in the bytes of their answer ---------------------


def _batch_session(url):
    conn, endpoint = mcp_connection(url, timeout=60)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = mcp_post(conn, endpoint, init)
    response.read()
    return conn, endpoint, response.getheader("Mcp-Session-Id")


def _tools_lists(count):
    return [{"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in range(1, count + 1)]


@pytest.mark.timeout(120)
def test_an_mcp_batch_over_the_message_cap_is_one_clear_error(tmp_path):
    cap = 100  # toolscript.mcp.server.endpoint.MAX_BATCH_MESSAGES
    with served(tmp_path) as (gw, server, url):
        conn, path, session = _batch_session(url)
        response = mcp_post(conn, path, _tools_lists(cap + 1), session)
        body = json.loads(response.read())
        assert response.status == 400
        assert body["error"]["code"] == -32600
        assert f"at most {cap} messages" in body["error"]["message"]
        response = mcp_post(conn, path, _tools_lists(cap), session)  # at the cap: answered
        answers = json.loads(response.read())
        assert response.status == 200 and [a["id"] for a in answers] == list(range(1, cap + 1))
        assert all("tools" in a["result"] for a in answers)


@pytest.mark.timeout(120)
def test_an_mcp_batch_answer_stops_growing_at_its_byte_cap(tmp_path):
    with served(tmp_path) as (gw, server, url):
        conn, path, session = _batch_session(url)
        one = len(json.dumps(json.loads(mcp_post(conn, path, _tools_lists(1)[0], session).read()), separators=(",", ":")))
        server.mcp.max_batch_answer_bytes = 3 * one + one // 2  # room for three pages, not four
        response = mcp_post(conn, path, _tools_lists(10) + [{"jsonrpc": "2.0", "id": 11, "method": "ping"}], session)
        raw = response.read()
        answers = json.loads(raw)
        assert response.status == 200
        assert [a["id"] for a in answers] == list(range(1, 12))  # still one answer per request, in order
        assert all("result" in a for a in answers[:3])
        assert "the request ran, but the batch's answer would pass" in answers[3]["error"]["message"]
        assert all(a["error"]["message"].startswith("Internal error: not run,") for a in answers[4:])
        assert len(raw) < 4 * one
