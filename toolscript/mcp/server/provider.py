"""What an MCP server of this package serves, whatever its transport: a tool provider and what a call gets.

``McpHttpEndpoint`` (Streamable HTTP) and ``StdioServer`` (stdio) both serve a
``ToolProvider``; this module is what they share, and it imports neither, so
the stdio server starts without the HTTP server's imports.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Protocol

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
