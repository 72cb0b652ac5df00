"""One configured MCP server as the gateway sees it: connection state, tools, restarts.

States: ``connecting`` (first attempt or a reconnect under way), ``ready``,
``failed`` (with the reason and, for stdio, the server's stderr tail),
``needs-auth`` (an http/sse server that wants an OAuth sign-in we do not have:
no stored token, or it was revoked and cannot be refreshed; the error says
``needs auth: run toolscript auth NAME``).  A server that fails or crashes is
retried with exponential backoff capped at ``MAX_BACKOFF`` seconds, for as
long as the gateway runs: a server whose command was missing starts working
once it is installed.  A server that needs auth is not retried blindly: it is
reconnected as soon as its stored token changes (``toolscript auth NAME``), so
signing in needs no gateway restart.  Calls to a server that is not ready fail
at once with the reason instead of waiting.

A server taken from Claude Code's configuration is a ``LazyUpstream``:
Claude Code runs its own copy, and a stateful server (an exclusive lock, a
fixed port, a browser profile) breaks when two copies run at once.  So it is
started only to list its tools (never when the list is cached,
``toolcache``; else once, ``LISTING_DELAY_SECONDS`` after the gateway starts
so that Claude Code's own copy comes up first) and when a call needs it, and
it is stopped ``IDLE_RELEASE_SECONDS`` after its last call.  Its state is
``idle`` while it is not running; search and stubs use its listed tools.

http/sse servers get a ``BearerAuth`` over the token store
(``mcp.auth.store``): the stored token goes on every request, is refreshed
before it expires, and the refreshed one is stored again.

One worker thread per upstream does everything that is not a call: connect,
back off, watch the connection (pinging remote servers), and refresh the tool
list after ``list_changed`` (a burst of notifications is one refresh).  Every
session is tracked from the moment it is created, before its handshake, so
``stop`` closes it whatever state it is in and no server process outlives the
gateway.
"""

import threading
import time
from typing import Any, Callable, Dict, List, Optional

from toolscript import log
from toolscript.gateway import servers, toolcache
from toolscript.config.load import ServerConfig
from toolscript.errors import UserError
from toolscript.gateway import eras
from toolscript.gateway import hints  # the missing-variable fix in a failed stdio server's error
from toolscript.mcp.client.connect import open_session, session_era
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.errors import ConnectionClosed, McpError, TransportError
from toolscript.mcp.client.session import ClientSession
from toolscript.mcp.client.stdio import StdioTransport

NEEDS_AUTH = "needs-auth"
IDLE = "idle"  # a lazy server that is not running: its tools are known, a call starts it
# A lazy server is stopped this long after its last call: a script's calls come in bursts, and a
# stateful server must be free again soon for Claude Code's own copy.
IDLE_RELEASE_SECONDS = 60.0
# How long a gateway waits before starting a lazy server whose tools are not cached, to list them:
# Claude Code starts its copies at session start, while its SessionStart hook starts the gateway.
LISTING_DELAY_SECONDS = 3.0
# How often a server in needs-auth looks for a new sign-in in the token store (one stat call).
AUTH_POLL_SECONDS = 0.5

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
        # The state once the catalog has taken it in: what a caller waiting for the server looks at.
        self._published_state = "connecting"
        self.error: Optional[str] = None
        self.stderr_tail = ""
        self.tools: List[Dict[str, Any]] = []  # the tools toolscript shows (servers.visible_tools)
        self.hidden: Dict[str, int] = {}  # hidden tools: reason -> count
        self.tools_total = 0
        self.skills: List[Dict[str, Any]] = []  # what it offers through the Skills extension (gateway.mcp_skills)
        self.transport = server.type
        self.protocol_version: Optional[str] = None
        self.server_info: Dict[str, Any] = {}
        self.instructions: Optional[str] = None
        self.restarts = 0
        self.settled = threading.Event()  # set once the first attempt has succeeded or failed
        # One lock guards the fields below; its condition wakes the worker and
        # anyone waiting for a state change.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._session: Optional[ClientSession] = None  # the ready session
        self._sessions: List[ClientSession] = []  # every session not yet closed, ready or mid-handshake
        self._stopped = False
        self._lost = False  # the ready session went away
        self._refresh_wanted = False
        self._backoff = FIRST_BACKOFF
        self._thread: Optional[threading.Thread] = None
        self._store_signature: Any = None  # the token store's file as it was when the last attempt began
        self._auth: Any = None  # the BearerAuth of an http/sse server (built in start: stdio servers never import OAuth)

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        if self.server.config_error:
            # Its config is incomplete (an unset ${VAR}): never connect with it, say why.
            self._set_state("failed", self.server.config_error)
            return
        if self.server.type in ("http", "sse"):
            from toolscript.mcp.auth import store as oauth_store

            self._auth = oauth_store.bearer_auth(self.server)
        self._thread = threading.Thread(target=self._run, name=f"upstream-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, deadline: Optional[float] = None) -> None:
        """Close every session of this server (connecting or ready) and end the worker.

        ``deadline`` (monotonic) bounds the wait for the worker thread.
        """
        with self._changed:
            self._stopped = True
            sessions, self._sessions, self._session = list(self._sessions), [], None
            self._changed.notify_all()
        for session in sessions:
            session.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def kill_now(self) -> None:
        """SIGKILL every server process this upstream started (emergency exit)."""
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            transport = session.transport
            if isinstance(transport, StdioTransport):
                transport.kill_now()  # its process group, and what left it (the server's cgroup)

    def _track(self, session: ClientSession) -> None:
        """``open_session``'s ``on_session``: remember a session before its handshake so stop() can close it."""
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._sessions.append(session)
        if stopped:
            session.close()  # stop() already ran: the handshake fails promptly

    def _forget(self, session: ClientSession) -> None:
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)
            if self._session is session:
                self._session = None

    def _run(self) -> None:
        """Connect; after a failure or crash, wait (backoff) and connect again."""
        while not self._stopped:
            session = self._connect()
            if session is not None:
                self._backoff = FIRST_BACKOFF
                self._serve(session)
                if self._stopped:
                    return
                self.restarts += 1
            if self.state == NEEDS_AUTH:
                # Retrying cannot help until someone signs in: wait for the token store to change.
                if self._wait_for_sign_in():
                    return
                self._backoff = FIRST_BACKOFF
                self._set_state("connecting")
                continue
            delay = self._backoff
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)
            logger.info("%s: reconnecting in %.0fs", self.name, delay)
            with self._changed:
                if self._changed.wait_for(lambda: self._stopped, delay):
                    return
            self._set_state("connecting")

    def _wait_for_sign_in(self) -> bool:
        """Block until this server's stored token changes to a new one (a sign-in); True when stopped instead."""
        before = self._store_signature
        while True:
            with self._changed:
                if self._changed.wait_for(lambda: self._stopped, AUTH_POLL_SECONDS):
                    return True
            now = self._auth_signature()
            if now != before and now is not None:
                logger.info("%s: a new sign-in was stored; reconnecting", self.name)
                return False
            before = now

    def _auth_signature(self) -> Any:
        from toolscript.mcp.auth import store as oauth_store

        try:
            return oauth_store.signature(self.name)
        except UserError:
            return None

    def _needs_auth(self, exc: Exception) -> None:
        """This server wants a sign-in we do not have: say so (never an opaque 401)."""
        self.stderr_tail = ""
        self._set_state(NEEDS_AUTH, f"needs auth: run toolscript auth {self.name}")

    def _connect(self, target: Optional[ServerConfig] = None) -> Optional[ClientSession]:
        """One connection attempt to ``target`` (the configured server, or a copy of it with resolved headers)."""
        with self._lock:
            self._lost = False
            self._refresh_wanted = False
        if self._auth is not None:
            # Noted before connecting, so a sign-in that lands while this attempt fails is not missed.
            self._store_signature = self._auth_signature()
        attempt: Dict[str, Any] = {"session": None, "closed": None}  # this attempt's session, and how it closed early
        era = eras.recall(self.server)
        extra: Dict[str, Any] = {"auth": self._auth} if self._auth is not None else {}  # stdio servers: open_session as ever
        try:
            session = open_session(
                target or self.server,
                on_tools_changed=self._tools_changed,
                on_log=self._server_log,
                on_close=lambda exc: self._closed_by_server(exc, attempt),
                on_session=self._track,
                era=era,
                **extra,
            )
        except Exception as exc:
            if era is not None and not servers.is_oauth_error(exc):
                eras.remember(self.server, None)  # perhaps the server changed: probe afresh next time
            if servers.auth_required(exc) is None:
                self._connect_failed(exc)
                return None
            self._drop_attempt()
            if not self._stopped:
                self._needs_auth(exc)
            return None
        return self._connected(session, attempt)

    def _connect_failed(self, exc: Exception) -> None:
        self._drop_attempt()
        if isinstance(exc, McpError):
            if not self._stopped:
                self.stderr_tail = exc.stderr_tail
                self._set_state("failed", hints.with_hint(self.server, str(exc), exc.stderr_tail))
        elif servers.is_oauth_error(exc):  # the authorization server failed us (unreachable, answered nonsense)
            if not self._stopped:
                self._set_state("failed", str(exc))
        else:  # a bug must not kill the thread silently
            logger.error("%s: connecting failed", self.name, exc_info=exc)
            self._set_state("failed", f"internal error: {type(exc).__name__}: {exc}")

    def _connected(self, session: ClientSession, attempt: Dict[str, Any]) -> Optional[ClientSession]:
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._session = attempt["session"] = session
        if stopped:
            session.close()
            return None
        eras.remember(self.server, session_era(session))
        self.transport = session.transport.name
        self.protocol_version = session.protocol_version
        self.server_info = session.server_info
        self.instructions = session.instructions
        try:
            self._load_tools(session)
        except Exception as exc:
            self._forget(session)
            session.close()
            if self._stopped:
                return None
            if servers.auth_required(exc) is not None:
                self._needs_auth(exc)
            elif isinstance(exc, McpError) or servers.is_oauth_error(exc):
                self._set_state("failed", f"tools/list failed: {exc}")
            else:
                raise
            return None
        self._load_skills(session)
        self.stderr_tail = ""
        self._set_state("ready")
        logger.info("%s: ready (%s, %s)", self.name, self.transport, servers.describe_count(len(self.tools), self.hidden))
        if attempt["closed"] is not None:
            self._went_away(session, attempt["closed"])
        return session

    def _drop_attempt(self) -> None:
        """A failed connection attempt closed its own session: stop tracking it."""
        with self._lock:
            self._sessions = [s for s in self._sessions if s is self._session]

    def _serve(self, session: ClientSession) -> None:
        """Block while connected, refreshing tools on request.  Remote servers have no process to watch, so they are pinged."""
        remote = session.transport.name != "stdio"
        next_ping = time.monotonic() + PING_INTERVAL
        while True:
            with self._changed:
                while not (self._stopped or self._lost or self._refresh_wanted):
                    timeout = max(0.0, next_ping - time.monotonic()) if remote else None
                    if remote and timeout == 0.0:
                        break
                    self._changed.wait(timeout)
                if self._stopped or self._lost:
                    return
                refresh, self._refresh_wanted = self._refresh_wanted, False
            if refresh:
                self.refresh_tools()
            elif remote and time.monotonic() >= next_ping:
                next_ping = time.monotonic() + PING_INTERVAL
                try:
                    session.ping(timeout=min(10.0, self.server.connect_timeout))
                except Exception as exc:
                    if servers.auth_required(exc) is not None:
                        self._lost_auth(session, exc)
                    elif isinstance(exc, McpError) or servers.is_oauth_error(exc):
                        self._went_away(session, exc)
                    else:
                        raise

    def _closed_by_server(self, exc: Exception, attempt: Dict[str, Any]) -> None:
        """``on_close`` of one attempt's session: its server went away on its own.

        Before the session is ready it is only noted (``_connect`` acts on it);
        a late call from an older attempt's session is ignored.
        """
        with self._lock:
            session = attempt["session"]
            if session is None:
                attempt["closed"] = exc
        if session is not None:
            self._went_away(session, exc)

    def _went_away(self, session: ClientSession, exc: Exception) -> None:
        """The server went away on its own: mark it failed and let the worker reconnect."""
        with self._lock:
            if self._stopped or self._session is not session:
                return  # we closed it ourselves, or it is already handled
        self._forget(session)
        self.stderr_tail = session.transport.stderr_tail()
        session.close()  # reap the process
        self._set_state("failed", hints.with_hint(self.server, str(exc), self.stderr_tail))
        with self._changed:
            self._lost = True
            self._changed.notify_all()

    def _lost_auth(self, session: ClientSession, exc: Exception) -> None:
        """A ready server stopped accepting our token and it cannot be refreshed: needs-auth, and the worker waits for a sign-in."""
        with self._lock:
            if self._stopped or self._session is not session:
                return
        self._forget(session)
        session.close()
        self._needs_auth(exc)
        with self._changed:
            self._lost = True
            self._changed.notify_all()

    def _load_tools(self, session: ClientSession) -> None:
        tools = session.list_tools(self.server.connect_timeout)
        shown, hidden = servers.visible_tools(self.server, tools)
        self.tools_total = len(tools)
        self.tools, self.hidden = shown, hidden

    def _load_skills(self, session: ClientSession) -> None:
        """The skills the server offers (the Skills extension), if it declares it; a failure costs only them."""
        from toolscript.gateway import mcp_skills

        if not mcp_skills.advertised(session.server_capabilities):
            self.skills = []
            return
        try:
            self.skills = mcp_skills.list_skills(session.request, self.name, self.server.connect_timeout)["skills"]
        except Exception as exc:  # noqa: BLE001 - skills are extra: the server's tools work without them
            logger.warning("%s: skills/list failed, so its skills are not offered: %s", self.name, exc)
            self.skills = []

    def read_resource(self, uri: str, timeout: float) -> Any:
        """``resources/read`` of one resource (a skill's SKILL.md); raises UpstreamUnavailable when not ready."""
        with self._lock:
            session = self._session
        if session is None or self.state != "ready":
            raise UpstreamUnavailable(f"server {self.name!r} is not ready: {self.unavailable_reason()}")
        return session.request("resources/read", {"uri": uri}, timeout=timeout)

    def _tools_changed(self) -> None:
        # Called on the transport's reader thread: the worker lists, once per burst.
        with self._changed:
            self._refresh_wanted = True
            self._changed.notify_all()

    def refresh_tools(self) -> None:
        with self._lock:
            session = self._session
        if session is None or self.state != "ready":
            return
        try:
            self._load_tools(session)
        except Exception as exc:
            if servers.auth_required(exc) is not None:
                self._lost_auth(session, exc)
                return
            if not (isinstance(exc, McpError) or servers.is_oauth_error(exc)):
                raise
            logger.warning("%s: refreshing tools failed: %s", self.name, exc)
            return
        logger.info("%s: tool list changed (%d tools)", self.name, len(self.tools))
        self._on_change(self)

    def _set_state(self, state: str, error: Optional[str] = None) -> None:
        with self._changed:
            self.state = state
            self.error = error
            self._changed.notify_all()
        if error:
            logger.warning("%s: %s", self.name, error)
        # The catalog first: whoever waits for the server to settle (wait_for_servers, then a call) must find
        # its tools there, not a window where it is "ready" with none listed.
        try:
            self._on_change(self)
        finally:
            with self._changed:
                self._published_state = self.state
                self._changed.notify_all()
            if state != "connecting":
                self.settled.set()

    # -- calls -------------------------------------------------------------------

    def call(
        self,
        tool: str,
        arguments: Dict[str, Any],
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
        cancel: Optional[Cancel] = None,
    ) -> Dict[str, Any]:
        """Call ``tool`` on this server; the CallToolResult comes back whole.

        ``on_log`` gets the log messages of this call only (the session routes them).
        """
        with self._lock:
            session = self._session
        if session is None or self.state != "ready":
            raise UpstreamUnavailable(self.unavailable_reason())
        try:
            return session.call_tool(
                tool, arguments, timeout=timeout or self.server.call_timeout, on_progress=on_progress, on_log=on_log, cancel=cancel
            )
        except (ConnectionClosed, TransportError) as exc:
            if servers.auth_required(exc) is not None:
                self._call_needs_auth(session, exc)
            # HTTP servers have no connection to watch: a transport failure on a
            # call is how we learn they went away.
            if not isinstance(exc, ConnectionClosed) or session.transport.name != "stdio":
                self._went_away(session, exc)
            raise
        except Exception as exc:
            if servers.auth_required(exc) is not None:
                self._call_needs_auth(session, exc)
            if servers.is_oauth_error(exc):
                raise McpError(str(exc)) from None
            raise

    def _call_needs_auth(self, session: ClientSession, exc: Exception) -> None:
        """A call was refused for want of a sign-in: raise the error that says which command fixes it."""
        from toolscript.mcp.auth.store import StepUpRequired

        found = servers.auth_required(exc)
        if isinstance(found, StepUpRequired):
            # Only this tool needs more scope: the server stays ready for the others.
            raise McpError(str(found)) from None
        # Our token was refused and could not be refreshed: the server needs a sign-in.
        self._lost_auth(session, exc)
        raise UpstreamUnavailable(self.unavailable_reason()) from None

    def wait_while_connecting(self, timeout: float) -> None:
        """Give a (re)connecting server up to ``timeout`` seconds; failed servers return at once."""
        with self._changed:
            self._changed.wait_for(lambda: self._published_state != "connecting" or self._stopped, timeout)

    def unavailable_reason(self) -> str:
        if self.state == "connecting":
            return f"server {self.name!r} is still connecting; try again in a moment"
        if self.state == NEEDS_AUTH:
            return f"{self.error} (server {self.name!r} needs an OAuth sign-in; the gateway reconnects by itself once it is done)"
        reason = f"server {self.name!r} is not available: {self.error}"
        return reason + " (toolscript retries it automatically; check it with 'toolscript servers check " + self.name + "')"

    def _server_log(self, params: Dict[str, Any]) -> None:
        """Every log message of the server goes to the gateway's log; calls get only their own (``on_log``)."""
        logger.debug("%s: [%s] %s", self.name, params.get("level"), params.get("data"))

    def describe(self) -> Dict[str, Any]:
        """The JSON the gateway serves for this server."""
        info: Dict[str, Any] = {
            "name": self.name,
            "transport": self.transport,
            "state": self.state,
            "tools": len(self.tools),
            "toolsTotal": self.tools_total,
            "hidden": dict(self.hidden),
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
        info["source"] = self.server.describe_source()
        return info


def wait_settled(upstreams: List[Upstream], deadline: float) -> List[str]:
    """Wait until every upstream has settled or ``deadline`` (monotonic) passes; return the names still connecting."""
    for upstream in upstreams:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            upstream.settled.wait(remaining)
    return [u.name for u in upstreams if u.state == "connecting"]


class LazyUpstream(Upstream):
    """A server Claude Code also runs: started only to list its tools and to call them, stopped when idle.

    The worker thread lists the tools once when no cached list exists, then
    stops idle sessions; calls start the server in the caller's thread.  One
    lock (``_starting``) orders every start and stop, so a new copy never
    starts while the previous one is still shutting down.
    """

    def __init__(self, server: ServerConfig, on_change: Callable[["Upstream"], None]) -> None:
        super().__init__(server, on_change)
        self._starting = threading.Lock()
        self._in_flight = 0  # calls (and listings) that need the session now
        self._last_used = 0.0  # monotonic time the last one ended
        self.listed: Optional[str] = None  # where the tools shown come from: "cache" or "server" (this gateway listed them)
        self.listed_at: Optional[float] = None  # when they were listed (time.time())
        self.starts = 0  # how often this gateway started the server

    def start(self) -> None:
        if self.server.config_error:
            self._set_state("failed", self.server.config_error)
            return
        if self.server.type in ("http", "sse"):
            from toolscript.mcp.auth import store as oauth_store

            self._auth = oauth_store.bearer_auth(self.server)
        cached = toolcache.load(self.server)
        if cached is not None:
            self._adopt(cached)
            self._set_state(IDLE)
        self._thread = threading.Thread(target=self._run, name=f"upstream-{self.name}", daemon=True)
        self._thread.start()

    def _adopt(self, listing: Dict[str, Any]) -> None:
        """Show a cached listing: the tools, and what the server said of itself then."""
        tools = listing["tools"]
        self.tools, self.hidden = servers.visible_tools(self.server, tools)
        self.tools_total = len(tools)
        info = listing.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        self.protocol_version = listing.get("protocolVersion") if isinstance(listing.get("protocolVersion"), str) else None
        self.instructions = listing.get("instructions") if isinstance(listing.get("instructions"), str) else None
        self.listed, self.listed_at = "cache", listing.get("listedAt")

    def _load_tools(self, session: ClientSession) -> None:
        tools = session.list_tools(self.server.connect_timeout)
        shown, hidden = servers.visible_tools(self.server, tools)
        self.tools_total = len(tools)
        self.tools, self.hidden = shown, hidden
        self.listed, self.listed_at = "server", time.time()
        toolcache.store(self.server, tools, server_info=session.server_info, protocol_version=session.protocol_version,
                        instructions=session.instructions)

    def _connect(self, target: Optional[ServerConfig] = None) -> Optional[ClientSession]:
        if self.server.imported is not None and self.server.imported.headers_helper:
            from toolscript.config.claude_code import helper_headers

            try:
                target = helper_headers(self.server)
            except UserError as exc:
                self._set_state("failed", str(exc))
                return None
        session = super()._connect(target)
        if session is not None:
            self.starts += 1
            logger.info("%s: started (start %d of this gateway)", self.name, self.starts)
        return session

    def _run(self) -> None:
        if self.listed is None:
            with self._changed:
                if self._changed.wait_for(lambda: self._stopped, LISTING_DELAY_SECONDS):
                    return
            self._list()
        while True:
            with self._changed:
                while True:
                    if self._stopped:
                        return
                    if self._refresh_wanted:
                        break
                    self._lost = False  # a session that went away: the next call starts the server again
                    if self._session is not None and self._in_flight == 0:
                        remaining = self._last_used + IDLE_RELEASE_SECONDS - time.monotonic()
                        if remaining <= 0:
                            break
                        self._changed.wait(remaining)
                    else:
                        self._changed.wait()
                refresh, self._refresh_wanted = self._refresh_wanted, False
            if refresh:
                self.refresh_tools()
            else:
                self._release(IDLE_RELEASE_SECONDS)

    def _list(self) -> None:
        """Start the server to list its tools (stored in the cache), then stop it unless a call needs it."""
        with self._starting:
            with self._lock:
                if self._stopped or self._session is not None:
                    return  # stopping, or a call started it and listed
            if self._connect() is None:
                return  # failed, with the reason: the next call tries again
        self._release(0.0)

    def _release(self, idle_for: float) -> None:
        """Stop the running server if no call has needed it for ``idle_for`` seconds."""
        with self._starting:
            with self._lock:
                session = self._session
                if session is None or self._in_flight or time.monotonic() - self._last_used < idle_for:
                    return
                self._session = None
                self._sessions = [s for s in self._sessions if s is not session]
            logger.info("%s: not needed now; stopping it (a call starts it again)", self.name)
            session.close()
            self._set_state(IDLE)

    def _ensure_running(self) -> None:
        """Start the server for a call, unless it runs; raise ``UpstreamUnavailable`` saying why it cannot."""
        with self._lock:
            if self._session is not None and self.state == "ready":
                return
        with self._starting:
            with self._lock:
                if self._stopped:
                    raise UpstreamUnavailable(f"server {self.name!r}: the gateway is stopping")
                if self._session is not None and self.state == "ready":
                    return
            self._set_state("connecting")
            if self._connect() is None:
                raise UpstreamUnavailable(self.unavailable_reason())

    def _needed(self, needed: bool) -> None:
        with self._changed:
            self._in_flight += 1 if needed else -1
            self._last_used = time.monotonic()
            self._changed.notify_all()

    def call(self, tool: str, arguments: Dict[str, Any], **options: Any) -> Dict[str, Any]:
        self._needed(True)
        try:
            self._ensure_running()
            return super().call(tool, arguments, **options)
        finally:
            self._needed(False)

    def list_now(self) -> None:
        """Make the tool list fresh (start the server if it does not run); it is stopped when idle, as after a call."""
        self._needed(True)
        try:
            self._ensure_running()
        except UpstreamUnavailable:
            pass  # the state says why
        finally:
            self._needed(False)

    def unavailable_reason(self) -> str:
        if self.state == NEEDS_AUTH:
            return f"{self.error} (server {self.name!r} needs an OAuth sign-in; the next call after it uses it)"
        if self.state == "failed":
            return (f"server {self.name!r} could not be started: {self.error} (toolscript starts it again on the next call; "
                    "a server that allows one running copy is busy while Claude Code's own copy runs)")
        return super().unavailable_reason()

    def describe(self) -> Dict[str, Any]:
        info = super().describe()
        with self._lock:
            running = self._session is not None
        info.update(lazy=True, running=running, listed=self.listed, starts=self.starts)
        if self.listed_at is not None:
            info["listedAt"] = self.listed_at
        return info
