"""The legacy HTTP+SSE transport (MCP 2024-11-05), still served by many servers.

We GET the SSE URL and keep that stream open: its first event, ``endpoint``,
names the URL to POST our messages to, and every message from the server
(responses included) arrives on the stream.  The POST endpoint must be on the
same origin as the SSE URL; anything else is refused, so a hostile server
cannot make us send our headers elsewhere.
"""

import threading
from typing import Callable, Dict, Iterator, Optional
from urllib.parse import urljoin

from toolscript import log
from toolscript.mcp import jsonrpc, sse
from toolscript.mcp.errors import ConnectionClosed, McpError, TransportError
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

logger = log.get("mcp.sse")


class LegacySseTransport:
    """Talks to a 2024-11-05 style server: GET stream + POST endpoint."""

    name = "sse"

    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, *, timeout: float = 30.0) -> None:
        self.endpoint = Endpoint(url)
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.protocol_version: Optional[str] = None
        self.post_endpoint: Optional[Endpoint] = None
        self._pool: Optional[Pool] = None
        self._conn = None
        self._closed = False

    def start(self, on_message: Callable[[dict], None], on_close: Callable[[Optional[Exception]], None], on_request_error=None) -> None:
        conn = open_connection(self.endpoint, self.timeout)
        self._conn = conn
        try:
            conn.request("GET", self.endpoint.target, headers=request_headers(self.headers, "text/event-stream"))
            resp = conn.getresponse()
            if resp.status != 200:
                body = resp.read(4096)
                conn.close()
                raise status_error(resp, body, self.endpoint.url)
            content_type = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if content_type != "text/event-stream":
                conn.close()
                raise TransportError(
                    f"{redact_url(self.endpoint.url)} is not an SSE endpoint (Content-Type {content_type or 'none'!r})"
                )
            events = sse.iter_events(resp.readline)
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

    def _wait_for_endpoint(self, events: Iterator[sse.Event]) -> Endpoint:
        for event in events:
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

    def _read(self, events: Iterator[sse.Event], on_message, on_close) -> None:
        error: Optional[Exception] = None
        try:
            for event in events:
                if event.event != "message" or not event.data.strip():
                    continue
                try:
                    messages = jsonrpc.decode(event.data)
                except ValueError:
                    logger.debug("ignoring SSE event that is not JSON: %r", event.data[:200])
                    continue
                for message in messages:
                    on_message(message)
            error = ConnectionClosed(f"{redact_url(self.endpoint.url)} closed the SSE stream")
        except READ_ERRORS as exc:
            error = ConnectionClosed(describe_oserror(exc, self.endpoint.url))
        on_close(None if self._closed else error)

    def send(self, message: dict) -> None:
        if self._closed or self._pool is None:
            raise ConnectionClosed(f"the SSE connection to {redact_url(self.endpoint.url)} is closed")
        headers = request_headers(self.headers, "application/json, text/event-stream", protocol_version=self.protocol_version)
        headers["Content-Type"] = "application/json"
        resp, conn = self._pool.exchange("POST", self.post_endpoint.target, jsonrpc.encode(message), headers, self.timeout)
        try:
            body = resp.read()
        except READ_ERRORS as exc:
            conn.close()
            raise TransportError(describe_oserror(exc, self.post_endpoint.url)) from exc
        if not 200 <= resp.status < 300:
            conn.close()
            raise status_error(resp, body, self.post_endpoint.url)
        self._pool.release(conn, resp)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shutdown(self._conn)
        if self._pool:
            self._pool.close()
