"""The server side of MCP's Streamable HTTP transport, both eras on one endpoint.

Handshake era (2024-11-05 … 2025-11-25): ``initialize`` and sessions, below.
Modern era (2026-07-28): a POST whose ``MCP-Protocol-Version`` header names
it (or, with no header and no session, whose ``params._meta`` carries a
protocol version) is one self-contained exchange: no handshake, no session;
the version and client capabilities ride in ``params._meta`` and must match
the ``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers.  It serves
``server/discover``, ``tools/list`` (with ``ttlMs``/``cacheScope``),
``tools/call`` (logs only when ``_meta`` opts in with a level; cancelling is
closing the response) and ``subscriptions/listen`` (tools/list_changed).
Errors carry the revision's codes and HTTP statuses (-32022 for an
unsupported version, -32020 for a header mismatch, 404 for unknown methods),
as the official SDK's server answers them.

``McpHttpEndpoint`` serves the tools of a *provider* (any object with
``list_tools``, ``call_tool`` and ``add_listener``) as one MCP endpoint.  The
HTTP server around it is the caller's: its request handler checks whatever it
wants (auth, Host, Origin), reads the body and then calls
``endpoint.handle(handler, body)``, which writes the whole response.

What goes on the wire:

- POST carries one JSON-RPC message (or a 2025-03-26 batch array: at most
  ``MAX_BATCH_MESSAGES`` messages, answers past ``MAX_BATCH_ANSWER_BYTES``
  replaced by errors).  Requests
  are answered with ``application/json``; notifications and responses with
  ``202``.  ``initialize`` mints a session (``Mcp-Session-Id``); everything
  else must name a live one (400 without, 404 for an unknown or ended one).
- ``tools/call`` runs in the request's thread.  Its answer starts out as plain
  JSON (one write, connection kept alive), and switches to an SSE stream the
  moment the tool reports progress or logs, or once it has run for
  ``STREAM_AFTER_SECONDS``: then the client gets headers at once and keep-alive
  comments while it waits, so its read timeout does not fire on a slow tool.
- GET opens the session's stream for ``notifications/tools/list_changed``.
- DELETE ends a session; in-flight calls see their ``cancelled`` event set.

No event ids are sent, so clients never try to resume a stream (resumption is
optional and would need an event store).
"""

import base64
import binascii
import http.server
import json
import queue
import re
import secrets
import selectors
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from toolscript import log
from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.client.http_response import response_head
from toolscript.mcp.protocol import (
    CLIENT_CAPABILITIES_META_KEY,
    HEADER_MISMATCH,
    LATEST_PROTOCOL_VERSION,
    LOG_LEVEL_META_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    SUBSCRIPTION_ID_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    param_header_annotations,
)

logger = log.get("mcp.server")

# RFC 5424 severities, lowest first, as MCP's logging/setLevel names them.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LOG_LEVEL = "info"

KEEPALIVE_SECONDS = 15.0  # ": keepalive" comment on a silent stream, so dead clients are noticed
STREAM_AFTER_SECONDS = 1.0  # a tools/call silent this long is answered as SSE from then on
WRITE_TIMEOUT_SECONDS = 30.0  # a stream write that blocks this long means the client stopped reading
_TICK_SECONDS = 0.25  # how often the housekeeping thread looks at calls and sessions
# Request bodies nesting deeper than this are refused: Python's JSON parser,
# encoder and our schema checks all recurse, and a few thousand levels crash them.
MAX_JSON_DEPTH = 100
# A 2025-03-26 batch (later revisions dropped batching) is bounded twice: in
# messages, and in the bytes of its answer array, which repeated requests
# (a tools/list is a whole page each) could otherwise blow up to hundreds of MB.
MAX_BATCH_MESSAGES = 100
MAX_BATCH_ANSWER_BYTES = 16 * 1024 * 1024

_JSON = "application/json"
_SSE = "text/event-stream"
_ALLOW = "GET, POST, DELETE"
_KEEPALIVE_EVENT = b": keepalive\n\n"


class UnknownTool(Exception):
    """Raised by a provider for a tool it does not have; the client gets JSON-RPC -32602."""


@dataclass
class CallContext:
    """What a provider's ``call_tool`` gets besides the arguments."""

    request_id: Any
    # Set on notifications/cancelled for this request, when the session ends,
    # or when the client's connection closes while the call runs.
    cancelled: Cancel
    # (progress, total, message) -> notifications/progress with the client's
    # progressToken; a no-op if it gave none.  total and message default to None.
    progress: Callable[[float, Optional[float], Optional[str]], None]
    # (level, data, logger) -> notifications/message, unless level is below the
    # session's logging/setLevel level (default info).  logger defaults to None.
    log: Callable[[str, Any, Optional[str]], None]


class ToolProvider(Protocol):
    """The tools an endpoint serves."""

    def list_tools(self) -> List[Dict[str, Any]]:
        """MCP Tool objects, passed through verbatim (``description`` is added if missing)."""

    def call_tool(self, name: str, arguments: Dict[str, Any], call: CallContext) -> Dict[str, Any]:
        """A CallToolResult.  Raise UnknownTool for -32602; any other exception becomes an isError result."""

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` whenever the tool list changes; return a function that unsubscribes it."""


# -- JSON in and out -----------------------------------------------------------------


class JsonTooDeep(ValueError):
    """A request body nests arrays/objects deeper than we accept."""


def decode_json(data: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A request body as JSON; ValueError with a one-line reason if it is not UTF-8 JSON, JsonTooDeep if it nests too deep."""
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels") from None
    if _nests_deeper(value, max_depth):
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels")
    return value


def _nests_deeper(value: Any, limit: int) -> bool:
    """Does ``value`` have more than ``limit`` levels of arrays/objects?  Iterative, so any depth is safe."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON; strings that cannot be UTF-8 (lone surrogates from argv or file names) are escaped."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


# -- noticing clients that hang up ---------------------------------------------------


class DisconnectWatcher:
    """One thread that sets a call's ``Cancel`` when its client closes the connection.

    While a call runs nothing reads its socket, so a client that gives up is
    only noticed by watching: readable with no data (EOF, or a reset) means it
    is gone and its upstream call should be cancelled.  Readable *with* data is
    a pipelined next request, so that socket is simply no longer watched.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._selector: Optional[selectors.BaseSelector] = None
        self._wake: Optional[Tuple[socket.socket, socket.socket]] = None
        self._watched: Dict[socket.socket, Cancel] = {}
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    def watch(self, sock: Any, cancel: Cancel) -> Callable[[], None]:
        """Watch ``sock`` until the returned function is called (call it before closing the socket)."""
        if not isinstance(sock, socket.socket):
            return lambda: None
        with self._lock:
            if self._closed:
                return lambda: None
            if self._selector is None:
                self._start()
            assert self._selector is not None
            try:
                self._selector.register(sock, selectors.EVENT_READ, cancel)
            except (OSError, ValueError, KeyError):  # already closed, or watched twice
                return lambda: None
            self._watched[sock] = cancel

        def unwatch() -> None:
            with self._lock:
                if self._watched.get(sock) is cancel:
                    self._forget(sock)

        return unwatch

    def close(self) -> None:
        with self._lock:
            self._closed = True
            wake = self._wake
        if wake is not None:
            try:
                wake[1].send(b"x")
            except OSError:
                pass
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2.0)

    def _start(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake = socket.socketpair()
        self._selector.register(self._wake[0], selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="http-disconnect-watcher", daemon=True)
        self._thread.start()

    def _forget(self, sock: socket.socket) -> None:
        """Stop watching (the lock is held)."""
        self._watched.pop(sock, None)
        assert self._selector is not None
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass

    def _run(self) -> None:
        selector, wake = self._selector, self._wake
        assert selector is not None and wake is not None
        try:
            while True:
                events = selector.select()
                with self._lock:
                    if self._closed:
                        return
                    for key, _ in events:
                        sock = key.fileobj
                        if key.data is None or not isinstance(sock, socket.socket) or self._watched.get(sock) is not key.data:
                            continue  # the wake-up socket, or unwatched meanwhile
                        try:
                            gone = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:  # reset by the peer
                            gone = True
                        self._forget(sock)
                        if gone:
                            key.data.set()
        except Exception:  # the watcher must never take the server down
            logger.debug("the disconnect watcher stopped", exc_info=True)
        finally:
            with self._lock:
                for sock in list(self._watched):
                    self._forget(sock)
                selector.close()
                for end in wake:
                    end.close()


# -- writing responses ---------------------------------------------------------------


def _head(
    handler: http.server.BaseHTTPRequestHandler,
    status: int,
    *,
    content_type: Optional[str] = None,
    content_length: Optional[int] = None,
    cache_control: Optional[str] = "no-store",
    extra: Sequence[Tuple[str, str]] = (),
) -> bytes:
    """Status line and headers (``http_response``), so headers and body leave in one write.

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


def _write(handler: http.server.BaseHTTPRequestHandler, data: bytes) -> bool:
    """Write and flush; False (and the connection marked for closing) if the client is gone."""
    try:
        handler.wfile.write(data)
        handler.wfile.flush()
        return True
    except (OSError, ValueError) as exc:  # ValueError: the file was closed under us
        logger.debug("client went away while writing: %s", exc)
        handler.close_connection = True
        return False


def _send(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: Optional[List[Tuple[str, str]]] = None) -> None:
    head = _head(handler, status, content_type=_JSON if body else None, content_length=len(body), extra=headers or ())
    _write(handler, head + body)


def _send_error(handler: http.server.BaseHTTPRequestHandler, status: int, code: int, message: str, headers: Optional[List[Tuple[str, str]]] = None) -> None:
    """An HTTP error whose body is a JSON-RPC error with a null id, as the SDKs answer."""
    _send(handler, status, encode_json(jsonrpc.error(None, code, message)), headers)


def _start_stream(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    """The head of an SSE response.  The stream ends when the connection closes."""
    handler.close_connection = True
    try:
        # A client that stops reading must not pin this thread (or a
        # notifying provider thread) forever; reads are over by now.
        handler.connection.settimeout(WRITE_TIMEOUT_SECONDS)
    except (AttributeError, OSError):
        pass
    return _head(handler, 200, content_type=_SSE, cache_control="no-cache", extra=[("X-Accel-Buffering", "no")])


def _event(data: bytes) -> bytes:
    """One SSE event carrying one encoded message (``encode`` never emits a raw newline)."""
    return b"event: message\ndata: " + data + b"\n\n"


def _encode(message: Dict[str, Any]) -> bytes:
    """Encode a response, turning a provider's unserializable result into -32603."""
    try:
        return encode_json(message)
    except (TypeError, ValueError, RecursionError) as exc:
        logger.warning("answer to request %r is not JSON: %s", message.get("id"), exc)
        return encode_json(jsonrpc.error(message.get("id"), jsonrpc.INTERNAL_ERROR, f"Internal error: the result is not JSON ({exc})"))


# -- request headers -----------------------------------------------------------------


def _header(handler: http.server.BaseHTTPRequestHandler, name: str) -> Optional[str]:
    value = handler.headers.get(name)
    return value.strip() if isinstance(value, str) else None


def _accepts(handler: http.server.BaseHTTPRequestHandler, media_type: str) -> bool:
    """Does ``Accept`` allow ``media_type``?  Wildcards count (RFC 9110), as in the Python SDK."""
    wanted = {media_type, media_type.split("/")[0] + "/*", "*/*"}
    for value in handler.headers.get_all("Accept") or []:
        for item in value.split(","):
            if item.split(";")[0].strip().lower() in wanted:
                return True
    return False


# -- sessions ------------------------------------------------------------------------


class _Session:
    """One client's state between ``initialize`` and DELETE (or idleness)."""

    def __init__(self, session_id: str, protocol_version: str) -> None:
        self.id = session_id
        self.protocol_version = protocol_version
        self.initialized = False  # notifications/initialized arrived
        self.log_level = LOG_LEVELS.index(DEFAULT_LOG_LEVEL)
        self.last_used = time.monotonic()
        self.ended = False
        self.calls: Dict[Any, "_Call"] = {}  # in-flight tools/call by request id, for cancellation
        self.stream: Optional["_GetStream"] = None
        self.lock = threading.Lock()

    def busy(self) -> bool:
        return bool(self.calls) or self.stream is not None


class _GetStream:
    """The queue behind a session's GET stream; the GET's own thread writes it out."""

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


class _Call:
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
            self.gone = not _write(self.handler, data)
            self.last_write = time.monotonic()

    def _commit(self) -> None:
        assert self.handler is not None
        self.state = "streaming"
        self._write(_start_stream(self.handler))

    def notify(self, message: Dict[str, Any]) -> None:
        """Relay a progress or log notification on this call's stream."""
        if self.handler is None or self.cancelled.is_set():
            return
        try:
            data = _event(encode_json(message))
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
                _send(self.handler, status, _encode(response))
            elif state == "pending":
                # The client gave up; it still gets a well-formed (empty) answer.
                self._write(_start_stream(self.handler))
            elif response is not None:
                self._write(_event(_encode(response)))


# -- the endpoint --------------------------------------------------------------------


class McpHttpEndpoint:
    """Serves a provider's tools as one Streamable HTTP MCP endpoint.  Thread-safe."""

    def __init__(
        self,
        provider: ToolProvider,
        *,
        server_name: str,
        server_version: str,
        instructions: Optional[str] = None,
        page_size: int = 100,
        session_idle_seconds: float = 3600,
        disconnects: Optional[DisconnectWatcher] = None,
        max_batch: int = MAX_BATCH_MESSAGES,
        max_batch_answer_bytes: int = MAX_BATCH_ANSWER_BYTES,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.max_batch = max_batch
        self.max_batch_answer_bytes = max_batch_answer_bytes
        self.provider = provider
        self.server_info = {"name": server_name, "version": server_version}
        self.instructions = instructions
        self.page_size = page_size
        self.session_idle_seconds = session_idle_seconds
        self._sessions: Dict[str, _Session] = {}
        # 2026-07-28 requests have no session; each in-flight call gets a
        # throwaway one, kept here so the housekeeper ticks it and close() ends it.
        self._stateless: List[_Session] = []
        self._listens: List[_GetStream] = []  # open subscriptions/listen streams, closed gracefully by close()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._housekeeper: Optional[threading.Thread] = None
        # Cancels a tools/call whose client hangs up; shared with the caller's other endpoints if it passes one.
        self._owns_disconnects = disconnects is None
        self.disconnects = disconnects if disconnects is not None else DisconnectWatcher()

    # -- entry points --------------------------------------------------------------

    def handle(self, handler: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        """Serve one HTTP request (POST/GET/DELETE/other) for the MCP path, writing the whole response to handler."""
        if self._closed.is_set():
            _send_error(handler, 503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down")
            return
        method = handler.command
        if method == "POST":
            self._post(handler, body)
        elif _names_modern_version(handler) and method != "HEAD":
            # 2026-07-28 is POST only: no GET stream, no DELETE (there are no sessions).
            _send_error(handler, 405, jsonrpc.INVALID_REQUEST, f"Method Not Allowed: {method} (protocol 2026-07-28 uses POST only)", [("Allow", "POST")])
        elif method == "GET":
            self._get(handler)
        elif method == "DELETE":
            self._delete(handler)
        elif method == "HEAD":
            _send(handler, 405, b"", [("Allow", _ALLOW)])  # a HEAD answer must not have a body
        else:
            _send_error(handler, 405, jsonrpc.INVALID_REQUEST, f"Method Not Allowed: {method}", [("Allow", _ALLOW)])

    def close(self) -> None:
        """End every session: GET streams close, in-flight calls see ``cancelled``."""
        self._closed.set()
        with self._lock:
            sessions = list(self._sessions.values()) + list(self._stateless)
            listens = list(self._listens)
        for session in sessions:
            self._end(session)
        for stream in listens:
            stream.close()
        if self._owns_disconnects:
            self.disconnects.close()
        thread = self._housekeeper
        if thread is not None and thread is not threading.current_thread():
            thread.join(2 * _TICK_SECONDS)

    # -- sessions ------------------------------------------------------------------

    def _new_session(self, protocol_version: str) -> _Session:
        session = _Session(secrets.token_urlsafe(24), protocol_version)
        with self._lock:
            self._sessions[session.id] = session
            self._start_housekeeper()
        return session

    def _start_housekeeper(self) -> None:
        """Start the housekeeping thread unless it runs (the caller holds ``_lock``)."""
        if self._housekeeper is None:
            self._housekeeper = threading.Thread(target=self._housekeep, name="mcp-server-housekeeper", daemon=True)
            self._housekeeper.start()

    def _end(self, session: _Session) -> None:
        with self._lock:
            if self._sessions.get(session.id) is session:
                del self._sessions[session.id]
        with session.lock:
            session.ended = True
            calls = list(session.calls.values())
            stream, session.stream = session.stream, None
        for call in calls:
            call.cancelled.set()
        if stream is not None:
            stream.close()

    def _expired(self, session: _Session, now: float) -> bool:
        return not session.busy() and now - session.last_used > self.session_idle_seconds

    def _session(self, handler: http.server.BaseHTTPRequestHandler) -> Optional[_Session]:
        """The request's live session, or None after answering 400/404 for it."""
        session_id = _header(handler, "Mcp-Session-Id")
        if not session_id:
            _send_error(handler, 400, jsonrpc.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required")
            return None
        with self._lock:
            session = self._sessions.get(session_id)
        now = time.monotonic()
        if session is not None and self._expired(session, now):
            self._end(session)
            session = None
        if session is None:
            _send_error(handler, 404, jsonrpc.INVALID_REQUEST, "Session not found")
            return None
        # Any supported version is fine, not only the negotiated one: the
        # conformance suite sends 2025-03-26 on a 2025-11-25 session.
        version = _header(handler, "MCP-Protocol-Version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            _send_error(
                handler,
                400,
                jsonrpc.INVALID_REQUEST,
                f"Bad Request: Unsupported protocol version: {version} (supported versions: {', '.join(SUPPORTED_PROTOCOL_VERSIONS)})",
            )
            return None
        session.last_used = now
        return session

    def _housekeep(self) -> None:
        """Commit slow calls to SSE, keep their streams alive, drop idle sessions."""
        while not self._closed.wait(_TICK_SECONDS):
            now = time.monotonic()
            with self._lock:
                sessions = list(self._sessions.values())
                stateless = list(self._stateless)
            for session in sessions:
                if self._expired(session, now):
                    logger.debug("session %s idle for %gs; dropping it", session.id[:8], self.session_idle_seconds)
                    self._end(session)
                    continue
                _tick_calls(session, now)
            for session in stateless:
                _tick_calls(session, now)

    # -- POST ----------------------------------------------------------------------

    def _post(self, handler: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        if not (_accepts(handler, _JSON) and _accepts(handler, _SSE)):
            _send_error(handler, 406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Client must accept both application/json and text/event-stream")
            return
        content_type = (_header(handler, "Content-Type") or "").split(";")[0].strip().lower()
        if content_type != _JSON:
            _send_error(handler, 415, jsonrpc.INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json")
            return
        try:
            value = decode_json(body)
        except ValueError as exc:  # UnicodeDecodeError is one
            _send_error(handler, 400, jsonrpc.PARSE_ERROR, f"Parse error: {exc}")
            return
        if _is_modern(handler, value):
            self._post_modern(handler, value)
            return
        batch = isinstance(value, list)
        messages = value if batch else [value]
        if not messages:
            _send_error(handler, 400, jsonrpc.INVALID_REQUEST, "Invalid Request: empty batch")
            return
        if len(messages) > self.max_batch:
            _send_error(handler, 400, jsonrpc.INVALID_REQUEST,
                        f"Invalid Request: a batch may hold at most {self.max_batch} messages, this one has {len(messages)}; send them in smaller batches")
            return

        if len(messages) == 1 and _kind(messages[0]) == "request" and messages[0]["method"] == "initialize":
            # A new session, even if the request names an old one.
            response, session = self._initialize(messages[0])
            headers = [("Mcp-Session-Id", session.id)] if session is not None else []
            data = _encode(response)
            _send(handler, 200, b"[" + data + b"]" if batch else data, headers)
            return

        session = self._session(handler)
        if session is None:
            return
        requests = [m for m in messages if _kind(m) in ("request", "invalid")]
        if not requests:
            for message in messages:
                self._client_notification(session, message)
            _send(handler, 202)
            return
        if not batch:
            message = messages[0]
            if _kind(message) == "invalid":
                _send(handler, 400, encode_json(jsonrpc.error(_id_of(message), jsonrpc.INVALID_REQUEST, "Invalid Request")))
            elif message["method"] == "tools/call":
                self._call_streamed(handler, session, message)
            else:
                _send(handler, 200, _encode(self._dispatch(session, message)))
            return
        # A 2025-03-26 batch: answered in order, as one JSON array.  Calls in
        # a batch have no stream, so their progress and logs are dropped.
        answers: List[bytes] = []  # encoded
        # The client hanging up cancels the batch's calls, the running one and those after it.
        hung_up = Cancel()
        unwatch = self.disconnects.watch(handler.connection, hung_up)
        try:
            self._answer_batch(session, messages, answers, hung_up)
        finally:
            unwatch()
        if answers:
            _send(handler, 200, b"[" + b",".join(answers) + b"]")
        else:
            _send(handler, 202)  # every call was cancelled: nothing left to say

    def _answer_batch(self, session: _Session, messages: List[Any], answers: List[bytes], hung_up: Cancel) -> None:
        """Answer a batch's requests in order, encoded into ``answers``, within ``max_batch_answer_bytes``.

        Once the answers would pass that size, the request whose answer did
        and every request after it are answered with a short error instead
        (and not run): the client learns which to send again on their own.
        """
        size = 0
        full = False
        for message in messages:
            kind = _kind(message)
            answer: Optional[Dict[str, Any]]
            if kind == "invalid":
                answer = jsonrpc.error(_id_of(message), jsonrpc.INVALID_REQUEST, "Invalid Request")
            elif kind != "request":
                self._client_notification(session, message)
                continue
            elif full:
                answer = self._batch_too_big(message, ran=False)
            elif message["method"] == "initialize":
                answer = jsonrpc.error(message["id"], jsonrpc.INVALID_REQUEST, "initialize must not be part of a batch")
            elif message["method"] == "tools/call":
                call = _Call(None, message["id"])
                stop_linking = hung_up.on_set(call.cancelled.set)
                try:
                    answer = self._call(call, session, message)
                finally:
                    stop_linking()
            else:
                answer = self._dispatch(session, message)
            if answer is None:
                continue  # a cancelled call
            data = _encode(answer)
            if not full and size + len(data) > self.max_batch_answer_bytes:
                full = True
                data = _encode(self._batch_too_big(message, ran=True))
            size += len(data) + 1
            answers.append(data)

    def _batch_too_big(self, message: Dict[str, Any], ran: bool) -> Dict[str, Any]:
        """The error that stands for an answer past the batch's size bound."""
        limit = f"the batch's answer would pass {self.max_batch_answer_bytes} bytes"
        if ran:  # a tools/call must not be sent again blindly: it did run
            text = f"Internal error: the request ran, but {limit} with its answer; send it on its own to get one"
        else:
            text = f"Internal error: not run, {limit}; send this request on its own or in a smaller batch"
        return jsonrpc.error(message["id"], jsonrpc.INTERNAL_ERROR, text)

    def _initialize(self, message: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[_Session]]:
        params = message.get("params")
        if not isinstance(params, dict):
            return jsonrpc.error(message["id"], jsonrpc.INVALID_PARAMS, "initialize needs params"), None
        # Any client version gets an answer: its own if we speak it, else our latest.
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        session = self._new_session(version)
        result: Dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": dict(self.server_info),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        client = _object(params.get("clientInfo"))
        logger.debug("session %s: %s %s, protocol %s", session.id[:8], client.get("name"), client.get("version"), version)
        return jsonrpc.result(message["id"], result), session

    def _client_notification(self, session: _Session, message: Dict[str, Any]) -> None:
        """Notifications and responses from the client (we send it no requests, so responses are dropped)."""
        if _kind(message) != "notification":
            return
        method = message["method"]
        params = _object(message.get("params"))
        if method == "notifications/initialized":
            session.initialized = True
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            if not _valid_id(request_id):
                return
            with session.lock:
                call = session.calls.get(request_id)
            if call is not None:
                logger.debug("request %r cancelled by the client: %s", call.request_id, params.get("reason"))
                call.cancelled.set()

    def _dispatch(self, session: _Session, message: Dict[str, Any]) -> Dict[str, Any]:
        """Answer every request but initialize and tools/call."""
        request_id, method = message["id"], message["method"]
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "params must be an object")
        if method == "ping":
            return jsonrpc.result(request_id, {})
        if method == "tools/list":
            return self._list_tools(request_id, params)
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"Invalid log level: {level!r} (expected one of {', '.join(LOG_LEVELS)})")
            session.log_level = LOG_LEVELS.index(level)
            return jsonrpc.result(request_id, {})
        return jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _list_tools(self, request_id: Any, params: Dict[str, Any]) -> Dict[str, Any]:
        offset = 0
        cursor = params.get("cursor")
        if cursor is not None:
            decoded = _decode_cursor(cursor)
            if decoded is None:
                return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
            offset = decoded
        try:
            tools = list(self.provider.list_tools())
        except Exception as exc:
            logger.warning("listing tools failed: %s", exc, exc_info=True)
            return jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, f"Internal error: {exc}")
        page = []
        for tool in tools[offset:offset + self.page_size]:
            # Conformance wants a description on every tool; nothing else is touched.
            if isinstance(tool, dict) and not isinstance(tool.get("description"), str):
                tool = dict(tool)
                tool["description"] = ""
            page.append(tool)
        result: Dict[str, Any] = {"tools": page}
        if offset + self.page_size < len(tools):
            result["nextCursor"] = _encode_cursor(offset + self.page_size)
        return jsonrpc.result(request_id, result)

    # -- tools/call ------------------------------------------------------------------

    def _call_streamed(self, handler: http.server.BaseHTTPRequestHandler, session: _Session, message: Dict[str, Any]) -> None:
        call, response = self._call_watched(handler, session, message)
        call.finish(response)

    def _call_watched(
        self, handler: http.server.BaseHTTPRequestHandler, session: _Session, message: Dict[str, Any]
    ) -> Tuple[_Call, Optional[Dict[str, Any]]]:
        """Run one tools/call on its own HTTP request, cancelled if the client hangs up; the call and its response."""
        call = _Call(handler, message["id"])
        unwatch = self.disconnects.watch(handler.connection, call.cancelled)
        try:
            return call, self._call(call, session, message)
        finally:
            unwatch()

    def _call(self, call: Optional[_Call], session: _Session, message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """Run one tools/call; its response, or None if it was cancelled."""
        request_id = message["id"]
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "tools/call needs params with a string \"name\"")
        name = params["name"]
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "tools/call \"arguments\" must be an object")
        meta = _object(params.get("_meta"))
        token = meta.get("progressToken")
        if isinstance(token, bool) or not isinstance(token, (str, int)):
            token = None

        if call is None:
            call = _Call(None, request_id)
        with session.lock:
            if session.ended:
                return None
            if request_id in session.calls:
                return jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, f"Request id {request_id!r} is already in use")
            session.calls[request_id] = call
        context = CallContext(request_id, call.cancelled, _progress_fn(call, token), _log_fn(call, session))
        try:
            try:
                result = self.provider.call_tool(name, arguments, context)
            except UnknownTool:
                response = jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"Unknown tool: {name}")
            except Exception as exc:
                # Execution failures are tool errors the model should see, not protocol errors.
                logger.debug("tool %r failed", name, exc_info=True)
                text = str(exc) or type(exc).__name__
                response = jsonrpc.result(request_id, {"content": [{"type": "text", "text": text}], "isError": True})
            else:
                if isinstance(result, dict):
                    response = jsonrpc.result(request_id, result)
                else:
                    response = jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, f"Internal error: tool {name!r} returned {type(result).__name__}, not an object")
        finally:
            with session.lock:
                if session.calls.get(request_id) is call:
                    del session.calls[request_id]
            session.last_used = time.monotonic()
        return None if call.cancelled.is_set() else response

    # -- GET: the session's own stream -------------------------------------------------

    def _get(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        if not _accepts(handler, _SSE):
            _send_error(handler, 406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Client must accept text/event-stream")
            return
        session = self._session(handler)
        if session is None:
            return
        stream = _GetStream()
        with session.lock:
            ended = session.ended
            old = None
            if not ended:
                old, session.stream = session.stream, stream
        if ended:
            _send_error(handler, 404, jsonrpc.INVALID_REQUEST, "Session not found")
            return
        if old is not None:
            old.close()  # one GET stream per session: the newest wins
        unsubscribe: Optional[Callable[[], None]] = None
        try:
            unsubscribe = self.provider.add_listener(stream.tools_changed)
            if _write(handler, _start_stream(handler)):
                _pump(handler, stream)
        finally:
            _unsubscribe(unsubscribe)
            with session.lock:
                if session.stream is stream:
                    session.stream = None
            session.last_used = time.monotonic()
            handler.close_connection = True

    # -- DELETE ----------------------------------------------------------------------

    def _delete(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        session = self._session(handler)
        if session is None:
            return
        self._end(session)
        logger.debug("session %s ended by the client", session.id[:8])
        _send(handler, 200)


    # -- 2026-07-28: one self-contained POST per request ---------------------------------

    def _post_modern(self, handler: http.server.BaseHTTPRequestHandler, message: Any) -> None:
        """Answer a 2026-07-28 POST: no session, the version and capabilities ride in params._meta."""
        if isinstance(message, dict) and "id" not in message and _kind(message) == "notification":
            # No client notification means anything here (cancelling is closing
            # the response stream), so they are acknowledged and dropped, as the SDK does.
            version = _header(handler, "MCP-Protocol-Version") or ""
            if version not in MODERN_PROTOCOL_VERSIONS:
                _send_modern(handler, jsonrpc.error(None, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", _unsupported_data(version)))
            else:
                _send(handler, 202)
            return
        if _kind(message) != "request":
            _send_modern(handler, jsonrpc.error(_id_of(message), jsonrpc.INVALID_REQUEST, "Invalid Request: the body must be one JSON-RPC request or notification object (no batches, no responses)"))
            return
        request_id, method = message["id"], message["method"]
        rejection = _modern_rejection(handler, message)
        if rejection is not None:
            code, text, data = rejection
            _send_modern(handler, jsonrpc.error(request_id, code, text, data))
            return
        params = message["params"]  # a dict: _modern_rejection checked its _meta
        if method == "tools/call":
            self._call_modern(handler, message)
        elif method == "subscriptions/listen":
            self._listen(handler, request_id, params)
        elif method == "server/discover":
            result: Dict[str, Any] = {
                "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
                "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            }
            if self.instructions is not None:
                result["instructions"] = self.instructions
            _send_modern(handler, self._modern_result(jsonrpc.result(request_id, result), cacheable=True))
        elif method == "tools/list":
            _send_modern(handler, self._modern_result(self._list_tools(request_id, params), cacheable=True))
        else:
            # ping, logging/setLevel and initialize are gone in 2026-07-28.
            _send_modern(handler, jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}"))

    def _modern_result(self, response: Dict[str, Any], cacheable: bool = False) -> Dict[str, Any]:
        """Stamp a 2026-07-28 result: resultType, our serverInfo in _meta, cache hints on list/discover."""
        result = response.get("result")
        if not isinstance(result, dict):
            return response  # an error
        result = dict(result)
        result.setdefault("resultType", "complete")
        meta = dict(_object(result.get("_meta")))
        meta.setdefault(SERVER_INFO_META_KEY, dict(self.server_info))
        result["_meta"] = meta
        if cacheable:
            # The tool list changes whenever an upstream does, and it is behind
            # our token: nobody may cache it, least of all a shared cache.
            result["ttlMs"] = 0
            result["cacheScope"] = "private"
        return dict(response, result=result)

    def _call_modern(self, handler: http.server.BaseHTTPRequestHandler, message: Dict[str, Any]) -> None:
        params = message["params"]
        if any(name.lower().startswith(_PARAM_HEADER_PREFIX) for name in handler.headers.keys()):
            # Intermediaries may route on Mcp-Param-* headers, so they must say what the body says.
            # Without any there is nothing that could mislead one, and no tool lookup is paid.
            mismatch = _param_header_mismatch(handler, self._input_schema(params.get("name")), params.get("arguments"))
            if mismatch is not None:
                _send_modern(handler, jsonrpc.error(message["id"], HEADER_MISMATCH, mismatch))
                return
        meta = params["_meta"]
        session = _Session("stateless", str(meta[PROTOCOL_VERSION_META_KEY]))
        session.initialized = True
        # Logs only for a request that opts in with a level (there is no logging/setLevel).
        level = meta.get(LOG_LEVEL_META_KEY)
        session.log_level = LOG_LEVELS.index(level) if level in LOG_LEVELS else len(LOG_LEVELS)
        with self._lock:
            if self._closed.is_set():
                _send_error(handler, 503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down")
                return
            self._stateless.append(session)
            self._start_housekeeper()
        try:
            call, response = self._call_watched(handler, session, message)
            if response is not None:
                response = self._modern_result(response)
            call.finish(response, _modern_status(response))
        finally:
            with self._lock:
                self._stateless.remove(session)

    def _input_schema(self, name: Any) -> Any:
        """The inputSchema of tool ``name`` (None if it is unknown or listing fails: the call reports that)."""
        try:
            for tool in self.provider.list_tools():
                if isinstance(tool, dict) and tool.get("name") == name:
                    return tool.get("inputSchema")
        except Exception:
            logger.debug("listing tools for Mcp-Param header checks failed", exc_info=True)
        return None

    def _listen(self, handler: http.server.BaseHTTPRequestHandler, request_id: Any, params: Dict[str, Any]) -> None:
        """subscriptions/listen: the 2026-07-28 replacement for the GET stream (tools/list_changed only)."""
        wanted = _object(params.get("notifications"))
        honored: Dict[str, Any] = {"toolsListChanged": True} if wanted.get("toolsListChanged") is True else {}
        meta = {SUBSCRIPTION_ID_META_KEY: request_id}
        stream = _GetStream(meta)
        with self._lock:
            if self._closed.is_set():
                _send_error(handler, 503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down")
                return
            self._listens.append(stream)
        unsubscribe: Optional[Callable[[], None]] = None
        try:
            if honored:
                unsubscribe = self.provider.add_listener(stream.tools_changed)
            ack = jsonrpc.notification("notifications/subscriptions/acknowledged", {"notifications": honored, "_meta": meta})
            if not _write(handler, _start_stream(handler) + _event(encode_json(ack))):
                return
            if _pump(handler, stream):
                # We ended it (shutdown): the listen result is the graceful close.
                _write(handler, _event(encode_json(self._modern_result(jsonrpc.result(request_id, {"_meta": meta})))))
        finally:
            _unsubscribe(unsubscribe)
            with self._lock:
                self._listens.remove(stream)
            handler.close_connection = True


def _unsubscribe(unsubscribe: Optional[Callable[[], None]]) -> None:
    """Drop a stream's tools listener, if it got one; runs in a ``finally``, so a failure is logged, not raised."""
    if unsubscribe is None:
        return
    try:
        unsubscribe()
    except Exception:
        logger.debug("unsubscribing a tools listener failed", exc_info=True)


def _tick_calls(session: _Session, now: float) -> None:
    with session.lock:
        calls = list(session.calls.values())
    for call in calls:
        try:
            call.tick(now)
        except Exception:  # one broken stream must not stop the others' keep-alives
            logger.debug("housekeeping a call failed", exc_info=True)


def _pump(handler: http.server.BaseHTTPRequestHandler, stream: _GetStream) -> bool:
    """Write a stream's queued notifications (keep-alives while idle) until it is closed (True) or the client goes (False)."""
    while True:
        try:
            message = stream.queue.get(timeout=KEEPALIVE_SECONDS)
        except queue.Empty:
            if not _write(handler, _KEEPALIVE_EVENT):
                return False
            continue
        if message is None:
            return True
        stream.taken(message)
        if not _write(handler, _event(encode_json(message))):
            return False


# -- 2026-07-28 envelope ---------------------------------------------------------------

# The HTTP status for a JSON-RPC error code, as the spec's table (and the SDK) map them.
_MODERN_ERROR_STATUS = {
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
}
# Methods whose params field is mirrored in the Mcp-Name header.
_NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_BASE64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def _names_modern_version(handler: http.server.BaseHTTPRequestHandler) -> bool:
    """Does MCP-Protocol-Version route this request to 2026-07-28?

    A modern revision does.  An unknown one does too (so a modern client is
    told which versions we serve, -32022), unless the request names a
    handshake session: then it is a session's bad header, refused as before.
    """
    version = _header(handler, "MCP-Protocol-Version")
    if version is None or version in SUPPORTED_PROTOCOL_VERSIONS:
        return False
    return version in MODERN_PROTOCOL_VERSIONS or not _header(handler, "Mcp-Session-Id")


def _is_modern(handler: http.server.BaseHTTPRequestHandler, value: Any) -> bool:
    """Is this POST a 2026-07-28 request?  By its version header; or, with no header and no
    session, by a protocol version in its ``_meta`` (it is then told its headers are missing)."""
    if _header(handler, "MCP-Protocol-Version") is not None:
        return _names_modern_version(handler)
    if _header(handler, "Mcp-Session-Id") or not isinstance(value, dict) or value.get("method") == "initialize":
        return False
    return PROTOCOL_VERSION_META_KEY in _object(_object(value.get("params")).get("_meta"))


def _modern_status(response: Optional[Dict[str, Any]]) -> int:
    error = response.get("error") if response is not None else None
    code = error.get("code") if isinstance(error, dict) else None
    return _MODERN_ERROR_STATUS.get(code, 200) if isinstance(code, int) else 200


def _send_modern(handler: http.server.BaseHTTPRequestHandler, response: Dict[str, Any]) -> None:
    _send(handler, _modern_status(response), _encode(response))


def _unsupported_data(requested: Any) -> Dict[str, Any]:
    return {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested}


def _decode_header_value(value: Optional[str]) -> Optional[str]:
    """An Mcp-Name/Mcp-Param value: verbatim, or the UTF-8 inside ``=?base64?...?=`` (None if that is malformed)."""
    if value is None:
        return None
    match = _BASE64_SENTINEL.match(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None  # not canonical: the client's encoder never writes that
        return decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


_PARAM_HEADER_PREFIX = "mcp-param-"
_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def _param_header_mismatch(handler: http.server.BaseHTTPRequestHandler, schema: Any, arguments: Any) -> Optional[str]:
    """Why the request's Mcp-Param-* headers disagree with its arguments (the spec's rules), or None."""
    annotations = param_header_annotations(schema)  # the client side's rule: one definition
    if not annotations:
        return None
    for path, token, kind in annotations:
        header = "Mcp-Param-" + token
        values = handler.headers.get_all(header) or []
        if len(values) > 1:
            return f"{header} header appears more than once"
        raw = values[0].strip() if values else None
        value: Any = arguments if isinstance(arguments, dict) else {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        argument = ".".join(path)
        if isinstance(value, bool):
            rendered: Optional[str] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            rendered = str(value)
        else:
            rendered = None  # absent, null, or not a scalar: a client sends no header for it
        if rendered is None:
            if raw is not None:
                return f"{header} header is present but the request body's {argument!r} argument is absent or not a scalar"
            continue
        if raw is None:
            return f"{header} header is missing but the request body's {argument!r} argument is present"
        decoded = _decode_header_value(raw)
        if decoded is None:
            return f"{header} header carries a malformed base64 value"
        if kind == "integer" and not isinstance(value, bool) and _DECIMAL.match(decoded) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            whole, _, fraction = decoded.partition(".")
            if not fraction.strip("0") and int(whole) == int(value):
                continue  # 42 and 42.0 are the same integer
        elif decoded == rendered:
            continue
        return f"{header} header does not match the request body's {argument!r} argument"
    return None


def _modern_rejection(handler: http.server.BaseHTTPRequestHandler, message: Dict[str, Any]) -> Optional[Tuple[int, str, Any]]:
    """Why a 2026-07-28 request's envelope is refused, as (code, message, data); None if it is fine.

    The checks and their order are the spec's (and the SDK's): the _meta
    envelope, then the routing headers against the body, then the version.
    """
    for name in ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"):
        if len(handler.headers.get_all(name) or []) > 1:
            return HEADER_MISMATCH, f"{name} header appears more than once", None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return jsonrpc.INVALID_PARAMS, f"params._meta must be an object carrying {PROTOCOL_VERSION_META_KEY!r} and {CLIENT_CAPABILITIES_META_KEY!r}", None
    missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in meta]
    if missing:
        return jsonrpc.INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}", None
    assert isinstance(params, dict)
    version = meta[PROTOCOL_VERSION_META_KEY]
    if _header(handler, "MCP-Protocol-Version") != version:
        return HEADER_MISMATCH, "MCP-Protocol-Version header does not match the request's protocol version in params._meta", None
    method = message["method"]
    if _header(handler, "Mcp-Method") != method:
        return HEADER_MISMATCH, "Mcp-Method header does not match the request body's method", None
    name_key = _NAME_BEARING.get(method)
    if name_key is not None and params.get(name_key) is not None and _decode_header_value(_header(handler, "Mcp-Name")) != params[name_key]:
        return HEADER_MISMATCH, f"Mcp-Name header does not match the request body's {name_key!r}", None
    if not isinstance(version, str):
        return jsonrpc.INVALID_PARAMS, "the protocol version in params._meta must be a string", None
    if version not in MODERN_PROTOCOL_VERSIONS:
        return UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", _unsupported_data(version)
    return None


# -- helpers -----------------------------------------------------------------------------


def _object(value: Any) -> Dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (params and _meta are optional)."""
    return value if isinstance(value, dict) else {}


def _valid_id(value: Any) -> bool:
    """JSON-RPC ids are strings or integers (MCP forbids null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _kind(message: Any) -> str:
    """``jsonrpc.kind``, but a request with an id of the wrong type is invalid (ids key dicts here)."""
    kind = jsonrpc.kind(message)
    if kind == "request" and not _valid_id(message["id"]):
        return "invalid"
    return kind


def _id_of(message: Any) -> Any:
    """The id of an invalid message, if it has a usable one (else null)."""
    if isinstance(message, dict) and _valid_id(message.get("id")):
        return message["id"]
    return None


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode("ascii")).decode("ascii")


def _decode_cursor(cursor: Any) -> Optional[int]:
    """The offset in a cursor we issued, or None if it is not one."""
    if not isinstance(cursor, str):
        return None
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (ValueError, binascii.Error, UnicodeError):
        return None
    prefix, _, number = text.partition(":")
    if prefix != "offset" or not number.isdigit():
        return None
    return int(number)


def _progress_fn(call: _Call, token: Any) -> Callable[..., None]:
    lock = threading.Lock()

    def progress(progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        if token is None:
            return  # the client asked for no progress
        # Progress MUST increase; a provider relaying a confused upstream must
        # not make us break that.
        with lock:
            if call.last_progress is not None and progress <= call.last_progress:
                return
            call.last_progress = progress
        params: Dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        call.notify(jsonrpc.notification("notifications/progress", params))

    return progress


def _log_fn(call: _Call, session: _Session) -> Callable[..., None]:
    def log_message(level: str, data: Any, logger_name: Optional[str] = None) -> None:
        if level not in LOG_LEVELS:
            logger.debug("dropping a log message with unknown level %r", level)
            return
        if LOG_LEVELS.index(level) < session.log_level:
            return
        params: Dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        call.notify(jsonrpc.notification("notifications/message", params))

    return log_message
