"""The MCP server endpoint (``toolscript.mcp.server``) behind a real ThreadingHTTPServer.

An in-test provider (``mcp_fixtures.Provider``) is served on 127.0.0.1 and
driven three ways: with toolscript's own client, with the official MCP Python
SDK (an independent implementation), and with raw ``http.client`` requests for
the transport rules.  Nothing is mocked below the HTTP socket.
"""

import asyncio
import http.client
import json
import socket
import threading
import time

import pytest

from mcp_fixtures import ACCEPT_BOTH, SCHEMA_2020, base_tools, eventually, sdk, sdk_tool_names, serve, served, text_of  # noqa: F401  (fixtures)
from toolscript.mcp import jsonrpc
from toolscript.mcp.client import sse
from toolscript.mcp.client.session import ClientSession
from toolscript.mcp.client.streamable_http import StreamableHttpTransport
from toolscript.mcp.errors import RequestTimeout
from toolscript.mcp.server import streams


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


# -- toolscript's own client -----------------------------------------------------------------------


@pytest.fixture
def client(served):
    events = {"changed": threading.Event(), "logs": []}
    session = ClientSession(
        StreamableHttpTransport(served.url, timeout=5),
        on_tools_changed=events["changed"].set,
        on_log=events["logs"].append,
    )
    session.initialize(timeout=5)
    yield session, served, events
    session.close()


def test_client_handshake(client):
    session, served, _ = client
    assert session.protocol_version == "2025-11-25"
    assert session.server_info == {"name": "test-gateway", "version": "9.9.9"}
    assert session.instructions == "Test instructions."
    assert session.server_capabilities == {"tools": {"listChanged": True}, "logging": {}}
    session.ping()


def test_client_lists_every_page_and_tools_are_kept_whole(client):
    session, served, _ = client
    tools = session.list_tools()
    assert [t["name"] for t in tools] == [t["name"] for t in base_tools()]  # 6 tools over 3 pages of 2
    assert tools[1] == base_tools()[1]
    bare = tools[5]
    assert bare == dict(base_tools()[5], description="")
    assert bare["inputSchema"] == SCHEMA_2020


def test_client_call_results_pass_through(client):
    session, _, _ = client
    assert session.call_tool("echo", {"text": "héllo\nworld"}) == {"content": [{"type": "text", "text": "héllo\nworld"}]}
    added = session.call_tool("add", {"a": 2, "b": 40})
    assert added == {"content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42}, "_meta": {"test/trace": "abc"}}
    failed = session.call_tool("fail", {"why": "on purpose"})
    assert failed == {"content": [{"type": "text", "text": "the tool broke: on purpose"}], "isError": True}
    with pytest.raises(jsonrpc.JsonRpcError) as err:
        session.call_tool("nope")
    assert err.value.code == jsonrpc.INVALID_PARAMS and err.value.message == "Unknown tool: nope"


def test_client_gets_progress_and_logs(client):
    session, _, events = client
    progress = []
    assert text_of(session.call_tool("slow", {"steps": 3}, timeout=5, on_progress=progress.append)) == "done"
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert events["logs"] == [{"level": "info", "logger": "slow", "data": {"step": i}} for i in (1, 2, 3)]

    session.request("logging/setLevel", {"level": "warning"})
    del events["logs"][:]
    session.call_tool("slow", {"steps": 2})
    assert events["logs"] == []
    session.request("logging/setLevel", {"level": "debug"})
    session.call_tool("slow", {"steps": 1})
    assert [m["level"] for m in events["logs"]] == ["debug", "info"]


def test_client_hears_list_changed_on_the_get_stream(client):
    session, served, events = client
    assert wait_for(lambda: served.provider.listener_count() == 1)  # the client's GET stream is open
    served.provider.set_tools(base_tools() + [{"name": "new_tool", "inputSchema": {"type": "object"}}])
    assert events["changed"].wait(5)
    assert session.list_tools()[-1]["name"] == "new_tool"
    assert text_of(session.call_tool("new_tool")) == "called new_tool"


def test_client_timeout_cancels_the_call(client):
    session, served, _ = client
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        session.call_tool("sleep", {"seconds": 10}, timeout=0.5)
    assert served.provider.sleep_cancelled.wait(10)
    assert time.monotonic() - started < 9  # the 0.5 s timeout fired, well before the 10 s sleep ends
    assert text_of(session.call_tool("echo", {"text": "still fine"})) == "still fine"


def test_client_concurrent_calls(client):
    session, _, _ = client
    results = {}

    def work(i):
        for j in range(10):
            results[(i, j)] = session.call_tool("add", {"a": i, "b": j})["structuredContent"]["sum"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {(i, j): i + j for i in range(8) for j in range(10)}


def test_client_close_deletes_the_session(served):
    session = ClientSession(StreamableHttpTransport(served.url, timeout=5))
    session.initialize(timeout=5)
    session_id = session.transport.session_id
    assert wait_for(lambda: served.provider.listener_count() == 1)
    session.close()
    assert wait_for(lambda: served.provider.listener_count() == 0)  # the GET stream ended
    status, _, body = post(served.port, jsonrpc.request(1, "ping"), session=session_id)
    assert status == 404 and body["error"]["message"] == "Session not found"


# -- the official MCP Python SDK as an independent client ------------------------------------------


@pytest.mark.filterwarnings("ignore:ping is removed")
@pytest.mark.parametrize("mode", ["legacy"])  # "auto" negotiates 2026-07-28: tests/mcp/server/test_modern.py
def test_sdk_client(served, mode):
    mcp = sdk()
    progress, logs, notices = [], [], []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async def on_log(params):
        logs.append((params.level, params.logger, params.data))

    async def on_message(message):
        notices.append(getattr(message, "method", None))

    async def main():
        async with mcp.Client(served.url, mode=mode, logging_callback=on_log, message_handler=on_message) as client:
            assert client.protocol_version == "2025-11-25"
            assert await sdk_tool_names(client) == [t["name"] for t in base_tools()]
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert added.structured_content == {"sum": 3} and not added.is_error
            failed = await client.call_tool("fail", {"why": "sdk"})
            assert failed.is_error and failed.content[0].text == "the tool broke: sdk"
            slow = await client.call_tool("slow", {"steps": 2}, progress_callback=on_progress)
            assert slow.content[0].text == "done"
            await client.send_ping()
            # On its own timeout the SDK sends notifications/cancelled.
            with pytest.raises(mcp.MCPError):
                await client.call_tool("sleep", {"seconds": 10}, read_timeout_seconds=0.3)
            await eventually(served.provider.sleep_cancelled.is_set)
            assert served.provider.sleep_cancelled.is_set()
            # The SDK holds the GET stream open; a catalog change reaches it there.
            await eventually(served.provider.listener_count)
            served.provider.set_tools(base_tools()[:1])
            await eventually(lambda: "notifications/tools/list_changed" in notices)
            assert [t.name for t in (await client.list_tools(cache_mode="refresh")).tools] == ["echo"]

    asyncio.run(asyncio.wait_for(main(), 20))
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert logs == [("info", "slow", {"step": 1}), ("info", "slow", {"step": 2})]
    assert "notifications/tools/list_changed" in notices


# -- the transport rules, over raw HTTP ------------------------------------------------------------


def exchange(port, method, body=None, headers=None, timeout=5):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, "/mcp", body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp, data


def post(port, message, session=None, headers=None, accept=ACCEPT_BOTH):
    """POST a message (or raw bytes); (status, headers, decoded JSON body or raw bytes)."""
    fields = {"Content-Type": "application/json", "Accept": accept}
    if session:
        fields["Mcp-Session-Id"] = session
    fields.update(headers or {})
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    resp, data = exchange(port, "POST", body, fields)
    ctype = resp.getheader("Content-Type") or ""
    if ctype.startswith("application/json") and data:
        data = json.loads(data)
    return resp.status, resp, data


def initialize(port, version="2025-11-25"):
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    status, resp, body = post(port, jsonrpc.request(0, "initialize", params))
    assert status == 200, body
    session_id = resp.getheader("Mcp-Session-Id")
    assert session_id and len(session_id) >= 32
    status, _, _ = post(port, jsonrpc.notification("notifications/initialized"), session=session_id)
    assert status == 202
    return session_id, body["result"]


def sse_messages(data):
    return [json.loads(line[len(b"data: "):]) for line in data.split(b"\n") if line.startswith(b"data: ") and line.strip() != b"data:"]


def test_initialize_negotiates_the_version(served):
    for asked, answered in [("2025-11-25", "2025-11-25"), ("2025-03-26", "2025-03-26"), ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")]:
        _, result = initialize(served.port, asked)
        assert result["protocolVersion"] == answered
    assert result["serverInfo"] == {"name": "test-gateway", "version": "9.9.9"}


def test_initialize_with_an_old_session_makes_a_new_one(served):
    old, _ = initialize(served.port)
    status, resp, _ = post(served.port, jsonrpc.request(1, "initialize", {"protocolVersion": "2025-11-25"}), session=old)
    assert status == 200 and resp.getheader("Mcp-Session-Id") not in (None, old)
    assert post(served.port, jsonrpc.request(2, "ping"), session=old)[0] == 200  # the old one lives on


def test_accept_and_content_type_are_checked(served):
    status, _, body = post(served.port, jsonrpc.request(1, "ping"), accept="application/json")
    assert status == 406 and body["error"]["code"] == jsonrpc.INVALID_REQUEST and body["id"] is None
    status, _, _ = post(served.port, jsonrpc.request(1, "ping"), headers={"Content-Type": "text/plain"})
    assert status == 415


def test_bad_json_is_a_parse_error(served):
    status, _, body = post(served.port, b"{not json")
    assert status == 400 and body["error"]["code"] == jsonrpc.PARSE_ERROR and body["id"] is None


def test_session_rules(served):
    status, _, body = post(served.port, jsonrpc.request(1, "tools/list"))
    assert status == 400 and body["error"] == {"code": -32600, "message": "Bad Request: Mcp-Session-Id header required"}
    status, _, body = post(served.port, jsonrpc.request(1, "tools/list"), session="no-such-session")
    assert status == 404 and body["error"] == {"code": -32600, "message": "Session not found"}
    session_id, _ = initialize(served.port)
    bad = {"MCP-Protocol-Version": "1999-01-01"}
    status, _, body = post(served.port, jsonrpc.request(1, "ping"), session=session_id, headers=bad)
    assert status == 400 and "1999-01-01" in body["error"]["message"]
    # Any supported version is accepted, not only the negotiated one.
    status, _, body = post(served.port, jsonrpc.request(1, "ping"), session=session_id, headers={"MCP-Protocol-Version": "2025-03-26"})
    assert status == 200 and body == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_methods(served):
    session_id, _ = initialize(served.port)

    def call(method, params=None):
        status, _, body = post(served.port, jsonrpc.request(7, method, params), session=session_id)
        assert status == 200
        return body

    assert call("ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert call("logging/setLevel", {"level": "error"})["result"] == {}
    assert call("logging/setLevel", {"level": "loud"})["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert call("resources/list")["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
    assert call("tools/list", {"cursor": "garbage"})["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert call("tools/call", {"name": "nope"})["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    assert call("tools/call", {"arguments": {}})["error"]["code"] == jsonrpc.INVALID_PARAMS
    page = call("tools/list")["result"]
    assert [t["name"] for t in page["tools"]] == ["echo", "add"] and page["nextCursor"]
    last = call("tools/list", {"cursor": call("tools/list", {"cursor": page["nextCursor"]})["result"]["nextCursor"]})["result"]
    assert [t["name"] for t in last["tools"]] == ["sleep", "bare"] and "nextCursor" not in last
    assert last["tools"][1]["description"] == ""


def test_notifications_and_responses_get_202(served):
    session_id, _ = initialize(served.port)
    status, resp, data = post(served.port, jsonrpc.notification("notifications/cancelled", {"requestId": 99}), session=session_id)
    assert status == 202 and data == b"" and resp.getheader("Content-Length") == "0"
    assert post(served.port, jsonrpc.notification("notifications/cancelled", {"requestId": [1]}), session=session_id)[0] == 202
    assert post(served.port, jsonrpc.result(5, {}), session=session_id)[0] == 202


def test_malformed_messages_are_invalid_requests(served):
    session_id, _ = initialize(served.port)
    for message in ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, {"jsonrpc": "2.0", "id": 4}, "text", 5):
        status, _, body = post(served.port, message, session=session_id)
        assert status == 400 and body["error"]["code"] == jsonrpc.INVALID_REQUEST, message
    status, _, body = post(served.port, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, session=session_id)
    assert status == 200 and body["result"] == {}


def test_batch_is_answered_with_an_array(served):
    session_id, _ = initialize(served.port, "2025-03-26")
    batch = [
        jsonrpc.request(1, "ping"),
        jsonrpc.notification("notifications/progress", {"progressToken": "x", "progress": 1}),
        jsonrpc.request("two", "tools/call", {"name": "echo", "arguments": {"text": "b"}}),
        {"jsonrpc": "2.0", "id": 3},
    ]
    status, _, body = post(served.port, batch, session=session_id)
    assert status == 200
    assert body == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "two", "result": {"content": [{"type": "text", "text": "b"}]}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32600, "message": "Invalid Request"}},
    ]
    assert post(served.port, [jsonrpc.notification("notifications/initialized")], session=session_id)[0] == 202


def test_other_http_methods_get_405(served):
    resp, _ = exchange(served.port, "PUT", b"{}", {"Content-Type": "application/json"})
    assert resp.status == 405 and resp.getheader("Allow") == "GET, POST, DELETE"
    resp, data = exchange(served.port, "HEAD")
    assert resp.status == 405 and data == b""


def test_get_and_delete_rules(served):
    resp, _ = exchange(served.port, "GET", headers={"Accept": "text/event-stream"})
    assert resp.status == 400
    session_id, _ = initialize(served.port)
    resp, _ = exchange(served.port, "GET", headers={"Accept": "application/json", "Mcp-Session-Id": session_id})
    assert resp.status == 406
    resp, _ = exchange(served.port, "DELETE")
    assert resp.status == 400
    resp, _ = exchange(served.port, "DELETE", headers={"Mcp-Session-Id": "unknown"})
    assert resp.status == 404
    resp, _ = exchange(served.port, "DELETE", headers={"Mcp-Session-Id": session_id})
    assert resp.status == 200
    assert post(served.port, jsonrpc.request(1, "ping"), session=session_id)[0] == 404
    resp, _ = exchange(served.port, "DELETE", headers={"Mcp-Session-Id": session_id})
    assert resp.status == 404


def test_plain_calls_answer_json_and_reporting_calls_stream(served):
    session_id, _ = initialize(served.port)
    status, resp, body = post(served.port, jsonrpc.request(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}}), session=session_id)
    assert status == 200 and resp.getheader("Content-Type") == "application/json"
    assert resp.getheader("Connection") != "close"  # the connection stays usable
    params = {"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": 5}}
    status, resp, data = post(served.port, jsonrpc.request(2, "tools/call", params), session=session_id)
    assert status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    messages = sse_messages(data)
    assert [m.get("method") for m in messages] == ["notifications/message", "notifications/progress"] * 2 + [None]
    assert messages[1]["params"] == {"progressToken": 5, "progress": 1, "total": 2, "message": "step 1"}
    assert messages[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "done"}]}}


def test_silent_slow_calls_switch_to_a_kept_alive_stream(serve, monkeypatch):
    monkeypatch.setattr(streams, "STREAM_AFTER_SECONDS", 0.1)
    monkeypatch.setattr(streams, "KEEPALIVE_SECONDS", 0.2)
    served = serve()
    session_id, _ = initialize(served.port)
    status, resp, data = post(served.port, jsonrpc.request(1, "tools/call", {"name": "sleep", "arguments": {"seconds": 1}}), session=session_id)
    assert status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    assert b": keepalive\n\n" in data
    assert sse_messages(data) == [{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "slept"}]}}]


def open_stream(port, session_id):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session_id})
    conn.raw_sock = conn.sock  # http.client hands the socket to a "Connection: close" response
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    return conn, resp


def read_to_end(resp):
    while resp.readline():
        pass


def test_get_stream_carries_list_changed_and_keepalives(serve, monkeypatch):
    monkeypatch.setattr(streams, "KEEPALIVE_SECONDS", 0.2)
    served = serve()
    session_id, _ = initialize(served.port)
    conn, resp = open_stream(served.port, session_id)
    assert resp.readline() == b": keepalive\n"
    assert served.provider.listener_count() == 1
    served.provider.set_tools([])
    event = next(sse.iter_events(resp.readline))  # keep-alive comments are skipped
    assert json.loads(event.data) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

    # A second GET replaces the first, which ends.
    conn2, resp2 = open_stream(served.port, session_id)
    read_to_end(resp)
    assert wait_for(lambda: served.provider.listener_count() == 1)
    # DELETE ends the session and its stream.
    assert exchange(served.port, "DELETE", headers={"Mcp-Session-Id": session_id})[0].status == 200
    read_to_end(resp2)
    assert wait_for(lambda: served.provider.listener_count() == 0)
    conn.close()
    conn2.close()


def test_a_vanished_get_client_is_noticed(serve, monkeypatch):
    monkeypatch.setattr(streams, "KEEPALIVE_SECONDS", 0.1)
    served = serve()
    session_id, _ = initialize(served.port)
    conn, resp = open_stream(served.port, session_id)
    assert served.provider.listener_count() == 1
    conn.raw_sock.shutdown(socket.SHUT_RDWR)
    resp.close()
    conn.close()
    assert wait_for(lambda: served.provider.listener_count() == 0)
    assert post(served.port, jsonrpc.request(1, "ping"), session=session_id)[0] == 200


def test_delete_cancels_calls_in_flight(served):
    session_id, _ = initialize(served.port)
    answer = {}

    def call():
        answer["post"] = post(served.port, jsonrpc.request(1, "tools/call", {"name": "sleep", "arguments": {"seconds": 10}}), session=session_id)

    thread = threading.Thread(target=call)
    thread.start()
    assert served.provider.sleep_started.wait(5)
    assert exchange(served.port, "DELETE", headers={"Mcp-Session-Id": session_id})[0].status == 200
    assert served.provider.sleep_cancelled.wait(5)
    thread.join(5)
    status, _, data = answer["post"]
    assert status == 200 and sse_messages(data) == []  # a cancelled call gets no answer


def test_idle_sessions_are_dropped(serve):
    served = serve(session_idle_seconds=0.2)
    idle, _ = initialize(served.port)
    listening, _ = initialize(served.port)
    conn, _ = open_stream(served.port, listening)  # an open GET stream is not idleness
    time.sleep(0.5)
    assert post(served.port, jsonrpc.request(1, "ping"), session=idle)[0] == 404
    assert post(served.port, jsonrpc.request(1, "ping"), session=listening)[0] == 200
    conn.close()


def test_close_ends_everything(serve):
    served = serve()
    session_id, _ = initialize(served.port)
    conn, resp = open_stream(served.port, session_id)
    served.endpoint.close()
    while resp.readline():
        pass
    assert served.provider.listener_count() == 0
    assert post(served.port, jsonrpc.request(1, "ping"), session=session_id)[0] == 503
    conn.close()
