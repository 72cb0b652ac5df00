"""Open an initialized ``ClientSession`` for one configured server.

Picks the transport from the server's ``type``.  For ``http`` it tries
Streamable HTTP first and falls back to the legacy HTTP+SSE transport when the
server answers the initialize POST with 400, 404 or 405, as the MCP spec's
backwards-compatibility section describes.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional

from toolscript import log
from toolscript.config import ServerConfig
from toolscript.mcp.errors import HttpStatusError, McpError, RequestTimeout
from toolscript.mcp.legacy_sse import LegacySseTransport
from toolscript.mcp.session import ClientSession
from toolscript.mcp.stdio import StdioTransport
from toolscript.mcp.streamable_http import StreamableHttpTransport

logger = log.get("mcp.connect")

FALLBACK_STATUSES = (400, 404, 405)


def open_session(
    server: ServerConfig,
    *,
    on_tools_changed: Optional[Callable[[], None]] = None,
    on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
    on_close: Optional[Callable[[Exception], None]] = None,
) -> ClientSession:
    """Connect to ``server`` and complete the handshake within its connect timeout.

    Raises ``McpError`` (a ``UserError``) whose message says what went wrong
    and, for stdio servers, includes the tail of the server's stderr.
    """
    callbacks = {"on_tools_changed": on_tools_changed, "on_log": on_log, "on_close": on_close}
    timeout = server.connect_timeout
    if server.type == "stdio":
        transport = StdioTransport(server.command, server.args, server.env, server.cwd)
        return _handshake(ClientSession(transport, **callbacks), timeout)
    if server.type == "sse":
        return _handshake(ClientSession(LegacySseTransport(server.url, server.headers, timeout=timeout), **callbacks), timeout)
    try:
        return _handshake(ClientSession(StreamableHttpTransport(server.url, server.headers, timeout=timeout), **callbacks), timeout)
    except HttpStatusError as exc:
        if exc.status not in FALLBACK_STATUSES:
            raise
        logger.debug("%s: Streamable HTTP refused (%s); trying legacy SSE", server.name, exc.status)
        try:
            return _handshake(ClientSession(LegacySseTransport(server.url, server.headers, timeout=timeout), **callbacks), timeout)
        except McpError as sse_exc:
            raise McpError(f"{exc} — and as a legacy SSE endpoint: {sse_exc}") from sse_exc


def _handshake(session: ClientSession, timeout: float) -> ClientSession:
    try:
        session.initialize(timeout)
    except RequestTimeout as exc:
        session.close()
        error = RequestTimeout(f"no answer to initialize within {timeout:g}s{_stdio_details(session)}", timeout)
        error.stderr_tail = _stderr_tail(session)  # type: ignore[attr-defined]
        raise error from exc
    except McpError as exc:
        session.close()
        exc.stderr_tail = _stderr_tail(session)  # type: ignore[attr-defined]
        raise
    except BaseException:
        session.close()
        raise
    return session


def _stderr_tail(session: ClientSession) -> str:
    transport = session.transport
    return transport.stderr_tail() if isinstance(transport, StdioTransport) else ""


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


def probe(server: ServerConfig) -> Dict[str, Any]:
    """Connect, list tools, disconnect; report what happened as a JSON-ready dict.

    Never raises for the server's faults: a failure is reported in ``error``
    (one line) with ``stderrTail`` for stdio servers.
    """
    started = time.monotonic()
    report: Dict[str, Any] = {"name": server.name, "ok": False, "transport": server.type, "source": server.source}
    session = None
    try:
        session = open_session(server)
        report["transport"] = session.transport.name
        tools = session.list_tools(server.connect_timeout)
        shown = [t["name"] for t in tools if server.allows_tool(t["name"])]
        report.update(
            ok=True,
            protocolVersion=session.protocol_version,
            server={"name": session.server_info.get("name"), "version": session.server_info.get("version")},
            tools=len(shown),
            toolsTotal=len(tools),
        )
    except McpError as exc:
        report["error"] = str(exc)
        if getattr(exc, "stderr_tail", ""):
            report["stderrTail"] = exc.stderr_tail  # type: ignore[attr-defined]
    except Exception as exc:  # a bug of ours must not hide the other servers' results
        logger.debug("probe of %s failed", server.name, exc_info=True)
        report["error"] = f"internal error: {type(exc).__name__}: {exc}"
    finally:
        if session is not None:
            if not report["ok"] and _stderr_tail(session):
                report["stderrTail"] = _stderr_tail(session)
            session.close()
    report["seconds"] = round(time.monotonic() - started, 3)
    return report


def probe_all(servers: List[ServerConfig]) -> List[Dict[str, Any]]:
    """``probe`` every server in parallel; results in the order given."""
    if not servers:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(servers))) as pool:
        return list(pool.map(probe, servers))
