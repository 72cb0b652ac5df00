"""The server side of MCP's stdio transport: a tool provider served on stdin/stdout.

``serve_stdio(provider, ...)`` reads newline-delimited JSON-RPC messages from
``stdin`` and writes one JSON message per line to ``stdout`` until ``stdin``
closes (the client's way of ending the session).  The provider is a
``provider.ToolProvider``, as ``McpHttpEndpoint`` serves (``list_tools``,
``call_tool``, ``add_listener``).

What it answers: ``initialize`` (the client's protocol version when we speak
it, else our latest), ``ping``, ``tools/list``, ``tools/call``,
``logging/setLevel``.  A 2026-07-28 request (its version in ``params._meta``)
needs no handshake: ``server/discover``, ``tools/list`` and ``tools/call`` are
answered with that era's result fields (``resultType``, our serverInfo in
``_meta``, cache hints on lists), and ``subscriptions/listen`` is acknowledged
and held open until stdin closes (it then gets its result), carrying
``notifications/tools/list_changed`` while it is.
Each ``tools/call`` runs in a thread of its own so the loop keeps reading:
``notifications/cancelled`` sets that call's ``cancelled`` flag and its
answer is then dropped, as the protocol asks.  A call's progress (when the
client gave a ``progressToken``) and logs go out as notifications.  When
stdin closes, every call still running is cancelled and waited for (a
bounded time), so no answer is written after the caller has moved on.

Nothing but protocol messages goes to ``stdout``; a line that is not JSON
gets a parse error with a null id, and messages that are neither requests
nor notifications (we send the client no requests) are ignored.
"""

import json
import threading
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple

from toolscript import log
from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.protocol import (
    LATEST_PROTOCOL_VERSION,
    LOG_LEVEL_META_KEY,
    MODERN_PROTOCOL_VERSIONS,
    SERVER_INFO_META_KEY,
    SUBSCRIPTION_ID_META_KEY,
    SUPPORTED_PROTOCOL_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    envelope_version,
)
from toolscript.mcp.server.provider import (
    DEFAULT_LOG_LEVEL, LOG_LEVELS, CallContext, ToolProvider, UnknownTool, log_notification, progress_sender)

logger = log.get("mcp.server.stdio")

MAX_LINE_BYTES = 16 * 1024 * 1024  # one message; a longer line is answered with a parse error and skipped
DRAIN_SECONDS = 5.0  # how long calls still running when stdin closes get to end once cancelled


class _Call:
    """One ``tools/call`` in flight."""

    def __init__(self, request_id: Any) -> None:
        self.request_id = request_id
        self.cancelled = Cancel()
        self.last_progress: Optional[float] = None
        self.done = threading.Event()
        self.modern = False  # a 2026-07-28 request: its result carries that era's fields
        self.log_level: Optional[int] = None  # its own log level (2026-07-28); None: the session's


class StdioServer:
    """One client on a pair of byte streams; ``run`` serves it until ``stdin`` ends."""

    def __init__(
        self,
        provider: ToolProvider,
        *,
        server_name: str,
        server_version: str,
        instructions: Optional[str] = None,
        list_changed: bool = True,
        stdin: BinaryIO,
        stdout: BinaryIO,
    ) -> None:
        self.provider = provider
        # False: the provider's tools never change, and clients need not listen for it.
        self.capabilities: Dict[str, Any] = {"tools": {"listChanged": list_changed}, "logging": {}}
        self.server_info = {"name": server_name, "version": server_version}
        self.instructions = instructions
        self.stdin = stdin
        self.stdout = stdout
        self.log_level = LOG_LEVELS.index(DEFAULT_LOG_LEVEL)
        self._write_lock = threading.Lock()
        self._calls: Dict[Any, _Call] = {}
        self._calls_lock = threading.Lock()
        self._closed = False
        self._listens: List[Tuple[Any, bool]] = []  # open subscriptions/listen requests (2026-07-28): (id, tools changes honored)

    # -- the loop ------------------------------------------------------------------

    def run(self) -> None:
        """Answer messages until ``stdin`` closes; then cancel and wait for the calls still running."""
        unsubscribe = self.provider.add_listener(self._tools_changed)
        try:
            while True:
                line = self.stdin.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                    self._skip_rest_of_line()
                    self._send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"Parse error: a message longer than {MAX_LINE_BYTES} bytes"))
                    continue
                if line.strip():
                    self._receive(line)
        finally:
            self._close(unsubscribe)

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self.stdin.readline(MAX_LINE_BYTES)
            if not chunk or chunk.endswith(b"\n"):
                return

    def _close(self, unsubscribe: Callable[[], None]) -> None:
        with self._calls_lock:
            self._closed = True
            calls = list(self._calls.values())
        for call in calls:
            call.cancelled.set()
        for call in calls:
            if not call.done.wait(DRAIN_SECONDS):
                logger.warning("a tool call still runs %gs after the client left; leaving it", DRAIN_SECONDS)
                break
        with self._calls_lock:
            listens, self._listens = self._listens, []
        for request_id, _ in listens:  # their graceful end, should anyone still read
            self._send(self._modern(jsonrpc.result(request_id, {"_meta": {SUBSCRIPTION_ID_META_KEY: request_id}})))
        try:
            unsubscribe()
        except Exception:
            logger.debug("unsubscribing the tools listener failed", exc_info=True)

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:  # UnicodeDecodeError is one
            self._send(jsonrpc.error(None, jsonrpc.PARSE_ERROR, f"Parse error: {exc}"))
            return
        kind = jsonrpc.kind(message)
        if kind == "notification":
            self._notification(message)
        elif kind == "request" and _valid_id(message["id"]):
            version = envelope_version(message)
            if version is not None and version not in MODERN_PROTOCOL_VERSIONS and message["method"] != "initialize":
                from toolscript.mcp.server.envelope import unsupported_data  # only here: it imports http.server

                self._send(jsonrpc.error(message["id"], UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", unsupported_data(version)))
            elif message["method"] == "tools/call":
                self._start_call(message)
            elif message["method"] == "subscriptions/listen" and version is not None:
                self._listen(message)
            else:
                answer = self._answer(message)
                self._send(self._modern(answer, cacheable=message["method"] in ("tools/list", "server/discover")) if version else answer)
        elif kind != "response":  # we send no requests, so a response answers nothing
            request_id = message.get("id") if isinstance(message, dict) and _valid_id(message.get("id")) else None
            self._send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, "Invalid Request: one JSON-RPC request or notification per line"))

    def _notification(self, message: Dict[str, Any]) -> None:
        if message["method"] != "notifications/cancelled":
            return  # notifications/initialized and the rest change nothing here
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        with self._calls_lock:
            call = self._calls.get(request_id) if _valid_id(request_id) else None
        if call is not None:
            logger.debug("request %r cancelled by the client", request_id)
            call.cancelled.set()

    # -- requests ------------------------------------------------------------------

    def _answer(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """The response to any request but tools/call."""
        request_id, method = message["id"], message["method"]
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "params must be an object")
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
            result: Dict[str, Any] = {"protocolVersion": version, "capabilities": self.capabilities, "serverInfo": dict(self.server_info)}
            if self.instructions is not None:
                result["instructions"] = self.instructions
            return jsonrpc.result(request_id, result)
        if method == "server/discover" and envelope_version(message) in MODERN_PROTOCOL_VERSIONS:
            discovered: Dict[str, Any] = {"supportedVersions": list(MODERN_PROTOCOL_VERSIONS), "capabilities": self.capabilities,
                                          "serverInfo": dict(self.server_info)}
            if self.instructions is not None:
                discovered["instructions"] = self.instructions
            return jsonrpc.result(request_id, discovered)
        if method == "ping":
            return jsonrpc.result(request_id, {})
        if method == "tools/list":
            try:
                tools = list(self.provider.list_tools())
            except Exception as exc:
                logger.warning("listing tools failed: %s", exc, exc_info=True)
                return jsonrpc.error(request_id, jsonrpc.INTERNAL_ERROR, f"Internal error: {exc}")
            # Every tool has a description (clients and the conformance suite expect one).
            return jsonrpc.result(request_id, {"tools": [_described(tool) for tool in tools]})
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                return jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, f"Invalid log level: {level!r} (expected one of {', '.join(LOG_LEVELS)})")
            self.log_level = LOG_LEVELS.index(level)
            return jsonrpc.result(request_id, {})
        return jsonrpc.error(request_id, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _start_call(self, message: Dict[str, Any]) -> None:
        request_id = message["id"]
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            self._send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "tools/call needs params with a string \"name\""))
            return
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            self._send(jsonrpc.error(request_id, jsonrpc.INVALID_PARAMS, "tools/call \"arguments\" must be an object"))
            return
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, bool) or not isinstance(token, (str, int)):
            token = None
        call = _Call(request_id)
        call.modern = envelope_version(message) is not None
        if call.modern:  # logs only when the request opts in with a level (2026-07-28 has no logging/setLevel)
            level = meta.get(LOG_LEVEL_META_KEY) if isinstance(meta, dict) else None
            call.log_level = LOG_LEVELS.index(level) if level in LOG_LEVELS else len(LOG_LEVELS)
        with self._calls_lock:
            if self._closed:
                return
            if request_id in self._calls:
                self._send(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, f"Request id {request_id!r} is already in use"))
                return
            self._calls[request_id] = call
        thread = threading.Thread(target=self._run_call, args=(call, params["name"], arguments, token), name="mcp-stdio-call", daemon=True)
        thread.start()

    def _run_call(self, call: _Call, name: str, arguments: Dict[str, Any], token: Any) -> None:
        context = CallContext(call.request_id, call.cancelled, self._progress_fn(call, token), self._log_fn(call))
        try:
            try:
                result = self.provider.call_tool(name, arguments, context)
            except UnknownTool:
                response = jsonrpc.error(call.request_id, jsonrpc.INVALID_PARAMS, f"Unknown tool: {name}")
            except Exception as exc:
                # Execution failures are tool errors the model should see, not protocol errors.
                logger.debug("tool %r failed", name, exc_info=True)
                response = jsonrpc.result(call.request_id, {"content": [{"type": "text", "text": str(exc) or type(exc).__name__}], "isError": True})
            else:
                if isinstance(result, dict):
                    response = jsonrpc.result(call.request_id, result)
                else:
                    response = jsonrpc.error(call.request_id, jsonrpc.INTERNAL_ERROR, f"Internal error: tool {name!r} returned {type(result).__name__}, not an object")
            if not call.cancelled.is_set():  # a cancelled request gets no answer
                self._send(self._modern(response) if call.modern else response)
        finally:
            with self._calls_lock:
                if self._calls.get(call.request_id) is call:
                    del self._calls[call.request_id]
            call.done.set()

    # -- notifications to the client -------------------------------------------------

    def _progress_fn(self, call: _Call, token: Any) -> Callable[..., None]:
        return progress_sender(call, token, self._send, stopped=call.cancelled.is_set)

    def _log_fn(self, call: _Call) -> Callable[..., None]:
        def log_message(level: str, data: Any, logger_name: Optional[str] = None) -> None:
            threshold = self.log_level if call.log_level is None else call.log_level
            if level not in LOG_LEVELS or LOG_LEVELS.index(level) < threshold or call.cancelled.is_set():
                return
            self._send(log_notification(level, data, logger_name))

        return log_message

    def _tools_changed(self) -> None:
        with self._calls_lock:
            listens = list(self._listens)
        if not listens:  # a handshake-era client: the session itself carries notifications
            self._send(jsonrpc.notification("notifications/tools/list_changed"))
        for request_id, honored in listens:
            if honored:
                self._send(jsonrpc.notification("notifications/tools/list_changed", {"_meta": {SUBSCRIPTION_ID_META_KEY: request_id}}))

    # -- 2026-07-28 -----------------------------------------------------------------

    def _listen(self, message: Dict[str, Any]) -> None:
        """subscriptions/listen: acknowledged now (tool list changes only, when we have them), answered when stdin closes."""
        request_id = message["id"]
        params = message.get("params")
        wanted = params.get("notifications") if isinstance(params, dict) else None
        honored = bool(self.capabilities["tools"]["listChanged"] and isinstance(wanted, dict) and wanted.get("toolsListChanged") is True)
        with self._calls_lock:
            self._listens.append((request_id, honored))
        acknowledged = {"toolsListChanged": True} if honored else {}
        self._send(jsonrpc.notification("notifications/subscriptions/acknowledged", {"notifications": acknowledged, "_meta": {SUBSCRIPTION_ID_META_KEY: request_id}}))

    def _modern(self, response: Dict[str, Any], cacheable: bool = False) -> Dict[str, Any]:
        """A 2026-07-28 result: resultType, our serverInfo in _meta, and on lists no caching (they change with the provider)."""
        result = response.get("result")
        if not isinstance(result, dict):
            return response  # an error
        result = dict(result)
        result.setdefault("resultType", "complete")
        meta = dict(result.get("_meta") or {})
        meta.setdefault(SERVER_INFO_META_KEY, dict(self.server_info))
        result["_meta"] = meta
        if cacheable:
            result["ttlMs"] = 0
            result["cacheScope"] = "private"
        return dict(response, result=result)

    def _send(self, message: Dict[str, Any]) -> None:
        data = jsonrpc.encode(message) + b"\n"
        with self._write_lock:
            try:
                self.stdout.write(data)
                self.stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                logger.debug("the client closed its end of stdout")


def serve_stdio(
    provider: ToolProvider,
    *,
    server_name: str,
    server_version: str,
    instructions: Optional[str] = None,
    list_changed: bool = True,
    stdin: BinaryIO,
    stdout: BinaryIO,
) -> None:
    """Serve ``provider`` to one client on ``stdin``/``stdout`` (binary streams) until ``stdin`` closes."""
    StdioServer(provider, server_name=server_name, server_version=server_version, instructions=instructions, list_changed=list_changed,
                stdin=stdin, stdout=stdout).run()


def _valid_id(value: Any) -> bool:
    """JSON-RPC ids are strings or integers (MCP forbids null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _described(tool: Any) -> Any:
    if isinstance(tool, dict) and not isinstance(tool.get("description"), str):
        return dict(tool, description="")
    return tool

