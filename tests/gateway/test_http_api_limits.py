"""The gateway's HTTP server (``toolscript.gateway.http_api``) under hostile or careless clients.

Bad framing is refused before any body is read, connections are bounded
(head timeout, a cap that evicts the oldest idle connection, a bounded wait for
a slot), deep JSON is a clear 400, every answer encodes whatever strings it
holds, and a client that hangs up cancels its upstream call.  The MCP
endpoint's own bounds are in tests/mcp/server/test_limits.py.
"""

import http.client
import json
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from conftest import wait_for
from gateway_http import LONG_CALL_TIMEOUT, cancellations, connect, fixture_server, nested, read_until_closed, served, status_of
from toolscript.gateway.client import GatewayClient
from toolscript.http1 import MAX_JSON_DEPTH


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


# -- nothing is read before framing, Host/Origin and token pass ------------------------------------


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


# -- idle timeout and a connection cap -------------------------------------------------------------


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
        # That call's connection is gone before the two below take both slots.
        assert wait_for(lambda: not any(server.open_connections().values()))
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
        # That call's connection is gone before the slow one starts: the busy one below is the slow call's.
        assert wait_for(lambda: not any(server.open_connections().values()))
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


# -- deep JSON, unencodable strings, hanging up cancels --------------------------------------------


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


def test_a_session_name_that_is_not_utf8_does_not_break_health(tmp_path):
    name = b"s\xff".decode("utf-8", "surrogateescape")  # what argv gives for a non-UTF-8 byte
    with served(tmp_path) as (gw, server, url):
        # Gateway cleans session names itself; this checks the HTTP layer's own
        # defence for any string it cannot write as UTF-8.
        gw.session = name
        health = GatewayClient(url).get("/health")
        # Compared as bytes: a surrogate in a failure report would crash pytest-xdist.
        assert health["status"] == "ok" and health["session"].encode("utf-8", "surrogateescape") == b"s\xff"


@pytest.mark.timeout(120)
def test_hanging_up_during_a_call_cancels_it_upstream(tmp_path):
    with served(tmp_path, fixture_server()) as (gw, server, url):
        client = GatewayClient(url)
        assert cancellations(client) == []
        assert wait_for(lambda: not any(server.open_connections().values()))  # the busy one below is the hang's
        parts = urlsplit(url)
        body = json.dumps({"tool": "fixture__hang", "arguments": {}, "timeout": LONG_CALL_TIMEOUT}).encode()
        sock = connect(url)
        sock.sendall(f"POST {parts.path}/call HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        assert wait_for(lambda: server.open_connections().get("busy"))
        sock.close()
        assert wait_for(lambda: cancellations(client), timeout=20), "the upstream call was not cancelled"


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
