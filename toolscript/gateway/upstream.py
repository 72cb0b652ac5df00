"""One configured MCP server as the gateway sees it: connection state, tools, restarts.

States: ``connecting`` (first attempt or a reconnect under way), ``ready``,
``failed`` (with the reason and, for stdio, the server's stderr tail).  A
server that fails or crashes is retried with exponential backoff capped at
``MAX_BACKOFF`` seconds, for as long as the gateway runs: a server whose
command was missing starts working once it is installed.  Calls to a server
that is not ready fail at once with the reason instead of waiting.
"""

import threading
import time
from typing import Any, Callable, Dict, List, Optional

from toolscript import log
from toolscript.config import ServerConfig
from toolscript.errors import UserError
from toolscript.mcp.connect import open_session
from toolscript.mcp.errors import ConnectionClosed, McpError, TransportError
from toolscript.mcp.session import ClientSession

logger = log.get("gateway.upstream")

FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
PING_INTERVAL = 30.0  # seconds between liveness pings of http/sse servers


class UpstreamUnavailable(UserError):
    """The server is not connected; the message says why."""


class Upstream:
    """Keeps one MCP server connected and its tool list current."""

    def __init__(self, server: ServerConfig, on_change: Callable[["Upstream"], None]) -> None:
        self.server = server
        self.name = server.name
        self._on_change = on_change
        self.state = "connecting"
        self.error: Optional[str] = None
        self.stderr_tail = ""
        self.tools: List[Dict[str, Any]] = []  # after includeTools/excludeTools
        self.tools_total = 0
        self.transport = server.type
        self.protocol_version: Optional[str] = None
        self.server_info: Dict[str, Any] = {}
        self.instructions: Optional[str] = None
        self.restarts = 0
        self.settled = threading.Event()  # set once the first attempt has succeeded or failed
        self._session: Optional[ClientSession] = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._log_listeners: List[Callable[[Dict[str, Any]], None]] = []
        self._backoff = FIRST_BACKOFF
        self._lost_event = threading.Event()  # set when the current connection is gone
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"upstream-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def _run(self) -> None:
        """Connect; after a failure or crash, wait (backoff) and connect again."""
        while not self._stopped.is_set():
            if self._connect():
                self._backoff = FIRST_BACKOFF
                self._wait_until_lost()
                if self._stopped.is_set():
                    return
                self.restarts += 1
            delay = self._backoff
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)
            logger.info("%s: reconnecting in %.0fs", self.name, delay)
            if self._stopped.wait(delay):
                return
            self._set_state("connecting")

    def _connect(self) -> bool:
        lost = threading.Event()
        try:
            session = open_session(
                self.server,
                on_tools_changed=self._tools_changed,
                on_log=self._relay_log,
                on_close=lambda exc: self._lost(exc, lost),
            )
        except McpError as exc:
            self.stderr_tail = getattr(exc, "stderr_tail", "") or ""
            self._set_state("failed", str(exc))
            return False
        except Exception as exc:  # a bug must not kill the thread silently
            logger.exception("%s: connecting failed", self.name)
            self._set_state("failed", f"internal error: {type(exc).__name__}: {exc}")
            return False
        if self._stopped.is_set():
            session.close()
            return False
        with self._lock:
            self._session = session
            self._lost_event = lost
        self.transport = session.transport.name
        self.protocol_version = session.protocol_version
        self.server_info = session.server_info
        self.instructions = session.instructions
        try:
            self._load_tools(session)
        except McpError as exc:
            session.close()
            self._set_state("failed", f"tools/list failed: {exc}")
            return False
        self.stderr_tail = ""
        self._set_state("ready")
        logger.info("%s: ready (%s, %d tools)", self.name, self.transport, len(self.tools))
        return True

    def _wait_until_lost(self) -> None:
        """Block while connected.  Remote servers have no process to watch, so they are pinged."""
        with self._lock:
            lost, session = self._lost_event, self._session
        next_ping = time.monotonic() + PING_INTERVAL
        while not self._stopped.is_set() and not lost.wait(0.5):
            if session is None or session.transport.name == "stdio" or time.monotonic() < next_ping:
                continue
            next_ping = time.monotonic() + PING_INTERVAL
            try:
                session.ping(timeout=min(10.0, self.server.connect_timeout))
            except McpError as exc:
                self._lost(exc, lost)

    def _lost(self, exc: Exception, lost: threading.Event) -> None:
        """The server went away on its own: mark it failed and let _run reconnect."""
        if self._stopped.is_set():
            lost.set()  # we closed it ourselves while stopping
            return
        tail = ""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            transport = session.transport
            tail = transport.stderr_tail() if hasattr(transport, "stderr_tail") else ""
            session.close()  # reap the process
        self.stderr_tail = tail
        self._set_state("failed", str(exc))
        lost.set()

    def _load_tools(self, session: ClientSession) -> None:
        tools = session.list_tools(self.server.connect_timeout)
        self.tools_total = len(tools)
        self.tools = [t for t in tools if self.server.allows_tool(t["name"]) and _callable(t)]

    def _tools_changed(self) -> None:
        # Called on the transport's reader thread: list on another thread.
        threading.Thread(target=self.refresh_tools, name=f"refresh-{self.name}", daemon=True).start()

    def refresh_tools(self) -> None:
        with self._lock:
            session = self._session
        if session is None or self.state != "ready":
            return
        try:
            self._load_tools(session)
        except McpError as exc:
            logger.warning("%s: refreshing tools failed: %s", self.name, exc)
            return
        logger.info("%s: tool list changed (%d tools)", self.name, len(self.tools))
        self._on_change(self)

    def _set_state(self, state: str, error: Optional[str] = None) -> None:
        self.state = state
        self.error = error
        if state != "connecting":
            self.settled.set()
        if error:
            logger.warning("%s: %s", self.name, error)
        self._on_change(self)

    # -- calls -------------------------------------------------------------------

    def call(
        self,
        tool: str,
        arguments: Dict[str, Any],
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
        cancel: Optional[threading.Event] = None,
    ) -> Dict[str, Any]:
        """Call ``tool`` on this server; the CallToolResult comes back whole."""
        with self._lock:
            session = self._session
        if session is None or self.state != "ready":
            raise UpstreamUnavailable(self.unavailable_reason())
        if on_log is not None:
            self._log_listeners.append(on_log)
        try:
            return session.call_tool(
                tool, arguments, timeout=timeout or self.server.call_timeout, on_progress=on_progress, cancel=cancel
            )
        except (ConnectionClosed, TransportError) as exc:
            # HTTP servers have no connection to watch: a transport failure on a
            # call is how we learn they went away.
            if not isinstance(exc, ConnectionClosed) or session.transport.name != "stdio":
                self._lost(exc, self._lost_event)
            raise
        finally:
            if on_log is not None:
                self._log_listeners.remove(on_log)

    def wait_while_connecting(self, timeout: float) -> None:
        """Give a (re)connecting server up to ``timeout`` seconds; failed servers return at once."""
        deadline = time.monotonic() + timeout
        while self.state == "connecting" and not self._stopped.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)

    def unavailable_reason(self) -> str:
        if self.state == "connecting":
            return f"server {self.name!r} is still connecting; try again in a moment"
        reason = f"server {self.name!r} is not available: {self.error}"
        return reason + " (toolscript retries it automatically; check it with 'toolscript servers check " + self.name + "')"

    def _relay_log(self, params: Dict[str, Any]) -> None:
        """Upstream log messages go to the calls in flight on this server."""
        for listener in list(self._log_listeners):
            try:
                listener(params)
            except Exception:
                logger.debug("a log listener failed", exc_info=True)

    def describe(self) -> Dict[str, Any]:
        """The JSON the gateway serves for this server."""
        info: Dict[str, Any] = {
            "name": self.name,
            "transport": self.transport,
            "state": self.state,
            "tools": len(self.tools),
            "toolsTotal": self.tools_total,
            "restarts": self.restarts,
        }
        if self.error:
            info["error"] = self.error
        if self.stderr_tail:
            info["stderrTail"] = self.stderr_tail
        if self.protocol_version:
            info["protocolVersion"] = self.protocol_version
            info["serverInfo"] = self.server_info
        if self.instructions:
            info["instructions"] = self.instructions
        return info


def _callable(tool: Dict[str, Any]) -> bool:
    """Tools that require task augmentation cannot be called plainly; hide them."""
    execution = tool.get("execution")
    return not (isinstance(execution, dict) and execution.get("taskSupport") == "required")


def wait_settled(upstreams: List[Upstream], deadline: float) -> List[str]:
    """Wait until every upstream has settled or ``deadline`` (monotonic) passes; return the names still connecting."""
    for upstream in upstreams:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            upstream.settled.wait(remaining)
    return [u.name for u in upstreams if u.state == "connecting"]
