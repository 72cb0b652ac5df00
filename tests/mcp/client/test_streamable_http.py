"""The Streamable HTTP transport leaves no socket behind: a failed GET stream attempt, a POST never answered."""

import os
import socket
import threading

import pytest

from conftest import wait_for
from toolscript.config.load import ServerConfig
from toolscript.mcp.client.connect import open_session
from toolscript.mcp.client.streamable_http import StreamableHttpTransport
from toolscript.mcp.errors import McpError


def _socket_fds():
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


@pytest.mark.timeout(30)
def test_a_failed_get_stream_attempt_closes_its_connection():
    """Every GET attempt fails in request() (a header value http.client refuses): between
    attempts, no client socket stays open."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    baseline = _socket_fds()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    transport = StreamableHttpTransport(url, {"X-Broken": "a\r\nb"}, timeout=5)
    transport.start(lambda m, related=None: None, lambda e: None, lambda i, e: None)
    try:
        transport.initialized()  # starts the GET stream, which fails and retries after 1 s, 2 s, ...
        assert wait_for(lambda: accepted, timeout=10)
        # The failed attempt's socket is closed at once, not held through the backoff (and the next attempt).
        assert wait_for(lambda: _socket_fds() == baseline, timeout=10)
    finally:
        transport.close()
        listener.close()


def _closed_by_peer(conn):
    """Whether the other end closed ``conn``: what it sent is read and dropped until the end of the stream."""
    conn.settimeout(0.1)
    while True:
        try:
            if not conn.recv(65536):
                return True
        except socket.timeout:
            return False
        except OSError:
            return True


@pytest.mark.timeout(30)
def test_a_server_that_never_answers_the_post_leaves_no_socket_behind():
    """Accepts the connection, never answers: after the handshake times out, our socket is closed."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []

    def serve():
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    server = ServerConfig(name="mute", type="http", source="test", url=f"http://127.0.0.1:{listener.getsockname()[1]}/mcp", timeout=1)
    try:
        with pytest.raises(McpError):
            open_session(server)
        # The POST's worker thread does not wait for an answer forever: its socket is closed (the server
        # side reads the end of the stream; counting the process's sockets would also count other tests').
        assert wait_for(lambda: bool(held) and _closed_by_peer(held[0]), timeout=10)
        # initialize is not cancelled (the MCP specification forbids it), so no cancellation POST
        # to this silent server adds another whole timeout before the failure is reported.
        assert len(held) == 1
    finally:
        listener.close()
        for conn in held:
            conn.close()
