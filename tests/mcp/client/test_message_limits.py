"""Messages from an upstream are read with a bound (``maxMessageBytes``), on every transport.

An endless line closes the server with the limit named; an oversized result
fails only its call and the server stays up; SSE events are bounded by line
and by data; a message nested too deeply or with a bad id fails its call
without killing the reader thread.  Every test talks to a real server process
over a real transport; nothing is mocked.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import REPO_ROOT, wait_for
from mcp_fixtures import KIB, SPEW, spew_server, text_of
from toolscript.config.load import ServerConfig
from toolscript.mcp.client.connect import open_session
from toolscript.mcp.errors import MessageTooLarge, TransportError

TOOLSCRIPT_DIR = os.path.join(REPO_ROOT, "toolscript")


# -- a line or event over maxMessageBytes ----------------------------------------------------------


@pytest.mark.timeout(40)
def test_an_endless_line_closes_the_server_with_the_limit_named_and_fast():
    """10 MB of 'x' without a newline, cap 64 KiB: the call fails at once (not at its 30 s timeout)
    with the limit and the config key named, and the server is stopped."""
    closed = []
    session = open_session(spew_server(), on_close=closed.append)
    try:
        with pytest.raises(MessageTooLarge) as err:
            session.call_tool("spew", {"bytes": 10 * 1024 * 1024}, timeout=30)
        message = str(err.value)
        assert "64 KiB limit" in message and "maxMessageBytes for server 'spewer'" in message
        assert "\n" not in message
        assert session.closed and closed and isinstance(closed[0], MessageTooLarge)  # the gateway restarts it
        assert wait_for(lambda: session.transport.process.poll() is not None, timeout=10)
    finally:
        session.close()


def test_a_200_mb_line_keeps_the_reader_small(tmp_path):
    """Peak RSS of a process reading 200 MB without a newline (default 8 MiB cap) stays far below 200 MB."""
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import json, resource, sys
        sys.path[:0] = {[os.path.dirname(TOOLSCRIPT_DIR)]!r}
        from toolscript.config.load import ServerConfig
        from toolscript.mcp.client.connect import open_session
        from toolscript.mcp.errors import McpError
        server = ServerConfig(name="big", type="stdio", source="test", command=sys.executable, args=[{SPEW!r}], timeout=10)
        session = open_session(server)
        try:
            session.call_tool("spew", {{"bytes": 200 * 1024 * 1024}}, timeout=60)
            error = None
        except McpError as exc:
            error = str(exc)
        session.close()
        # VmHWM, not ru_maxrss: Linux carries the pre-exec image's peak (the pytest worker that started us,
        # which grows with the suite) into ru_maxrss across execve; VmHWM is this process's own peak.
        with open("/proc/self/status") as status:
            peak = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
        print(json.dumps({{"error": error, "maxrss_kib": peak[0] if peak else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
    """))
    proc = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    assert "8 MiB limit" in report["error"] and "maxMessageBytes for server 'big'" in report["error"]
    assert report["maxrss_kib"] < 100 * 1024, report  # it would be over 200 MB if the line were kept


# -- a result over the cap fails that call; the server stays up ------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http", "http-json", "sse"])
def test_an_oversized_result_fails_only_its_call(fixture_session, transport):
    session = fixture_session(transport, max_message_bytes=64 * KIB)
    with pytest.raises(MessageTooLarge) as err:
        session.call_tool("big", {"size": 1024 * 1024}, timeout=30)
    assert str(err.value).startswith("the result of tools/call 'big' is over the 64 KiB limit (maxMessageBytes for server 'fixture'")
    assert not session.closed
    assert text_of(session.call_tool("echo", {"message": "after"})) == "Echo: after"
    assert len(text_of(session.call_tool("big", {"size": 1000}))) == 1000  # under the cap: fine


@pytest.mark.parametrize("order", ["head", "tail"])
def test_a_100_mb_result_fails_its_call_with_the_default_cap_and_later_calls_work(order):
    """The id at the start (Python SDK) or only at the end (TypeScript SDK) of the line."""
    session = open_session(spew_server(max_message_bytes=8 * 1024 * 1024, name="big"))
    try:
        with pytest.raises(MessageTooLarge) as err:
            session.call_tool("big", {"size": 100 * 1024 * 1024, "order": order}, timeout=60)
        assert str(err.value).startswith("the result of tools/call 'big' is over the 8 MiB limit (maxMessageBytes for server 'big'")
        assert text_of(session.call_tool("echo", {"message": "still here"}, timeout=30)) == "Echo: still here"
        assert text_of(session.call_tool("big", {"size": 10, "order": order})) == "x" * 10
    finally:
        session.close()


def test_sse_events_are_bounded_by_line_and_by_data():
    from toolscript.mcp.client import sse

    def reader(data):
        stream = __import__("io").BytesIO(data)
        return stream.readline

    long_line = b"data: " + b"y" * 5000 + b"\n\n" + b"data: ok\n\n"
    events = list(sse.iter_events(reader(long_line), max_bytes=1000))
    assert events[0].oversized is not None and events[0].oversized.size > 5000 and events[0].data == ""
    assert events[1].data == "ok" and events[1].oversized is None
    many_lines = b"".join(b"data: " + b"z" * 100 + b"\n" for _ in range(50)) + b"\n"
    [event] = sse.iter_events(reader(many_lines), max_bytes=1000)
    assert event.oversized is not None and event.data == ""


class _HugeGetStreamHandler(__import__("http.server").server.BaseHTTPRequestHandler):
    """Answers initialize, accepts notifications, and sends one 200 KB event on the GET stream."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if message.get("method") == "initialize":
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "huge", "version": "1"}}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Mcp-Session-Id", "s1")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "z" * 200_000}}
        self.wfile.write(b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n")
        self.wfile.flush()
        time.sleep(30)

    def do_DELETE(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.mark.timeout(30)
def test_an_oversized_event_on_the_get_stream_closes_the_transport_naming_the_limit():
    from http.server import ThreadingHTTPServer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _HugeGetStreamHandler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    closed = []
    server = ServerConfig(name="huge", type="http", source="test", url=f"http://127.0.0.1:{httpd.server_port}/mcp",
                          timeout=5, max_message_bytes=64 * KIB)
    session = open_session(server, on_close=closed.append)
    try:
        assert wait_for(lambda: closed, timeout=10)
        assert isinstance(closed[0], MessageTooLarge) and "64 KiB limit (maxMessageBytes for server 'huge'" in str(closed[0])
        assert session.closed
    finally:
        session.close()
        httpd.shutdown()


# -- a reader thread never dies silently -----------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_100k_deep_answer_fails_its_call_and_the_reader_survives():
    session = open_session(spew_server(max_message_bytes=8 * 1024 * 1024))
    try:
        with pytest.raises(TransportError) as err:  # not a RecursionError that kills the reader and leaves the call to time out
            session.call_tool("deep", {"depth": 100000}, timeout=30)
        assert "tools/call 'deep'" in str(err.value) and "nested too deeply" in str(err.value)
        assert text_of(session.call_tool("echo", {"message": "alive"}, timeout=30)) == "Echo: alive"
    finally:
        session.close()


@pytest.mark.timeout(60)
def test_a_response_with_a_list_id_does_not_kill_the_reader():
    session = open_session(spew_server())
    try:
        assert text_of(session.call_tool("bad_id", timeout=30)) == "after a bad id"
    finally:
        session.close()
