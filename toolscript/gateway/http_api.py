"""The gateway's HTTP server: authority checks, the JSON API, the MCP endpoint.

Everything lives under ``/t/<token>/`` so that one URL,
``TOOLSCRIPT_GATEWAY_URL=http://127.0.0.1:PORT/t/<token>``, carries both the
address and the authority; ``Authorization: Bearer <token>`` on the bare paths
works too, for MCP clients that prefer headers.  ``GET /healthz`` is the only
unauthenticated path and says nothing but that the process is alive.

Host and Origin are checked on every request (a DNS-rebinding page in the
user's browser must not reach the gateway): a Host other than the address we
bound to or a loopback name, or an Origin that is not loopback, gets 403.

Nothing of a request body is read before its framing, Host/Origin and token
have passed: a bad Content-Length (negative, not a number, repeated, too big)
or any Transfer-Encoding is refused at once, and refusals close the
connection.  Connections are bounded: a request head must arrive within
``head_timeout`` (idle keep-alive connections are closed after it too), at
most ``max_connections`` are open, and a new one beyond that evicts the oldest
connection that is waiting for a request head; only when every connection is
busy does the newcomer wait (``admission_wait``) for a slot, then get 503.
Newcomers wait in their own threads (at most ``max_connections`` of them; one
more gets 503 at once), so slow bodies holding every slot delay nobody's 503
past ``admission_wait``, and a health check (``GET /healthz`` or ``/health``)
is answered while it waits, without a slot.  A client that hangs up during
``/call`` cancels the upstream call.

JSON API (paths relative to the token prefix):

    GET  /health                       status, pid, version, per-server states
    GET  /servers                      every server with state, error, stderr tail
    GET  /tools?server=a,b&id=x,y      tool descriptions (id, schema, ...)
    POST /call  {"tool": id, "arguments": {...}, "timeout": s}   -> ToolResult
    GET  /search?q=..&limit=3&threshold=0&server=a&wait=S&explain=1&semantic=0   ranked tools, scores 0..1
    GET  /types?lang=python|ts&filter=a,b__x&full=1  stubs (pre-generated when unfiltered)
    GET  /skills?wait=S                the skills servers offer (the MCP Skills extension), with their server
    GET  /skills/read?server=S&uri=U   one listed skill's SKILL.md, checked against its listing
    GET  /runtime/names                the sandbox runtime's attribute -> tool id map
    GET  /runtime/tools.ts             the module TypeScript scripts import (exec --lang ts)
    POST /ui/code                      a one-time link to the web page (``ui``: /ui/ has its own sign-in)
    POST /model                        a question to the session's warm model (``warm_model``; its own key)
    *    /mcp                          the standard MCP endpoint (Streamable HTTP)
    *    /mcp/code                     the code-mode profile: three tools (search, stubs, run a script)
"""

import hmac
import logging
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import parse_qs, urlsplit

from toolscript import __version__, log
from toolscript.gateway.catalog import Snapshot
from toolscript.gateway.codemode_tools import INSTRUCTIONS as CODE_MODE_INSTRUCTIONS
from toolscript.gateway.codemode_tools import CodeModeTools, GatewayBackend
from toolscript.gateway.service import Gateway, as_call_tool_result
from toolscript.gateway import ui
from toolscript.http1 import DisconnectWatcher, JsonTooDeep, decode_json, encode_json, response_head
from toolscript.mcp.cancel import Cancel
from toolscript.mcp.server.endpoint import CallContext, McpHttpEndpoint, UnknownTool

logger = log.get("gateway.http")

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_CONNECTIONS = 256  # open connections; one more evicts the oldest idle one
ADMISSION_WAIT_SECONDS = 5.0  # when all are busy, a new connection waits this long for a slot before a 503
HEAD_TIMEOUT_SECONDS = 30.0  # a request head (or the next one on a kept-open connection) must arrive within this
BODY_TIMEOUT_SECONDS = 60.0  # a declared body must arrive within this; also bounds each blocked write
LINGER_BYTES = 64 * 1024  # after refusing a request, read at most this much of its body so the answer is not lost to a reset
LINGER_SECONDS = 1.0
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


class GatewayToolProvider:
    """What the MCP endpoint serves: the catalog, calls, change notifications."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.plain = gateway.config.mcp_tool_names == "plain"
        self._names: Tuple[int, Dict[str, str]] = (-1, {})  # (catalog version, MCP name -> tool id)

    def _name_map(self, snapshot: Snapshot) -> Dict[str, str]:
        """MCP tool name -> gateway id for one catalog snapshot (cached per version)."""
        version, names = self._names
        if version == snapshot.version:
            return names
        entries = snapshot.entries()
        names = {}
        if self.plain:
            counts: Dict[str, int] = {}
            for entry in entries:
                counts[entry.name] = counts.get(entry.name, 0) + 1
            for entry in entries:
                # A name two servers share keeps its prefix, so neither is shadowed.
                names[entry.name if counts[entry.name] == 1 else entry.id] = entry.id
        else:
            names = {entry.id: entry.id for entry in entries}
        self._names = (snapshot.version, names)
        return names

    def list_tools(self) -> List[Dict[str, Any]]:
        self.gateway.wait_for_servers()
        snapshot = self.gateway.catalog.snapshot()  # one version for the names and the tools
        tools = []
        for name, identifier in self._name_map(snapshot).items():
            entry = snapshot.get(identifier)
            if entry is not None:
                tool = entry.as_mcp_tool()
                tool["name"] = name
                tools.append(tool)
        return tools

    def call_tool(self, name: str, arguments: Dict[str, Any], call: CallContext) -> Dict[str, Any]:
        identifier = self._name_map(self.gateway.catalog.snapshot()).get(name)
        if identifier is None:
            raise UnknownTool(name)
        name = identifier

        def progress(params: Dict[str, Any]) -> None:
            call.progress(params.get("progress", 0), params.get("total"), params.get("message"))

        def relay_log(params: Dict[str, Any]) -> None:
            call.log(params.get("level", "info"), params.get("data"), params.get("logger"))

        result = self.gateway.call(name, arguments, source="mcp", on_progress=progress, on_log=relay_log, cancel=call.cancelled)
        return as_call_tool_result(result)

    def add_listener(self, callback):
        return self.gateway.catalog.add_listener(callback)


@dataclass
class _Connection:
    """Where one open connection is: waiting for a head ("idle"), reading a body, or busy answering."""

    phase: str
    since: float


class GatewayServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # a burst of connects waits in the kernel instead of retrying SYNs a second later

    def __init__(
        self,
        gateway: Gateway,
        host: str,
        port: int,
        *,
        max_connections: int = MAX_CONNECTIONS,
        head_timeout: float = HEAD_TIMEOUT_SECONDS,
        body_timeout: float = BODY_TIMEOUT_SECONDS,
        admission_wait: float = ADMISSION_WAIT_SECONDS,
        models: Any = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.gateway = gateway
        self.models = models  # the session's warm model (warm_model.WarmModels), or None
        self.ui = ui.UiAccess()  # the web page's one-time codes and browser sessions
        self.max_connections = max_connections
        self.head_timeout = head_timeout
        self.body_timeout = body_timeout
        self.admission_wait = admission_wait
        self.disconnects = DisconnectWatcher()
        self.mcp = McpHttpEndpoint(
            GatewayToolProvider(gateway),
            server_name="toolscript-gateway",
            server_version=__version__,
            instructions="toolscript gateway: tools of several MCP servers, named server__tool.",
            disconnects=self.disconnects,
        )
        # The code-mode profile: clients that should see search, stubs and scripts instead of every tool.
        self.mcp_code = McpHttpEndpoint(
            CodeModeTools(GatewayBackend(gateway, lambda: self.url)),
            server_name="toolscript-code",
            server_version=__version__,
            instructions=CODE_MODE_INSTRUCTIONS,
            disconnects=self.disconnects,
        )
        self._connections: Dict[socket.socket, _Connection] = {}
        # Newcomers that found every connection busy: their admission deadline.  Their own
        # threads read the request head meanwhile (a health check is answered without a slot).
        self._waiting: Dict[socket.socket, float] = {}
        self._lingering: Set[socket.socket] = set()
        self._connections_changed = threading.Condition()
        self._reaper_wakes_at = float("inf")
        self._admission_waiting = 0  # newcomers waiting for a slot while every connection is busy
        self._closing = False
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.address_family = family
        super().__init__((host, port), GatewayHandler)
        self.host = host
        self.port = self.server_address[1]
        self._reaper = threading.Thread(target=self._reap, name="gateway-http-reaper", daemon=True)
        self._reaper.start()

    def server_bind(self) -> None:
        # Skip HTTPServer.server_bind's reverse-DNS lookup of our own name: it can stall start-up.
        import socketserver

        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/t/{self.gateway.token}"

    def shutdown_all(self) -> None:
        if self.models is not None:
            self.models.close()
        self.mcp.close()
        self.mcp_code.close()
        self.disconnects.close()
        with self._connections_changed:
            self._closing = True
            self._connections_changed.notify_all()
            # Connections waiting for a request head would otherwise outlive the server.
            idle = [request for request, connection in self._connections.items() if connection.phase == "idle"]
            idle += list(self._waiting)
        for request in idle:
            _cut(request)
        self.shutdown()
        self.server_close()

    # -- bounding connections -----------------------------------------------------------

    def open_connections(self) -> Dict[str, int]:
        """How many connections are in each phase (for tests and benchmarks)."""
        counts: Dict[str, int] = {}
        with self._connections_changed:
            for connection in self._connections.values():
                counts[connection.phase] = counts.get(connection.phase, 0) + 1
            if self._waiting:
                counts["waiting"] = len(self._waiting)  # beyond the cap, for a slot
        return counts

    def process_request(self, request: Any, client_address: Any) -> None:
        """Admit a new connection: below the cap, or by evicting the oldest idle one; else it waits in its own thread.

        This runs on the accepting thread, so it never waits: a newcomer
        finding every connection busy gets a handler thread that reads its
        request head and waits for a slot there (``admit``), while later
        newcomers are accepted meanwhile.  At most ``max_connections`` wait
        at once; one more is refused with 503 at once.
        """
        victim: Optional[socket.socket] = None
        refuse = False
        with self._connections_changed:
            if len(self._connections) >= self.max_connections:
                victim = self._evict_idle()
                if victim is None:
                    if len(self._waiting) >= self.max_connections or self._closing:
                        refuse = True
                    else:
                        self._waiting[request] = time.monotonic() + self.admission_wait
            if len(self._connections) < self.max_connections:
                self._connections[request] = _Connection("idle", time.monotonic())
                self._wake_reaper(time.monotonic() + self.head_timeout)
        if victim is not None:
            logger.debug("%d connections open: closing the oldest idle one", self.max_connections)
            _cut(victim)
        if refuse:
            logger.warning("%d connections open and all busy, as many waiting for one: refusing a new one", self.max_connections)
            self._refuse(request)
            return
        super().process_request(request, client_address)

    def _evict_idle(self) -> Optional[socket.socket]:
        """Forget the oldest connection waiting for a request head, to make room; the caller cuts it (the lock is held)."""
        idle = [(c.since, id(s), s) for s, c in self._connections.items() if c.phase == "idle"]
        if not idle:
            return None
        victim = min(idle)[2]
        del self._connections[victim]
        return victim

    def admission_deadline(self, request: socket.socket) -> Optional[float]:
        """When a connection still waiting for a slot gets 503; None once it has one."""
        with self._connections_changed:
            return self._waiting.get(request)

    def admit(self, request: socket.socket) -> bool:
        """Wait (until the connection's admission deadline) for a slot; False: there is none, answer 503."""
        victim: Optional[socket.socket] = None
        admitted = False
        with self._connections_changed:
            deadline = self._waiting.get(request)
            while deadline is not None and not self._closing:
                if len(self._connections) < self.max_connections:
                    admitted = True
                    break
                victim = self._evict_idle()
                if victim is not None:
                    admitted = True
                    break
                now = time.monotonic()
                if now >= deadline:
                    break
                self._admission_waiting += 1
                try:
                    self._connections_changed.wait(deadline - now)
                finally:
                    self._admission_waiting -= 1
            self._waiting.pop(request, None)
            if admitted:
                self._connections[request] = _Connection("reading", time.monotonic())
                self._wake_reaper(time.monotonic() + self.body_timeout)
        if victim is not None:
            logger.debug("%d connections open: closing the oldest idle one", self.max_connections)
            _cut(victim)
        if not admitted:
            logger.warning("%d connections open and all busy: refusing a new one", self.max_connections)
        return admitted

    def leave_waiting(self, request: socket.socket) -> bool:
        """Stop waiting for a slot (a health check needs none); True if the connection was waiting."""
        with self._connections_changed:
            return self._waiting.pop(request, None) is not None

    def busy_message(self) -> str:
        return f"the gateway is busy ({self.max_connections} connections open); try again"

    def _refuse(self, request: socket.socket) -> None:
        body = encode_json({"error": self.busy_message()})
        try:
            request.settimeout(1.0)
            request.sendall(response_head(503, content_type="application/json", content_length=len(body), close=True) + body)
        except OSError:
            pass
        self.shutdown_request(request)

    def set_phase(self, request: socket.socket, phase: str) -> None:
        """Record where a connection is; a connection evicted meanwhile stays forgotten."""
        with self._connections_changed:
            connection = self._connections.get(request)
            if connection is None:
                return
            connection.phase, connection.since = phase, time.monotonic()
            if phase == "idle" and self._admission_waiting:
                self._connections_changed.notify_all()  # a slot to evict for a waiting newcomer
            if phase != "busy":
                self._wake_reaper(connection.since + (self.head_timeout if phase == "idle" else self.body_timeout))

    def _wake_reaper(self, deadline: float) -> None:
        """Wake the reaper if it sleeps past this new deadline (the lock is held)."""
        if deadline < self._reaper_wakes_at:
            self._reaper_wakes_at = deadline
            self._connections_changed.notify_all()

    def linger(self, request: socket.socket) -> None:
        """Read (a bounded amount of) what the client still sends before closing: see ``shutdown_request``."""
        with self._connections_changed:
            self._lingering.add(request)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_changed:
            self._waiting.pop(request, None)
            if self._connections.pop(request, None) is not None and self._admission_waiting:
                self._connections_changed.notify_all()
            lingering = request in self._lingering
            self._lingering.discard(request)
        if lingering:
            # Closing a socket with unread data sends a reset, which can destroy the
            # answer we just wrote before the client reads it; so drain a little first.
            try:
                request.shutdown(socket.SHUT_WR)
                deadline = time.monotonic() + LINGER_SECONDS
                drained = 0
                while drained < LINGER_BYTES:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    request.settimeout(remaining)
                    chunk = request.recv(16384)
                    if not chunk:
                        break
                    drained += len(chunk)
            except OSError:
                pass
        super().shutdown_request(request)

    def _reap(self) -> None:
        """Close connections whose request head (or body) is overdue; sleeps until the next deadline."""
        with self._connections_changed:
            while not self._closing:
                now = time.monotonic()
                next_deadline: Optional[float] = None
                overdue = []
                for request, connection in self._connections.items():
                    if connection.phase == "busy":
                        continue
                    limit = self.head_timeout if connection.phase == "idle" else self.body_timeout
                    deadline = connection.since + limit
                    if deadline <= now:
                        overdue.append(request)
                    elif next_deadline is None or deadline < next_deadline:
                        next_deadline = deadline
                for request in overdue:
                    del self._connections[request]
                    _cut(request)
                self._reaper_wakes_at = float("inf") if next_deadline is None else next_deadline
                self._connections_changed.wait(None if next_deadline is None else next_deadline - now)


def _cut(request: socket.socket) -> None:
    """End a connection another thread is blocked reading: its read returns EOF and it closes the socket."""
    try:
        request.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: GatewayServer

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def handle_one_request(self) -> None:
        deadline = self.server.admission_deadline(self.connection)
        if deadline is not None:
            self._handle_while_waiting(deadline)
            return
        # Waiting for a head: the reaper closes us after head_timeout (also
        # when it trickles in), and a new connection at the cap may evict us.
        self.server.set_phase(self.connection, "idle")
        self.connection.settimeout(self.server.head_timeout)
        super().handle_one_request()

    def _handle_while_waiting(self, deadline: float) -> None:
        """The first request of a connection that found every slot busy.

        Its head must arrive before the admission deadline; then a health
        check is answered at once (liveness probes must not read a busy
        gateway as a dead one), anything else waits for a slot (``_dispatch``).
        Whatever is still waiting at the deadline gets 503.
        """
        self.connection.settimeout(max(0.001, deadline - time.monotonic()))
        self._answered = False
        self.requestline, self.command = "", ""  # for the 503's log line when no head arrives
        try:
            super().handle_one_request()
        finally:
            if self.server.leave_waiting(self.connection):
                self.close_connection = True
                # The head did not come in time (a client that hung up, reading b"", gets nothing).
                if not self._answered and getattr(self, "raw_requestline", None) != b"":
                    try:
                        self._refuse(503, self.server.busy_message())
                    except OSError:
                        pass

    def send_error(self, code: int, message: Optional[str] = None, explain: Optional[str] = None) -> None:
        """http.server's own refusals (414 long request line, 431 too many or too long headers, 501, ...).

        Answered like every other error, in JSON through the one head helper,
        and closed without reading further.
        """
        text = message or self.responses.get(code, ("error",))[0]
        self._refuse(code, f"{text}: {explain}" if explain else text)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        if logger.isEnabledFor(logging.DEBUG):
            line = (format % args).replace(self.server.gateway.token, "****")  # the token is in request paths
            logger.debug("%s %s", self.address_string(), line)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        # No CORS: browsers' preflights are refused like any foreign origin.
        self._dispatch("OPTIONS")

    # -- routing -----------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        if self.server.admission_deadline(self.connection) is not None:
            if self._is_health_check(method):
                self.server.leave_waiting(self.connection)
                self.close_connection = True  # answered without a slot: not kept for more
            elif not self.server.admit(self.connection):
                self._refuse(503, self.server.busy_message())
                return
        self.server.set_phase(self.connection, "reading")
        self.connection.settimeout(self.server.body_timeout)
        try:
            self._route(method)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug: answer 500 with one line, log the traceback
            logger.exception("request failed: %s %s", method, self.path)
            self._json(500, {"error": f"internal error: {type(exc).__name__}: {exc}"})

    def _route(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        # Nothing of the body is read until framing, Host/Origin and token pass;
        # every refusal closes the connection instead.
        size = self._body_size()
        if size is None or not self._host_and_origin_ok():
            return
        if path == "/healthz" and method == "GET":
            self._json(200, {"ok": True})
            return
        if path == "/ui" or path.startswith("/ui/"):  # the web page: its own sign-in (gateway/ui.py)
            ui.handle(self, method, path, parts.query, size)
            return
        below = self._authorized_path(path)  # the path under the token prefix
        if below is None:
            self._refuse(401, "missing or wrong gateway token: use the full TOOLSCRIPT_GATEWAY_URL (it ends in /t/<token>)")
            return
        body = self._read_body(size)
        if body is None:
            return
        self.server.set_phase(self.connection, "busy")
        if below in ("/mcp", "/mcp/code"):
            try:
                (self.server.mcp if below == "/mcp" else self.server.mcp_code).handle(self, body)
            except Exception:
                # The endpoint may already be streaming: writing a 500 now would
                # corrupt that response, so drop the connection instead.
                logger.exception("MCP request failed")
                self.close_connection = True
            return
        query = {k: ",".join(v) for k, v in parse_qs(parts.query).items()}
        gateway = self.server.gateway
        if method == "GET" and below in ("/", "/health"):
            self._json(200, gateway.health())
        elif method == "GET" and below == "/servers":
            self._json(200, gateway.servers())
        elif method == "GET" and below == "/tools":
            self._tools(query)
        elif method == "POST" and below == "/call":
            self._call(body)
        elif method == "GET" and below == "/search":
            self._search(query)
        elif method == "GET" and below == "/types":
            self._types(query)
        elif method == "GET" and below == "/runtime/names":
            gateway.wait_for_servers()
            self._json(200, gateway.derived.names())
        elif method == "GET" and below == "/skills":
            wait = query.get("wait")
            try:
                seconds = min(60.0, max(0.0, float(wait))) if wait else None
            except ValueError:
                seconds = None
            self._json(200, gateway.skills(seconds))
        elif method == "GET" and below == "/skills/read":
            try:
                self._json(200, gateway.read_skill(query.get("server", ""), query.get("uri", "")))
            except LookupError as exc:
                self._json(404, {"error": str(exc.args[0])})
            except ValueError as exc:
                self._json(502, {"error": str(exc)})
        elif method == "POST" and below == "/ui/code":
            self._json(200, self.server.ui.mint())
        elif method == "POST" and below == "/model":
            from toolscript.gateway import warm_model

            self._json(*warm_model.answer(self.server.models, self.headers.get(warm_model.KEY_HEADER), body))
        elif method == "GET" and below == "/runtime/tools.ts":
            from toolscript.gateway.tsruntime import typescript_runtime

            gateway.wait_for_servers()
            self._send(200, "application/typescript; charset=utf-8", typescript_runtime(gateway.derived.names()).encode("utf-8"))
        elif below in ("/health", "/servers", "/tools", "/call", "/search", "/types", "/runtime/names"):
            self._json(405, {"error": f"{method} is not allowed on {below}"})
        else:
            self._json(404, {"error": f"no such endpoint: {below} (try /health, /servers, /tools, /call, /mcp, /mcp/code)"})

    def _is_health_check(self, method: str) -> bool:
        """GET /healthz, or an authorized GET /health: cheap, bodiless, and what liveness probes ask."""
        if method != "GET" or self.headers.get("Content-Length", "0").strip() != "0" or self.headers.get("Transfer-Encoding"):
            return False
        path = urlsplit(self.path).path
        return path == "/healthz" or self._authorized_path(path) in ("/", "/health")

    def _host_and_origin_ok(self) -> bool:
        hosts = self.headers.get_all("Host") or []
        if len(hosts) > 1:
            self._refuse(400, "more than one Host header")
            return False
        host = (hosts[0] if hosts else "").strip()
        hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        allowed = set(LOOPBACK_NAMES) | {self.server.host, f"[{self.server.host}]"}
        if hostname not in allowed:
            self._refuse(403, f"Host {host!r} is not allowed (the gateway answers only to its own address)")
            return False
        origin = self.headers.get("Origin")
        if origin is not None:
            origin_host = urlsplit(origin).hostname or ""
            if origin_host not in ("127.0.0.1", "localhost", "::1") and origin_host != self.server.host:
                self._refuse(403, f"Origin {origin!r} is not allowed")
                return False
        return True

    def _authorized_path(self, path: str) -> Optional[str]:
        """The path below the token prefix, or None when the token is missing or wrong."""
        token = self.server.gateway.token
        if path.startswith("/t/"):
            given, _, rest = path[3:].partition("/")
            if hmac.compare_digest(given.encode(), token.encode()):
                return "/" + rest
            return None
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and hmac.compare_digest(auth[7:].strip().encode(), token.encode()):
            return path
        return None

    def _body_size(self) -> Optional[int]:
        """The declared body size, or None after refusing a framing we will not read."""
        if self.headers.get_all("Transfer-Encoding"):
            self._refuse(411, "Transfer-Encoding (chunked) request bodies are not supported; send Content-Length")
            return None
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1:
            self._refuse(400, "more than one Content-Length header; send exactly one")
            return None
        if not lengths:
            return 0
        value = lengths[0].strip()
        if not (value.isascii() and value.isdigit()):
            self._refuse(400, f"bad Content-Length {value[:40]!r}: it must be a non-negative integer")
            return None
        size = int(value) if len(value) < 20 else MAX_BODY_BYTES + 1
        if size > MAX_BODY_BYTES:
            self._refuse(413, f"request body over {MAX_BODY_BYTES} bytes")
            return None
        return size

    def _read_body(self, size: int) -> Optional[bytes]:
        """The body, or None if the client closed (or was cut off by the body timeout) before sending it all."""
        if not size:
            return b""
        try:
            body = self.rfile.read(size)
        except OSError:  # includes the per-read timeout
            body = b""
        if len(body) < size:
            self.close_connection = True
            return None
        return body

    def _refuse(self, status: int, message: str) -> None:
        """Answer an error and close, without reading the request's body."""
        self.close_connection = True
        self.server.linger(self.connection)
        self._json(status, {"error": message})

    # -- JSON API ------------------------------------------------------------------

    def _tools(self, query: Dict[str, str]) -> None:
        gateway = self.server.gateway
        servers = _split(query.get("server"))
        if servers:
            unknown = [s for s in servers if s not in gateway.known_servers()]
            if unknown:
                self._json(404, {"error": f"unknown server {unknown[0]!r}", "servers": gateway.known_servers()})
                return
        self._json(200, gateway.tools(servers or None, _split(query.get("id")) or None))

    def _search(self, query: Dict[str, str]) -> None:
        text = query.get("q", "").strip()
        if not text:
            self._json(400, {"error": "missing query: /search?q=words&limit=3"})
            return
        try:
            limit = int(query.get("limit", "3"))
            threshold = float(query.get("threshold", "0"))
            # wait: seconds to wait for servers still connecting (default: the usual bound); the per-prompt
            # suggestion hook passes 0, it must not hold the user's prompt for a slow server.
            wait = float(query["wait"]) if "wait" in query else None
        except ValueError:
            self._json(400, {"error": "limit must be an integer, threshold a number between 0 and 1 and wait a number of seconds"})
            return
        if limit < 1 or not 0 <= threshold <= 1 or (wait is not None and not 0 <= wait <= 60):
            self._json(400, {"error": "limit must be at least 1, threshold between 0 and 1 and wait between 0 and 60 seconds"})
            return
        gateway = self.server.gateway
        pending = gateway.wait_for_servers() if wait is None else gateway.wait_for_servers(timeout=wait)
        explain = query.get("explain") in ("1", "true")
        # semantic=0: words only, for callers whose score thresholds were set on word scores (the suggestion hook).
        semantic = query.get("semantic") not in ("0", "false")
        results = gateway.derived.search(text, limit=limit, threshold=threshold, servers=_split(query.get("server")) or None,
                                         explain=explain, semantic=semantic)
        answer: Dict[str, Any] = {"results": results, "pending": pending}
        if semantic:  # whether the ranking used the vectors data (the suggestion hook reads its scores by that)
            answer["vectors"] = gateway.derived.current().index.semantic
        if explain:  # per-signal contributions in each result, and what the query looked up
            answer["terms"] = gateway.derived.explain_terms(text, semantic=semantic)
        self._json(200, answer)

    def _types(self, query: Dict[str, str]) -> None:
        lang = query.get("lang", "python")
        if lang not in ("python", "ts"):
            self._json(400, {"error": f"lang must be python or ts, not {lang!r}"})
            return
        gateway = self.server.gateway
        pending = gateway.wait_for_servers()
        answer = gateway.derived.types(lang=lang, selection=_split(query.get("filter")) or None, full=query.get("full") in ("1", "true"))
        answer["pending"] = pending
        self._json(200, answer)

    def _call(self, body: bytes) -> None:
        try:
            request = decode_json(body or b"null")
        except JsonTooDeep as exc:
            self._json(400, {"error": f"{exc}: flatten the arguments"})
            return
        except ValueError:
            self._json(400, {"error": "the body must be JSON: {\"tool\": \"server__tool\", \"arguments\": {...}}"})
            return
        if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
            self._json(400, {"error": "the body must be {\"tool\": \"server__tool\", \"arguments\": {...}}"})
            return
        timeout = request.get("timeout")
        timeout = float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0 else None
        # A client that hangs up while the call runs cancels it upstream.
        cancel = Cancel()
        unwatch = self.server.disconnects.watch(self.connection, cancel)
        try:
            result = self.server.gateway.call(
                request["tool"], request.get("arguments", {}), source=str(request.get("source") or "api"), timeout=timeout, cancel=cancel
            )
        finally:
            unwatch()
        if cancel.is_set():
            self.close_connection = True  # the client is gone; the write below fails quietly
        self._json(200, result.to_dict())

    def _json(self, status: int, payload: Any) -> None:
        try:
            body = encode_json(payload)
        except (TypeError, ValueError, RecursionError) as exc:
            logger.warning("answer to %s is not JSON: %s", self.command, exc)
            status, body = 500, encode_json({"error": f"internal error: the answer is not JSON ({type(exc).__name__})"})
        self._send(status, "application/json", body)

    def _send(self, status: int, content_type: str, body: bytes, extra: Tuple[Tuple[str, str], ...] = ()) -> None:
        self._answered = True
        head = response_head(status, content_type=content_type, content_length=len(body), close=self.close_connection, extra=extra)
        # One write: headers and body in separate sends stall ~40 ms on Nagle + delayed ACK.
        self.wfile.write(head + body)
        self.wfile.flush()
        self.log_request(status)


def _split(value: Optional[str]) -> List[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def serve(gateway: Gateway, host: str = "127.0.0.1", port: int = 0, **limits: Any) -> Tuple[GatewayServer, threading.Thread]:
    """Bind and serve in a background thread; returns the server (whose ``url`` is ready).

    ``limits`` are GatewayServer's keyword arguments (max_connections, head_timeout, body_timeout, admission_wait,
    models).
    """
    server = GatewayServer(gateway, host, port, **limits)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="gateway-http", daemon=True)
    thread.start()
    return server, thread
