"""Helpers shared by the MCP test files (tests/mcp/).

* ``serve`` (fixture): ``serve(**McpHttpEndpoint options)`` serves an in-test tool
  ``Provider`` with ``McpHttpEndpoint`` behind a real ThreadingHTTPServer on
  127.0.0.1 and stops it after the test; ``served`` (fixture) is one with page size 2.
* ``sdk()``: the official MCP Python SDK, or a skip; ``sdk_tool_names`` and
  ``eventually`` for its async clients.
* ``spew_server()``: the config of ``mcp_servers/spew_server.py``, a stdio
  server that writes oversized, endless or malformed answers on request.

Import fixtures by name (``from mcp_fixtures import serve, served  # noqa: F401``).
"""

import asyncio
import os
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import TESTS_DIR, missing_prerequisite
from toolscript.config.load import ServerConfig
from toolscript.mcp.server.endpoint import McpHttpEndpoint, UnknownTool

SPEW = os.path.join(TESTS_DIR, "mcp_servers", "spew_server.py")
KIB = 1024


ACCEPT_BOTH = "application/json, text/event-stream"


SCHEMA_2020 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"n": {"type": "integer"}},
    "properties": {"n": {"$ref": "#/$defs/n"}},
    "additionalProperties": False,
}


def base_tools():
    obj = {"type": "object"}
    return [
        {"name": "echo", "description": "Echo text.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        {
            "name": "add",
            "title": "Add",
            "description": "Add two numbers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
            "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
            "annotations": {"readOnlyHint": True},
        },
        {"name": "fail", "description": "Always fails.", "inputSchema": obj},
        {"name": "slow", "description": "Reports progress and logs.", "inputSchema": obj},
        {"name": "sleep", "description": "Sleeps silently; stops when cancelled.", "inputSchema": obj},
        {"name": "bare", "inputSchema": SCHEMA_2020, "_meta": {"x/y": 1}},  # no description
    ]


class Provider:
    """A few tools, a way to change the list, and a record of cancellations."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tools = base_tools()
        self.listeners = []
        self.sleep_started = threading.Event()
        self.sleep_cancelled = threading.Event()

    def list_tools(self):
        with self.lock:
            return list(self.tools)

    def add_listener(self, callback):
        with self.lock:
            self.listeners.append(callback)

        def unsubscribe():
            with self.lock:
                self.listeners.remove(callback)

        return unsubscribe

    def listener_count(self):
        with self.lock:
            return len(self.listeners)

    def set_tools(self, tools):
        with self.lock:
            self.tools = tools
            listeners = list(self.listeners)
        for callback in listeners:
            callback()

    def call_tool(self, name, arguments, call):
        if name == "echo":
            return {"content": [{"type": "text", "text": arguments.get("text", "")}]}
        if name == "add":
            total = arguments["a"] + arguments["b"]
            return {
                "content": [{"type": "text", "text": str(total)}],
                "structuredContent": {"sum": total},
                "_meta": {"test/trace": "abc"},
            }
        if name == "fail":
            raise RuntimeError("the tool broke: " + str(arguments.get("why", "no reason")))
        if name == "slow":
            steps = int(arguments.get("steps", 3))
            for i in range(1, steps + 1):
                call.log("debug", "hidden at the default level", None)
                call.log("info", {"step": i}, "slow")
                call.progress(i, steps, f"step {i}")
                call.progress(i, steps, "a repeat is dropped: progress must increase")
                time.sleep(0.01)
            return {"content": [{"type": "text", "text": "done"}]}
        if name == "sleep":
            self.sleep_started.set()
            if call.cancelled.wait(float(arguments.get("seconds", 10))):
                self.sleep_cancelled.set()
                return {"content": [{"type": "text", "text": "cancelled, but answering anyway"}]}
            return {"content": [{"type": "text", "text": "slept"}]}
        if any(tool["name"] == name for tool in self.list_tools()):
            return {"content": [{"type": "text", "text": f"called {name}"}]}
        raise UnknownTool(name)


# -- the HTTP server, set up as a real one would be -------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.split("?")[0] != "/mcp":
            self.send_error(404)
            return
        self.server.endpoint.handle(self, body)

    do_POST = do_GET = do_DELETE = do_PUT = do_HEAD = _serve

    def log_message(self, format, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def server_bind(self):
        # HTTPServer.server_bind calls socket.getfqdn(), which can stall on reverse DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def get_request(self):
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr

    def handle_error(self, request, client_address):
        pass  # clients that hang up mid-stream are expected here


class Served:
    def __init__(self, **options):
        self.provider = Provider()
        options.setdefault("server_name", "test-gateway")
        options.setdefault("server_version", "9.9.9")
        options.setdefault("instructions", "Test instructions.")
        self.endpoint = McpHttpEndpoint(self.provider, **options)
        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.endpoint = self.endpoint
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        self.endpoint.close()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    started = []

    def _serve(**options):
        served = Served(**options)
        started.append(served)
        return served

    yield _serve
    for served in started:
        served.stop()


@pytest.fixture
def served(serve):
    return serve(page_size=2)


def text_of(result):
    return "".join(block.get("text", "") for block in result["content"] if block.get("type") == "text")


# -- the official MCP Python SDK -------------------------------------------------------------------


def sdk():
    try:
        import mcp
    except ImportError:
        missing_prerequisite("the mcp Python SDK is not installed (pip install -r tests/requirements.txt; needs Python >= 3.10)")
    return mcp


async def sdk_tool_names(client) -> list:
    """Every tool name an SDK client lists, following the cursors page by page."""
    names, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor)
        names += [tool.name for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


async def eventually(predicate) -> None:
    """Wait (up to ~5 s, without blocking the event loop) until ``predicate()`` holds; the caller asserts it."""
    for _ in range(250):
        if predicate():
            return
        await asyncio.sleep(0.02)


def spew_server(max_message_bytes=64 * KIB, timeout=10.0, name="spewer"):
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[SPEW],
                        timeout=timeout, max_message_bytes=max_message_bytes)
