"""Open an initialized ``ClientSession`` for one configured server.

Picks the transport from the server's ``type``.  Over stdio and Streamable
HTTP the session first probes ``server/discover`` (MCP 2026-07-28) and falls
back to the ``initialize`` handshake; legacy HTTP+SSE (``type: sse``) predates
the modern era, so it goes straight to the handshake.  For ``http`` it tries
Streamable HTTP first and falls back to the legacy HTTP+SSE transport when the
server answers the initialize POST with 400, 404 or 405, as the MCP spec's
backwards-compatibility section describes.

A caller that remembers what a server spoke last time passes it as ``era``
(see ``session_era``): ``"handshake"`` skips the ``server/discover`` probe (an
older stdio server that ignores unknown requests would otherwise cost half the
connect timeout on every connect) and ``"sse"`` goes straight to the legacy
transport.  A wrong hint only fails this attempt; the caller forgets it.

The server is described by ``ServerSettings``, a protocol: the app's
``config.load.ServerConfig`` satisfies it, and the MCP layer does not import the
app's configuration.

``auth`` (a ``BearerAuth``) gives http/sse servers their OAuth token; its
``AuthRequired`` ("needs auth: run toolscript auth NAME") is the connect error.
"""

from typing import Any, Callable, Dict, List, Optional, Protocol

from toolscript import log
from toolscript.mcp.auth.bearer import BearerAuth
from toolscript.mcp.client.legacy_sse import LegacySseTransport
from toolscript.mcp.client.session import ClientSession
from toolscript.mcp.client.stdio import StdioTransport
from toolscript.mcp.client.streamable_http import StreamableHttpTransport
from toolscript.mcp.client.transport import Transport
from toolscript.mcp.errors import HttpStatusError, McpError, RequestTimeout

logger = log.get("mcp.connect")

FALLBACK_STATUSES = (400, 404, 405)


class ServerSettings(Protocol):
    """What the MCP layer needs to know about a server (``config.load.ServerConfig`` has it all)."""

    name: str
    type: str  # "stdio" | "http" | "sse"
    command: Optional[str]
    args: List[str]
    env: Dict[str, str]
    cwd: Optional[str]
    url: Optional[str]
    headers: Dict[str, str]
    max_message_bytes: int

    @property
    def connect_timeout(self) -> float: ...


def open_session(
    server: ServerSettings,
    *,
    on_tools_changed: Optional[Callable[[], None]] = None,
    on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
    on_close: Optional[Callable[[Exception], None]] = None,
    on_session: Optional[Callable[[ClientSession], None]] = None,
    era: Optional[str] = None,
    auth: Optional[BearerAuth] = None,
) -> ClientSession:
    """Connect to ``server`` and complete the handshake within its connect timeout.

    ``on_session`` is called with each session as soon as it exists, before
    its handshake, so another thread can ``close()`` it: this call then
    raises ``ConnectionClosed`` promptly and no child process is left.

    Raises ``McpError`` (a ``UserError``) whose message says what went wrong
    and, for stdio servers, includes the tail of the server's stderr.
    """
    callbacks: Dict[str, Any] = {"on_tools_changed": on_tools_changed, "on_log": on_log, "on_close": on_close}
    timeout = server.connect_timeout
    limit = server.max_message_bytes

    def handshake(transport: Transport, discover: bool = True) -> ClientSession:
        session = ClientSession(transport, **callbacks)
        if on_session is not None:
            on_session(session)
        return _handshake(session, timeout, discover)

    discover = era != "handshake"
    if server.type == "stdio":
        command = server.command or ""
        transport = StdioTransport(command, server.args, server.env, server.cwd, max_message_bytes=limit, server_name=server.name)
        return handshake(transport, discover)
    url = server.url or ""
    if server.type == "sse" or era == "sse":
        return handshake(LegacySseTransport(url, server.headers, timeout=timeout, max_message_bytes=limit, server_name=server.name, auth=auth), False)
    try:
        return handshake(StreamableHttpTransport(url, server.headers, timeout=timeout, max_message_bytes=limit, server_name=server.name, auth=auth), discover)
    except HttpStatusError as exc:
        if exc.status not in FALLBACK_STATUSES:
            raise
        logger.debug("%s: Streamable HTTP refused (%s); trying legacy SSE", server.name, exc.status)
        try:
            return handshake(LegacySseTransport(url, server.headers, timeout=timeout, max_message_bytes=limit, server_name=server.name, auth=auth), False)
        except McpError as sse_exc:
            raise McpError(f"{exc} — and as a legacy SSE endpoint: {sse_exc}") from sse_exc


def session_era(session: ClientSession) -> str:
    """What ``session`` speaks, as ``open_session``'s ``era`` hint: "modern", "handshake" or "sse"."""
    if session.modern:
        return "modern"
    return "sse" if isinstance(session.transport, LegacySseTransport) else "handshake"


def _handshake(session: ClientSession, timeout: float, discover: bool = True) -> ClientSession:
    try:
        if discover:
            session.connect(timeout)
        else:
            session.initialize(timeout)
    except RequestTimeout as exc:
        session.close()
        error = RequestTimeout(f"no answer to {session.handshake_method} within {timeout:g}s{_stdio_details(session)}", timeout)
        error.stderr_tail = session.transport.stderr_tail()
        raise error from exc
    except McpError as exc:
        session.close()
        exc.stderr_tail = session.transport.stderr_tail()
        raise
    except BaseException:
        session.close()
        raise
    return session


def _stdio_details(session: ClientSession) -> str:
    """What a silent stdio server printed, to explain the timeout."""
    transport = session.transport
    if not isinstance(transport, StdioTransport):
        return ""
    details = ""
    garbage = transport.garbage_lines()
    if garbage:
        details += f"; it printed non-JSON on stdout, e.g. {garbage[-1]!r}"
    tail = transport.stderr_tail(1)
    if tail:
        details += f"; stderr: {tail.strip()}"
    return details
