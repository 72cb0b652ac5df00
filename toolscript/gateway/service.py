"""The gateway: built-in tools plus every configured MCP server, behind one token.

``Gateway`` owns the upstream connections and the catalog, and performs tool
calls for both HTTP surfaces (the JSON API and the MCP endpoint, see
``http_api``).  The port opens before any upstream is connected: servers
connect in parallel in the background, and discovery answers wait a bounded
time for the ones still connecting.

The configuration changes under a running gateway (``reload``'s watcher calls
``apply_config``): the upstreams are swapped as a whole dict, never changed in
place, so a reader that took ``self.upstreams`` once sees one version.
"""

import collections
import json
import os
import secrets
import signal
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional

from toolscript import __version__, log
from toolscript.tools import schema as jsonschema
from toolscript.config.load import Config, ServerConfig
from toolscript.gateway.catalog import BUILTIN_SERVER, Catalog, builtin_tools, split_id
from toolscript.gateway.derived import Derived
from toolscript.gateway.reload import RESTART_SETTINGS, Changes, diff_servers, live_settings, restart_settings
from toolscript.gateway.state import DEFAULT_SESSION, text_session
from toolscript.gateway.upstream import IDLE, LazyUpstream, Upstream, UpstreamUnavailable, wait_settled
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.errors import McpError, RequestCancelled, RequestTimeout
from toolscript.tools.contract import (
    ERROR_EXECUTION,
    ERROR_INVALID_ARGS,
    ERROR_TOOL_NOT_FOUND,
    ToolCall,
    ToolContext,
    ToolResult,
    execute,
)

logger = log.get("gateway")

# How long discovery answers wait for servers that are still connecting.
DISCOVERY_WAIT_SECONDS = 10.0
# The whole of Gateway.stop, however many servers: well inside `gateway stop`'s
# 10 s before SIGKILL, so the gateway still reaps whatever is left itself.
STOP_SECONDS = 5.0
# The state /servers shows for a server of a project file the user has not approved.
UNTRUSTED_STATE = "untrusted"
# How many calls ``recent_calls`` keeps.
RECENT_CALLS = 100


class Gateway:
    """Everything the gateway serves, independent of HTTP."""

    def __init__(self, config: Config, *, workspace: str, session: Optional[str] = None, token: Optional[str] = None) -> None:
        self.config = config
        # Always text: the session name is shown by /health and `gateway status` alike.
        self.session: str = text_session(session) if session else DEFAULT_SESSION
        self.token = token or secrets.token_urlsafe(32)
        self.started = time.time()
        root = os.path.realpath(workspace)
        self.context = ToolContext(workspace_roots=[root] + [os.path.realpath(r) for r in config.workspace_roots])
        self.builtins = builtin_tools(config.builtin_tools)
        self.upstreams: Dict[str, Upstream] = {s.name: self._new_upstream(s) for s in config.enabled_servers()}
        self.catalog = Catalog(self._sources)
        self.derived = Derived(self.catalog, self._unavailable)
        # Live configuration: why the files' current content is not in use (None when it is), the keys
        # whose change waits for a restart, how many changes were applied.
        self.config_problem: Optional[str] = None
        self.restart_to_apply: List[str] = []
        self.config_reloads = 0
        self._started_with = {attr: getattr(config, attr) for attr in RESTART_SETTINGS}
        self._lock = threading.Lock()  # guards the swap of upstreams against stop()
        self._applying = threading.Lock()  # one apply_config at a time
        self._closed = False
        self._retiring: List[Upstream] = []  # replaced or removed upstreams still being stopped
        self._watcher: Any = None
        # The latest calls (tool, source, outcome, duration; never arguments), for the web page.
        self.recent_calls: Deque[Dict[str, Any]] = collections.deque(maxlen=RECENT_CALLS)

    def _new_upstream(self, server: ServerConfig) -> Upstream:
        # A server Claude Code also runs is lazy: started only to list its tools and for calls (see upstream).
        return (LazyUpstream if server.lazy else Upstream)(server, self._upstream_changed)

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        """Connect every upstream in parallel (returns at once)."""
        with self.derived.deferred():  # a cached tool list adopted here is indexed off this thread
            for upstream in self.upstreams.values():
                upstream.start()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Disconnect every upstream, in parallel, within one ``timeout`` for them all."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True  # a reload under way starts nothing from now on
            watcher, upstreams = self._watcher, list(self.upstreams.values()) + self._retiring
        if watcher is not None:
            watcher.stop()
        _stop_all(upstreams, deadline)
        self.derived.close()

    def kill_children(self) -> None:
        """SIGKILL every server process group this gateway started (the emergency exit)."""
        for upstream in list(self.upstreams.values()) + self._retiring:
            upstream.kill_now()
        kill_child_process_groups()

    # -- live configuration ----------------------------------------------------------

    def watch(self, watcher: Any) -> None:
        """Apply config changes ``watcher`` (a ``reload.ConfigWatcher``) notices until the gateway stops."""
        with self._lock:
            if self._closed:
                return
            self._watcher = watcher
        watcher.start(self)

    def apply_config(self, config: Config, timeout: float = STOP_SECONDS) -> Changes:
        """Serve ``config`` from now on, touching only what changed.

        A server whose entry changed is stopped and started again with the new
        entry, a removed one is stopped, a new one started; every other
        server keeps its connection.  The old copy of a changed server is gone
        before the new one starts: a server that allows one running copy (a
        lock, a fixed port) would fail otherwise.  Built-in tools and workspace
        roots apply at once; the keys in
        ``RESTART_SETTINGS`` wait for a restart (``restart_to_apply``).
        """
        with self._applying:
            with self._lock:
                if self._closed:
                    return Changes()
                old = self.upstreams
                servers = {s.name: s for s in config.enabled_servers()}
                changes = diff_servers({name: u.server for name, u in old.items()}, servers)
                changes.settings = live_settings(self.config, config)
                changes.restart = restart_settings(self._started_with, config)
                fresh = set(changes.added + changes.changed)
                self.upstreams = {name: self._new_upstream(s) if name in fresh else old[name] for name, s in servers.items()}
                going = [old[name] for name in changes.changed + changes.removed]
                self._retiring += going
                if "builtinTools" in changes.settings:
                    self.builtins = builtin_tools(config.builtin_tools)
                if "workspaceRoots" in changes.settings:
                    root = self.context.workspace_roots[0]
                    self.context = ToolContext(workspace_roots=[root] + [os.path.realpath(r) for r in config.workspace_roots])
                self.config = config
                self.config_problem = None
                self.restart_to_apply = changes.restart
                self.config_reloads += 1
            self.catalog.rebuild()  # the removed servers' tools go now; the new ones' come as they connect
            _stop_all(going, time.monotonic() + timeout)
            with self._lock:
                self._retiring = [u for u in self._retiring if u not in going]
                if not self._closed:
                    for name in [name for name in servers if name in fresh]:
                        self.upstreams[name].start()
        return changes

    def config_failed(self, problem: str) -> None:
        """The config files changed and cannot be used: keep serving the last good configuration, and say why."""
        with self._lock:
            self.config_problem = problem

    def wait_for_servers(self, timeout: float = DISCOVERY_WAIT_SECONDS) -> List[str]:
        """Wait (bounded) for connecting servers; return the names still connecting."""
        return wait_settled(list(self.upstreams.values()), time.monotonic() + timeout)

    def _sources(self):
        sources = [(BUILTIN_SERVER, [spec.to_mcp() for spec in self.builtins.values()])]
        sources += [(u.name, u.tools) for u in self.upstreams.values()]
        return sources

    def _upstream_changed(self, upstream: Upstream) -> None:
        self.catalog.rebuild()

    def _unavailable(self) -> Dict[str, str]:
        """{server name: reason} for configured servers that are not ready (the runtime names them)."""
        reasons = {name: f"not started: {file.reason()}" for name, file in self.config.untrusted_servers().items()}
        reasons.update((u.name, u.unavailable_reason()) for u in self.upstreams.values() if u.state not in ("ready", IDLE))
        return reasons

    def _untrusted(self) -> List[Dict[str, Any]]:
        """The servers an unapproved project file names, described like upstreams (never started)."""
        return [
            {"name": name, "state": UNTRUSTED_STATE, "transport": _transport_of(file.servers[name]), "tools": 0, "toolsTotal": 0,
             "hidden": {}, "restarts": 0, "error": f"not started: {file.reason()}",
             "source": f"{file.path} (project scope)" if file.claude_code else file.path}
            for name, file in self.config.untrusted_servers().items()
        ]

    # -- what the HTTP surfaces serve -----------------------------------------------

    def health(self) -> Dict[str, Any]:
        upstreams = list(self.upstreams.values())
        states = {u.name: u.state for u in upstreams}
        healthy = all(state in ("ready", IDLE) for state in states.values())
        hidden: Dict[str, int] = {}  # tools the servers have but toolscript does not show, by reason
        for upstream in upstreams:
            for reason, count in upstream.hidden.items():
                hidden[reason] = hidden.get(reason, 0) + count
        return {
            "status": "ok" if healthy else "degraded",
            "version": __version__,
            "pid": os.getpid(),
            "session": self.session,
            "uptimeSeconds": round(time.time() - self.started, 1),
            "servers": states,
            "untrusted": sorted(self.config.untrusted_servers()),
            "tools": len(self.catalog.entries()),
            "hidden": hidden,
            "workspace": self.context.workspace_roots[0],
            "configProblem": self.config_problem,
            "restartToApply": list(self.restart_to_apply),
            "configReloads": self.config_reloads,
        }

    def servers(self, wait: bool = True) -> Dict[str, Any]:
        pending = self.wait_for_servers() if wait else [u.name for u in self.upstreams.values() if u.state == "connecting"]
        builtin = {
            "name": BUILTIN_SERVER, "transport": "builtin", "state": "ready",
            "tools": len(self.builtins), "toolsTotal": len(self.builtins), "hidden": {}, "restarts": 0,
        }
        return {"servers": [builtin] + [u.describe() for u in self.upstreams.values()] + self._untrusted(), "pending": pending}

    def tools(self, servers: Optional[List[str]] = None, ids: Optional[List[str]] = None, wait: bool = True) -> Dict[str, Any]:
        pending = self.wait_for_servers() if wait else []
        entries = self.catalog.snapshot().entries(servers)
        if ids is not None:
            wanted = set(ids)
            entries = [e for e in entries if e.id in wanted]
        return {"tools": [e.describe() for e in entries], "pending": pending}

    def skills(self, wait: Optional[float] = None) -> Dict[str, Any]:
        """What servers offer through the Skills extension, each with its server (``gateway.mcp_skills``)."""
        pending = self.wait_for_servers() if wait is None else self.wait_for_servers(timeout=wait)
        skills = [dict(skill, server=u.name) for u in self.upstreams.values() if u.state == "ready" for skill in u.skills]
        return {"skills": skills, "pending": pending}

    def read_skill(self, server: str, uri: str) -> Dict[str, Any]:
        """One listed skill's SKILL.md, checked against its listing.

        Raises LookupError when ``server`` lists no skill at ``uri``, ValueError when it cannot be read as listed.
        """
        from toolscript.gateway import mcp_skills

        upstream = self.upstreams.get(server)
        entry = next((s for s in upstream.skills if s["uri"] == uri), None) if upstream is not None else None
        if upstream is None or entry is None:
            raise LookupError(f"server {server!r} lists no skill at {uri!r}: see 'toolscript skills'")
        try:
            result = upstream.read_resource(uri, upstream.server.connect_timeout)
        except (McpError, UpstreamUnavailable) as exc:
            raise ValueError(f"server {server!r} could not read {uri!r}: {exc}") from exc
        text = mcp_skills.verified_text(entry, result)
        return {"server": server, "uri": uri, "name": entry["name"], "description": entry["description"],
                "text": text, "verified": not entry.get("dynamic")}

    def known_servers(self) -> List[str]:
        return [BUILTIN_SERVER] + list(self.upstreams)

    def call(self, identifier: str, arguments: Any, **options: Any) -> ToolResult:
        """Call one tool by gateway id (see ``_call``) and note the call in ``recent_calls``."""
        started = time.time()
        result = self._call(identifier, arguments, **options)
        error = (result.error or {}).get("message", "") if not result.ok else ""
        self.recent_calls.append({"tool": identifier, "source": options.get("source", ""), "ok": result.ok, "at": started,
                                  "durationMs": int((time.time() - started) * 1000), "error": str(error)[:300]})
        return result

    def _call(
        self,
        identifier: str,
        arguments: Any,
        *,
        source: str,
        timeout: Optional[float] = None,
        on_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
        cancel: Optional[Cancel] = None,
    ) -> ToolResult:
        """Call one tool by gateway id; always a ToolResult, never an exception.

        For MCP tools ``data`` is the whole CallToolResult; an upstream tool
        error (``isError``) is ``ok: false`` with that result still in ``data``.
        """
        started = time.monotonic()
        server, name = split_id(identifier)
        call = ToolCall(name=name or identifier, args=arguments if isinstance(arguments, dict) else {}, source=source)
        if server == BUILTIN_SERVER:
            if not isinstance(arguments, dict):
                return ToolResult.failure(ERROR_INVALID_ARGS, "arguments must be a JSON object", call, started, tool=identifier)
            result = execute(self.builtins, call, self.context)
            result.meta["tool"] = identifier
            return result
        upstream = self.upstreams.get(server)
        if upstream is not None:
            # Right after start (or a restart) the first call waits like discovery does, until the
            # catalog holds what the connection brought (at once for a server not connecting).
            upstream.wait_while_connecting(min(DISCOVERY_WAIT_SECONDS, upstream.server.connect_timeout))
        entry = self.catalog.get(identifier)
        if entry is None and isinstance(upstream, LazyUpstream) and upstream.listed != "server":
            # Its tools came from the cache (or were never listed): the server may have this tool now.
            upstream.list_now()
            entry = self.catalog.get(identifier)
        if entry is None or upstream is None:
            if upstream is not None and upstream.state != "ready" and not upstream.tools:
                return ToolResult.failure(ERROR_EXECUTION, upstream.unavailable_reason(), call, started, tool=identifier)
            return ToolResult.failure(ERROR_TOOL_NOT_FOUND, self._not_found(identifier), call, started, tool=identifier)
        if not isinstance(arguments, dict):
            return ToolResult.failure(ERROR_INVALID_ARGS, "arguments must be a JSON object", call, started, tool=identifier)
        problems = jsonschema.validate(arguments, entry.tool.get("inputSchema", {}))
        if problems:
            return ToolResult.failure(ERROR_INVALID_ARGS, "; ".join(problems), call, started, tool=identifier)
        try:
            data = upstream.call(name, arguments, timeout=timeout, on_progress=on_progress, on_log=on_log, cancel=cancel)
        except UpstreamUnavailable as exc:
            return ToolResult.failure(ERROR_EXECUTION, str(exc), call, started, tool=identifier, server=server)
        except RequestCancelled as exc:
            return ToolResult.failure(ERROR_EXECUTION, str(exc), call, started, tool=identifier, server=server, cancelled=True)
        except RequestTimeout as exc:
            return ToolResult.failure(ERROR_EXECUTION, f"{exc} (raise \"timeout\" for server {server!r} in the config if it is slow)", call, started, tool=identifier, server=server)
        except McpError as exc:
            return ToolResult.failure(ERROR_EXECUTION, f"{server}: {exc}", call, started, tool=identifier, server=server)
        meta = {"tool": identifier, "server": server, "callId": call.id, "source": source, "durationMs": int((time.monotonic() - started) * 1000)}
        if data.get("isError"):
            return ToolResult(ok=False, data=data, error={"code": ERROR_EXECUTION, "message": _error_text(data)}, meta=meta)
        return ToolResult(ok=True, data=data, meta=meta)

    def _not_found(self, identifier: str) -> str:
        server, _ = split_id(identifier)
        untrusted = self.config.untrusted_servers().get(server or "")
        if untrusted is not None:
            return f"server {server!r} is not started: {untrusted.reason()}"
        if server and server not in self.known_servers():
            return f"unknown tool {identifier!r}: no server {server!r} (servers: {', '.join(self.known_servers())})"
        if not server:
            return f"unknown tool {identifier!r}: tool ids are server__tool, e.g. builtin__time.now"
        names = [e.id for e in self.catalog.entries([server])][:10]
        return f"unknown tool {identifier!r}; {server} has: {', '.join(names) or 'no tools'}"


def _stop_all(upstreams: List[Upstream], deadline: float) -> None:
    """Stop ``upstreams`` in parallel, waiting until ``deadline`` (monotonic) at most."""
    threads = [threading.Thread(target=u.stop, args=(deadline,), daemon=True) for u in upstreams]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _transport_of(entry: Any) -> str:
    """An unapproved entry's transport as written (nothing of it is validated or used)."""
    if isinstance(entry, dict):
        if "command" in entry:
            return "stdio"
        if entry.get("type") in ("sse", "stdio"):
            return str(entry["type"])
    return "http"


def kill_child_process_groups() -> None:
    """SIGKILL the process group of every child of this process still running (Linux; elsewhere a no-op).

    The net under Upstream.stop: a server still mid-handshake, or one whose
    close is stuck, must not be left running when the gateway exits.
    """
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent != me:
            continue
        try:
            # Servers run in process groups of their own (start_new_session);
            # anything else is killed alone.
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _error_text(result: Dict[str, Any]) -> str:
    """One line from an isError result's text content."""
    texts = [b.get("text", "") for b in result.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"]
    text = " ".join(" ".join(texts).split())
    return text[:500] or "the tool reported an error"


def as_call_tool_result(result: ToolResult) -> Dict[str, Any]:
    """A ToolResult as MCP's CallToolResult (for the MCP endpoint)."""
    data = result.data
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        return data  # an upstream's result, passed through whole
    if not result.ok:
        return {"content": [{"type": "text", "text": result.error["message"] if result.error else "failed"}], "isError": True}
    text = json.dumps(data, ensure_ascii=False)
    answer: Dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if isinstance(data, dict):
        answer["structuredContent"] = data
    return answer
