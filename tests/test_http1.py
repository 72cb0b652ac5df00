"""``toolscript.http1``: one helper frames every response head, and the sandbox runtime's parser reads it back."""

import pytest

from toolscript.codemode import runtime
from toolscript.http1 import response_head


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
