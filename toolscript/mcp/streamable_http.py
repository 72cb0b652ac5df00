"""The Streamable HTTP transport (MCP 2025-03-26 and later).

Every message we send is its own POST.  A request's answer comes back either
as one JSON body or as an SSE stream that may carry progress and log
notifications (and requests from the server) before the response.  After the
handshake we also hold a GET stream open, where servers send notifications
that belong to no request, such as ``notifications/tools/list_changed``.

Session rules: we keep the ``Mcp-Session-Id`` the server gives us and send it
back, with ``MCP-Protocol-Version``, on every later request; a 404 for a known
session (or a 400 that says the session is unknown, as the TypeScript SDK
answers) raises ``SessionExpired`` so the session layer can re-initialize; on
close we DELETE the session.
"""

import threading
import time
from typing import Callable, Dict, Optional

from toolscript import log
from toolscript.mcp import jsonrpc, sse
from toolscript.mcp.errors import ConnectionClosed, McpError, SessionExpired, TransportError
from toolscript.mcp.httpconn import (
    READ_ERRORS,
    Endpoint,
    Pool,
    describe_oserror,
    open_connection,
    redact_url,
    request_headers,
    shutdown,
    status_error,
)

logger = log.get("mcp.http")

# How long to keep reading an SSE response after its answer arrived, hoping
# the stream ends so the connection can be reused.
_DRAIN_SECONDS = 1.0
_RESUME_ATTEMPTS = 3
_GET_RETRY_MAX_SECONDS = 30.0


class StreamableHttpTransport:
    """Talks to one MCP endpoint URL over Streamable HTTP."""

    name = "http"

    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, *, timeout: float = 30.0) -> None:
        self.endpoint = Endpoint(url)
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.session_id: Optional[str] = None
        self.protocol_version: Optional[str] = None  # set by the session after the handshake
        self._pool = Pool(self.endpoint, timeout)
        self._active: Dict[object, object] = {}  # request id -> connection, so a timed-out call can be abandoned
        self._lock = threading.Lock()
        self._closed = False
        self._get_conn = None
        self._on_message: Callable[[dict], None] = lambda m: None
        self._on_close: Callable[[Optional[Exception]], None] = lambda e: None
        self._on_request_error: Callable[[object, Exception], None] = lambda i, e: None

    # -- lifecycle -----------------------------------------------------------

    def start(self, on_message, on_close, on_request_error) -> None:
        self._on_message, self._on_close, self._on_request_error = on_message, on_close, on_request_error

    def initialized(self) -> None:
        """Called by the session after the handshake: open the server's GET stream."""
        threading.Thread(target=self._listen, name="mcp-http-get", daemon=True).start()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shutdown(self._get_conn)
        with self._lock:
            active = list(self._active.values())
            self._active.clear()
        for conn in active:
            shutdown(conn)
        if self.session_id:
            try:
                resp, conn = self._pool.exchange("DELETE", self.endpoint.target, None, self._headers(), 2.0)
                resp.read()
                conn.close()
            except (McpError, OSError) as exc:
                logger.debug("DELETE of the session failed (ignored): %s", exc)
        self._pool.close()

    # -- sending -------------------------------------------------------------

    def send(self, message: dict) -> None:
        if self._closed:
            raise ConnectionClosed(f"the connection to {redact_url(self.endpoint.url)} is closed")
        if jsonrpc.kind(message) == "request":
            # The answer may take as long as the tool runs; the session waits
            # with its own timeout while a worker thread reads the reply.
            threading.Thread(target=self._post_request, args=(message,), name="mcp-http-post", daemon=True).start()
        else:
            self._post(message, None)

    def abandon(self, request_id: object) -> None:
        """Stop reading the reply to a request the session gave up on."""
        with self._lock:
            conn = self._active.pop(request_id, None)
        shutdown(conn)

    def _headers(self, accept: str = "application/json, text/event-stream") -> Dict[str, str]:
        return request_headers(self.headers, accept, session_id=self.session_id, protocol_version=self.protocol_version)

    def _post_request(self, message: dict) -> None:
        request_id = message["id"]
        try:
            self._post(message, request_id)
        except McpError as exc:
            self._on_request_error(request_id, exc)
        except Exception as exc:  # never let a worker thread die silently
            logger.debug("POST failed", exc_info=True)
            self._on_request_error(request_id, TransportError(f"{type(exc).__name__}: {exc}"))

    def _post(self, message: dict, request_id: object) -> None:
        headers = self._headers()
        headers["Content-Type"] = "application/json"
        had_session = self.session_id is not None
        read_timeout = None if request_id is not None else self.timeout
        resp, conn = self._pool.exchange("POST", self.endpoint.target, jsonrpc.encode(message), headers, read_timeout)
        if request_id is not None:
            with self._lock:
                self._active[request_id] = conn
        try:
            session_id = resp.getheader("Mcp-Session-Id")
            if session_id and message.get("method") == "initialize":
                self.session_id = session_id
            if resp.status in (202, 204) or (200 <= resp.status < 300 and request_id is None):
                resp.read()  # a notification or response was accepted (some servers add a body)
                self._pool.release(conn, resp)
                return
            if not 200 <= resp.status < 300:
                body = resp.read(4096)
                conn.close()
                if had_session and (resp.status == 404 or (resp.status == 400 and b"session" in body.lower())):
                    self.session_id = None
                    raise SessionExpired(f"{redact_url(self.endpoint.url)} no longer knows our session (HTTP {resp.status})", resp.status)
                raise status_error(resp, body, self.endpoint.url)
            content_type = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if content_type == "text/event-stream":
                self._read_response_stream(resp, conn, request_id)
            elif content_type == "application/json":
                body = resp.read()
                self._pool.release(conn, resp)
                self._deliver_body(body)
            else:
                conn.close()
                raise TransportError(
                    f"{redact_url(self.endpoint.url)} answered with Content-Type {content_type or 'none'!r}, "
                    "expected application/json or text/event-stream (is this an MCP endpoint?)"
                )
        except READ_ERRORS as exc:
            conn.close()
            raise TransportError(describe_oserror(exc, self.endpoint.url)) from exc
        finally:
            if request_id is not None:
                with self._lock:
                    self._active.pop(request_id, None)

    def _deliver_body(self, body: bytes) -> None:
        try:
            messages = jsonrpc.decode(body)
        except ValueError as exc:
            raise TransportError(f"{redact_url(self.endpoint.url)} sent invalid JSON: {body[:120]!r}") from exc
        for message in messages:
            self._on_message(message)

    def _deliver_event(self, event: sse.Event) -> bool:
        """Deliver one SSE event's message(s); True if it held a response."""
        if event.event != "message" or not event.data.strip():
            return False
        try:
            messages = jsonrpc.decode(event.data)
        except ValueError:
            logger.debug("ignoring SSE event that is not JSON: %r", event.data[:200])
            return False
        answered = False
        for message in messages:
            answered = answered or jsonrpc.kind(message) == "response"
            self._on_message(message)
        return answered

    def _read_response_stream(self, resp, conn, request_id: object) -> None:
        last_id, retry_ms, answered = None, None, False
        try:
            for event in sse.iter_events(resp.readline):
                last_id = event.id if event.id is not None else last_id
                retry_ms = event.retry if event.retry is not None else retry_ms
                if self._deliver_event(event) and not answered:
                    answered = True
                    conn.raw_sock.settimeout(_DRAIN_SECONDS)
        except READ_ERRORS:
            if not answered and not self._closed and request_id in self._active:
                raise
            conn.close()
            return
        if answered:
            with self._lock:
                still_ours = self._active.pop(request_id, None) is conn
            if still_ours:
                self._pool.release(conn, resp)
            else:
                conn.close()
            return
        conn.close()
        if self._closed or request_id not in self._active:
            return
        if last_id is None:
            raise ConnectionClosed(f"{redact_url(self.endpoint.url)} closed the response stream before answering")
        self._resume(request_id, last_id, retry_ms)

    def _resume(self, request_id: object, last_id: str, retry_ms: Optional[int]) -> None:
        """The server closed a response stream early: resume it with Last-Event-ID (SEP-1699)."""
        for _ in range(_RESUME_ATTEMPTS):
            time.sleep((retry_ms if retry_ms is not None else 1000) / 1000.0)
            if self._closed:
                return
            headers = self._headers("text/event-stream")
            headers["Last-Event-ID"] = last_id
            resp, conn = self._pool.exchange("GET", self.endpoint.target, None, headers, None)
            with self._lock:
                self._active[request_id] = conn
            if resp.status != 200:
                body = resp.read(4096)
                conn.close()
                raise status_error(resp, body, self.endpoint.url)
            try:
                for event in sse.iter_events(resp.readline):
                    last_id = event.id if event.id is not None else last_id
                    retry_ms = event.retry if event.retry is not None else retry_ms
                    if self._deliver_event(event):
                        conn.close()
                        return
            except READ_ERRORS:
                pass
            conn.close()
        raise ConnectionClosed(f"{redact_url(self.endpoint.url)} never delivered the answer after {_RESUME_ATTEMPTS} resumptions")

    # -- the server's own stream -------------------------------------------------

    def _listen(self) -> None:
        """Hold the GET stream open for server-initiated messages; reconnect with backoff."""
        delay, last_id = 1.0, None
        while not self._closed:
            try:
                conn = open_connection(self.endpoint, self.timeout)
                self._get_conn = conn
                headers = self._headers("text/event-stream")
                if last_id:
                    headers["Last-Event-ID"] = last_id
                conn.request("GET", self.endpoint.target, headers=headers)
                resp = conn.getresponse()
                if resp.status == 405:
                    logger.debug("server offers no GET stream (405)")
                    conn.close()
                    return
                if resp.status != 200:
                    logger.debug("GET stream refused: HTTP %s", resp.status)
                    conn.close()
                    return
                conn.raw_sock.settimeout(None)
                delay = 1.0
                for event in sse.iter_events(resp.readline):
                    last_id = event.id if event.id is not None else last_id
                    if event.retry is not None:
                        delay = event.retry / 1000.0
                    self._deliver_event(event)
                conn.close()
            except Exception as exc:  # the stream is best-effort: log and reconnect
                if self._closed:
                    return
                logger.debug("GET stream dropped: %s", exc)
            time.sleep(delay)
            delay = min(delay * 2, _GET_RETRY_MAX_SECONDS)
