"""The server side of MCP's Streamable HTTP transport, both eras on one endpoint: requests and sessions.

Handshake era (2024-11-05 … 2025-11-25): ``initialize`` and sessions, below.
Modern era (2026-07-28): a POST whose ``MCP-Protocol-Version`` header names
it (or, with no header and no session, whose ``params._meta`` carries a
protocol version) is one self-contained exchange: no handshake, no session;
the version and client capabilities ride in ``params._meta`` and must match
the ``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers (those
checks are ``envelope.py``'s).  It serves ``server/discover``, ``tools/list``
(with ``ttlMs``/``cacheScope``), ``tools/call`` (logs only when ``_meta`` opts
in with a level; cancelling is closing the response) and
``subscriptions/listen`` (tools/list_changed).

``McpHttpEndpoint`` serves the tools of a *provider* (any object with
``list_tools``, ``call_tool`` and ``add_listener``) as one MCP endpoint.  The
HTTP server around it is the caller's: its request handler checks whatever it
wants (auth, Host, Origin), reads the body and then calls
``endpoint.handle(handler, body)``, which writes the whole response
(``streams.py`` writes JSON answers and SSE streams).

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
  ``streams.STREAM_AFTER_SECONDS``: then the client gets headers at once and keep-alive
  comments while it waits, so its read timeout does not fire on a slow tool.
- GET opens the session's stream for ``notifications/tools/list_changed``.
- DELETE ends a session; in-flight calls see their ``cancelled`` event set.

No event ids are sent, so clients never try to resume a stream (resumption is
optional and would need an event store).
"""

import base64
import binascii
import http.server
import secrets
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from toolscript import log
from toolscript.http1 import DisconnectWatcher, decode_json, encode_json
from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.protocol import (
    HEADER_MISMATCH,
    LATEST_PROTOCOL_VERSION,
    LOG_LEVEL_META_KEY,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    SUBSCRIPTION_ID_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from toolscript.mcp.server.envelope import (
    PARAM_HEADER_PREFIX,
    accepts,
    as_object,
    is_modern,
    modern_rejection,
    modern_status,
    names_modern_version,
    param_header_mismatch,
    request_header,
    unsupported_data,
)
from toolscript.mcp.server.provider import (  # noqa: F401  (also imported from here)
    DEFAULT_LOG_LEVEL, LOG_LEVELS, CallContext, ToolProvider, UnknownTool, log_notification, progress_sender)
from toolscript.mcp.server.streams import JSON, SSE, GetStream, InFlightCall, encode_answer, pump, send, send_error, sse_event, start_stream, write

logger = log.get("mcp.server")

_TICK_SECONDS = 0.25  # how often the housekeeping thread looks at calls and sessions
# A 2025-03-26 batch (later revisions dropped batching) is bounded twice: in
# messages, and in the bytes of its answer array, which repeated requests
# (a tools/list is a whole page each) could otherwise blow up to hundreds of MB.
MAX_BATCH_MESSAGES = 100
MAX_BATCH_ANSWER_BYTES = 16 * 1024 * 1024

_ALLOW = "GET, POST, DELETE"


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
        self.calls: Dict[Any, InFlightCall] = {}  # in-flight tools/call by request id, for cancellation
        self.stream: Optional[GetStream] = None
        self.lock = threading.Lock()

    def busy(self) -> bool:
        return bool(self.calls) or self.stream is not None


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
        self._listens: List[GetStream] = []  # open subscriptions/listen streams, closed gracefully by close()
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
            send_error(handler, 503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down")
            return
        method = handler.command
        if method == "POST":
            self._post(handler, body)
        elif names_modern_version(handler) and method != "HEAD":
            # 2026-07-28 is POST only: no GET stream, no DELETE (there are no sessions).
            send_error(handler, 405, jsonrpc.INVALID_REQUEST, f"Method Not Allowed: {method} (protocol 2026-07-28 uses POST only)", [("Allow", "POST")])
        elif method == "GET":
            self._get(handler)
        elif method == "DELETE":
            self._delete(handler)
        elif method == "HEAD":
            send(handler, 405, b"", [("Allow", _ALLOW)])  # a HEAD answer must not have a body
        else:
            send_error(handler, 405, jsonrpc.INVALID_REQUEST, f"Method Not Allowed: {method}", [("Allow", _ALLOW)])

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
        session_id = request_header(handler, "Mcp-Session-Id")
        if not session_id:
            send_error(handler, 400, jsonrpc.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required")
            return None
        with self._lock:
            session = self._sessions.get(session_id)
        now = time.monotonic()
        if session is not None and self._expired(session, now):
            self._end(session)
            session = None
        if session is None:
            send_error(handler, 404, jsonrpc.INVALID_REQUEST, "Session not found")
            return None
        # Any supported version is fine, not only the negotiated one: the
        # conformance suite sends 2025-03-26 on a 2025-11-25 session.
        version = request_header(handler, "MCP-Protocol-Version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            send_error(
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
        if not (accepts(handler, JSON) and accepts(handler, SSE)):
            send_error(handler, 406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Client must accept both application/json and text/event-stream")
            return
        content_type = (request_header(handler, "Content-Type") or "").split(";")[0].strip().lower()
        if content_type != JSON:
            send_error(handler, 415, jsonrpc.INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json")
            return
        try:
            value = decode_json(body)
        except ValueError as exc:  # UnicodeDecodeError is one
            send_error(handler, 400, jsonrpc.PARSE_ERROR, f"Parse error: {exc}")
            return
        if is_modern(handler, value):
            self._post_modern(handler, value)
            return
        batch = isinstance(value, list)
        messages = value if batch else [value]
        if not messages:
            send_error(handler, 400, jsonrpc.INVALID_REQUEST, "Invalid Request: empty batch")
            return
        if len(messages) > self.max_batch:
            send_error(handler, 400, jsonrpc.INVALID_REQUEST,
                        f"Invalid Request: a batch may hold at most {self.max_batch} messages, this one has {len(messages)}; send them in smaller batches")
            return

        if len(messages) == 1 and _kind(messages[0]) == "request" and messages[0]["method"] == "initialize":
            # A new session, even if the request names an old one.
            response, session = self._initialize(messages[0])
            headers = [("Mcp-Session-Id", session.id)] if session is not None else []
            data = encode_answer(response)
            send(handler, 200, b"[" + data + b"]" if batch else data, headers)
            return

        session = self._session(handler)
        if session is None:
            return
        requests = [m for m in messages if _kind(m) in ("request", "invalid")]
        if not requests:
            for message in messages:
                self._client_notification(session, message)
            send(handler, 202)
            return
        if not batch:
            message = messages[0]
            if _kind(message) == "invalid":
                send(handler, 400, encode_json(jsonrpc.error(_id_of(message), jsonrpc.INVALID_REQUEST, "Invalid Request")))
            elif message["method"] == "tools/call":
                self._call_streamed(handler, session, message)
            else:
                send(handler, 200, encode_answer(self._dispatch(session, message)))
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
            send(handler, 200, b"[" + b",".join(answers) + b"]")
        else:
            send(handler, 202)  # every call was cancelled: nothing left to say

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
                call = InFlightCall(None, message["id"])
                stop_linking = hung_up.on_set(call.cancelled.set)
                try:
                    answer = self._call(call, session, message)
                finally:
                    stop_linking()
            else:
                answer = self._dispatch(session, message)
            if answer is None:
                continue  # a cancelled call
            data = encode_answer(answer)
            if not full and size + len(data) > self.max_batch_answer_bytes:
                full = True
                data = encode_answer(self._batch_too_big(message, ran=True))
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
        client = as_object(params.get("clientInfo"))
        logger.debug("session %s: %s %s, protocol %s", session.id[:8], client.get("name"), client.get("version"), version)
        return jsonrpc.result(message["id"], result), session

    def _client_notification(self, session: _Session, message: Dict[str, Any]) -> None:
        """Notifications and responses from the client (we send it no requests, so responses are dropped)."""
        if _kind(message) != "notification":
            return
        method = message["method"]
        params = as_object(message.get("params"))
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
    ) -> Tuple[InFlightCall, Optional[Dict[str, Any]]]:
        """Run one tools/call on its own HTTP request, cancelled if the client hangs up; the call and its response."""
        call = InFlightCall(handler, message["id"])
        unwatch = self.disconnects.watch(handler.connection, call.cancelled)
        try:
            return call, self._call(call, session, message)
        finally:
            unwatch()

    def _call(self, call: Optional[InFlightCall], session: _Session, message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
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
        meta = as_object(params.get("_meta"))
        token = meta.get("progressToken")
        if isinstance(token, bool) or not isinstance(token, (str, int)):
            token = None

        if call is None:
            call = InFlightCall(None, request_id)
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
        if not accepts(handler, SSE):
            send_error(handler, 406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Client must accept text/event-stream")
            return
        session = self._session(handler)
        if session is None:
            return
        stream = GetStream()
        with session.lock:
            ended = session.ended
            old = None
            if not ended:
                old, session.stream = session.stream, stream
        if ended:
            send_error(handler, 404, jsonrpc.INVALID_REQUEST, "Session not found")
            return
        if old is not None:
            old.close()  # one GET stream per session: the newest wins
        unsubscribe: Optional[Callable[[], None]] = None
        try:
            unsubscribe = self.provider.add_listener(stream.tools_changed)
            if write(handler, start_stream(handler)):
                pump(handler, stream)
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
        send(handler, 200)

    # -- 2026-07-28: one self-contained POST per request ---------------------------------

    def _post_modern(self, handler: http.server.BaseHTTPRequestHandler, message: Any) -> None:
        """Answer a 2026-07-28 POST: no session, the version and capabilities ride in params._meta."""
        if isinstance(message, dict) and "id" not in message and _kind(message) == "notification":
            # No client notification means anything here (cancelling is closing
            # the response stream), so they are acknowledged and dropped, as the SDK does.
            version = request_header(handler, "MCP-Protocol-Version") or ""
            if version not in MODERN_PROTOCOL_VERSIONS:
                _send_modern(handler, jsonrpc.error(None, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", unsupported_data(version)))
            else:
                send(handler, 202)
            return
        if _kind(message) != "request":
            _send_modern(handler, jsonrpc.error(_id_of(message), jsonrpc.INVALID_REQUEST, "Invalid Request: the body must be one JSON-RPC request or notification object (no batches, no responses)"))
            return
        request_id, method = message["id"], message["method"]
        rejection = modern_rejection(handler, message)
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
        meta = dict(as_object(result.get("_meta")))
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
        if any(name.lower().startswith(PARAM_HEADER_PREFIX) for name in handler.headers.keys()):
            # Intermediaries may route on Mcp-Param-* headers, so they must say what the body says.
            # Without any there is nothing that could mislead one, and no tool lookup is paid.
            mismatch = param_header_mismatch(handler, self._input_schema(params.get("name")), params.get("arguments"))
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
                send_error(handler, 503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down")
                return
            self._stateless.append(session)
            self._start_housekeeper()
        try:
            call, response = self._call_watched(handler, session, message)
            if response is not None:
                response = self._modern_result(response)
            call.finish(response, modern_status(response))
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
        wanted = as_object(params.get("notifications"))
        honored: Dict[str, Any] = {"toolsListChanged": True} if wanted.get("toolsListChanged") is True else {}
        meta = {SUBSCRIPTION_ID_META_KEY: request_id}
        stream = GetStream(meta)
        with self._lock:
            if self._closed.is_set():
                send_error(handler, 503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down")
                return
            self._listens.append(stream)
        unsubscribe: Optional[Callable[[], None]] = None
        try:
            if honored:
                unsubscribe = self.provider.add_listener(stream.tools_changed)
            ack = jsonrpc.notification("notifications/subscriptions/acknowledged", {"notifications": honored, "_meta": meta})
            if not write(handler, start_stream(handler) + sse_event(encode_json(ack))):
                return
            if pump(handler, stream):
                # We ended it (shutdown): the listen result is the graceful close.
                write(handler, sse_event(encode_json(self._modern_result(jsonrpc.result(request_id, {"_meta": meta})))))
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
    """Let each call of ``session`` commit to SSE or send a keep-alive (``InFlightCall.tick``)."""
    with session.lock:
        calls = list(session.calls.values())
    for call in calls:
        try:
            call.tick(now)
        except Exception:  # one broken stream must not stop the others' keep-alives
            logger.debug("housekeeping a call failed", exc_info=True)


def _send_modern(handler: http.server.BaseHTTPRequestHandler, response: Dict[str, Any]) -> None:
    """A 2026-07-28 answer, with the HTTP status its error code maps to."""
    send(handler, modern_status(response), encode_answer(response))


# -- helpers -----------------------------------------------------------------------------


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


def _progress_fn(call: InFlightCall, token: Any) -> Callable[..., None]:
    return progress_sender(call, token, call.notify)


def _log_fn(call: InFlightCall, session: _Session) -> Callable[..., None]:
    def log_message(level: str, data: Any, logger_name: Optional[str] = None) -> None:
        if level not in LOG_LEVELS:
            logger.debug("dropping a log message with unknown level %r", level)
            return
        if LOG_LEVELS.index(level) < session.log_level:
            return
        call.notify(log_notification(level, data, logger_name))

    return log_message
