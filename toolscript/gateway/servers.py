"""Which of a server's tools toolscript shows, and why the others are hidden.

One rule for every place that counts tools (``servers check``, ``doctor``,
``gateway status``, ``list-servers``): a tool is hidden when the server's
``includeTools``/``excludeTools`` leave it out, or when it can only be called
as a task (``execution.taskSupport: "required"``), which toolscript does not
do.  Reporting the hidden ones with their reason keeps the counts explainable:
``12 tools (1 hidden: needs tasks)``.

``probe``/``probe_all`` connect to servers and report what they found, for
``servers check`` and ``doctor``; an http/sse server uses its stored OAuth
sign-in, and one that needs a sign-in is reported as "needs auth: run
toolscript auth NAME" (``auth_required`` finds that case for the gateway too);
a stdio server that says it lacks a variable it was not given gets the
``env`` line to add (``hints``), in its error and as ``fix``.
"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Tuple

from toolscript import log
from toolscript.config.load import ServerConfig

logger = log.get("servers")

HIDDEN_BY_CONFIG = "includeTools/excludeTools"
HIDDEN_NEEDS_TASKS = "needs tasks"


def visible_tools(server: ServerConfig, tools: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    """The tools toolscript offers, and how many are hidden for each reason."""
    shown: List[Dict[str, Any]] = []
    hidden: Dict[str, int] = {}
    for tool in tools:
        reason = hidden_reason(server, tool)
        if reason is None:
            shown.append(tool)
        else:
            hidden[reason] = hidden.get(reason, 0) + 1
    return shown, hidden


def hidden_reason(server: ServerConfig, tool: Dict[str, Any]) -> Any:
    """Why ``tool`` is hidden, or None when it is shown."""
    if not server.allows_tool(str(tool.get("name", ""))):
        return HIDDEN_BY_CONFIG
    execution = tool.get("execution")
    if isinstance(execution, dict) and execution.get("taskSupport") == "required":
        return HIDDEN_NEEDS_TASKS
    return None


def describe_count(shown: int, hidden: Dict[str, int]) -> str:
    """``"12 tools"`` or ``"12 tools (1 hidden: needs tasks)"``."""
    text = f"{shown} tool" + ("" if shown == 1 else "s")
    total = sum(hidden.values())
    if total:
        reasons = ", ".join(f"{count} {reason}" if len(hidden) > 1 else reason for reason, count in sorted(hidden.items()))
        text += f" ({total} hidden: {reasons})"
    return text


def probe(server: ServerConfig) -> Dict[str, Any]:
    """Connect, list tools, disconnect; report what happened as a JSON-ready dict.

    ``tools`` counts the tools toolscript shows, ``toolsTotal`` all the server
    lists, ``hidden`` the rest by reason.  Never raises for the server's
    faults: a failure is reported in ``error`` (one line) with ``stderrTail``
    for stdio servers.
    """
    from toolscript.mcp.client.connect import open_session  # the MCP client, only when something is probed
    from toolscript.mcp.errors import McpError

    started = time.monotonic()
    report: Dict[str, Any] = {"name": server.name, "ok": False, "transport": server.type, "source": server.describe_source()}
    if server.imported is not None:
        report["client"] = "Claude Code"
    session = None
    auth = None
    if server.type in ("http", "sse"):
        from toolscript.mcp.auth import store as oauth_store  # the stored sign-in, as the gateway would use it

        auth = oauth_store.bearer_auth(server)
    target = server
    if server.imported is not None and server.imported.headers_helper:
        from toolscript.config.claude_code import helper_headers
        from toolscript.errors import UserError

        try:
            target = helper_headers(server)
        except UserError as exc:
            report.update(error=str(exc), seconds=round(time.monotonic() - started, 3))
            return report
    try:
        session = open_session(target, auth=auth)
        report["transport"] = session.transport.name
        tools = session.list_tools(server.connect_timeout)
        if server.imported is not None:  # a server Claude Code also runs: the gateway uses this list without starting it
            from toolscript.gateway import toolcache

            toolcache.store(server, tools, server_info=session.server_info, protocol_version=session.protocol_version,
                            instructions=session.instructions)
        shown, hidden = visible_tools(server, tools)
        report.update(
            ok=True,
            protocolVersion=session.protocol_version,
            server={"name": session.server_info.get("name"), "version": session.server_info.get("version")},
            tools=len(shown),
            toolsTotal=len(tools),
            hidden=hidden,
        )
    except McpError as exc:
        report["error"] = str(exc)
        if exc.stderr_tail:
            report["stderrTail"] = exc.stderr_tail
        _note_auth(report, exc, server.name)
    except Exception as exc:  # a bug of ours must not hide the other servers' results
        if _note_auth(report, exc, server.name):
            pass
        elif is_oauth_error(exc):
            report["error"] = str(exc)  # the authorization server failed (one line, no secret)
        else:
            logger.debug("probe of %s failed", server.name, exc_info=True)
            report["error"] = f"internal error: {type(exc).__name__}: {exc}"
    finally:
        if session is not None:
            tail = session.transport.stderr_tail()
            if not report["ok"] and tail:
                report["stderrTail"] = tail
            session.close()
    if not report["ok"] and report.get("error"):
        _note_missing_variable(report, server)
    report["seconds"] = round(time.monotonic() - started, 3)
    return report


def _note_missing_variable(report: Dict[str, Any], server: ServerConfig) -> None:
    """A stdio server that said it lacks a variable it was not given: the error and ``fix`` name the ``env`` line to add."""
    from toolscript.gateway import hints

    fix = hints.missing_variable_hint(server, f"{report.get('stderrTail') or ''}\n{report['error']}")
    if fix:
        report["error"] = f"{report['error']}; {fix}"
        report["fix"] = fix


def auth_required(exc: BaseException) -> Optional[BaseException]:
    """The ``mcp.auth.flow.AuthRequired`` behind ``exc`` (itself, or what it was raised from), or None."""
    if "toolscript.mcp.auth.flow" not in sys.modules:
        return None  # nothing has used OAuth in this process: it cannot be an OAuth failure
    from toolscript.mcp.auth.flow import AuthRequired

    seen = 0
    current: Optional[BaseException] = exc
    while current is not None and seen < 10:
        if isinstance(current, AuthRequired):
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def is_oauth_error(exc: BaseException) -> bool:
    if "toolscript.mcp.auth.flow" not in sys.modules:
        return False
    from toolscript.mcp.auth.flow import OAuthError

    return isinstance(exc, OAuthError)


def _note_auth(report: Dict[str, Any], exc: BaseException, name: str) -> bool:
    """Report an ``AuthRequired`` (``exc`` or its cause) as "needs auth: run toolscript auth NAME"; True when it was one."""
    if auth_required(exc) is None:
        return False
    report["error"] = f"needs auth: run toolscript auth {name}"
    report["needsAuth"] = True
    return True


def probe_all(servers: List[ServerConfig]) -> List[Dict[str, Any]]:
    """``probe`` every server in parallel; results in the order given."""
    if not servers:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(servers))) as pool:
        return list(pool.map(probe, servers))
