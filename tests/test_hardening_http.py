"""The gateway's HTTP server under hostile or careless clients.

Bad framing is refused before any body is read, connections are bounded
(head timeout, a cap that evicts the oldest idle connection), deep JSON is a
clear 400, every answer encodes whatever strings it holds, a client that hangs
up cancels its upstream call, and one helper frames every response head (which
the sandbox runtime's parser reads back).
"""

import contextlib
import http.client
import json
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

import pytest

from conftest import wait_for
from mcp_servers.launch import FIXTURE
from toolscript.codemode import runtime
from toolscript.config.load import Config, ServerConfig
from toolscript.gateway.client import GatewayClient
from toolscript.gateway.http_api import serve
from toolscript.gateway.service import Gateway
from toolscript.http1 import MAX_JSON_DEPTH, response_head


# Far beyond how long the cancellation tests wait, so only a cancellation (not a timeout) reaches the fixture.
LONG_CALL_TIMEOUT = 300.0


def fixture_server(name="fixture", *options):
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio", *options], timeout=LONG_CALL_TIMEOUT)


@contextlib.contextmanager
def served(tmp_path, *servers, session=None, **limits):
    """(gateway, http server, url) for an in-process gateway with these HTTP limits."""
    config = Config(servers={s.name: s for s in servers}, files=[], warnings=[])
    gw = Gateway(config, workspace=str(tmp_path), session=session)
    server, _ = serve(gw, **limits)
    gw.start()
    try:
        yield gw, server, server.url
    finally:
        server.shutdown_all()
        gw.stop()


def connect(url, timeout=10.0):
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
    return sock


def read_until_closed(sock, limit=1 << 20):
    """Everything the server sends until it closes (a reset after its answer counts as closed)."""
    data = b""
    while len(data) < limit:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def status_of(data):
    return int(data.split(b" ", 2)[1])


def keep_sending(sock, stop, pause=0.0):
    """Send body bytes until told to stop or the server closes on us."""
    chunk = b"x" * 1024
    while not stop.is_set():
        try:
            sock.sendall(chunk)
        except OSError:
            return
        if pause:
            time.sleep(pause)


# -- item 1: nothing is read before framing, Host/Origin and token pass -------------------------


@pytest.mark.parametrize(
    "headers, status",
    [
        ("Content-Length: -1\r\n", 400),
        ("Content-Length: abc\r\n", 400),
        ("Content-Length: 5\r\nContent-Length: 5\r\n", 400),
        ("Transfer-Encoding: chunked\r\n", 411),
        ("Content-Length: 1000000\r\n", 401),  # well-formed, but no token: the body is not read either
        ("Content-Length: 99999999999999999999999\r\n", 413),
    ],
)
@pytest.mark.timeout(60)
def test_bad_framing_or_no_token_is_answered_before_the_body_and_closed(tmp_path, headers, status):
    with served(tmp_path) as (gw, server, url):
        port = urlsplit(url).port
        sock = connect(url)
        sock.sendall(f"POST /call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n".encode())
        stop = threading.Event()
        # The client never stops sending: an answer can only come if the gateway does not wait for the body.
        sender = threading.Thread(target=keep_sending, args=(sock, stop, 0.01), daemon=True)
        sender.start()
        try:
            answer = read_until_closed(sock)
        finally:
            stop.set()
            sender.join(10)
            sock.close()
        assert answer, "the gateway never answered"
        assert status_of(answer) == status
        head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
        assert "connection: close" in head


def test_wrong_host_is_refused_without_reading_the_body(tmp_path):
    with served(tmp_path) as (gw, server, url):
        sock = connect(url)
        path = urlsplit(url).path
        sock.sendall(f"POST {path}/call HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 1000000\r\n\r\n".encode())
        answer = read_until_closed(sock)
        sock.close()
        assert status_of(answer) == 403


def test_a_refused_request_still_gets_its_answer_with_a_small_body(tmp_path):
    # The body is left unread; the answer must not be lost to a connection reset.
    with served(tmp_path) as (gw, server, url):
        parts = urlsplit(url)
        for _ in range(20):
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
            conn.request("POST", "/t/wrong/call", body=b'{"tool": "builtin__time.now"}' * 100, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            assert response.status == 401 and b"token" in response.read()
            conn.close()


@pytest.mark.parametrize(
    "extra, status",
    [
        ("".join(f"X-H{i}: v\r\n" for i in range(1000)), 431),  # http.server allows 100 headers
        ("X-Big: " + "a" * 1_000_000 + "\r\n", 431),  # and 64 KiB per line
    ],
    ids=["1000-headers", "1MB-header-line"],
)
def test_http_servers_own_refusals_are_json_through_the_one_head_helper(tmp_path, extra, status):
    with served(tmp_path) as (gw, server, url):
        parts = urlsplit(url)
        sock = connect(url)
        try:
            sock.sendall(f"GET {parts.path}/health HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\n{extra}\r\n".encode())
        except OSError:
            pass  # the gateway may refuse (and close) before we finish sending
        answer = read_until_closed(sock)
        sock.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert status_of(answer) == status
        assert b"Content-Type: application/json" in head and b"Connection: close" in head
        assert json.loads(body)["error"]


# -- item 7: idle timeout and a connection cap ---------------------------------------------


@pytest.mark.timeout(60)
def test_idle_connections_beyond_the_cap_evict_the_oldest_and_a_call_still_works(tmp_path):
    cap = 8
    with served(tmp_path, max_connections=cap) as (gw, server, url):
        baseline = threading.active_count()
        idle = [connect(url) for _ in range(cap + 40)]
        try:
            client = GatewayClient(url)
            result = client.post("/call", {"tool": "builtin__time.now", "arguments": {}})
            assert result["ok"] is True
            # The oldest idle connection was closed to make room; the newest is still open.
            idle[0].settimeout(10)
            assert idle[0].recv(1) == b""
            idle[-1].settimeout(0.2)
            with pytest.raises(socket.timeout):
                idle[-1].recv(1)
            assert wait_for(lambda: sum(server.open_connections().values()) <= cap)
            # One thread per open connection at most, not one per connection ever opened.
            assert wait_for(lambda: threading.active_count() <= baseline + cap + 4), threading.active_count()
        finally:
            for sock in idle:
                sock.close()


def test_stopping_the_server_closes_idle_connections(tmp_path):
    with served(tmp_path) as (gw, server, url):
        idle = [connect(url) for _ in range(3)]
        assert wait_for(lambda: server.open_connections().get("idle") == 3)
        server.shutdown_all()
        for sock in idle:
            assert sock.recv(1) == b""
            sock.close()


@pytest.mark.timeout(120)
def test_every_connection_busy_refuses_a_new_one_with_503_and_hanging_up_frees_them(tmp_path):
    with served(tmp_path, fixture_server(), max_connections=2, admission_wait=0.5) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []  # the upstream is ready
        path = urlsplit(url).path
        port = urlsplit(url).port
        body = json.dumps({"tool": "fixture__hang", "arguments": {}, "timeout": LONG_CALL_TIMEOUT}).encode()
        busy = []
        for _ in range(2):
            sock = connect(url)
            sock.sendall(f"POST {path}/call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            busy.append(sock)
        assert wait_for(lambda: server.open_connections().get("busy") == 2)
        sock = connect(url)
        sock.sendall(f"GET {path}/servers HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        answer = read_until_closed(sock)
        sock.close()
        assert status_of(answer) == 503 and b"connection: close" in answer.lower()
        sock = connect(url)  # a health check needs no slot
        sock.sendall(f"GET {path}/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        answer = read_until_closed(sock)
        sock.close()
        assert status_of(answer) == 200 and b"connection: close" in answer.lower()
        for sock in busy:
            sock.close()  # hanging up cancels the calls, which frees the connections
        assert wait_for(lambda: not server.open_connections().get("busy"))
        assert client.get("/health")["status"] == "ok"


@pytest.mark.timeout(120)
def test_a_burst_beyond_the_cap_waits_for_a_slot_instead_of_failing(tmp_path):
    with served(tmp_path, fixture_server(), max_connections=1, admission_wait=30) as (gw, server, url):
        assert cancellations(GatewayClient(url)) == []  # the upstream is ready
        slow = {}
        worker = threading.Thread(
            target=lambda: slow.update(GatewayClient(url).post("/call", {"tool": "fixture__slow", "arguments": {"steps": 1, "delay": 1.0}}))
        )
        worker.start()
        assert wait_for(lambda: server.open_connections().get("busy") == 1)
        # The only slot is busy: this caller waits for it rather than getting 503.
        assert GatewayClient(url).post("/call", {"tool": "builtin__time.now", "arguments": {}})["ok"] is True
        worker.join(30)
        assert slow["ok"] is True


@pytest.mark.timeout(60)
def test_a_head_trickled_byte_by_byte_is_cut_by_the_head_timeout(tmp_path):
    with served(tmp_path, head_timeout=1.0) as (gw, server, url):
        sock = connect(url)
        started = time.monotonic()
        closed = False
        head = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 1000
        for byte in head:
            try:
                sock.send(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)  # 10 bytes a second: each read is quick, the head never completes
            sock.settimeout(0.001)
            try:
                if sock.recv(1) == b"":
                    closed = True
                    break
            except socket.timeout:
                pass
            except OSError:
                closed = True
                break
        elapsed = time.monotonic() - started
        sock.close()
        assert closed, "the gateway kept a trickling head open"
        assert 0.9 <= elapsed < 10  # the 1 s head timeout fired (bound generous: >= 5x)


@pytest.mark.timeout(60)
def test_an_idle_kept_open_connection_is_closed_after_the_head_timeout(tmp_path):
    with served(tmp_path, head_timeout=1.0) as (gw, server, url):
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        conn.request("GET", parts.path + "/health")
        assert conn.getresponse().read()
        started = time.monotonic()
        assert conn.sock.recv(1) == b""  # closed by the gateway, not by our timeout
        assert 0.9 <= time.monotonic() - started < 10
        conn.close()


# -- item 8: deep JSON, unencodable strings, hanging up cancels --------------------------------


def nested(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [100_000, MAX_JSON_DEPTH + 800])
def test_json_nested_too_deep_is_a_clear_400_on_call(tmp_path, depth):
    with served(tmp_path) as (gw, server, url):
        client = GatewayClient(url)
        parts = urlsplit(url)
        body = '{"tool": "builtin__tools.echo", "arguments": {"x": ' + nested(depth) + "}}"
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        conn.request("POST", parts.path + "/call", body=body.encode(), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = json.loads(response.read())
        conn.close()
        assert response.status == 400
        assert f"nested deeper than {MAX_JSON_DEPTH} levels" in payload["error"]
        assert client.get("/health")["status"] == "ok"


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
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        session = mcp_session(conn, parts.path + "/mcp")
        message = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "builtin__tools.echo", "arguments": {"x": ' + nested(depth) + "}}}"
        response = mcp_post(conn, parts.path + "/mcp", message.encode(), session)
        payload = json.loads(response.read())
        assert response.status == 400
        assert payload["error"]["code"] == -32700 and f"nested deeper than {MAX_JSON_DEPTH} levels" in payload["error"]["message"]
        conn.close()


def test_a_session_name_that_is_not_utf8_does_not_break_health(tmp_path):
    name = b"s\xff".decode("utf-8", "surrogateescape")  # what argv gives for a non-UTF-8 byte
    with served(tmp_path) as (gw, server, url):
        # Gateway cleans session names itself; this checks the HTTP layer's own
        # defence for any string it cannot write as UTF-8.
        gw.session = name
        health = GatewayClient(url).get("/health")
        # Compared as bytes: a surrogate in a failure report would crash pytest-xdist.
        assert health["status"] == "ok" and health["session"].encode("utf-8", "surrogateescape") == b"s\xff"


def cancellations(client):
    result = client.post("/call", {"tool": "fixture__get_cancellations", "arguments": {}})
    return result["data"]["structuredContent"]["cancelled"]


@pytest.mark.timeout(120)
def test_hanging_up_during_a_call_cancels_it_upstream(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []
        parts = urlsplit(url)
        body = json.dumps({"tool": "fixture__hang", "arguments": {}, "timeout": LONG_CALL_TIMEOUT}).encode()
        sock = connect(url)
        sock.sendall(f"POST {parts.path}/call HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        assert wait_for(lambda: server.open_connections().get("busy"))
        sock.close()
        assert wait_for(lambda: cancellations(client), timeout=20), "the upstream call was not cancelled"


@pytest.mark.timeout(120)
def test_hanging_up_during_an_mcp_tools_call_cancels_it_upstream(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        session = mcp_session(conn, parts.path + "/mcp")
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture__hang", "arguments": {}}}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session}
        conn.request("POST", parts.path + "/mcp", body=json.dumps(message).encode(), headers=headers)
        assert wait_for(lambda: server.open_connections().get("busy"))
        conn.sock.close()
        conn.close()
        assert wait_for(lambda: cancellations(client), timeout=20), "the upstream call was not cancelled"


@pytest.mark.timeout(120)
def test_hanging_up_during_an_mcp_batch_cancels_its_call_upstream(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        response = mcp_post(conn, parts.path + "/mcp", init)
        response.read()
        session = response.getheader("Mcp-Session-Id")
        batch = [
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture__hang", "arguments": {}}},
        ]
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session}
        conn.request("POST", parts.path + "/mcp", body=json.dumps(batch).encode(), headers=headers)
        assert wait_for(lambda: server.open_connections().get("busy"))
        conn.sock.close()
        conn.close()
        assert wait_for(lambda: cancellations(client), timeout=20), "the upstream call was not cancelled"


# -- item 16: one helper frames every head, and the sandbox runtime parses it -----------------


class ScriptedSocket:
    """A socket that hands out a fixed byte stream in awkward pieces."""

    def __init__(self, data, piece):
        self.data = data
        self.piece = piece
        self.sent = []

    def sendall(self, data):
        self.sent.append(data)

    def recv(self, size):
        chunk, self.data = self.data[: min(size, self.piece)], self.data[min(size, self.piece):]
        return chunk


def test_response_head_frames_status_headers_and_close():
    head = response_head(404, content_type="application/json", content_length=2, extra=[("Mcp-Session-Id", "abc")], close=True)
    assert head == (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        b"Cache-Control: no-store\r\nMcp-Session-Id: abc\r\nConnection: close\r\n\r\n"
    )
    assert response_head(299, cache_control=None) == b"HTTP/1.1 299 \r\n\r\n"
    with pytest.raises(ValueError):
        response_head(200, extra=[("X", "a\r\nSet-Cookie: b")])


@pytest.mark.parametrize("piece", [1, 7, 65536])
def test_the_sandbox_runtime_parses_what_the_gateway_writes(piece):
    answers = [
        (200, b'{"ok": true, "data": "\xc3\xa9"}', False),
        (202, b"", False),
        (400, b'{"error": "bad"}', False),
        (503, b'{"error": "busy"}', True),
    ]
    stream = b"".join(
        response_head(status, content_type="application/json", content_length=len(body), close=close, extra=[("Date", "x")]) + body
        for status, body, close in answers
    )
    connection = runtime._Connection.__new__(runtime._Connection)
    connection.sock = ScriptedSocket(stream, piece)
    connection.buffer = b""
    connection.used = False
    for status, body, close in answers:
        got_status, headers, got_body = connection.exchange(b"GET / HTTP/1.1\r\n\r\n")
        assert (got_status, got_body) == (status, body)
        assert headers["content-type"] == "application/json"
        assert (headers.get("connection", "").lower() == "close") is close
    assert connection.buffer == b""


# -- MCP batches are bounded: in messages, and in the bytes of their answer ---------------------


def _batch_session(url):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = mcp_post(conn, parts.path + "/mcp", init)
    response.read()
    return conn, parts.path + "/mcp", response.getheader("Mcp-Session-Id")


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


# -- the connection cap full of slow bodies: 503 within the admission wait, /health still answered ---


@pytest.mark.timeout(240)
def test_slow_bodies_holding_every_slot_delay_neither_the_503_nor_health(tmp_path):
    # The gateway's own bounds (256 connections, 5 s admission wait, 60 s per body), 300 slow senders.
    with served(tmp_path) as (gw, server, url):
        parts = urlsplit(url)
        host = f"Host: 127.0.0.1:{parts.port}\r\n"
        head = f"POST {parts.path}/call HTTP/1.1\r\n{host}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n".encode()
        slow = []
        try:
            for _ in range(300):
                sock = connect(url)
                sock.sendall(head + b'{"tool": ')  # and then nothing: the body is due within 60 s
                slow.append(sock)
            assert wait_for(lambda: server.open_connections().get("reading") == server.max_connections, timeout=60)
            # Liveness probes are answered at once, slot or not.
            probe = connect(url, timeout=15)
            probe.sendall(f"GET {parts.path}/health HTTP/1.1\r\n{host}\r\n".encode())
            answer = read_until_closed(probe)
            probe.close()
            assert status_of(answer) == 200 and json.loads(answer.partition(b"\r\n\r\n")[2])["pid"]
            # Anything else waits for a slot and, none freeing, gets 503 (the socket's bounded wait, not a 55 s one).
            other = connect(url, timeout=15)
            other.sendall(f"GET {parts.path}/servers HTTP/1.1\r\n{host}\r\n".encode())
            answer = read_until_closed(other)
            other.close()
            assert status_of(answer) == 503 and b"busy" in answer
        finally:
            for sock in slow:
                sock.close()


def _hold_slots_with_slow_bodies(url, count):
    parts = urlsplit(url)
    head = f"POST {parts.path}/call HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\nContent-Length: 1000\r\n\r\n".encode()
    socks = []
    for _ in range(count):
        sock = connect(url)
        sock.sendall(head + b"{")
        socks.append(sock)
    return socks


@pytest.mark.timeout(120)
def test_newcomers_wait_in_their_own_threads_and_their_number_is_bounded(tmp_path):
    with served(tmp_path, max_connections=2, admission_wait=60) as (gw, server, url):
        held = _hold_slots_with_slow_bodies(url, 2)
        waiting = []
        try:
            assert wait_for(lambda: server.open_connections().get("reading") == 2)
            waiting = [connect(url) for _ in range(2)]  # silent: they wait up to 60 s for a slot
            assert wait_for(lambda: server.open_connections().get("waiting") == 2)
            extra = connect(url, timeout=15)  # one more than may wait: refused at once, not after the others' 60 s
            answer = read_until_closed(extra)
            extra.close()
            assert status_of(answer) == 503
        finally:
            for sock in held + waiting:
                sock.close()


@pytest.mark.timeout(60)
def test_a_newcomer_that_sends_no_request_gets_503_at_its_admission_deadline(tmp_path):
    with served(tmp_path, max_connections=1, admission_wait=0.5) as (gw, server, url):
        held = _hold_slots_with_slow_bodies(url, 1)
        try:
            assert wait_for(lambda: server.open_connections().get("reading") == 1)
            silent = connect(url, timeout=15)
            answer = read_until_closed(silent)
            silent.close()
            assert status_of(answer) == 503 and b"busy" in answer
            assert wait_for(lambda: not server.open_connections().get("waiting"))
        finally:
            for sock in held:
                sock.close()
