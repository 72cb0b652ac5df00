"""Smoke tests: the npm test peers really run, in each transport.

Each test starts @modelcontextprotocol/server-everything and performs a raw MCP
exchange with the standard library only, so a failure here points at the peer
setup (node, ``npm ci --prefix tests/peers``), not at toolscript.

If a peer is missing the tests skip, unless TOOLSCRIPT_REQUIRE_PEERS=1 (as in CI),
in which case they fail.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, Callable, Dict, IO, Iterator, Tuple, TypeVar
from urllib.parse import urlsplit

import pytest

import peers

T = TypeVar("T")

TIMEOUT = 10.0  # per-exchange limit in seconds; a healthy peer answers in well under 1 s
PROTOCOL_VERSION = "2025-11-25"
SERVER_NAME = "mcp-servers/everything"


def _require(fn: Callable[[], T]) -> T:
    """Call a peers.* lookup; skip (or fail under TOOLSCRIPT_REQUIRE_PEERS=1) if missing."""
    try:
        return fn()
    except peers.PeerMissing as exc:
        missing = str(exc)
    # Outside the except block, so the report is not a chained traceback.
    if os.environ.get("TOOLSCRIPT_REQUIRE_PEERS") == "1":
        pytest.fail(f"{missing} (TOOLSCRIPT_REQUIRE_PEERS=1)", pytrace=False)
    pytest.skip(missing)


def _initialize(req_id: int = 1) -> Dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": req_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "toolscript-peer-smoke", "version": "0"},
        },
    }


def _line(msg: Dict[str, Any]) -> bytes:
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode("utf-8")


def _check_initialize_result(msg: Dict[str, Any]) -> None:
    assert msg.get("id") == 1, msg
    assert "error" not in msg, msg
    result = msg["result"]
    assert result["protocolVersion"] == PROTOCOL_VERSION
    assert result["serverInfo"]["name"] == SERVER_NAME
    assert "tools" in result["capabilities"]


# --------------------------------------------------------------------------- stdio


def _line_reader(stream: IO[bytes]) -> "queue.Queue[bytes]":
    """Read ``stream`` line by line on a daemon thread; b"" marks EOF."""
    lines: "queue.Queue[bytes]" = queue.Queue()

    def pump() -> None:
        for raw in iter(stream.readline, b""):
            lines.put(raw)
        lines.put(b"")

    threading.Thread(target=pump, name="peer-stdout", daemon=True).start()
    return lines


def _next_response(lines: "queue.Queue[bytes]", req_id: int, deadline: float) -> Dict[str, Any]:
    """Return the JSON-RPC response with ``req_id``, skipping notifications and noise."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"no response with id {req_id} within {TIMEOUT} s")
        try:
            raw = lines.get(timeout=remaining)
        except queue.Empty:
            continue
        if raw == b"":
            raise AssertionError(f"stdout closed before the response with id {req_id}")
        try:
            msg = json.loads(raw)
        except ValueError:
            continue  # not a JSON-RPC line; the spec forbids it, but be tolerant
        if isinstance(msg, dict) and msg.get("id") == req_id and "method" not in msg:
            return msg


def test_everything_stdio() -> None:
    argv = _require(peers.everything_stdio_command)
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            lines = _line_reader(proc.stdout)
            deadline = time.monotonic() + TIMEOUT
            proc.stdin.write(_line(_initialize(1)))
            proc.stdin.flush()
            _check_initialize_result(_next_response(lines, 1, deadline))

            proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            proc.stdin.write(
                _line(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"message": "hi"}},
                    }
                )
            )
            proc.stdin.flush()
            reply = _next_response(lines, 2, deadline)
            assert reply["result"]["content"] == [{"type": "text", "text": "Echo: hi"}], reply

            proc.stdin.close()  # spec shutdown: close stdin, then wait
            assert proc.wait(timeout=TIMEOUT) == 0
        finally:
            if proc.returncode is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            if proc.stdin is not None and not proc.stdin.closed:
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    pass


# --------------------------------------------------------------------------- HTTP


def _connect(url: str) -> Tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1"
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT), parts.path


def _sse_events(resp: http.client.HTTPResponse) -> Iterator[Tuple[str, str]]:
    """Yield (event, data) pairs from a text/event-stream response (minimal parser)."""
    event, data = "message", []
    for raw in iter(resp.readline, b""):
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)


def _start(mode: str) -> peers.Peer:
    return _require(lambda: peers.start_everything(mode))


def test_everything_streamable_http() -> None:
    with _start("streamableHttp") as peer:
        conn, path = _connect(peer.url)
        try:
            assert path == "/mcp"
            conn.request(
                "POST",
                path,
                body=json.dumps(_initialize(1)),
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            resp = conn.getresponse()
            assert resp.status == 200, (resp.status, resp.read(), peer.log_tail())
            session_id = resp.getheader("mcp-session-id")
            assert session_id, resp.getheaders()
            ctype = resp.getheader("content-type", "")
            if ctype.startswith("text/event-stream"):
                msg = None
                for _event, data in _sse_events(resp):
                    if data.strip():
                        msg = json.loads(data)
                        if msg.get("id") == 1:
                            break
            else:
                msg = json.loads(resp.read())
            resp.close()
            assert msg is not None
            _check_initialize_result(msg)

            # End the session politely; the server answers 200.
            conn.request("DELETE", path, headers={"mcp-session-id": session_id})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200, resp.status
        finally:
            conn.close()
    assert peer.process.returncode is not None


def test_everything_sse() -> None:
    with _start("sse") as peer:
        stream, path = _connect(peer.url)
        try:
            assert path == "/sse"
            stream.request("GET", path, headers={"Accept": "text/event-stream"})
            resp = stream.getresponse()
            assert resp.status == 200, (resp.status, peer.log_tail())
            assert resp.getheader("content-type", "").startswith("text/event-stream")
            events = _sse_events(resp)
            event, endpoint = next(events)
            assert event == "endpoint", (event, endpoint)
            assert endpoint.startswith("/message?sessionId="), endpoint

            # One real exchange: POST initialize, the answer arrives on the stream.
            post, _ = _connect(peer.url)
            try:
                post.request(
                    "POST",
                    endpoint,
                    body=json.dumps(_initialize(1)),
                    headers={"Content-Type": "application/json"},
                )
                presp = post.getresponse()
                presp.read()
                assert presp.status == 202, presp.status
            finally:
                post.close()
            for event, data in events:
                if event == "message":
                    msg = json.loads(data)
                    if msg.get("id") == 1:
                        _check_initialize_result(msg)
                        break
            else:
                raise AssertionError("SSE stream ended before the initialize response")
        finally:
            stream.close()
    assert peer.process.returncode is not None


def test_missing_peer_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """PeerMissing carries the install hint when node_modules is absent."""
    monkeypatch.setattr(peers, "EVERYTHING_DIR", tmp_path / "nope")
    with pytest.raises(peers.PeerMissing) as info:
        peers.everything_entry()
    assert str(info.value) == (
        "server-everything is not installed; run 'make test' (or: npm ci --prefix tests/peers)"
    )
