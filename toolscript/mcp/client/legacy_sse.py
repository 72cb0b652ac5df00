"""The legacy HTTP+SSE transport (MCP 2024-11-05), still served by many servers.

We GET the SSE URL and keep that stream open: its first event, ``endpoint``,
names the URL to POST our messages to, and every message from the server
(responses included) arrives on the stream.  The POST endpoint must be on the
same origin as the SSE URL; anything else is refused, so a hostile server
cannot make us send our headers elsewhere.

Every event is read with a bound (``max_message_bytes``); one over it fails the
request whose id it carries at its start or end, and closes the transport when
it carries none we wait for (see ``transport``).

OAuth: with a ``BearerAuth`` the stream's GET and every POST carry its
``Authorization`` header, and a 401/403 it can fix (a refreshed token, a
step-up) is answered by sending that request once more.
"""

import http.client
import threading
from typing import Any, Dict, Iterator, Optional, Tuple
from urllib.parse import urljoin

from toolscript import log
from toolscript.mcp import jsonrpc
from toolscript.mcp.client import sse
from toolscript.mcp.client.http_transport import HttpTransport, request_headers, status_error
from toolscript.mcp.client.transport import HEAD_TAIL_BYTES, OnClose, OnMessage, OnRequestError, PendingRequests, too_large
from toolscript.mcp.errors import ConnectionClosed, McpError, MessageTooLarge, TransportError
from toolscript.mcp.httpconn import READ_ERRORS, Connection, Endpoint, Pool, describe_oserror, open_connection, read_bounded, redact_url, shutdown

logger = log.get("mcp.sse")


class LegacySseTransport(HttpTransport):
    """Talks to a 2024-11-05 style server: GET stream + POST endpoint."""

    name = "sse"
    relates_messages = False

    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, **settings: Any) -> None:
        """``settings``: timeout, max_message_bytes, server_name, auth (see ``HttpTransport``)."""
        super().__init__(url, headers, **settings)
        self.post_endpoint: Optional[Endpoint] = None
        self._pool: Optional[Pool] = None
        self._conn: Optional[Connection] = None
        self._closed = False
        self._pending = PendingRequests(self.max_message_bytes, self.server_name, lambda request_id, error: None)

    def start(self, on_message: OnMessage, on_close: OnClose, on_request_error: OnRequestError) -> None:
        self._pending.on_request_error = on_request_error
        if self._closed:
            raise ConnectionClosed(f"the SSE connection to {redact_url(self.endpoint.url)} was closed before it started")
        conn, resp = self._open_stream(auth_retry=True)
        try:
            content_type = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if content_type != "text/event-stream":
                conn.close()
                raise TransportError(
                    f"{redact_url(self.endpoint.url)} is not an SSE endpoint (Content-Type {content_type or 'none'!r})"
                )
            events = sse.iter_events(resp.readline, self.max_message_bytes, self._keep_reading)
            self.post_endpoint = self._wait_for_endpoint(events)
        except READ_ERRORS as exc:
            conn.close()
            raise TransportError(describe_oserror(exc, self.endpoint.url)) from exc
        except McpError:
            conn.close()
            raise
        self._pool = Pool(self.post_endpoint, self.timeout)
        conn.raw_sock.settimeout(None)  # from here on the stream may be quiet for as long as it likes
        threading.Thread(target=self._read, args=(events, on_message, on_close), name="mcp-sse", daemon=True).start()

    def _open_stream(self, auth_retry: bool) -> Tuple[Connection, http.client.HTTPResponse]:
        """GET the SSE URL; the connection and its 200 response (a 401/403 auth can fix is asked once more)."""
        conn = open_connection(self.endpoint, self.timeout)
        self._conn = conn
        if self._closed:  # closed by another thread while we connected
            conn.close()
            raise ConnectionClosed(f"the SSE connection to {redact_url(self.endpoint.url)} was closed before it started")
        headers = self._authorize(request_headers(self.headers, "text/event-stream"))
        try:
            conn.request("GET", self.endpoint.target, headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                body = resp.read(4096)
                conn.close()
                if auth_retry and self._auth_retry(resp, headers):
                    return self._open_stream(auth_retry=False)
                raise status_error(resp, body, self.endpoint.url)
        except READ_ERRORS as exc:
            conn.close()
            raise TransportError(describe_oserror(exc, self.endpoint.url)) from exc
        return conn, resp

    def _wait_for_endpoint(self, events: Iterator[sse.Event]) -> Endpoint:
        for event in events:
            if event.oversized is not None:
                raise TransportError(
                    f"{redact_url(self.endpoint.url)} sent an event over the {self.max_message_bytes}-byte limit "
                    "before its endpoint event (is this an MCP SSE endpoint?)"
                )
            if event.event != "endpoint":
                continue
            target = Endpoint(urljoin(self.endpoint.url, event.data.strip()))
            if not target.same_origin(self.endpoint):
                raise TransportError(
                    f"{redact_url(self.endpoint.url)} asked us to POST to another origin "
                    f"({redact_url(target.url)}); refused for safety"
                )
            logger.debug("SSE endpoint: %s", redact_url(target.url))
            return target
        raise ConnectionClosed(f"{redact_url(self.endpoint.url)} closed the SSE stream before sending its endpoint event")

    def initialized(self) -> None:
        pass  # everything is set up by start()

    def abandon(self, request_id: object) -> None:
        self._pending.pop(request_id)
        if self._pending.stuck:
            # The reader is discarding an oversized event that nobody waits
            # for any more and that may never end: drop the stream.
            shutdown(self._conn)

    def _keep_reading(self, head: bytes) -> bool:
        return not self._closed and self._pending.keep_reading(head)

    def _read(self, events: Iterator[sse.Event], on_message: OnMessage, on_close: OnClose) -> None:
        """The reader thread: deliver messages until the stream ends; whatever goes wrong is reported."""
        error: Optional[Exception] = None
        try:
            for event in events:
                if event.oversized is not None:
                    self._pending.settle(event.oversized)  # raises when nobody can be told
                    continue
                if event.event != "message" or not event.data.strip():
                    continue
                self._deliver(event.data, on_message)
            error = ConnectionClosed(f"{redact_url(self.endpoint.url)} closed the SSE stream")
        except MessageTooLarge as exc:
            error = exc
        except READ_ERRORS as exc:
            if self._pending.stuck:  # abandon() dropped the stream in the middle of an oversized event
                error = too_large("a message from the server that matches no pending request", self.max_message_bytes, self._pending.server_name)
            else:
                error = ConnectionClosed(describe_oserror(exc, self.endpoint.url))
        except Exception as exc:  # a thread that dies silently would leave every call hanging
            logger.debug("reading the SSE stream failed", exc_info=True)
            error = TransportError(f"reading the SSE stream of {redact_url(self.endpoint.url)} failed ({type(exc).__name__}: {exc})")
        if not self._closed and not isinstance(error, ConnectionClosed):
            shutdown(self._conn)  # we stopped reading the stream: drop it
        try:
            on_close(None if self._closed else error)
        except Exception:
            logger.exception("the on_close callback failed")

    def _deliver(self, data: str, on_message: OnMessage) -> None:
        try:
            messages = jsonrpc.decode(data)
        except ValueError as exc:
            raw = data.encode("utf-8", errors="replace")
            request_id = self._pending.match(raw[:HEAD_TAIL_BYTES], raw[-HEAD_TAIL_BYTES:])
            if request_id is not None:
                what = self._pending.pop(request_id) or "a request"
                self._pending.on_request_error(request_id, TransportError(f"the server's answer to {what} is not valid JSON ({exc})"))
            else:
                logger.debug("ignoring SSE event that is not JSON: %r", data[:200])
            return
        for message in messages:
            self._pending.answered(message)
            on_message(message, None)

    def send(self, message: dict) -> None:
        if self._closed or self._pool is None:
            raise ConnectionClosed(f"the SSE connection to {redact_url(self.endpoint.url)} is closed")
        self._pending.add(message)
        try:
            if self._post(message, auth_retry=True):
                self._post(message, auth_retry=False)
        except McpError:
            self._pending.pop(message.get("id"))
            raise

    def _post(self, message: Dict[str, Any], auth_retry: bool) -> bool:
        """POST one message (its answer comes on the stream); True when auth asks for it to be sent again."""
        headers = request_headers(self.headers, "application/json, text/event-stream", protocol_version=self.protocol_version)
        headers["Content-Type"] = "application/json"
        self._authorize(headers)
        pool, endpoint = self._pool, self.post_endpoint
        if pool is None or endpoint is None:
            raise ConnectionClosed(f"the SSE connection to {redact_url(self.endpoint.url)} is not open")
        resp, conn = pool.exchange("POST", endpoint.target, jsonrpc.encode(message), headers, self.timeout)
        try:
            body = read_bounded(resp, self.max_message_bytes)  # the answer comes on the stream; this is an ack
        except READ_ERRORS as exc:
            conn.close()
            raise TransportError(describe_oserror(exc, endpoint.url)) from exc
        if body is None:
            conn.close()
            body = b"(a body over the size limit)"
        elif 200 <= resp.status < 300:
            pool.release(conn, resp)
            return False
        conn.close()
        if auth_retry and self._auth_retry(resp, headers):
            return True
        if not 200 <= resp.status < 300:
            raise status_error(resp, body, endpoint.url)
        return False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shutdown(self._conn)
        if self._pool:
            self._pool.close()
