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

Each message the server sends is read with a bound (``max_message_bytes``): an
answer over it fails the request its POST carried; an event over it on the GET
stream belongs to no request, so it closes the transport.  Messages are
delivered with the id of the request whose POST carried them, so a log
message reaches the call it belongs to.

MCP 2026-07-28 (a message whose ``params._meta`` names the version): no
session and no GET stream; each POST carries ``MCP-Protocol-Version``,
``Mcp-Method`` and ``Mcp-Name``, and an error status whose body is the
request's JSON-RPC error delivers that error (a 404 -32601, a 400 -32022), so
the session can tell a modern refusal from a handshake-era server's 4xx.

OAuth: with a ``BearerAuth`` every request (POSTs, GET streams, the DELETE)
carries its ``Authorization`` header; a 401 or 403 is shown to it, and when it
says so (a refreshed token, a step-up) the request is sent once more.  Its
``AuthRequired`` is the request's error.
"""

import threading
import time
from typing import Any, Dict, Iterator, Optional

from toolscript import log
from toolscript.mcp import jsonrpc
from toolscript.mcp.auth.flow import OAuthError
from toolscript.mcp.client import sse
from toolscript.mcp.client.http_transport import HttpTransport, request_headers, status_error
from toolscript.mcp.client.transport import OnClose, OnMessage, OnRequestError, describe_request, too_large
from toolscript.mcp.errors import ConnectionClosed, HttpStatusError, McpError, MessageTooLarge, SessionExpired, TransportError
from toolscript.mcp.httpconn import READ_ERRORS, Connection, Pool, describe_oserror, open_connection, read_bounded, redact_url, shutdown
from toolscript.mcp.protocol import ParamHeaders, envelope_version, modern_headers, param_headers

logger = log.get("mcp.http")

# How long to keep reading an SSE response after its answer arrived, hoping
# the stream ends so the connection can be reused.
_DRAIN_SECONDS = 1.0
_RESUME_ATTEMPTS = 3
_GET_RETRY_MAX_SECONDS = 30.0


class StreamableHttpTransport(HttpTransport):
    """Talks to one MCP endpoint URL over Streamable HTTP."""

    name = "http"
    relates_messages = True

    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, **settings: Any) -> None:
        """``settings``: timeout, max_message_bytes, server_name, auth (see ``HttpTransport``)."""
        super().__init__(url, headers, **settings)
        self.session_id: Optional[str] = None
        # Modern era: tool name -> its x-mcp-header annotations (set by the
        # session from tools/list), mirrored as Mcp-Param-* headers on each call.
        self.tool_param_headers: Dict[str, ParamHeaders] = {}
        self._pool = Pool(self.endpoint, self.timeout)
        self._active: Dict[object, Connection] = {}  # request id -> connection, so a timed-out call can be abandoned
        self._lock = threading.Lock()
        self._closed = False
        self._get_conn: Optional[Connection] = None
        self._on_message: OnMessage = lambda m, related: None
        self._on_close: OnClose = lambda e: None
        self._on_request_error: OnRequestError = lambda i, e: None

    # -- lifecycle -----------------------------------------------------------

    def start(self, on_message: OnMessage, on_close: OnClose, on_request_error: OnRequestError) -> None:
        if self._closed:
            raise ConnectionClosed(f"the connection to {redact_url(self.endpoint.url)} was closed before it started")
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
                read_bounded(resp, self.max_message_bytes)
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
        headers = request_headers(self.headers, accept, session_id=self.session_id, protocol_version=self.protocol_version)
        self._authorize(headers)
        return headers

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
        if self._post_once(message, request_id, auth_retry=True):
            self._post_once(message, request_id, auth_retry=False)

    def _post_once(self, message: dict, request_id: object, auth_retry: bool) -> bool:
        """POST ``message`` and deliver its answer; True when auth asks for the request to be sent again."""
        modern = envelope_version(message)
        if modern is not None:
            headers = request_headers(self.headers, "application/json, text/event-stream")
            headers.update(modern_headers(message, modern))
            params = message.get("params") or {}
            if message.get("method") == "tools/call" and params.get("name") in self.tool_param_headers:
                headers.update(param_headers(self.tool_param_headers[params["name"]], params.get("arguments")))
            self._authorize(headers)
        else:
            headers = self._headers()
        headers["Content-Type"] = "application/json"
        had_session = self.session_id is not None
        read_timeout = None if request_id is not None else self.timeout
        def track(conn: Connection) -> None:
            if request_id is not None:  # so abandon() and close() can reach a server that never answers
                with self._lock:
                    self._active[request_id] = conn
            if self._closed:
                shutdown(conn)

        try:
            resp, conn = self._pool.exchange("POST", self.endpoint.target, jsonrpc.encode(message), headers, read_timeout, track)
        except McpError:
            if request_id is not None:
                with self._lock:
                    self._active.pop(request_id, None)
            raise
        try:
            session_id = resp.getheader("Mcp-Session-Id")
            if session_id and message.get("method") == "initialize":
                self.session_id = session_id
            if resp.status in (202, 204) and request_id is not None and modern is not None:
                # A modern request is answered on its own POST; "accepted" with
                # nothing is a handshake-era server taking it for a notification.
                read_bounded(resp, self.max_message_bytes)
                conn.close()
                raise HttpStatusError(f"{redact_url(self.endpoint.url)} accepted {message.get('method')} (HTTP {resp.status}) without answering it", resp.status)
            if resp.status in (202, 204) or (200 <= resp.status < 300 and request_id is None):
                # A notification or response was accepted (some servers add a body).
                if read_bounded(resp, self.max_message_bytes) is None:
                    conn.close()
                else:
                    self._pool.release(conn, resp)
                return False
            if not 200 <= resp.status < 300:
                body = resp.read(4096)
                conn.close()
                if auth_retry and self._auth_retry(resp, headers):
                    return True
                if modern is not None and request_id is not None and self._deliver_error(body, request_id):
                    return False
                if had_session and (resp.status == 404 or (resp.status == 400 and b"session" in body.lower())):
                    self.session_id = None
                    raise SessionExpired(f"{redact_url(self.endpoint.url)} no longer knows our session (HTTP {resp.status})", resp.status)
                raise status_error(resp, body, self.endpoint.url)
            content_type = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if content_type == "text/event-stream":
                self._read_response_stream(resp, conn, message)
            elif content_type == "application/json":
                answer = read_bounded(resp, self.max_message_bytes)
                if answer is None:
                    conn.close()
                    raise self._too_large(message)
                self._pool.release(conn, resp)
                self._deliver_body(answer, request_id)
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
        return False

    def _too_large(self, message: Dict[str, Any]) -> MessageTooLarge:
        what = describe_request(message.get("method", ""), message.get("params"))
        return too_large(f"the result of {what}", self.max_message_bytes, self.server_name)

    def _deliver_body(self, body: bytes, request_id: object) -> None:
        try:
            messages = jsonrpc.decode(body)
        except ValueError as exc:
            raise TransportError(f"{redact_url(self.endpoint.url)} sent invalid JSON ({exc}): {body[:120]!r}") from exc
        for message in messages:
            self._on_message(message, request_id)

    def _deliver_error(self, body: bytes, request_id: object) -> bool:
        """Deliver an error status's body if it is the JSON-RPC error answering ``request_id``."""
        try:
            messages = jsonrpc.decode(body)
        except ValueError:
            return False
        if len(messages) != 1 or not isinstance(messages[0], dict) or "error" not in messages[0]:
            return False
        if messages[0].get("id") not in (request_id, None):
            return False
        self._on_message(dict(messages[0], id=request_id), request_id)
        return True

    def _deliver_event(self, event: sse.Event, related: object) -> bool:
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
            self._on_message(message, related)
        return answered

    def _events(self, resp) -> Iterator[sse.Event]:
        # A response stream belongs to one request: an oversized event fails
        # it at once, without reading the rest.
        return sse.iter_events(resp.readline, self.max_message_bytes, keep_reading=lambda head: False)

    def _read_response_stream(self, resp, conn, message: Dict[str, Any]) -> None:
        request_id = message["id"]
        last_id, retry_ms, answered = None, None, False
        try:
            for event in self._events(resp):
                if event.oversized is not None:
                    conn.close()
                    raise self._too_large(message)
                last_id = event.id if event.id is not None else last_id
                retry_ms = event.retry if event.retry is not None else retry_ms
                if self._deliver_event(event, request_id) and not answered:
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
        if last_id is None or envelope_version(message) is not None:  # the modern era cannot resume
            raise ConnectionClosed(f"{redact_url(self.endpoint.url)} closed the response stream before answering")
        self._resume(message, last_id, retry_ms)

    def _resume(self, message: Dict[str, Any], last_id: str, retry_ms: Optional[int]) -> None:
        """The server closed a response stream early: resume it with Last-Event-ID (SEP-1699)."""
        request_id = message["id"]
        auth_retried = False
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
                if not auth_retried and self._auth_retry(resp, headers):
                    auth_retried = True
                    continue
                raise status_error(resp, body, self.endpoint.url)
            try:
                for event in self._events(resp):
                    if event.oversized is not None:
                        conn.close()
                        raise self._too_large(message)
                    last_id = event.id if event.id is not None else last_id
                    retry_ms = event.retry if event.retry is not None else retry_ms
                    if self._deliver_event(event, request_id):
                        conn.close()
                        return
            except READ_ERRORS:
                pass
            conn.close()
        raise ConnectionClosed(f"{redact_url(self.endpoint.url)} never delivered the answer after {_RESUME_ATTEMPTS} resumptions")

    # -- the server's own stream -------------------------------------------------

    def _listen(self) -> None:
        """Hold the GET stream open for server-initiated messages; reconnect with backoff."""
        delay, last_id, auth_retried = 1.0, None, False
        while not self._closed:
            conn = None
            try:
                conn = open_connection(self.endpoint, self.timeout)
                self._get_conn = conn
                headers = self._headers("text/event-stream")
                if last_id:
                    headers["Last-Event-ID"] = last_id
                conn.request("GET", self.endpoint.target, headers=headers)
                resp = conn.getresponse()
                if resp.status != 200:
                    if not auth_retried and self._auth_retry(resp, headers):
                        auth_retried = True  # once: a grant that keeps failing here fails the next request too
                        continue
                    # 405: the server offers no GET stream; anything else: it refuses one.
                    logger.debug("no GET stream: HTTP %s", resp.status)
                    return
                conn.raw_sock.settimeout(None)
                delay, auth_retried = 1.0, False
                for event in sse.iter_events(resp.readline, self.max_message_bytes, keep_reading=lambda head: False):
                    if event.oversized is not None:
                        self._stream_failed(too_large("a message on the server's event stream", self.max_message_bytes, self.server_name))
                        return
                    last_id = event.id if event.id is not None else last_id
                    if event.retry is not None:
                        delay = event.retry / 1000.0
                    self._deliver_event(event, None)
            except OAuthError as exc:  # needs the user: the next request will say so
                logger.debug("GET stream: %s", exc)
                return
            except Exception as exc:  # the stream is best-effort: log and reconnect
                if self._closed:
                    return
                logger.debug("GET stream dropped: %s", exc)
            finally:
                if conn is not None:
                    conn.close()  # in every path, or a failed attempt holds its socket through the backoff
            time.sleep(delay)
            delay = min(delay * 2, _GET_RETRY_MAX_SECONDS)

    def _stream_failed(self, error: Exception) -> None:
        """The GET stream carried something no request can take: give up the connection (it restarts)."""
        logger.debug("closing: %s", error)
        try:
            self._on_close(error)
        finally:
            self.close()
