"""``ClientSession``: the MCP client protocol over any transport.

It picks the protocol era (``connect``): it probes ``server/discover`` and
speaks MCP 2026-07-28 to a server that answers it (no handshake; every
request carries the ``_meta`` envelope; ``tools/list_changed`` arrives on a
``subscriptions/listen`` stream), and falls back to the ``initialize``
handshake for older servers.  ``protocol_version`` says which it got.

It matches responses to requests (requests may run
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
import time
from typing import Any, Callable, Dict, List, Optional

from toolscript import __version__, log
from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.errors import ConnectionClosed, HttpStatusError, McpError, RequestCancelled, RequestTimeout, SessionExpired
from toolscript.mcp.protocol import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_MODERN_VERSION,
    LATEST_PROTOCOL_VERSION,
    LOG_LEVEL_META_KEY,
    MODERN_PROTOCOL_VERSIONS,
    SERVER_INFO_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    modern_meta,
    param_header_annotations,
)
from toolscript.mcp.client.streamable_http import StreamableHttpTransport
from toolscript.mcp.client.transport import Transport, describe_request


logger = log.get("mcp.session")

DEFAULT_TIMEOUT = 60.0
MAX_TOOL_PAGES = 1000
# A subscriptions/listen request stays open as long as the session; it is
# re-sent when the server ends it (and after this long, to notice a dead stream).
LISTEN_SECONDS = 3600.0
LISTEN_RETRY_SECONDS = 5.0
# Requests the spec forbids cancelling, or that an older server may not know
# (cancelling a probe it never understood would only confuse it).
_NOT_CANCELLED = ("initialize", "server/discover")

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
        self.modern = False  # True once the server answered server/discover (MCP 2026-07-28)
        self.handshake_method = "initialize"  # the connect request sent last, to name it when it times out
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
        self.handshake_method = "initialize"
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

    def connect(self, timeout: float = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Start if needed and settle the protocol era; returns the DiscoverResult or InitializeResult.

        ``server/discover`` goes first.  Only positive evidence of a modern
        server counts (a DiscoverResult naming a modern version we speak, or
        -32022 naming one); any other answer (an error, an HTTP 4xx without
        a JSON-RPC error, and on stdio no answer within half the timeout)
        falls back to the ``initialize`` handshake, as the spec's dual-era
        client does.  Over HTTP a silent server is no evidence (it would not
        answer initialize either): the timeout is raised.  A modern-only
        server sharing no version with us is an error.
        """
        self.start()
        deadline = time.monotonic() + timeout
        version = LATEST_MODERN_VERSION
        # On stdio an old server may sit on a request it does not know; over
        # HTTP every request gets an answer, so the probe may use it all.
        probe_timeout = timeout if self.transport.relates_messages else timeout / 2
        for attempt in range(2):
            try:
                self.handshake_method = "server/discover"
                result = self._request_once("server/discover", {"_meta": modern_meta(version, self.client_info)}, probe_timeout, None)
            except jsonrpc.JsonRpcError as exc:
                supported = _supported_versions(exc)
                if supported is not None:
                    mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
                    if mutual and attempt == 0:
                        version = mutual[-1]
                        continue
                    if not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):
                        raise McpError(
                            f"the server speaks only MCP {', '.join(map(str, supported))}; toolscript supports "
                            f"{', '.join(MODERN_PROTOCOL_VERSIONS + SUPPORTED_PROTOCOL_VERSIONS)} (upgrade toolscript or the server)"
                        ) from exc
                logger.debug("server/discover refused (%s); using the initialize handshake", exc)
            except (HttpStatusError, RequestTimeout) as exc:
                if isinstance(exc, SessionExpired) or (isinstance(exc, RequestTimeout) and self.transport.relates_messages):
                    raise
                logger.debug("no answer to server/discover (%s); using the initialize handshake", exc)
            else:
                if self._adopt(result, version):
                    return result
                logger.debug("server/discover named no modern version we speak; using the initialize handshake")
            try:
                return self.initialize(max(deadline - time.monotonic(), 0.1))
            except jsonrpc.JsonRpcError as exc:
                # -32022 to initialize: a probe we gave up on reached a slow
                # server and settled it modern; ask again at a version it names.
                mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in (_supported_versions(exc) or ())]
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or not mutual or attempt:
                    raise
                version = mutual[-1]
        raise McpError("the server would settle on neither server/discover nor initialize")

    def _adopt(self, result: Any, version: str) -> bool:
        """Take a DiscoverResult: True if it makes this a modern session."""
        if not isinstance(result, dict) or not isinstance(result.get("supportedVersions"), list):
            return False
        if version not in result["supportedVersions"]:
            mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in result["supportedVersions"]]
            if not mutual:
                return False
            version = mutual[-1]
        meta = result.get("_meta")
        info = meta.get(SERVER_INFO_META_KEY) if isinstance(meta, dict) else None
        capabilities, instructions = result.get("capabilities"), result.get("instructions")
        self.server_info = info if isinstance(info, dict) else {}
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.instructions = instructions if isinstance(instructions, str) else None
        self.protocol_version = version
        self.modern = True
        self.transport.protocol_version = version
        tools = self.server_capabilities.get("tools")
        if isinstance(tools, dict) and tools.get("listChanged") and self.on_tools_changed is not None:
            # No GET stream in this era: change notifications flow on a listen request's answer.
            threading.Thread(target=self._listen, name="mcp-listen", daemon=True).start()
        logger.debug("discovered: %s %s, protocol %s", self.server_info.get("name"), self.server_info.get("version"), version)
        return True

    def _listen(self) -> None:
        """Hold a ``subscriptions/listen`` request open for tools/list_changed, re-listening when it ends."""
        params = {"notifications": {"toolsListChanged": True}}
        while not self.closed:
            started = time.monotonic()
            try:
                self._request_once("subscriptions/listen", params, LISTEN_SECONDS, None)
            except RequestTimeout:
                continue
            except jsonrpc.JsonRpcError as exc:
                logger.debug("the server refused subscriptions/listen: %s", exc)
                return
            except McpError as exc:
                if self.closed:
                    return
                logger.debug("subscriptions/listen failed (%s); listening again in %gs", exc, LISTEN_RETRY_SECONDS)
                time.sleep(LISTEN_RETRY_SECONDS)
            if self.closed:
                return
            if self.on_tools_changed is not None:
                # The stream ended: changes while we were not listening are
                # lost, so tell the caller to refetch.
                try:
                    self.on_tools_changed()
                except Exception:
                    logger.exception("the on_tools_changed callback failed")
            if time.monotonic() - started < LISTEN_RETRY_SECONDS:
                time.sleep(LISTEN_RETRY_SECONDS)  # a server that ends every stream at once must not make us spin

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
        if self.modern:
            params = self._with_envelope(params)
            # 2026-07-28 servers log only for requests that name a level (there
            # is no logging/setLevel); whoever relays the logs filters them.
            if on_log is not None or self.on_log is not None:
                params["_meta"].setdefault(LOG_LEVEL_META_KEY, "debug" if on_log is not None else "info")
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

    def _with_envelope(self, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        """``params`` with the modern ``_meta`` envelope added (keys the caller set win)."""
        params = dict(params or {})
        meta = modern_meta(self.protocol_version or LATEST_MODERN_VERSION, self.client_info)
        meta.update(params.get("_meta") or {})
        params["_meta"] = meta
        return params

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
        if self.modern and self.transport.relates_messages:
            return  # modern HTTP: closing the response stream (abandon) is the cancellation
        if method in _NOT_CANCELLED:
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
        if self.modern:
            params = self._with_envelope(params)
        self.transport.send(jsonrpc.notification(method, params))

    def ping(self, timeout: float = 10.0) -> None:
        """Check the server answers (2026-07-28 has no ping: server/discover is the cheap request there)."""
        self.request("server/discover" if self.modern else "ping", timeout=timeout)

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
                return self._mirror_param_headers(tools) if self.modern else tools
            if cursor in seen:
                raise McpError(f"the server repeated the tools/list cursor {cursor!r}; stopping to avoid a loop")
            seen.add(cursor)
        raise McpError(f"the server kept paginating tools/list past {MAX_TOOL_PAGES} pages")

    def _mirror_param_headers(self, tools: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Learn each tool's x-mcp-header annotations (HTTP mirrors them on calls); drop tools whose are invalid, as the spec requires."""
        kept, annotations = [], {}
        for tool in tools:
            found = param_header_annotations(tool.get("inputSchema"))
            if found is None:
                logger.warning("dropping tool %r: its inputSchema has an invalid x-mcp-header annotation", tool["name"])
                continue
            kept.append(tool)
            if found:
                annotations[tool["name"]] = found
        if isinstance(self.transport, StreamableHttpTransport):
            self.transport.tool_param_headers = annotations
        return kept

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
        result = message.get("result")
        if "error" in message:
            pending.settle(error=jsonrpc.JsonRpcError.from_error(message["error"]))
        elif self.modern and isinstance(result, dict) and result.get("resultType", "complete") != "complete":
            # e.g. MRTR's input_required: the server wants something we declared no capability for.
            pending.settle(error=McpError(
                f"the server answered {pending.method} with resultType {result.get('resultType')!r}, "
                "which toolscript does not support (it declares no client capabilities)"
            ))
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


def _supported_versions(error: jsonrpc.JsonRpcError) -> Optional[List[str]]:
    """The ``supported`` list of a -32022 UnsupportedProtocolVersion error, or None."""
    data = error.data
    if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(data, dict) or not isinstance(data.get("supported"), list):
        return None
    return [v for v in data["supported"] if isinstance(v, str)]
