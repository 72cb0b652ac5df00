"""``ClientSession``: the MCP client protocol over any transport.

It does the handshake, matches responses to requests (requests may run
concurrently from many threads), enforces per-request timeouts (sending
``notifications/cancelled`` when one expires), routes progress notifications
to the caller that asked for them, hands ``tools/list_changed`` and log
messages to callbacks, and answers the server's own requests: ``ping`` with
``{}`` and anything we did not declare a capability for with -32601.

A transport is any object with::

    name: str                                   "stdio" | "http" | "sse"
    protocol_version: Optional[str]             set here after the handshake
    start(on_message, on_close, on_request_error) -> None
    send(message: dict) -> None                 raises McpError
    close() -> None
    initialized() -> None                       optional: after the handshake
    abandon(request_id) -> None                 optional: stop waiting for a reply
"""

import itertools
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from toolscript import __version__, log
from toolscript.mcp import jsonrpc
from toolscript.mcp.errors import ConnectionClosed, McpError, RequestCancelled, RequestTimeout, SessionExpired

logger = log.get("mcp.session")

LATEST_PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
DEFAULT_TIMEOUT = 60.0
MAX_TOOL_PAGES = 1000

ProgressCallback = Callable[[Dict[str, Any]], None]


class _Pending:
    __slots__ = ("method", "event", "result", "error")

    def __init__(self, method: str) -> None:
        self.method = method
        self.event = threading.Event()
        self.result: Any = None
        self.error: Optional[BaseException] = None


class ClientSession:
    """One connection to one MCP server."""

    def __init__(
        self,
        transport: Any,
        *,
        client_name: str = "toolscript",
        client_version: str = __version__,
        on_tools_changed: Optional[Callable[[], None]] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_notification: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_close: Optional[Callable[[Exception], None]] = None,
    ) -> None:
        self.transport = transport
        self.client_info = {"name": client_name, "version": client_version}
        self.on_tools_changed = on_tools_changed
        self.on_log = on_log
        self.on_notification = on_notification
        self.on_close = on_close  # told when the server goes away on its own (crash, stream closed)
        self.protocol_version: Optional[str] = None
        self.server_info: Dict[str, Any] = {}
        self.server_capabilities: Dict[str, Any] = {}
        self.instructions: Optional[str] = None
        self.closed = False
        self.close_reason: Optional[Exception] = None
        self._ids = itertools.count(1)
        self._pending: Dict[Any, _Pending] = {}
        self._progress: Dict[str, ProgressCallback] = {}
        self._lock = threading.Lock()
        self._started = False

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the transport (spawn the process, open the stream)."""
        if not self._started:
            self.transport.start(self._on_message, self._on_close, self._on_request_error)
            self._started = True

    def initialize(self, timeout: float = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Start if needed, then do the MCP handshake; returns the InitializeResult."""
        self.start()
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            # We declare no client capabilities: servers must not send us
            # sampling, elicitation or roots requests (we answer -32601 if they do).
            "capabilities": {},
            "clientInfo": self.client_info,
        }
        result = self._request_once("initialize", params, timeout, None)
        if not isinstance(result, dict):
            raise McpError(f"the server answered initialize with {type(result).__name__}, not an object")
        version = result.get("protocolVersion")
        if version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise McpError(
                f"the server speaks MCP protocol version {version!r}; toolscript supports "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)} (upgrade toolscript or the server)"
            )
        self.protocol_version = version
        self.transport.protocol_version = version
        self.server_info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else {}
        self.server_capabilities = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
        self.instructions = result.get("instructions") if isinstance(result.get("instructions"), str) else None
        self.notify("notifications/initialized")
        if hasattr(self.transport, "initialized"):
            self.transport.initialized()
        logger.debug("initialized: %s %s, protocol %s", self.server_info.get("name"), self.server_info.get("version"), version)
        return result

    def close(self) -> None:
        """Close the transport and fail whatever is still waiting."""
        if not self.closed:
            self.closed = True
            self.close_reason = self.close_reason or ConnectionClosed("the session was closed")
        try:
            self.transport.close()
        finally:
            self._fail_all(self.close_reason)

    def __enter__(self) -> "ClientSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- requests ----------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> Any:
        """Send a request and wait for its result; raises JsonRpcError, RequestTimeout, McpError.

        Setting ``cancel`` abandons the request (the server is sent
        ``notifications/cancelled``) and raises ``RequestCancelled``.  If an
        HTTP server forgot our session, the handshake is redone and the
        request sent once more.
        """
        try:
            return self._request_once(method, params, timeout, on_progress, cancel)
        except SessionExpired:
            if self.protocol_version is None:
                raise
            logger.info("the server forgot our session; initializing again")
            self.initialize(timeout)
            return self._request_once(method, params, timeout, on_progress, cancel)

    def _request_once(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        timeout: float,
        on_progress: Optional[ProgressCallback],
        cancel: Optional[threading.Event] = None,
    ) -> Any:
        if self.closed:
            raise self.close_reason or ConnectionClosed("the session is closed")
        request_id = next(self._ids)
        token = None
        if on_progress is not None:
            token = f"toolscript-{request_id}"
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = token
            params["_meta"] = meta
        pending = _Pending(method)
        with self._lock:
            self._pending[request_id] = pending
            if token:
                self._progress[token] = on_progress
        try:
            self.transport.send(jsonrpc.request(request_id, method, params))
            if not self._wait(pending, timeout, cancel):
                if cancel is not None and cancel.is_set():
                    self._cancel(request_id, "cancelled by the client")
                    raise RequestCancelled(f"{_describe(method, params)} was cancelled")
                self._cancel(request_id, f"timed out after {timeout:g}s")
                raise RequestTimeout(f"{_describe(method, params)} got no answer within {timeout:g}s", timeout)
            if pending.error is not None:
                raise pending.error
            return pending.result
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
                if token:
                    self._progress.pop(token, None)

    @staticmethod
    def _wait(pending: _Pending, timeout: float, cancel: Optional[threading.Event]) -> bool:
        """Wait for the answer; False on timeout or cancellation."""
        if cancel is None:
            return pending.event.wait(timeout)
        deadline = time.monotonic() + timeout
        # Poll the cancel flag: an answer still wakes us at once, a
        # cancellation is noticed within the poll interval.
        while not cancel.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if pending.event.wait(min(remaining, 0.05)):
                return True
        return pending.event.is_set()

    def _cancel(self, request_id: Any, reason: str) -> None:
        if hasattr(self.transport, "abandon"):
            self.transport.abandon(request_id)
        try:
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except McpError as exc:
            logger.debug("could not send the cancellation: %s", exc)

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Send a notification (no answer expected)."""
        self.transport.send(jsonrpc.notification(method, params))

    def ping(self, timeout: float = 10.0) -> None:
        self.request("ping", timeout=timeout)

    def list_tools(self, timeout: float = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """Every tool, following ``nextCursor`` pagination to the end."""
        tools: List[Dict[str, Any]] = []
        cursor = None
        seen = set()
        for _ in range(MAX_TOOL_PAGES):
            result = self.request("tools/list", {"cursor": cursor} if cursor else None, timeout=timeout)
            if not isinstance(result, dict) or not isinstance(result.get("tools", []), list):
                raise McpError("the server answered tools/list without a list of tools")
            tools.extend(t for t in result.get("tools", []) if isinstance(t, dict) and isinstance(t.get("name"), str))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
            if cursor in seen:
                raise McpError(f"the server repeated the tools/list cursor {cursor!r}; stopping to avoid a loop")
            seen.add(cursor)
        raise McpError(f"the server kept paginating tools/list past {MAX_TOOL_PAGES} pages")

    def call_tool(
        self,
        name: str,
        arguments: Optional[Dict[str, Any]] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
    ) -> Dict[str, Any]:
        """Call a tool; the CallToolResult comes back whole (content, structuredContent, isError, _meta).

        A tool that fails reports ``isError: true`` in the result; that is not
        an exception.  Protocol failures (unknown tool, bad params) raise
        ``JsonRpcError``.
        """
        params = {"name": name, "arguments": arguments or {}}
        result = self.request("tools/call", params, timeout=timeout, on_progress=on_progress, cancel=cancel)
        if not isinstance(result, dict):
            raise McpError(f"the server answered tools/call {name!r} with {type(result).__name__}, not an object")
        return result

    def set_log_level(self, level: str, timeout: float = 10.0) -> None:
        self.request("logging/setLevel", {"level": level}, timeout=timeout)

    # -- incoming ---------------------------------------------------------------

    def _on_message(self, message: Any) -> None:
        kind = jsonrpc.kind(message)
        if kind == "response":
            self._on_response(message)
        elif kind == "notification":
            self._on_notification(message)
        elif kind == "request":
            # Answer off the reader thread: an HTTP answer is a POST of its own.
            threading.Thread(target=self._answer, args=(message,), name="mcp-answer", daemon=True).start()
        else:
            logger.debug("ignoring a message that is not JSON-RPC: %r", message)

    def _on_response(self, message: Dict[str, Any]) -> None:
        with self._lock:
            pending = self._pending.get(message["id"])
        if pending is None:
            logger.debug("ignoring a response to unknown request %r", message["id"])
            return
        if "error" in message:
            pending.error = jsonrpc.JsonRpcError.from_error(message["error"])
        else:
            pending.result = message["result"]
        pending.event.set()

    def _on_notification(self, message: Dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        callback: Optional[Callable[..., None]] = None
        args: tuple = ()
        if method == "notifications/progress":
            with self._lock:
                callback = self._progress.get(str(params.get("progressToken")))
            args = (params,)
        elif method == "notifications/tools/list_changed":
            callback = self.on_tools_changed
        elif method == "notifications/message":
            callback, args = self.on_log, (params,)
        for fn, fn_args in ((callback, args), (self.on_notification, (message,))):
            if fn is None:
                continue
            try:
                fn(*fn_args)
            except Exception:  # a caller's callback must not kill the reader thread
                logger.exception("a %s callback failed", method)

    def _answer(self, message: Dict[str, Any]) -> None:
        if message["method"] == "ping":
            reply = jsonrpc.result(message["id"], {})
        else:
            reply = jsonrpc.error(message["id"], jsonrpc.METHOD_NOT_FOUND, f"Method not found: {message['method']} (toolscript declares no client capabilities)")
        try:
            self.transport.send(reply)
        except McpError as exc:
            logger.debug("could not answer the server's %s request: %s", message["method"], exc)

    def _on_request_error(self, request_id: Any, error: Exception) -> None:
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is not None:
            pending.error = error
            pending.event.set()

    def _on_close(self, error: Optional[Exception]) -> None:
        if error is not None:
            logger.debug("connection closed: %s", error)
        unexpected = not self.closed and error is not None
        self.closed = True
        self.close_reason = error or ConnectionClosed("the session was closed")
        self._fail_all(self.close_reason)
        if unexpected and self.on_close is not None:
            try:
                self.on_close(self.close_reason)
            except Exception:
                logger.exception("the on_close callback failed")

    def _fail_all(self, error: Optional[Exception]) -> None:
        with self._lock:
            pending = list(self._pending.values())
        for item in pending:
            item.error = error or ConnectionClosed("the session was closed")
            item.event.set()


def _describe(method: str, params: Optional[Dict[str, Any]]) -> str:
    if method == "tools/call" and params:
        return f"tools/call {params.get('name')!r}"
    return method
