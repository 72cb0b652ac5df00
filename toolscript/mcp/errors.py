"""Errors raised by the MCP layer.  Each ``str()`` is one line a user can act on."""

from typing import Optional

from toolscript.errors import UserError


class McpError(UserError):
    """Base of every MCP-layer failure."""

    # What a stdio server last wrote to stderr, when that explains the failure.
    stderr_tail: str = ""


class TransportError(McpError):
    """The transport could not deliver or receive a message."""


class ConnectionClosed(TransportError):
    """The server went away (process exited, stream closed)."""


class MessageTooLarge(TransportError):
    """A message from the server was over ``maxMessageBytes``."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class HttpStatusError(TransportError):
    """An HTTP request got a status that is not a success."""

    def __init__(self, message: str, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class SessionExpired(HttpStatusError):
    """The server no longer knows our ``Mcp-Session-Id``; re-initialize."""


class RequestTimeout(McpError):
    """No answer within the time allowed."""

    def __init__(self, message: str, seconds: Optional[float] = None) -> None:
        super().__init__(message)
        self.seconds = seconds


class RequestCancelled(McpError):
    """The caller gave up on the request (for example its own client cancelled)."""
