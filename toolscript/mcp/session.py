"""``ClientSession``: the MCP client protocol over any transport.

It does the handshake, matches responses to requests (requests may run
concurrently from many threads), enforces per-request timeouts (sending
``notifications/cancelled`` when one expires), routes progress notifications
to the caller that asked for them, hands ``tools/list_changed`` and log
messages to callbacks, and answers the server's own requests: ``ping`` with
``{}`` and anything we did not declare a capability for with -32601.

A log message goes to the session's ``on_log`` and to the ``on_log`` of the
request it belongs to: the one whose Streamable HTTP response carried it, or,
on transports that share one stream (stdio, legacy SSE), the only request
with an ``on_log`` in flight (with two or more, nobody can tell whose it is).

The transport is anything implementing ``transport.Transport``.
"""

import itertools
import threading
from typing import Any, Callable, Dict, List, Optional

from toolscript import __version__, log
from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.errors import ConnectionClosed, McpError, RequestCancelled, RequestTimeout, SessionExpired
from toolscript.mcp.protocol import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from toolscript.mcp.transport import Transport, describe_request


logger = log.get("mcp.session")

DEFAULT_TIMEOUT = 60.0
MAX_TOOL_PAGES = 1000

ProgressCallback = Callable[[Dict[str, Any]], None]
LogCallback = Callable[[Dict[str, Any]], None]


class _Pending:
    __slots__ = ("method", "event", "answered", "result", "error")

    def __init__(self, method: str) -> None:
        self.method = method
        self.event = threading.Event()  # set when answered, failed, or cancelled
        self.answered = False  # True once result or error is final
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def settle(self, result: Any = None, error: Optional[BaseException] = None) -> None:
        self.result, self.error, self.answered = result, error, True
        self.event.set()


class ClientSession:
    """One connection to one MCP server."""

    def __init__(
        self,
        transport: Transport,
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
        self._log_routes: Dict[Any, LogCallback] = {}  # request id -> that request's on_log
        self._lock = threading.Lock()
        self._started = False

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the transport (spawn the process, open the stream)."""
        if self.closed:
            raise self.close_reason or ConnectionClosed("the session is closed")
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
        info, capabilities, instructions = result.get("serverInfo"), result.get("capabilities"), result.get("instructions")
        self.server_info = info if isinstance(info, dict) else {}
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.instructions = instructions if isinstance(instructions, str) else None
        self.notify("notifications/initialized")
        self.transport.initialized()
        logger.debug("initialized: %s %s, protocol %s", self.server_info.get("name"), self.server_info.get("version"), version)
        return result

    def close(self) -> None:
        """Fail whatever is still waiting, then close the transport.

        Safe from another thread, even mid-handshake: the waiting
        ``initialize`` fails at once with ``ConnectionClosed``.
        """
        if not self.closed:
            self.closed = True
            self.close_reason = self.close_reason or ConnectionClosed("the session was closed")
        self._fail_all(self.close_reason)
        self.transport.close()

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
        on_log: Optional[LogCallback] = None,
        cancel: Optional[Cancel] = None,
    ) -> Any:
        """Send a request and wait for its result; raises JsonRpcError, RequestTimeout, McpError.

        Setting ``cancel`` abandons the request (the server is sent
        ``notifications/cancelled``) and raises ``RequestCancelled``.
        ``on_log`` gets the log messages that belong to this request (see the
        module docstring).  If an HTTP server forgot our session, the
        handshake is redone and the request sent once more.
        """
        try:
            return self._request_once(method, params, timeout, on_progress, cancel, on_log)
        except SessionExpired:
            if self.protocol_version is None:
                raise
            logger.info("the server forgot our session; initializing again")
            self.initialize(timeout)
            return self._request_once(method, params, timeout, on_progress, cancel, on_log)

    def _request_once(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        timeout: float,
        on_progress: Optional[ProgressCallback],
        cancel: Optional[Cancel] = None,
        on_log: Optional[LogCallback] = None,
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
            if token and on_progress is not None:
                self._progress[token] = on_progress
            if on_log is not None:
                self._log_routes[request_id] = on_log
        try:
            self.transport.send(jsonrpc.request(request_id, method, params))
            if not self._wait(pending, timeout, cancel):
                if cancel is not None and cancel.is_set():
                    self._cancel(request_id, method, "cancelled by the client")
                    raise RequestCancelled(f"{describe_request(method, params)} was cancelled")
                self._cancel(request_id, method, f"timed out after {timeout:g}s")
                raise RequestTimeout(f"{describe_request(method, params)} got no answer within {timeout:g}s", timeout)
            if pending.error is not None:
                raise pending.error
            return pending.result
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
                self._log_routes.pop(request_id, None)
                if token:
                    self._progress.pop(token, None)

    @staticmethod
    def _wait(pending: _Pending, timeout: float, cancel: Optional[Cancel]) -> bool:
        """Wait for the answer; False on timeout or cancellation."""
        if cancel is None:
            return pending.event.wait(timeout)
        # Setting the cancel flag wakes this wait at once (no polling).
        unsubscribe = cancel.on_set(pending.event.set)
        try:
            pending.event.wait(timeout)
        finally:
            unsubscribe()
        return pending.answered

    def _cancel(self, request_id: Any, method: str, reason: str) -> None:
        self.transport.abandon(request_id)
        if method == "initialize":
            # The spec forbids cancelling initialize; and over HTTP the
            # notification to a server that did not answer would block the
            # caller for another timeout (servers check took 4 s for "timeout": 2).
            return
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
        on_log: Optional[LogCallback] = None,
        cancel: Optional[Cancel] = None,
    ) -> Dict[str, Any]:
        """Call a tool; the CallToolResult comes back whole (content, structuredContent, isError, _meta).

        A tool that fails reports ``isError: true`` in the result; that is not
        an exception.  Protocol failures (unknown tool, bad params) raise
        ``JsonRpcError``.
        """
        params = {"name": name, "arguments": arguments or {}}
        result = self.request("tools/call", params, timeout=timeout, on_progress=on_progress, on_log=on_log, cancel=cancel)
        if not isinstance(result, dict):
            raise McpError(f"the server answered tools/call {name!r} with {type(result).__name__}, not an object")
        return result

    # -- incoming ---------------------------------------------------------------

    def _on_message(self, message: Any, related: Any = None) -> None:
        """A message from the transport; ``related`` is the id of the request it came with, if known."""
        kind = jsonrpc.kind(message)
        if kind == "response":
            self._on_response(message)
        elif kind == "notification":
            self._on_notification(message, related)
        elif kind == "request":
            # Answer off the reader thread: an HTTP answer is a POST of its own.
            threading.Thread(target=self._answer, args=(message,), name="mcp-answer", daemon=True).start()
        else:
            logger.debug("ignoring a message that is not JSON-RPC: %r", message)

    def _on_response(self, message: Dict[str, Any]) -> None:
        request_id = message["id"]
        if not isinstance(request_id, (int, str)):  # a list or dict id cannot be ours (nor a dict key)
            logger.debug("ignoring a response with id %r", request_id)
            return
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is None:
            logger.debug("ignoring a response to unknown request %r", request_id)
            return
        if "error" in message:
            pending.settle(error=jsonrpc.JsonRpcError.from_error(message["error"]))
        else:
            pending.settle(result=message["result"])

    def _log_route(self, related: Any) -> Optional[LogCallback]:
        """The on_log of the request a log message belongs to, if it can be told."""
        with self._lock:
            if self.transport.relates_messages:
                return self._log_routes.get(related) if isinstance(related, (int, str)) else None
            routes = list(self._log_routes.values())
        return routes[0] if len(routes) == 1 else None

    def _on_notification(self, message: Dict[str, Any], related: Any = None) -> None:
        method = message["method"]
        raw_params = message.get("params")
        params: Dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
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
        route = self._log_route(related) if method == "notifications/message" else None
        for fn, fn_args in ((callback, args), (route, args), (self.on_notification, (message,))):
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
            pending.settle(error=error)

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
            item.settle(error=error or ConnectionClosed("the session was closed"))
