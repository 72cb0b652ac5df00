"""The gateway's HTTP server: authority checks, the JSON API, the MCP endpoint.

Everything lives under ``/t/<token>/`` so that one URL,
``TOOLSCRIPT_GATEWAY_URL=http://127.0.0.1:PORT/t/<token>``, carries both the
address and the authority; ``Authorization: Bearer <token>`` on the bare paths
works too, for MCP clients that prefer headers.  ``GET /healthz`` is the only
unauthenticated path and says nothing but that the process is alive.

Host and Origin are checked on every request (a DNS-rebinding page in the
user's browser must not reach the gateway): a Host other than the address we
bound to or a loopback name, or an Origin that is not loopback, gets 403.

JSON API (paths relative to the token prefix):

    GET  /health                       status, pid, version, per-server states
    GET  /servers                      every server with state, error, stderr tail
    GET  /tools?server=a,b&id=x,y      tool descriptions (id, schema, ...)
    POST /call  {"tool": id, "arguments": {...}, "timeout": s}   -> ToolResult
    GET  /search?q=..&limit=3&threshold=0&server=a   ranked tools, scores 0..1
    GET  /types?lang=python|ts&filter=a,b__x&full=1  stubs (pre-generated when unfiltered)
    GET  /runtime/names                the sandbox runtime's attribute -> tool id map
    GET  /runtime/tools.ts             the module TypeScript scripts import (exec --lang ts)
    *    /mcp                          the standard MCP endpoint (Streamable HTTP)
"""

import hmac
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from toolscript import __version__, log
from toolscript.gateway.service import Gateway, as_call_tool_result
from toolscript.mcp.server import CallContext, McpHttpEndpoint, UnknownTool

logger = log.get("gateway.http")

MAX_BODY_BYTES = 16 * 1024 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


class GatewayToolProvider:
    """What the MCP endpoint serves: the catalog, calls, change notifications."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.plain = gateway.config.mcp_tool_names == "plain"
        self._names: Tuple[int, Dict[str, str]] = (-1, {})  # (catalog version, MCP name -> tool id)

    def _name_map(self) -> Dict[str, str]:
        """MCP tool name -> gateway id, recomputed when the catalog changes."""
        version, names = self._names
        if version == self.gateway.catalog.version:
            return names
        entries = self.gateway.catalog.entries()
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
        self._names = (self.gateway.catalog.version, names)
        return names

    def list_tools(self) -> List[Dict[str, Any]]:
        self.gateway.wait_for_servers()
        tools = []
        for name, identifier in self._name_map().items():
            entry = self.gateway.catalog.get(identifier)
            if entry is not None:
                tool = entry.as_mcp_tool()
                tool["name"] = name
                tools.append(tool)
        return tools

    def call_tool(self, name: str, arguments: Dict[str, Any], call: CallContext) -> Dict[str, Any]:
        identifier = self._name_map().get(name)
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


class GatewayServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, gateway: Gateway, host: str, port: int) -> None:
        self.gateway = gateway
        self.mcp = McpHttpEndpoint(
            GatewayToolProvider(gateway),
            server_name="toolscript-gateway",
            server_version=__version__,
            instructions="toolscript gateway: tools of several MCP servers, named server__tool.",
        )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.address_family = family
        super().__init__((host, port), GatewayHandler)
        self.host = host
        self.port = self.server_address[1]

    def server_bind(self) -> None:
        # Skip HTTPServer.server_bind's reverse-DNS lookup of our own name: it can stall start-up.
        import socketserver

        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[0], self.server_address[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/t/{self.gateway.token}"

    def shutdown_all(self) -> None:
        self.mcp.close()
        self.shutdown()
        self.server_close()


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: GatewayServer

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

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
        if not self._host_and_origin_ok():
            return
        if path == "/healthz" and method == "GET":
            self._json(200, {"ok": True})
            return
        path = self._authorized_path(path)
        if path is None:
            self._read_body()  # keep the connection usable
            self._json(401, {"error": "missing or wrong gateway token: use the full TOOLSCRIPT_GATEWAY_URL (it ends in /t/<token>)"})
            return
        body = self._read_body()
        if body is None:
            return
        if path == "/mcp":
            try:
                self.server.mcp.handle(self, body)
            except Exception:
                # The endpoint may already be streaming: writing a 500 now would
                # corrupt that response, so drop the connection instead.
                logger.exception("MCP request failed")
                self.close_connection = True
            return
        query = {k: ",".join(v) for k, v in parse_qs(parts.query).items()}
        gateway = self.server.gateway
        if method == "GET" and path in ("/", "/health"):
            self._json(200, gateway.health())
        elif method == "GET" and path == "/servers":
            self._json(200, gateway.servers())
        elif method == "GET" and path == "/tools":
            self._tools(query)
        elif method == "POST" and path == "/call":
            self._call(body)
        elif method == "GET" and path == "/search":
            self._search(query)
        elif method == "GET" and path == "/types":
            self._types(query)
        elif method == "GET" and path == "/runtime/names":
            gateway.wait_for_servers()
            self._json(200, gateway.derived.names())
        elif method == "GET" and path == "/runtime/tools.ts":
            from toolscript.codemode import deno

            gateway.wait_for_servers()
            self._send(200, "application/typescript; charset=utf-8", deno.typescript_runtime(gateway.derived.names()).encode("utf-8"))
        elif path in ("/health", "/servers", "/tools", "/call", "/search", "/types", "/runtime/names"):
            self._json(405, {"error": f"{method} is not allowed on {path}"})
        else:
            self._json(404, {"error": f"no such endpoint: {path} (try /health, /servers, /tools, /call, /mcp)"})

    def _host_and_origin_ok(self) -> bool:
        host = (self.headers.get("Host") or "").strip()
        hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        allowed = set(LOOPBACK_NAMES) | {self.server.host, f"[{self.server.host}]"}
        if hostname not in allowed:
            self._read_body()
            self._json(403, {"error": f"Host {host!r} is not allowed (the gateway answers only to its own address)"})
            return False
        origin = self.headers.get("Origin")
        if origin is not None:
            origin_host = urlsplit(origin).hostname or ""
            if origin_host not in ("127.0.0.1", "localhost", "::1") and origin_host != self.server.host:
                self._read_body()
                self._json(403, {"error": f"Origin {origin!r} is not allowed"})
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

    def _read_body(self) -> Optional[bytes]:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self._json(411, {"error": "chunked request bodies are not supported; send Content-Length"})
            return None
        if not length:
            return b""
        try:
            size = int(length)
        except ValueError:
            self._json(400, {"error": "bad Content-Length"})
            return None
        if size > MAX_BODY_BYTES:
            self.close_connection = True
            self._json(413, {"error": f"request body over {MAX_BODY_BYTES} bytes"})
            return None
        return self.rfile.read(size)

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
        except ValueError:
            self._json(400, {"error": "limit must be an integer and threshold a number between 0 and 1"})
            return
        if limit < 1 or not 0 <= threshold <= 1:
            self._json(400, {"error": "limit must be at least 1 and threshold between 0 and 1"})
            return
        gateway = self.server.gateway
        pending = gateway.wait_for_servers()
        results = gateway.derived.search(text, limit=limit, threshold=threshold, servers=_split(query.get("server")) or None)
        self._json(200, {"results": results, "pending": pending})

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
            request = json.loads(body or b"null")
        except ValueError:
            self._json(400, {"error": "the body must be JSON: {\"tool\": \"server__tool\", \"arguments\": {...}}"})
            return
        if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
            self._json(400, {"error": "the body must be {\"tool\": \"server__tool\", \"arguments\": {...}}"})
            return
        timeout = request.get("timeout")
        timeout = float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0 else None
        result = self.server.gateway.call(request["tool"], request.get("arguments", {}), source=str(request.get("source") or "api"), timeout=timeout)
        self._json(200, result.to_dict())

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, "application/json", json.dumps(payload, ensure_ascii=False).encode("utf-8"))

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        head = (
            f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"Cache-Control: no-store\r\n"
            + ("Connection: close\r\n" if self.close_connection else "")
            + "\r\n"
        ).encode("latin-1")
        # One write: headers and body in separate sends stall ~40 ms on Nagle + delayed ACK.
        self.wfile.write(head + body)
        self.wfile.flush()
        self.log_request(status)


def _split(value: Optional[str]) -> List[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def serve(gateway: Gateway, host: str = "127.0.0.1", port: int = 0) -> Tuple[GatewayServer, threading.Thread]:
    """Bind and serve in a background thread; returns the server (whose ``url`` is ready)."""
    server = GatewayServer(gateway, host, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="gateway-http", daemon=True)
    thread.start()
    return server, thread
