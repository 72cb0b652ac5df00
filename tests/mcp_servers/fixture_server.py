#!/usr/bin/env python3
"""Stdlib-only MCP fixture server used to test toolscript's MCP client.

Speaks the legacy-era MCP protocol (initialize handshake, revisions
2024-11-05 .. 2025-11-25) over three transports:

    python3 fixture_server.py stdio [options]   newline-delimited JSON on stdin/stdout
    python3 fixture_server.py http  [options]   Streamable HTTP on http://127.0.0.1:<port>/mcp
    python3 fixture_server.py sse   [options]   legacy HTTP+SSE: GET /sse + POST /messages?session_id=

For http/sse the server prints exactly one line ``LISTENING <port>`` on stdout
once the socket listens; everything else goes to stderr.

Written from the protocol notes only; it shares no code with the client under
test.  Python 3.9+ compatible, standard library only.
"""

import argparse
import base64
import json
import os
import re
import secrets
import select
import socket
import socketserver
import sys
import threading
import time
import queue
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from email.utils import formatdate
from urllib.parse import urlsplit, parse_qs

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
SERVER_VERSION = "1.2.3"
INSTRUCTIONS = "Fixture server for toolscript tests."
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
KEEPALIVE_SECONDS = 15.0
CLIENT_REPLY_TIMEOUT = 5.0
EMPTY_SCHEMA = {"type": "object", "properties": {}}

# Set when the process is shutting down (stdin EOF on stdio); waits abort.
SHUTDOWN = threading.Event()


def log(msg):
    try:
        sys.stderr.write("[fixture %d] %s\n" % (os.getpid(), msg))
        sys.stderr.flush()
    except Exception:
        pass


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def id_key(request_id):
    return json.dumps(request_id, sort_keys=True)


def error_response(request_id, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def result_response(request_id, result):
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def text_result(text, **extra):
    res = {"content": [{"type": "text", "text": text}]}
    res.update(extra)
    return res


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        Exception.__init__(self, message)
        self.code = code
        self.message = message
        self.data = data


class NoResponse(Exception):
    """Raised by a tool that must not answer (cancelled, shutdown, disconnect)."""


def classify(msg):
    """Return 'request', 'notification', 'response' or 'invalid'."""
    if not isinstance(msg, dict):
        return "invalid"
    method = msg.get("method")
    if isinstance(method, str):
        return "request" if "id" in msg else "notification"
    if "method" not in msg and "id" in msg and ("result" in msg or "error" in msg):
        return "response"
    return "invalid"


# ---------------------------------------------------------------------------
# Session state (one per stdio process, per HTTP session, per SSE stream)
# ---------------------------------------------------------------------------

class Session(object):
    def __init__(self, session_id, transport):
        self.id = session_id
        self.transport = transport
        self.lock = threading.Lock()
        self.client_info = None
        self.client_capabilities = None
        self.protocol_version = None
        self.log_level = None
        self.initialized = False
        self.cancelled = []          # request ids from notifications/cancelled, in order
        self.inflight = {}           # id_key -> threading.Event (cancel flag)
        self.pending = {}            # server request id -> [Event, response]
        self.extra_tool = False
        self.closed = threading.Event()
        self.get_stream = None       # http: open GET stream channel
        self.outbox = queue.Queue()  # sse: messages for the event stream

    # in-flight requests / cancellation
    def begin(self, request_id):
        ev = threading.Event()
        with self.lock:
            self.inflight[id_key(request_id)] = ev
        return ev

    def end(self, request_id, ev):
        with self.lock:
            key = id_key(request_id)
            if self.inflight.get(key) is ev:
                del self.inflight[key]

    def cancel(self, request_id):
        with self.lock:
            self.cancelled.append(request_id)
            ev = self.inflight.get(id_key(request_id))
        if ev is not None:
            ev.set()
        return ev is not None

    # server -> client requests
    def expect_reply(self, srv_id):
        holder = [threading.Event(), None]
        with self.lock:
            self.pending[srv_id] = holder
        return holder

    def forget_reply(self, srv_id):
        with self.lock:
            self.pending.pop(srv_id, None)

    def deliver_reply(self, msg):
        rid = msg.get("id")
        try:
            key = rid if isinstance(rid, str) else id_key(rid)
        except Exception:
            key = None
        with self.lock:
            holder = self.pending.pop(key, None)
        if holder is None:
            log("response for unknown server request id %r ignored" % (rid,))
            return False
        holder[1] = msg
        holder[0].set()
        return True

    def close(self):
        # In-flight requests notice via Ctx.alive(); their cancel flags are
        # left alone so that e.g. expire_session still gets its answer out.
        self.closed.set()
        with self.lock:
            holders = list(self.pending.values())
            stream = self.get_stream
        for h in holders:
            h[0].set()
        if stream is not None:
            stream.close()
        self.outbox.put(None)


class Ctx(object):
    """Per-request context handed to tools by the transport."""

    def __init__(self, transport, session, headers=None, send=None,
                 send_unsolicited=None, alive=None, channel_note=None):
        self.transport = transport
        self.session = session
        self.headers = headers          # dict of lowercased header -> value, or None
        self._send = send               # related channel (returns bool) or None
        self._send_unsolicited = send_unsolicited
        self._alive = alive
        self.channel_note = channel_note
        self.cancel = None              # threading.Event set by dispatch

    def send(self, msg):
        if self._send is None:
            return False
        try:
            return bool(self._send(msg))
        except Exception as exc:  # broken stream etc.
            log("send failed: %r" % (exc,))
            return False

    def send_unsolicited(self, msg):
        if self._send_unsolicited is not None:
            try:
                if self._send_unsolicited(msg):
                    return True
            except Exception as exc:
                log("unsolicited send failed: %r" % (exc,))
        return self.send(msg)

    def alive(self):
        if SHUTDOWN.is_set() or self.session.closed.is_set():
            return False
        if self._alive is not None:
            try:
                return bool(self._alive())
            except Exception:
                return False
        return True

    def wait(self, seconds, only_cancel=False):
        """Sleep up to `seconds`; raise NoResponse if cancelled (or, unless
        only_cancel, if the session/transport/process is going away)."""
        deadline = time.monotonic() + max(0.0, seconds)
        while True:
            if self.cancel is not None and self.cancel.is_set():
                raise NoResponse()
            if not only_cancel and not self.alive():
                raise NoResponse()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.cancel is not None:
                self.cancel.wait(min(remaining, 0.25))
            else:
                time.sleep(min(remaining, 0.25))


# ---------------------------------------------------------------------------
# Protocol core (transport independent)
# ---------------------------------------------------------------------------

def _schema(props, required=None):
    s = {"type": "object", "properties": props}
    if required:
        s["required"] = required
    return s


BASE_TOOLS = [
    {"name": "echo", "description": "Echo the message back as 'Echo: <message>'.",
     "inputSchema": _schema({"message": {"type": "string", "description": "Text to echo"}}, ["message"])},
    {"name": "add", "title": "Add two integers",
     "description": "Add two integers; returns the sum as text and structuredContent.",
     "inputSchema": _schema({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}},
    {"name": "fail", "description": "Return a tool execution error (isError: true) with the given message.",
     "inputSchema": _schema({"message": {"type": "string"}})},
    {"name": "meta", "description": "Return text 'meta' with result _meta {\"fixture/trace\": \"abc\"}.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "slow", "description": "Sleep `steps` times `delay` seconds, sending progress notifications when a progressToken is given.",
     "inputSchema": _schema({"steps": {"type": "integer", "default": 3, "minimum": 0},
                             "delay": {"type": "number", "default": 0.05, "minimum": 0}})},
    {"name": "log", "description": "Send `count` notifications/message log messages, then return.",
     "inputSchema": _schema({"count": {"type": "integer", "default": 3, "minimum": 0}})},
    {"name": "hang", "description": "Never answer (until cancelled).", "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "crash", "description": "Exit the server process with status 3 without answering.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "change_tools", "description": "Add 'extra_tool' to the tool list and send notifications/tools/list_changed.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "ping_client", "description": "Send ping and sampling/createMessage requests to the client and report the answers.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "get_cancellations", "description": "List the request ids cancelled so far in this session.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "whoami", "description": "Report clientInfo, negotiated protocol version, request headers and session id.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "expire_session", "description": "Forget the current HTTP session after answering.",
     "inputSchema": dict(EMPTY_SCHEMA)},
    {"name": "big", "description": "Return `size` characters of 'x'.",
     "inputSchema": _schema({"size": {"type": "integer", "minimum": 0}}, ["size"])},
]

EXTRA_TOOL = {"name": "extra_tool", "description": "Added by change_tools; echoes like echo.",
              "inputSchema": _schema({"message": {"type": "string"}}, ["message"])}


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Fixture(object):
    def __init__(self, opts):
        self.opts = opts
        self.name = opts.name
        self.fillers = [
            {"name": "filler_%03d" % i, "description": "Filler tool number %d" % i,
             "inputSchema": {"type": "object", "properties": {}}}
            for i in range(max(0, opts.tools))
        ]
        self._srv_counter = 0
        self._counter_lock = threading.Lock()
        # hook so the HTTP transport can drop sessions (expire_session)
        self.expire_hook = None

    def next_server_request_id(self):
        with self._counter_lock:
            self._srv_counter += 1
            return "srv-%d" % self._srv_counter

    def tools_for(self, session):
        tools = [dict(t) for t in BASE_TOOLS] + [dict(t) for t in self.fillers]
        if session.extra_tool:
            tools.append(dict(EXTRA_TOOL))
        return tools

    # -- message entry points ------------------------------------------------

    def dispatch(self, session, msg, ctx, cancel=None):
        """Process one parsed message; return a response dict or None."""
        kind = classify(msg)
        if kind == "response":
            session.deliver_reply(msg)
            return None
        if kind == "notification":
            try:
                self.on_notification(session, msg)
            except Exception as exc:
                log("notification %r failed: %r" % (msg.get("method"), exc))
            return None
        if kind == "invalid":
            rid = msg.get("id") if isinstance(msg, dict) else None
            if isinstance(rid, (dict, list)):
                rid = None
            return error_response(rid, -32600, "Invalid Request")
        request_id = msg.get("id")
        if cancel is None:
            cancel = session.begin(request_id)
        ctx.cancel = cancel
        try:
            try:
                result = self.on_request(session, msg, ctx)
            except RpcError as err:
                resp = error_response(request_id, err.code, err.message, err.data)
            except NoResponse:
                log("request %r: no response (cancelled/aborted)" % (request_id,))
                return None
            except Exception as exc:
                log("request %r failed: %r" % (request_id, exc))
                resp = error_response(request_id, -32603, "Internal error: %s" % (exc,))
            else:
                resp = result_response(request_id, result)
            if cancel.is_set():
                log("request %r was cancelled; dropping its response" % (request_id,))
                return None
            return resp
        finally:
            session.end(request_id, cancel)

    def on_notification(self, session, msg):
        method = msg["method"]
        params = msg.get("params") or {}
        if method == "notifications/initialized":
            session.initialized = True
        elif method == "notifications/cancelled":
            rid = params.get("requestId") if isinstance(params, dict) else None
            found = session.cancel(rid)
            log("cancel request %r (in flight: %s) reason=%r"
                % (rid, found, params.get("reason") if isinstance(params, dict) else None))
        else:
            log("ignoring notification %s" % method)

    def on_request(self, session, msg, ctx):
        method = msg["method"]
        params = msg.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(-32602, "Invalid params: params must be an object")
        if method == "initialize":
            return self.initialize(session, params)
        if method == "ping":
            return {}
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                raise RpcError(-32602, "Invalid log level: %r" % (level,))
            session.log_level = level
            return {}
        if method == "tools/list":
            return self.tools_list(session, params)
        if method == "tools/call":
            return self.tools_call(session, params, ctx)
        raise RpcError(-32601, "Method not found: %s" % method)

    def initialize(self, session, params):
        requested = params.get("protocolVersion")
        if self.opts.protocol_version:
            version = self.opts.protocol_version
        elif requested in SUPPORTED_VERSIONS:
            version = requested
        else:
            version = LATEST_VERSION
        session.protocol_version = version
        session.client_info = params.get("clientInfo")
        session.client_capabilities = params.get("capabilities")
        log("initialize: client=%s requested=%r answered=%r"
            % (dumps(session.client_info), requested, version))
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": self.name, "version": SERVER_VERSION},
            "instructions": INSTRUCTIONS,
        }

    def tools_list(self, session, params):
        tools = self.tools_for(session)
        offset = 0
        cursor = params.get("cursor")
        if cursor is not None:
            offset = decode_cursor(cursor, len(tools))
            if offset is None:
                raise RpcError(-32602, "Invalid cursor: %r" % (cursor,))
        size = self.opts.page_size
        if size and size > 0:
            page = tools[offset:offset + size]
            result = {"tools": page}
            if offset + size < len(tools):
                result["nextCursor"] = encode_cursor(offset + size)
            return result
        return {"tools": tools[offset:]}

    # -- tools ---------------------------------------------------------------

    def tools_call(self, session, params, ctx):
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(-32602, "Invalid params: tool name is required")
        args = params.get("arguments")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise RpcError(-32602, "Invalid params: arguments must be an object")
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        progress_token = meta.get("progressToken")

        known = set(t["name"] for t in self.tools_for(session))
        if name not in known:
            raise RpcError(-32602, "Unknown tool: %s" % name)

        if name in ("echo", "extra_tool"):
            message = args.get("message")
            if not isinstance(message, str):
                return tool_error("Invalid arguments: 'message' (string) is required")
            return text_result("Echo: %s" % message)
        if name == "add":
            a, b = args.get("a"), args.get("b")
            if not (_is_int(a) and _is_int(b)):
                return tool_error("Invalid arguments: 'a' and 'b' must be integers")
            total = a + b
            return text_result(str(total), structuredContent={"sum": total})
        if name == "fail":
            message = args.get("message")
            if not isinstance(message, str):
                message = "Tool failed"
            return tool_error(message)
        if name == "meta":
            return text_result("meta", _meta={"fixture/trace": "abc"})
        if name == "slow":
            steps = args.get("steps", 3)
            delay = args.get("delay", 0.05)
            if not _is_int(steps) or steps < 0 or not _is_num(delay) or delay < 0:
                return tool_error("Invalid arguments: steps must be an integer >= 0, delay a number >= 0")
            for i in range(1, steps + 1):
                ctx.wait(delay, only_cancel=True)
                if progress_token is not None:
                    ctx.send({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": progress_token, "progress": i,
                                         "total": steps, "message": "step %d" % i}})
            return text_result("done after %d steps" % steps)
        if name == "log":
            count = args.get("count", 3)
            if not _is_int(count) or count < 0:
                return tool_error("Invalid arguments: count must be an integer >= 0")
            for i in range(1, count + 1):
                ctx.send({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "logger": "fixture",
                                     "data": "log message %d" % i}})
            return text_result("logged %d" % count)
        if name == "hang":
            while True:
                ctx.wait(3600)
        if name == "crash":
            try:
                sys.stderr.write("fixture crashing on purpose\n")
                sys.stderr.flush()
            finally:
                os._exit(3)
        if name == "change_tools":
            session.extra_tool = True
            ctx.send_unsolicited({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return text_result("tools changed")
        if name == "ping_client":
            ping = self.ask_client(session, ctx, "ping", {})
            sampling = self.ask_client(session, ctx, "sampling/createMessage", {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
                "maxTokens": 16,
            })
            return text_result(dumps({"ping": ping, "sampling": sampling}))
        if name == "get_cancellations":
            with session.lock:
                ids = list(session.cancelled)
            return text_result(dumps(ids), structuredContent={"cancelled": ids})
        if name == "whoami":
            info = {
                "clientInfo": session.client_info,
                "clientCapabilities": session.client_capabilities,
                "protocolVersion": session.protocol_version,
                "headers": ctx.headers if ctx.headers is not None else {},
                "sessionId": session.id,
                "transport": session.transport,
            }
            return text_result(dumps(info), structuredContent=info)
        if name == "expire_session":
            if self.expire_hook is not None:
                self.expire_hook(session)
            return text_result("expired")
        if name == "big":
            size = args.get("size")
            if not _is_int(size) or size < 0:
                return tool_error("Invalid arguments: 'size' must be an integer >= 0")
            return text_result("x" * size)
        m = re.match(r"^filler_(\d+)$", name)
        if m:
            return text_result("filler %d" % int(m.group(1)))
        raise RpcError(-32602, "Unknown tool: %s" % name)

    def ask_client(self, session, ctx, method, params):
        """Send a server->client request and wait for its response."""
        srv_id = self.next_server_request_id()
        holder = session.expect_reply(srv_id)
        msg = {"jsonrpc": "2.0", "id": srv_id, "method": method, "params": params}
        if not ctx.send(msg):
            session.forget_reply(srv_id)
            note = ctx.channel_note or "no channel available for server-to-client requests"
            return {"code": -32603, "message": note}
        deadline = time.monotonic() + CLIENT_REPLY_TIMEOUT
        while not holder[0].is_set():
            if ctx.cancel is not None and ctx.cancel.is_set():
                session.forget_reply(srv_id)
                raise NoResponse()
            if not ctx.alive():
                session.forget_reply(srv_id)
                raise NoResponse()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                session.forget_reply(srv_id)
                return {"code": -32001, "message": "Timed out waiting for client response to %s" % method}
            holder[0].wait(min(remaining, 0.25))
        reply = holder[1]
        if reply is None:  # session closed while waiting
            raise NoResponse()
        if "error" in reply:
            return reply["error"]
        return reply.get("result")


def encode_cursor(offset):
    return base64.urlsafe_b64encode(("offset:%d" % offset).encode("ascii")).decode("ascii")


def decode_cursor(cursor, total):
    if not isinstance(cursor, str):
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except Exception:
        return None
    m = re.match(r"^offset:(\d+)$", raw)
    if not m:
        return None
    offset = int(m.group(1))
    if offset < 0 or offset > total:
        return None
    return offset


# ---------------------------------------------------------------------------
# stdio transport
# ---------------------------------------------------------------------------

class StdoutWriter(object):
    def __init__(self, garbage):
        self.lock = threading.Lock()
        self.garbage = garbage
        self.out = sys.stdout.buffer
        self.broken = False

    def raw_line(self, text):
        with self.lock:
            self._write((text + "\n").encode("utf-8"))

    def send(self, msg):
        is_response = isinstance(msg, list) or (isinstance(msg, dict) and "method" not in msg)
        data = (dumps(msg) + "\n").encode("utf-8")
        with self.lock:
            if self.garbage and is_response:
                self._write(b"garbage {{{\n")
            self._write(data)
        return not self.broken

    def _write(self, data):
        if self.broken:
            return
        try:
            self.out.write(data)
            self.out.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            self.broken = True
            log("stdout write failed: %r" % (exc,))


def run_stdio(fx, opts):
    out = StdoutWriter(opts.garbage)
    session = Session(None, "stdio")
    if opts.garbage:
        out.raw_line("Fixture server starting... not JSON")
    threads = []
    threads_lock = threading.Lock()

    def make_ctx():
        return Ctx("stdio", session, headers=None, send=out.send, send_unsolicited=out.send)

    def spawn(target):
        t = threading.Thread(target=target, daemon=True)
        with threads_lock:
            threads[:] = [x for x in threads if x.is_alive()]
            threads.append(t)
        t.start()

    def run_call(msg, cancel):
        resp = fx.dispatch(session, msg, make_ctx(), cancel=cancel)
        if resp is not None:
            out.send(resp)

    def run_batch(items):
        responses = []
        for item in items:
            resp = fx.dispatch(session, item, make_ctx())
            if resp is not None:
                responses.append(resp)
        if responses:
            out.send(responses)

    stdin = sys.stdin.buffer
    try:
        while True:
            line = stdin.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line.decode("utf-8"))
            except Exception:
                log("malformed JSON on stdin: %r" % (line[:200],))
                out.send(error_response(None, -32700, "Parse error"))
                continue
            if isinstance(msg, list):
                if not msg:
                    out.send(error_response(None, -32600, "Invalid Request: empty batch"))
                else:
                    spawn(lambda items=msg: run_batch(items))
                continue
            if classify(msg) == "request" and msg.get("method") == "tools/call":
                cancel = session.begin(msg.get("id"))
                spawn(lambda m=msg, c=cancel: run_call(m, c))
                continue
            resp = fx.dispatch(session, msg, make_ctx())
            if resp is not None:
                out.send(resp)
    except KeyboardInterrupt:
        os._exit(130)
    # stdin EOF: abort waits (hang, ping_client), let quick work finish, exit 0.
    log("stdin closed; exiting")
    SHUTDOWN.set()
    session.close()
    deadline = time.monotonic() + 3.0
    with threads_lock:
        pending = list(threads)
    for t in pending:
        t.join(max(0.0, deadline - time.monotonic()))
    try:
        with out.lock:
            sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(0)


# ---------------------------------------------------------------------------
# HTTP plumbing shared by http and sse
# ---------------------------------------------------------------------------

ORIGIN_RE = re.compile(r"^http://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$", re.IGNORECASE)


class FixtureHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler, fx, opts):
        self.fx = fx
        self.opts = opts
        self.sessions = {}
        self.sessions_lock = threading.Lock()
        ThreadingHTTPServer.__init__(self, addr, handler)

    def server_bind(self):
        # HTTPServer.server_bind would call socket.getfqdn() (reverse DNS,
        # can stall in sandboxes); bind plainly instead.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def get_request(self):
        sock, addr = ThreadingHTTPServer.get_request(self)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return sock, addr

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        log("error handling request from %s: %r" % (client_address, exc))

    def add_session(self, session):
        with self.sessions_lock:
            self.sessions[session.id] = session

    def get_session(self, sid):
        with self.sessions_lock:
            return self.sessions.get(sid)

    def drop_session(self, session):
        with self.sessions_lock:
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]
        session.close()


def peer_closed(sock):
    """True if the peer has closed its side (readable with EOF)."""
    try:
        r, _, _ = select.select([sock], [], [], 0)
        if not r:
            return False
        data = sock.recv(1, socket.MSG_PEEK)
        return data == b""
    except (OSError, ValueError):
        return True


class SSEChannel(object):
    """A long-lived SSE stream fed through a queue (GET streams)."""

    def __init__(self):
        self.q = queue.Queue()
        self.closed = threading.Event()

    def put(self, msg):
        if self.closed.is_set():
            return False
        self.q.put(msg)
        return True

    def close(self):
        self.closed.set()
        self.q.put(None)


class BaseHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fixture-mcp/" + SERVER_VERSION
    sys_version = ""

    def log_message(self, fmt, *args):
        log("http %s %s" % (self.address_string(), fmt % args))

    # -- raw response helpers (one write per response) -------------------------

    def _head_bytes(self, code, headers, content_length=None, close=False):
        reason = self.responses.get(code, ("",))[0]
        lines = ["HTTP/1.1 %d %s" % (code, reason),
                 "Server: %s" % self.server_version,
                 "Date: %s" % formatdate(usegmt=True)]
        for k, v in headers:
            lines.append("%s: %s" % (k, v))
        if content_length is not None:
            lines.append("Content-Length: %d" % content_length)
        if close or self.close_connection:
            lines.append("Connection: close")
            self.close_connection = True
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def send_raw(self, code, headers=(), body=b"", close=False):
        if isinstance(body, str):
            body = body.encode("utf-8")
        data = self._head_bytes(code, headers, len(body), close) + (body if self.command != "HEAD" else b"")
        self.wfile.write(data)
        try:
            self.wfile.flush()
        except Exception:
            pass
        self.log_request(code, len(body))

    def send_json(self, code, obj, headers=(), close=False):
        hdrs = [("Content-Type", "application/json")] + list(headers)
        self.send_raw(code, hdrs, dumps(obj).encode("utf-8"), close=close)

    def send_rpc_error(self, code, rpc_code, message):
        self.send_json(code, error_response(None, rpc_code, message))

    def start_sse(self, extra_headers=(), first=b""):
        hdrs = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache, no-transform"),
                ("X-Accel-Buffering", "no")] + list(extra_headers)
        self.wfile.write(self._head_bytes(200, hdrs, None, close=True) + first)
        self.log_request(200, "-")

    def sse_write(self, data):
        self.wfile.write(data)
        try:
            self.wfile.flush()
        except Exception:
            pass

    @staticmethod
    def sse_event(msg, event="message"):
        return ("event: %s\ndata: %s\n\n" % (event, dumps(msg))).encode("utf-8")

    # -- request helpers -------------------------------------------------------

    def lower_headers(self):
        return dict((k.lower(), v) for k, v in self.headers.items())

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                size_line = self.rfile.readline()
                if not size_line:
                    break
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers
                        tl = self.rfile.readline()
                        if not tl or tl in (b"\r\n", b"\n"):
                            break
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = self.headers.get("Content-Length")
        if length:
            try:
                n = int(length)
            except ValueError:
                self.close_connection = True
                return b""
            return self.rfile.read(n) if n > 0 else b""
        return b""

    def check_common(self):
        """Origin and --require-header checks. Returns False if answered."""
        origin = self.headers.get("Origin")
        if origin is not None and not ORIGIN_RE.match(origin.strip()):
            log("rejecting Origin %r" % origin)
            self.send_json(403, {"jsonrpc": "2.0", "id": None,
                                 "error": {"code": -32000, "message": "Forbidden: invalid Origin"}})
            return False
        req = self.server.opts.require_header
        if req:
            name, value = req
            if self.headers.get(name) != value:
                self.send_json(401, {"error": "unauthorized"})
                return False
        return True

    def url_path(self):
        return urlsplit(self.path).path

    def drain_body_if_any(self):
        # keep keep-alive connections in sync when we answer without reading
        if self.command in ("POST", "PUT", "PATCH", "DELETE"):
            try:
                self.read_body()
            except Exception:
                self.close_connection = True


# ---------------------------------------------------------------------------
# Streamable HTTP transport
# ---------------------------------------------------------------------------

class StreamableHandler(BaseHandler):

    def do_POST(self):
        body = self.read_body()
        if not self.check_common():
            return
        if self.url_path() != "/mcp":
            self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")
            return
        accept = [p.split(";")[0].strip().lower() for p in (self.headers.get("Accept") or "").split(",")]
        if "application/json" not in accept or "text/event-stream" not in accept:
            self.send_rpc_error(406, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream")
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            self.send_rpc_error(400, -32000, "Bad Request: Content-Type must be application/json")
            return
        try:
            payload = json.loads(body.decode("utf-8"))
        except Exception:
            self.send_json(400, error_response(None, -32700, "Parse error: invalid JSON"))
            return

        items = payload if isinstance(payload, list) else [payload]
        if isinstance(payload, list) and not payload:
            self.send_json(400, error_response(None, -32600, "Invalid Request: empty batch"))
            return
        is_init = any(isinstance(m, dict) and m.get("method") == "initialize" and "id" in m for m in items)

        srv = self.server
        new_session_header = []
        if is_init:
            session = Session(secrets.token_hex(16), "http")
            srv.add_session(session)
            new_session_header = [("Mcp-Session-Id", session.id)]
            log("new http session %s" % session.id)
        else:
            session = self.lookup_session()
            if session is None:
                return
            if not self.check_version_header():
                return

        headers = self.lower_headers()
        kinds = [classify(m) for m in items]

        if not isinstance(payload, list) and kinds[0] == "invalid":
            self.send_json(400, error_response(None, -32600, "Invalid Request"), headers=new_session_header)
            return

        if "request" not in kinds:
            responses = []
            for m in items:
                resp = srv.fx.dispatch(session, m, Ctx("http", session, headers=headers))
                if resp is not None:
                    responses.append(resp)
            if responses:
                self.send_json(200, responses if isinstance(payload, list) else responses[0],
                               headers=new_session_header)
            else:
                self.send_raw(202, new_session_header, b"")
            return

        if isinstance(payload, list):
            # Batches are always answered with one JSON array.
            responses = []
            for m in items:
                ctx = Ctx("http", session, headers=headers,
                          channel_note="server-to-client requests are not available inside a batch")
                resp = srv.fx.dispatch(session, m, ctx)
                if resp is not None:
                    responses.append(resp)
            if responses:
                self.send_json(200, responses, headers=new_session_header)
            else:
                self.send_raw(202, new_session_header, b"")
            return

        msg = payload
        if srv.opts.json_response:
            ctx = Ctx("http", session, headers=headers, send=None,
                      alive=lambda: not peer_closed(self.connection),
                      channel_note="server-to-client requests need an SSE response (server runs with --json-response)")
            resp = srv.fx.dispatch(session, msg, ctx)
            if resp is None:
                log("no response for request %r; closing connection" % (msg.get("id"),))
                self.close_connection = True
                return
            self.send_json(200, resp, headers=new_session_header)
            return

        # SSE response stream
        lock = threading.Lock()
        state = {"ok": True, "n": 0}
        stream_tag = secrets.token_hex(4)

        def write_event(m):
            with lock:
                if not state["ok"]:
                    return False
                try:
                    self.sse_write(self.sse_event(m))
                    return True
                except Exception as exc:
                    state["ok"] = False
                    log("SSE response stream write failed: %r" % (exc,))
                    return False

        def unsolicited(m):
            stream = session.get_stream
            if stream is not None and not stream.closed.is_set():
                return stream.put(m)
            return False

        priming = ("id: %s-%s-0\ndata: \n\n" % (session.id[:8], stream_tag)).encode("ascii")
        try:
            self.start_sse(new_session_header, first=priming)
        except Exception as exc:
            log("could not start SSE response: %r" % (exc,))
            self.close_connection = True
            return
        ctx = Ctx("http", session, headers=headers, send=write_event, send_unsolicited=unsolicited,
                  alive=lambda: state["ok"] and not peer_closed(self.connection))
        resp = srv.fx.dispatch(session, msg, ctx)
        if resp is not None:
            write_event(resp)
        else:
            log("no response for request %r; closing SSE stream" % (msg.get("id"),))
        self.close_connection = True

    def do_GET(self):
        if not self.check_common():
            return
        if self.url_path() != "/mcp":
            self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")
            return
        if self.server.opts.no_get_stream:
            self.send_raw(405, [("Allow", "POST, DELETE"), ("Content-Type", "text/plain")],
                          b"Method Not Allowed")
            return
        accept = [p.split(";")[0].strip().lower() for p in (self.headers.get("Accept") or "").split(",")]
        if "text/event-stream" not in accept:
            self.send_rpc_error(406, -32000, "Not Acceptable: Client must accept text/event-stream")
            return
        session = self.lookup_session()
        if session is None:
            return
        if not self.check_version_header():
            return
        channel = SSEChannel()
        with session.lock:
            old = session.get_stream
            session.get_stream = channel
        if old is not None:
            old.close()
        log("GET stream opened for session %s" % session.id)
        try:
            priming = ("id: %s-get-0\ndata: \n\n" % session.id[:8]).encode("ascii")
            self.start_sse(first=priming)
            self.pump(channel.q, lambda: channel.closed.is_set() or session.closed.is_set())
        finally:
            with session.lock:
                if session.get_stream is channel:
                    session.get_stream = None
            channel.closed.set()
            log("GET stream closed for session %s" % session.id)
            self.close_connection = True

    def do_DELETE(self):
        self.drain_body_if_any()
        if not self.check_common():
            return
        if self.url_path() != "/mcp":
            self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")
            return
        session = self.lookup_session()
        if session is None:
            return
        self.server.drop_session(session)
        log("session %s deleted" % session.id)
        self.send_raw(200, [], b"")

    def lookup_session(self):
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            self.send_rpc_error(400, -32000, "Bad Request: Mcp-Session-Id header required")
            return None
        session = self.server.get_session(sid.strip())
        if session is None:
            self.send_rpc_error(404, -32001, "Session not found")
            return None
        return session

    def check_version_header(self):
        v = self.headers.get("MCP-Protocol-Version")
        if v is not None and v.strip() not in SUPPORTED_VERSIONS:
            self.send_rpc_error(400, -32000, "Bad Request: Unsupported protocol version: %s (supported versions: %s)"
                                % (v, ", ".join(SUPPORTED_VERSIONS)))
            return False
        return True

    def pump(self, q, is_closed):
        """Drain `q` onto this SSE connection until closed; keepalives every 15 s."""
        last = time.monotonic()
        while True:
            if is_closed():
                return
            try:
                item = q.get(timeout=0.5)
            except queue.Empty:
                item = None
            if is_closed():
                return
            try:
                if item is not None:
                    self.sse_write(self.sse_event(item))
                    last = time.monotonic()
                elif time.monotonic() - last >= KEEPALIVE_SECONDS:
                    self.sse_write(b": keepalive\n\n")
                    last = time.monotonic()
            except Exception as exc:
                log("SSE stream write failed: %r" % (exc,))
                return
            if peer_closed(self.connection):
                return


# ---------------------------------------------------------------------------
# Legacy HTTP+SSE transport (2024-11-05)
# ---------------------------------------------------------------------------

class LegacySSEHandler(StreamableHandler):

    def do_GET(self):
        if not self.check_common():
            return
        if self.url_path() != "/sse":
            self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")
            return
        srv = self.server
        session = Session(secrets.token_hex(16), "sse")
        srv.add_session(session)
        log("new sse session %s" % session.id)
        try:
            first = ("event: endpoint\ndata: /messages?session_id=%s\n\n" % session.id).encode("ascii")
            self.start_sse(first=first)
            self.pump(session.outbox, lambda: session.closed.is_set())
        finally:
            srv.drop_session(session)
            log("sse session %s dropped (stream closed)" % session.id)
            self.close_connection = True

    def do_POST(self):
        body = self.read_body()
        if not self.check_common():
            return
        path = self.url_path()
        if path in ("/sse", "/mcp"):
            self.send_raw(405, [("Allow", "GET"), ("Content-Type", "text/plain")], b"Method Not Allowed")
            return
        if path not in ("/messages", "/messages/"):
            self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")
            return
        qs = parse_qs(urlsplit(self.path).query)
        sid = (qs.get("session_id") or qs.get("sessionId") or [None])[0]
        if not sid:
            self.send_raw(400, [("Content-Type", "text/plain")], b"session_id is required")
            return
        srv = self.server
        session = srv.get_session(sid)
        if session is None:
            self.send_raw(404, [("Content-Type", "text/plain")], b"Could not find session")
            return
        try:
            payload = json.loads(body.decode("utf-8"))
        except Exception:
            self.send_json(400, error_response(None, -32700, "Parse error: invalid JSON"))
            return
        headers = self.lower_headers()
        items = payload if isinstance(payload, list) else [payload]

        def deliver(m):
            if session.closed.is_set():
                return False
            session.outbox.put(m)
            return True

        def make_ctx():
            return Ctx("sse", session, headers=headers, send=deliver, send_unsolicited=deliver)

        def run(m, cancel):
            resp = srv.fx.dispatch(session, m, make_ctx(), cancel=cancel)
            if resp is not None:
                deliver(resp)

        # Notifications and responses are handled before the 202 so that e.g.
        # a cancellation is in effect by the time the client sees the ack.
        for m in items:
            if classify(m) == "request":
                cancel = session.begin(m.get("id"))
                threading.Thread(target=run, args=(m, cancel), daemon=True).start()
            else:
                resp = srv.fx.dispatch(session, m, make_ctx())
                if resp is not None:
                    deliver(resp)
        self.send_raw(202, [("Content-Type", "text/plain")], b"Accepted")

    def do_DELETE(self):
        self.drain_body_if_any()
        if not self.check_common():
            return
        self.send_raw(405, [("Allow", "GET, POST"), ("Content-Type", "text/plain")], b"Method Not Allowed")


def run_http(fx, opts, mode):
    handler = StreamableHandler if mode == "http" else LegacySSEHandler
    srv = FixtureHTTPServer(("127.0.0.1", opts.port), handler, fx, opts)
    if mode == "http":
        def expire(session):
            srv.drop_session(session)
            log("session %s expired on request" % session.id)
        fx.expire_hook = expire
    port = srv.server_address[1]
    sys.stdout.write("LISTENING %d\n" % port)
    sys.stdout.flush()
    log("%s transport listening on http://127.0.0.1:%d/%s" % (mode, port, "mcp" if mode == "http" else "sse"))
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        SHUTDOWN.set()
        try:
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(0)


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description="MCP fixture server for toolscript tests")
    p.add_argument("transport", choices=["stdio", "http", "sse"])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--tools", type=int, default=0)
    p.add_argument("--page-size", type=int, default=0)
    p.add_argument("--protocol-version", default=None)
    p.add_argument("--garbage", action="store_true")
    p.add_argument("--stderr-lines", type=int, default=0)
    p.add_argument("--exit-at-start", type=int, default=None, metavar="CODE")
    p.add_argument("--json-response", action="store_true")
    p.add_argument("--require-header", default=None, metavar="NAME=VALUE")
    p.add_argument("--no-get-stream", action="store_true")
    p.add_argument("--name", default="fixture")
    opts = p.parse_args(argv)
    if opts.require_header is not None:
        if "=" not in opts.require_header:
            p.error("--require-header expects NAME=VALUE")
        name, value = opts.require_header.split("=", 1)
        opts.require_header = (name.strip(), value)
    return opts


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.exit_at_start is not None:
        sys.stderr.write("fatal: fixture configured to exit\n")
        sys.stderr.flush()
        os._exit(opts.exit_at_start)
    for i in range(max(0, opts.stderr_lines)):
        sys.stderr.write("stderr noise line %d\n" % i)
    sys.stderr.flush()
    fx = Fixture(opts)
    if opts.transport == "stdio":
        run_stdio(fx, opts)
    else:
        run_http(fx, opts, opts.transport)


if __name__ == "__main__":
    main()
