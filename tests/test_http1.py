"""toolscript.http1: the response heads both servers write, and the client's one request with its bounded answer.

The server side: one helper frames every response head, and the sandbox runtime's parser
reads it back.  The client side: each test runs a small socket server on 127.0.0.1 that
answers with exactly the bytes the test gives (cut into pieces where it matters), so
framing, caps and broken answers can be tried that no real server would send.
"""

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterator, List

import pytest

from conftest import REPO_ROOT
from connect_proxy import ConnectProxy
from loopback import Loopback, read_head
from toolscript import http1
from toolscript.codemode import runtime
from toolscript.http1 import response_head


# --- the servers' response heads ------------------------------------------------------------


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


# --- the client ---------------------------------------------------------------------------


class Server(Loopback):
    """Accepts connections; each gets ``answer(conn, request)``; ``requests`` is what arrived."""

    def __init__(self, answer: Callable[[socket.socket, bytes], None]) -> None:
        self.answer = answer
        self.requests: List[bytes] = []
        self.sent: List[int] = []  # bytes ``stream`` got rid of before the client hung up
        super().__init__(self._reply)

    def _reply(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        with conn:
            try:
                data = read_head(conn)
                self.requests.append(data)
                self.answer(conn, data)
            except OSError:
                pass


@contextlib.contextmanager
def serving(answer: Any) -> Iterator[Server]:
    """A server answering every request with ``answer``: bytes, a list of pieces, or a function."""
    if callable(answer):
        server = Server(answer)
    else:
        pieces = answer if isinstance(answer, list) else [answer]

        def send(conn: socket.socket, request: bytes) -> None:
            for piece in pieces:
                conn.sendall(piece)
                if len(pieces) > 1:
                    time.sleep(0.02)

        server = Server(send)
    try:
        yield server
    finally:
        server.close()


def get(server: Server, max_body: int = 1 << 20, **kw: Any) -> http1.Response:
    kw.setdefault("timeout", 10)
    return http1.request("127.0.0.1", server.port, kw.pop("method", "GET"), "/t/x/health", max_body=max_body, **kw)


@contextlib.contextmanager
def streaming(total: int, head: bytes = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n") -> Iterator[Server]:
    """A server sending ``head`` then up to ``total`` bytes; ``sent`` says how many left before the client hung up."""
    sent: List[int] = []

    def send(conn: socket.socket, request: bytes) -> None:
        count = 0
        try:
            conn.sendall(head)
            block = b"x" * 65536
            while count < total:
                conn.sendall(block)
                count += len(block)
        except OSError:
            pass  # the client hung up
        finally:
            sent.append(count)

    with serving(send) as server:
        server.sent = sent
        yield server


def test_the_client_reads_what_the_servers_write() -> None:
    body = b'{"error": "busy"}'
    head = response_head(503, content_type="application/json", content_length=len(body), extra=[("Retry-After", "1")], close=True)
    with serving([head, body]) as server:
        response = get(server)
    assert response.status == 503 and response.body == body
    assert response.headers["retry-after"] == "1" and response.headers["cache-control"] == "no-store"


# --- the client: reading an answer ---------------------------------------------------------


def test_a_content_length_body_is_read_and_the_request_is_framed() -> None:
    with serving(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\": true}trailing") as server:
        response = http1.request(
            "127.0.0.1", server.port, "POST", "/t/x/call", max_body=1024, timeout=10,
            headers={"Content-Type": "application/json", "Content-Length": "999", "Connection": "keep-alive"},
            body=b"{}",
        )
        [request] = server.requests
    assert response == http1.Response(200, {"content-type": "application/json", "content-length": "11"}, b"{\"ok\": true")
    lines = request.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    assert lines[0] == "POST /t/x/call HTTP/1.1"
    assert sorted(lines[1:]) == sorted([f"Host: 127.0.0.1:{server.port}", "Content-Type: application/json",
                                        "Content-Length: 2", "Connection: close"])  # the caller's framing fields dropped


def test_a_chunked_body_split_anywhere_is_read() -> None:
    body = b"0123456789abcdefghij" * 3
    chunked = b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (20, body[:20], 40, body[20:])
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked
    cuts = [5, 30, 52, 60, len(raw) - 8]
    with serving([raw[a:b] for a, b in zip([0] + cuts, cuts + [len(raw)])]) as server:
        assert get(server).body == body


def test_a_body_without_framing_runs_to_the_end_of_the_stream_after_an_interim_answer() -> None:
    with serving([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nX-A: 1\r\n", b"\r\nall of it"]) as server:
        response = get(server)
    assert response.status == 201 and response.headers == {"x-a": "1"} and response.body == b"all of it"


@pytest.mark.parametrize("method, status", [("HEAD", 200), ("GET", 204)])
def test_no_body_is_read_for_head_or_204(method: str, status: int) -> None:
    # The server keeps the connection open: reading a body would wait for the timeout.
    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 50\r\n\r\n" % status)
        time.sleep(2)

    with serving(answer) as server:
        response = get(server, method=method, timeout=30)
    assert response.status == status and response.body == b""


# --- caps ----------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_an_endless_body_is_cut_off_at_the_cap_with_an_error_naming_it() -> None:
    total = 48 * 1024 * 1024
    with streaming(total) as server:
        with pytest.raises(http1.TooLarge) as caught:
            get(server, max_body=1024 * 1024)
    assert str(caught.value) == "the answer is larger than the 1 MiB limit" and caught.value.limit == 1024 * 1024
    assert server.sent and server.sent[0] < total  # the rest was never read


def test_a_body_that_came_with_the_head_counts_against_the_cap() -> None:
    # One packet: the head and an unframed body past the cap, then the server hangs up.
    with serving(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 2000) as server:
        with pytest.raises(http1.TooLarge):
            get(server, max_body=1000)


def test_a_content_length_over_the_cap_is_refused_before_the_body_comes() -> None:
    with serving(b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n") as server:
        with pytest.raises(http1.TooLarge) as caught:
            get(server, max_body=1000)
    assert "1000 bytes limit" in str(caught.value)


def test_chunk_sizes_over_the_cap_are_refused_before_the_data_comes() -> None:
    with serving(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n") as server:
        with pytest.raises(http1.TooLarge):
            get(server, max_body=1023)


@pytest.mark.timeout(60)
def test_endless_headers_are_cut_off_at_the_head_cap() -> None:
    with streaming(8 * 1024 * 1024, head=b"HTTP/1.1 200 OK\r\nX-Long: ") as server:
        with pytest.raises(http1.Malformed) as caught:
            get(server)
    assert "64 KiB" in str(caught.value) and not isinstance(caught.value, http1.TooLarge)


# --- broken answers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, words",
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "ended early"),
        (b"HTTP/1.1 2OO OK\r\n\r\n", "not HTTP"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "inside the answer's headers"),
    ],
    ids=["short-body", "letters-in-status", "bad-chunk", "bad-length", "cut-in-headers"],
)
def test_a_broken_answer_is_malformed(answer: bytes, words: str) -> None:
    with serving(answer) as server:
        with pytest.raises(http1.Malformed) as caught:
            get(server)
    assert words in str(caught.value)


def test_a_server_that_is_not_http_is_recognised_at_once() -> None:
    # An SSH server says its banner and waits for ours: no blank line ever comes.
    def banner(conn: socket.socket, request: bytes) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        time.sleep(5)

    with serving(banner) as server:
        with pytest.raises(http1.Malformed) as caught:
            get(server, timeout=30)
    assert "not HTTP" in str(caught.value) and "SSH-2.0" in str(caught.value)


def test_a_connection_closed_before_any_answer_is_dropped() -> None:
    with serving(b"") as server:
        with pytest.raises(http1.Dropped) as caught:
            get(server)
    assert isinstance(caught.value, OSError)  # callers that treat it as a connection error may


# --- time -----------------------------------------------------------------------------------------


def test_a_silent_server_is_a_timeout() -> None:
    with serving(lambda conn, request: time.sleep(3)) as server:
        with pytest.raises(socket.timeout):
            get(server, timeout=0.3)


@pytest.mark.timeout(60)
def test_a_trickling_answer_cannot_outlast_the_deadline() -> None:
    # Every piece comes well within the per-wait timeout; only the overall deadline stops it.
    pieces = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"] + [b"1\r\nx\r\n"] * 500
    with serving(pieces) as server:
        with pytest.raises(socket.timeout):
            get(server, timeout=10, deadline=time.monotonic() + 1.0)


# --- the request ------------------------------------------------------------------------------


def test_request_head_lets_a_caller_host_win_and_refuses_line_breaks() -> None:
    head = http1.request_head("POST", "/v1/messages", "example.com", {"host": "other", "X-Key": "k"}, 5)
    assert head == b"POST /v1/messages HTTP/1.1\r\nhost: other\r\nX-Key: k\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
    for headers in ({"X-Key": "a\r\nX-Injected: 1"}, {"X-Key": "\0"}):
        with pytest.raises(ValueError) as caught:
            http1.request_head("GET", "/", "h", headers)
        assert "Injected" not in str(caught.value)
    with pytest.raises(ValueError):
        http1.request_head("GET", "/a\r\nX: 1", "h")
    with pytest.raises(ValueError):
        http1.request_head("GET", "/", "h", {"X-Name": "\u2603"})


def test_authority_brackets_ipv6_and_drops_the_default_port() -> None:
    assert http1.authority("::1", 8080) == "[::1]:8080"
    assert http1.authority("example.com", 443, tls=True) == "example.com"
    assert http1.authority("example.com", 443) == "example.com:443"


# --- tunnels ----------------------------------------------------------------------------------


def test_a_connect_tunnel_carries_the_request_to_the_host() -> None:
    with serving(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as server, ConnectProxy() as proxy:
        sock = http1.connect("127.0.0.1", server.port, timeout=10, tunnel=("127.0.0.1", proxy.port))
        try:
            head = http1.request_head("GET", "/x", http1.authority("127.0.0.1", server.port))
            response = http1.exchange(sock, head, timeout=10, max_body=100)
        finally:
            sock.close()
        assert proxy.requests == [f"CONNECT 127.0.0.1:{server.port} HTTP/1.1"]
        assert server.requests and server.requests[0].startswith(b"GET /x HTTP/1.1\r\n")
    assert response.body == b"ok"


def test_a_proxy_refusing_the_tunnel_is_a_connection_error() -> None:
    with ConnectProxy(refuse=407) as proxy:
        with pytest.raises(OSError) as caught:
            http1.connect("example.invalid", 443, timeout=10, tunnel=("127.0.0.1", proxy.port))
    assert "407" in str(caught.value)


# --- cost ---------------------------------------------------------------------------------------


def test_a_plain_request_imports_neither_http_client_nor_ssl() -> None:
    with serving(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as server:
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); from toolscript import http1; "
            f"print(http1.request('127.0.0.1', {server.port}, 'GET', '/', max_body=10, timeout=10).body.decode()); "
            "print(','.join(m for m in ('http.client', 'email.parser', 'ssl') if m in sys.modules))"
        )
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, REPO_ROOT], capture_output=True, text=True, timeout=60,
                              env={"PATH": os.environ.get("PATH", "")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["ok", ""], proc.stdout
