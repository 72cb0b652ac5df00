"""How the MCP endpoint answers: one-write JSON responses and SSE streams.

A JSON answer leaves as head and body in one write (two small writes stall
~40 ms on Nagle + delayed ACK).  A stream is an SSE response that ends when
the connection closes: a session's GET stream or a ``subscriptions/listen``
(``GetStream``, written out by ``pump``), or the answer to a ``tools/call``
(``InFlightCall``), which starts out as plain JSON and switches to SSE the
moment the tool reports progress or logs, or once it has run for
``STREAM_AFTER_SECONDS``.  Silent streams get keep-alive comments, so a client
that went away is noticed and its read timeout does not fire on a slow tool.
"""

import http.server
import queue
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from toolscript import log
from toolscript.http1 import encode_json, response_head
from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel

logger = log.get("mcp.server")

KEEPALIVE_SECONDS = 15.0  # ": keepalive" comment on a silent stream, so dead clients are noticed
STREAM_AFTER_SECONDS = 1.0  # a tools/call silent this long is answered as SSE from then on
WRITE_TIMEOUT_SECONDS = 30.0  # a stream write that blocks this long means the client stopped reading

JSON = "application/json"
SSE = "text/event-stream"
_KEEPALIVE_EVENT = b": keepalive\n\n"


def _head(
    handler: http.server.BaseHTTPRequestHandler,
    status: int,
    *,
    content_type: Optional[str] = None,
    content_length: Optional[int] = None,
    cache_control: Optional[str] = "no-store",
    extra: Sequence[Tuple[str, str]] = (),
) -> bytes:
    """Status line and headers (``http1.response_head``), so headers and body leave in one write.

    ``send_response`` and friends would flush the headers on their own and the
    body after, and two small writes cost a 40 ms Nagle/delayed-ACK stall.
    """
    handler.log_request(status)
    fields = [("Server", handler.version_string()), ("Date", handler.date_time_string())] + list(extra)
    return response_head(
        status,
        content_type=content_type,
        content_length=content_length,
        cache_control=cache_control,
        close=handler.close_connection,
        extra=fields,
    )


def write(handler: http.server.BaseHTTPRequestHandler, data: bytes) -> bool:
    """Write and flush; False (and the connection marked for closing) if the client is gone."""
    try:
        handler.wfile.write(data)
        handler.wfile.flush()
        return True
    except (OSError, ValueError) as exc:  # ValueError: the file was closed under us
        logger.debug("client went away while writing: %s", exc)
        handler.close_connection = True
        return False


def send(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: Optional[List[Tuple[str, str]]] = None) -> None:
    """A whole response: ``body`` (JSON, when there is one) after its head, in one write."""
    head = _head(handler, status, content_type=JSON if body else None, content_length=len(body), extra=headers or ())
    write(handler, head + body)


def send_error(handler: http.server.BaseHTTPRequestHandler, status: int, code: int, message: str, headers: Optional[List[Tuple[str, str]]] = None) -> None:
    """An HTTP error whose body is a JSON-RPC error with a null id, as the SDKs answer."""
    send(handler, status, encode_json(jsonrpc.error(None, code, message)), headers)


def start_stream(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    """The head of an SSE response.  The stream ends when the connection closes."""
    handler.close_connection = True
    try:
        # A client that stops reading must not pin this thread (or a
        # notifying provider thread) forever; reads are over by now.
        handler.connection.settimeout(WRITE_TIMEOUT_SECONDS)
    except (AttributeError, OSError):
        pass
    return _head(handler, 200, content_type=SSE, cache_control="no-cache", extra=[("X-Accel-Buffering", "no")])


def sse_event(data: bytes) -> bytes:
    """One SSE event carrying one encoded message (``encode_json`` never emits a raw newline)."""
    return b"event: message\ndata: " + data + b"\n\n"


def encode_answer(message: Dict[str, Any]) -> bytes:
    """Encode a response, turning a provider's unserializable result into -32603."""
    try:
        return encode_json(message)
    except (TypeError, ValueError, RecursionError) as exc:
        logger.warning("answer to request %r is not JSON: %s", message.get("id"), exc)
        return encode_json(jsonrpc.error(message.get("id"), jsonrpc.INTERNAL_ERROR, f"Internal error: the result is not JSON ({exc})"))


# -- streams -------------------------------------------------------------------------


class GetStream:
    """The queue behind a session's GET stream (or a subscriptions/listen); the request's own thread writes it out with ``pump``."""

    def __init__(self, changed_meta: Optional[Dict[str, Any]] = None) -> None:
        self.queue: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self._lock = threading.Lock()
        self._changed_queued = False
        # A modern subscriptions/listen stream stamps its subscription id on each notice.
        self._changed_params = {"_meta": changed_meta} if changed_meta else None

    def tools_changed(self) -> None:
        # The provider may fire many changes in a row; one queued notice is enough.
        with self._lock:
            if self._changed_queued:
                return
            self._changed_queued = True
        self.queue.put(jsonrpc.notification("notifications/tools/list_changed", self._changed_params))

    def taken(self, message: Dict[str, Any]) -> None:
        if message.get("method") == "notifications/tools/list_changed":
            with self._lock:
                self._changed_queued = False

    def close(self) -> None:
        self.queue.put(None)


class InFlightCall:
    """One tools/call in flight and the HTTP response it will be answered on.

    The answer stays undecided ("pending") until the tool finishes, reports
    progress or logs, or runs for STREAM_AFTER_SECONDS; only then is it
    committed to JSON or to SSE.  All writes go through ``lock`` because the
    provider may report from its own threads and the housekeeper may commit.
    """

    def __init__(self, handler: Optional[http.server.BaseHTTPRequestHandler], request_id: Any) -> None:
        self.handler = handler  # None inside a batch: no stream to report on
        self.request_id = request_id
        self.cancelled = Cancel()
        self.lock = threading.Lock()
        self.state = "pending"  # -> "streaming" -> "done", or "pending" -> "done"
        self.gone = False  # a write failed: the client hung up, so stop writing
        self.started = self.last_write = time.monotonic()
        self.last_progress: Optional[float] = None

    def _write(self, data: bytes) -> None:
        assert self.handler is not None
        if not self.gone:
            self.gone = not write(self.handler, data)
            self.last_write = time.monotonic()

    def _commit(self) -> None:
        assert self.handler is not None
        self.state = "streaming"
        self._write(start_stream(self.handler))

    def notify(self, message: Dict[str, Any]) -> None:
        """Relay a progress or log notification on this call's stream."""
        if self.handler is None or self.cancelled.is_set():
            return
        try:
            data = sse_event(encode_json(message))
        except (TypeError, ValueError, RecursionError) as exc:
            logger.debug("dropping a %s that is not JSON: %s", message.get("method"), exc)
            return
        with self.lock:
            if self.state == "done":
                return  # a straggler from a provider thread after the answer went out
            if self.state == "pending":
                self._commit()
            self._write(data)

    def tick(self, now: float) -> None:
        """Housekeeping: commit a slow call to SSE; keep a silent stream alive."""
        if self.handler is None:
            return
        with self.lock:
            if self.state == "pending" and now - self.started >= STREAM_AFTER_SECONDS:
                self._commit()
            elif self.state == "streaming" and now - self.last_write >= KEEPALIVE_SECONDS:
                self._write(_KEEPALIVE_EVENT)

    def finish(self, response: Optional[Dict[str, Any]], status: int = 200) -> None:
        """Send the answer (None: the call was cancelled, so none) and end the response.

        ``status`` is used only if the answer is still plain JSON (2026-07-28
        maps error codes to HTTP statuses); a committed stream is always 200.
        """
        assert self.handler is not None
        with self.lock:
            state, self.state = self.state, "done"
            if state == "pending" and response is not None:
                send(self.handler, status, encode_answer(response))
            elif state == "pending":
                # The client gave up; it still gets a well-formed (empty) answer.
                self._write(start_stream(self.handler))
            elif response is not None:
                self._write(sse_event(encode_answer(response)))


def pump(handler: http.server.BaseHTTPRequestHandler, stream: GetStream) -> bool:
    """Write a stream's queued notifications (keep-alives while idle) until it is closed (True) or the client goes (False)."""
    while True:
        try:
            message = stream.queue.get(timeout=KEEPALIVE_SECONDS)
        except queue.Empty:
            if not write(handler, _KEEPALIVE_EVENT):
                return False
            continue
        if message is None:
            return True
        stream.taken(message)
        if not write(handler, sse_event(encode_json(message))):
            return False

