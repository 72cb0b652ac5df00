"""What an MCP server of this package serves, whatever its transport: a tool provider and what a call gets.

``McpHttpEndpoint`` (Streamable HTTP) and ``StdioServer`` (stdio) both serve a
``ToolProvider``; this module is what they share, and it imports neither, so
the stdio server starts without the HTTP server's imports.
"""

import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Protocol

from toolscript.mcp import jsonrpc
from toolscript.mcp.cancel import Cancel

# RFC 5424 severities, lowest first, as MCP's logging/setLevel names them.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LOG_LEVEL = "info"


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
    """The tools a server serves."""

    def list_tools(self) -> List[Dict[str, Any]]:
        """MCP Tool objects, passed through verbatim (``description`` is added if missing)."""

    def call_tool(self, name: str, arguments: Dict[str, Any], call: CallContext) -> Dict[str, Any]:
        """A CallToolResult.  Raise UnknownTool for -32602; any other exception becomes an isError result."""

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` whenever the tool list changes; return a function that unsubscribes it."""


def progress_sender(call: Any, token: Any, send: Callable[[Dict[str, Any]], None],
                    stopped: Callable[[], bool] = lambda: False) -> Callable[..., None]:
    """A ``CallContext.progress`` that sends ``notifications/progress`` through ``send``.

    Nothing goes out without a progress token (the client asked for none) or
    once ``stopped()``; and progress MUST increase, so a provider relaying a
    confused upstream cannot break that: ``call.last_progress`` holds the last
    value sent.
    """
    lock = threading.Lock()

    def progress(progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        if token is None or stopped():
            return
        with lock:
            if call.last_progress is not None and progress <= call.last_progress:
                return
            call.last_progress = progress
        params: Dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        send(jsonrpc.notification("notifications/progress", params))

    return progress


def log_notification(level: str, data: Any, logger_name: Optional[str] = None) -> Dict[str, Any]:
    """The ``notifications/message`` a provider's log line becomes."""
    params: Dict[str, Any] = {"level": level, "data": data}
    if logger_name is not None:
        params["logger"] = logger_name
    return jsonrpc.notification("notifications/message", params)
