"""The MCP client against real servers: our stdlib fixture over stdio, Streamable HTTP
(SSE and JSON answers) and legacy SSE, plus the reference server-everything from npm.

Every test talks to a real process over a real transport; nothing is mocked.
"""

import http.client
import json
import signal
import sys
import threading
import time

import pytest

import peers
from conftest import missing_prerequisite
from mcp_servers.launch import start_fixture, stdio_command
from toolscript.config.load import ServerConfig
from toolscript.mcp import jsonrpc
from toolscript.mcp.client.connect import open_session
from toolscript.gateway.state import pid_alive
from toolscript.mcp.errors import ConnectionClosed, HttpStatusError, McpError, RequestTimeout, TransportError
from toolscript.mcp.client.stdio import StdioTransport

TRANSPORTS = ["stdio", "http", "http-json", "sse"]
BASE_TOOLS = [
    "echo", "add", "fail", "meta", "slow", "log", "hang", "crash", "change_tools",
    "ping_client", "get_cancellations", "whoami", "expire_session", "big",
]


def stdio_server(*options, timeout=10.0, name="fixture"):
    cmd = stdio_command(*options)
    return ServerConfig(name=name, type="stdio", source="test", command=cmd[0], args=cmd[1:], timeout=timeout)


@pytest.fixture
def connect(fixture_session):
    """connect(transport, *fixture options, **open_session kwargs) -> an initialized session (conftest's fixture_session)."""
    return fixture_session


def text_of(result):
    return "".join(block.get("text", "") for block in result["content"] if block.get("type") == "text")


# -- handshake, listing, calling ---------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_initialize_reports_server(connect, transport):
    session = connect(transport)
    assert session.protocol_version == "2025-11-25"
    assert session.server_info == {"name": "fixture", "version": "1.2.3"}
    assert session.instructions == "Fixture server for toolscript tests."
    assert session.server_capabilities["tools"] == {"listChanged": True}
    assert session.transport.name == ("http" if transport.startswith("http") else transport)
    session.ping()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_older_protocol_versions_are_accepted(connect, version):
    session = connect("stdio", "--protocol-version", version)
    assert session.protocol_version == version
    assert text_of(session.call_tool("echo", {"message": "old"})) == "Echo: old"


def test_unsupported_protocol_version_is_a_clear_error(connect):
    with pytest.raises(McpError) as err:
        connect("stdio", "--protocol-version", "1999-01-01")
    assert "1999-01-01" in str(err.value) and "2025-11-25" in str(err.value)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_tools_follows_pagination(connect, transport):
    session = connect(transport, "--tools", "25", "--page-size", "7")
    names = [tool["name"] for tool in session.list_tools()]
    assert names == BASE_TOOLS + [f"filler_{i:03d}" for i in range(25)]
    add = next(t for t in session.list_tools() if t["name"] == "add")
    assert add["title"] and add["outputSchema"]["required"] == ["sum"]  # tools are kept whole


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_call_results_are_kept_whole(connect, transport):
    session = connect(transport)
    assert session.call_tool("echo", {"message": "héllo\nworld"}) == {"content": [{"type": "text", "text": "Echo: héllo\nworld"}]}
    added = session.call_tool("add", {"a": 2, "b": 40})
    assert added["structuredContent"] == {"sum": 42} and text_of(added) == "42"
    failed = session.call_tool("fail", {"message": "nope"})
    assert failed["isError"] is True and text_of(failed) == "nope"
    assert session.call_tool("meta")["_meta"] == {"fixture/trace": "abc"}
    assert len(text_of(session.call_tool("big", {"size": 300_000}))) == 300_000


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_tool_is_a_protocol_error(connect, transport):
    session = connect(transport)
    with pytest.raises(jsonrpc.JsonRpcError) as err:
        session.call_tool("no_such_tool")
    assert err.value.code == jsonrpc.INVALID_PARAMS and "no_such_tool" in err.value.message


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_concurrent_calls_are_matched_to_their_answers(connect, transport):
    session = connect(transport)
    results = {}

    def call(i):
        results[i] = text_of(session.call_tool("echo", {"message": str(i)}))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {i: f"Echo: {i}" for i in range(20)}


# -- notifications ------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])  # JSON answers cannot carry progress
def test_progress_reaches_the_caller(connect, transport):
    session = connect(transport)
    seen = []
    result = session.call_tool("slow", {"steps": 3, "delay": 0.01}, on_progress=seen.append)
    assert text_of(result) == "done after 3 steps"
    assert [(p["progress"], p["total"], p["message"]) for p in seen] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_no_progress_token_without_a_callback(connect):
    session = connect("stdio")
    # The fixture only sends progress when a token was given; none must arrive.
    seen = []
    session.on_notification = seen.append
    session.call_tool("slow", {"steps": 2, "delay": 0.01})
    assert not [m for m in seen if m["method"] == "notifications/progress"]


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
def test_log_messages_reach_the_callback(connect, transport):
    logs = []
    session = connect(transport, on_log=logs.append)
    assert text_of(session.call_tool("log", {"count": 3})) == "logged 3"
    deadline = time.monotonic() + 5
    while len(logs) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [entry["data"] for entry in logs] == ["log message 1", "log message 2", "log message 3"]
    assert all(entry["level"] == "info" and entry["logger"] == "fixture" for entry in logs)


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
def test_list_changed_reaches_the_callback_and_the_new_tool_is_listed(connect, transport):
    changed = threading.Event()
    session = connect(transport, on_tools_changed=changed.set)
    if transport == "http":
        time.sleep(0.3)  # let the GET stream open so the notification travels on it
    assert text_of(session.call_tool("change_tools")) == "tools changed"
    assert changed.wait(5)
    assert "extra_tool" in [t["name"] for t in session.list_tools()]


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
def test_server_requests_are_answered(connect, transport):
    session = connect(transport)
    answers = json.loads(text_of(session.call_tool("ping_client")))
    assert answers["ping"] == {}
    assert answers["sampling"]["code"] == jsonrpc.METHOD_NOT_FOUND


# -- timeouts and cancellation ----------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_timeout_sends_cancellation(connect, transport):
    session = connect(transport)
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as err:
        session.call_tool("hang", timeout=0.5)
    assert time.monotonic() - started < 5  # the 0.5 s timeout fired (hang never answers)
    assert "'hang'" in str(err.value) and "0.5s" in str(err.value)
    deadline = time.monotonic() + 5
    cancelled = []
    while not cancelled and time.monotonic() < deadline:
        cancelled = session.call_tool("get_cancellations")["structuredContent"]["cancelled"]
        time.sleep(0.05)
    assert len(cancelled) == 1 and isinstance(cancelled[0], int)
    # The session is still usable after a timeout.
    assert text_of(session.call_tool("echo", {"message": "after"})) == "Echo: after"


# -- HTTP specifics --------------------------------------------------------------------------


def test_http_headers_session_and_version_are_sent(connect):
    session = connect("http", "--require-header", "Authorization=Bearer t0ken", headers={"Authorization": "Bearer t0ken"})
    me = session.call_tool("whoami")["structuredContent"]
    assert me["headers"]["authorization"] == "Bearer t0ken"
    assert me["headers"]["mcp-protocol-version"] == "2025-11-25"
    assert me["headers"]["mcp-session-id"] == session.transport.session_id
    assert me["clientInfo"]["name"] == "toolscript"


def test_http_wrong_credentials_name_the_fix(connect):
    with pytest.raises(HttpStatusError) as err:
        connect("http", "--require-header", "Authorization=Bearer right", headers={"Authorization": "Bearer wrong"})
    assert err.value.status == 401
    assert "HTTP 401" in str(err.value) and "headers" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("transport", ["http", "http-json"])
def test_http_reinitializes_when_the_session_expires(connect, transport):
    session = connect(transport)
    first = session.transport.session_id
    assert text_of(session.call_tool("expire_session")) == "expired"
    assert text_of(session.call_tool("echo", {"message": "again"})) == "Echo: again"
    assert session.transport.session_id not in (None, first)


def test_http_close_deletes_the_session():
    peer = start_fixture("http")
    try:
        server = ServerConfig(name="f", type="http", source="test", url=peer.url)
        session = open_session(server)
        session_id = session.transport.session_id
        session.close()
        conn = http.client.HTTPConnection("127.0.0.1", peer.port, timeout=5)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session_id})
        assert conn.getresponse().status == 404
    finally:
        peer.stop()


def test_http_falls_back_to_legacy_sse():
    peer = start_fixture("sse")
    try:
        server = ServerConfig(name="f", type="http", source="test", url=peer.url)  # an sse server, configured as http
        with open_session(server) as session:
            assert session.transport.name == "sse"
            assert text_of(session.call_tool("echo", {"message": "fb"})) == "Echo: fb"
    finally:
        peer.stop()


def test_http_connection_refused_is_one_line():
    port = peers.free_port()
    server = ServerConfig(name="f", type="http", source="test", url=f"http://127.0.0.1:{port}/mcp", timeout=3)
    with pytest.raises(TransportError) as err:
        open_session(server)
    assert "connection refused" in str(err.value) and f":{port}/mcp" in str(err.value)


def test_http_crash_mid_call_fails_the_call(connect):
    session = connect("http")
    with pytest.raises(McpError):
        session.call_tool("crash", timeout=10)


# -- stdio specifics --------------------------------------------------------------------------


def test_stdio_crash_mid_call_reports_status_and_stderr(connect):
    session = connect("stdio")
    with pytest.raises(ConnectionClosed) as err:
        session.call_tool("crash", timeout=10)
    assert "exited with status 3" in str(err.value)
    assert "fixture crashing on purpose" in str(err.value)
    with pytest.raises(ConnectionClosed):
        session.call_tool("echo", {"message": "dead"})  # later calls fail fast


def test_stdio_garbage_on_stdout_is_skipped(connect):
    session = connect("stdio", "--garbage")
    assert text_of(session.call_tool("echo", {"message": "clean"})) == "Echo: clean"
    assert session.transport.garbage_lines()  # kept for diagnostics


def test_stdio_server_that_only_prints_garbage_times_out_with_the_reason():
    code = "import sys, time; print('Welcome to my server!', flush=True); time.sleep(30)"
    server = ServerConfig(name="g", type="stdio", source="test", command=sys.executable, args=["-c", code], timeout=1)
    with pytest.raises(RequestTimeout) as err:
        open_session(server)
    assert "no answer to initialize within 1s" in str(err.value)
    assert "Welcome to my server!" in str(err.value)


def test_stdio_command_not_found():
    server = ServerConfig(name="m", type="stdio", source="test", command="toolscript-no-such-command-xyz")
    with pytest.raises(TransportError) as err:
        open_session(server)
    assert str(err.value).startswith("command not found: 'toolscript-no-such-command-xyz'")


def test_stdio_exit_at_start_reports_status_and_stderr():
    with pytest.raises(ConnectionClosed) as err:
        open_session(stdio_server("--exit-at-start", "7"))
    assert "exited with status 7" in str(err.value)
    assert "fatal: fixture configured to exit" in str(err.value)
    assert err.value.stderr_tail.endswith("fatal: fixture configured to exit")


def test_stdio_stderr_is_drained_so_a_chatty_server_does_not_block(connect):
    # 200k lines (~5 MB) would fill a pipe nobody reads and deadlock the server.
    session = connect("stdio", "--stderr-lines", "200000", timeout=30)
    assert text_of(session.call_tool("echo", {"message": "x"})) == "Echo: x"
    assert len(session.transport.stderr_tail().encode()) <= 16 * 1024
    assert "stderr noise line 199999" in session.transport.stderr_tail()


def test_stdio_env_is_a_safe_subset_plus_configured(monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_TEST_SECRET", "leak-me")
    code = "import json, os, sys; sys.stdout.write(json.dumps(dict(os.environ)))"
    transport = StdioTransport(sys.executable, ["-c", code], env={"MINE": "1"})
    assert transport.env["MINE"] == "1" and "PATH" in transport.env
    assert "TOOLSCRIPT_TEST_SECRET" not in transport.env


def test_stdio_close_kills_stubborn_servers_and_their_children(tmp_path):
    # A server that answers initialize, ignores stdin EOF and SIGTERM, and has a child.
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import json, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        # Refuse the server/discover probe (and anything else) until initialize.
        "for line in sys.stdin:\n"
        "    req = json.loads(line)\n"
        "    if req.get('method') == 'initialize': break\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'error': {'code': -32601, 'message': 'Method not found'}}), flush=True)\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'result': {'protocolVersion': '2025-11-25', 'capabilities': {}, 'serverInfo': {'name': 's', 'version': '1'}}}), flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )
    server = ServerConfig(name="s", type="stdio", source="test", command=sys.executable, args=[str(script)])
    session = open_session(server)
    proc = session.transport.process
    child = int(pidfile.read_text())
    started = time.monotonic()
    session.close()
    # SIGTERM is ignored: only the SIGKILL after two 2 s grace periods ends it (generous bound).
    assert time.monotonic() - started < 30
    assert proc.poll() == -signal.SIGKILL  # reaped: no zombie
    deadline = time.monotonic() + 3
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(child)


def test_stdio_close_is_prompt_for_a_well_behaved_server(connect):
    session = connect("stdio")
    proc = session.transport.process
    session.close()
    # It exited on its own when its stdin closed (status 0), not after a SIGTERM/SIGKILL grace
    # period; how long close() takes is measured by bench/mcp_client.py.
    assert proc.poll() == 0


# -- the reference server from npm, over all three transports --------------------------------


@pytest.fixture(params=["stdio", "streamableHttp", "sse"])
def everything(request):
    try:
        if request.param == "stdio":
            cmd = peers.everything_stdio_command()
            yield ServerConfig(name="everything", type="stdio", source="test", command=cmd[0], args=cmd[1:], timeout=20)
            return
        peer = peers.start_everything(request.param)
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    try:
        kind = "http" if request.param == "streamableHttp" else "sse"
        yield ServerConfig(name="everything", type=kind, source="test", url=peer.url, timeout=20)
    finally:
        peer.stop()


def test_server_everything(everything):
    changed = threading.Event()
    with open_session(everything, on_tools_changed=changed.set) as session:
        assert session.protocol_version == "2025-11-25"
        assert session.server_info["name"] == "mcp-servers/everything"
        assert session.transport.name == everything.type
        names = {tool["name"] for tool in session.list_tools()}
        assert {"echo", "get-structured-content", "trigger-long-running-operation", "get-sum"} <= names
        assert text_of(session.call_tool("echo", {"message": "ref"})) == "Echo: ref"
        structured = session.call_tool("get-structured-content", {"location": "New York"})
        assert set(structured["structuredContent"]) >= {"temperature", "conditions"}
        assert json.loads(text_of(structured)) == structured["structuredContent"]
        progress = []
        session.call_tool("trigger-long-running-operation", {"duration": 0.3, "steps": 3}, on_progress=progress.append)
        assert [p["progress"] for p in progress] == [1, 2, 3]
        # The TypeScript SDK reports an unknown tool as an isError result, not a protocol error.
        try:
            missing = session.call_tool("no-such-tool")
            assert missing.get("isError") is True
        except jsonrpc.JsonRpcError as err:
            assert err.code == jsonrpc.INVALID_PARAMS
        session.ping()
        if everything.type != "http":  # over HTTP it travels on the GET stream, if the server sends it at all
            assert changed.wait(5)


def test_server_everything_survives_a_timeout(everything):
    with open_session(everything) as session:
        with pytest.raises(RequestTimeout):
            session.call_tool("trigger-long-running-operation", {"duration": 5, "steps": 5}, timeout=0.3)
        assert text_of(session.call_tool("echo", {"message": "still here"})) == "Echo: still here"
