#!/usr/bin/env python3
"""Stdlib-only stdio MCP server with the tools the official conformance suite calls.

``tests/e2e/test_conformance.py`` runs ``@modelcontextprotocol/conformance`` in server
mode against the toolscript gateway; the gateway gets the ``test_*`` tools the
scenarios call from this upstream server (configured with ``"mcpToolNames":
"plain"`` so they keep their own names).  Written from the scenario requirement
texts of the conformance suite (@modelcontextprotocol/conformance 0.1.16); it shares
no code with any other MCP implementation.

Tools (all take no arguments unless noted):

* ``test_simple_text``             one text block
* ``test_image_content``           one image block, a 1x1 red PNG (image/png)
* ``test_audio_content``           one audio block, a short silent WAV (audio/wav)
* ``test_embedded_resource``       one resource block, ``test://embedded-resource`` text/plain
* ``test_multiple_content_types``  text + image + resource (``test://mixed-content-resource``, JSON)
* ``test_tool_with_logging``       3 info ``notifications/message`` ~50 ms apart, then text
* ``test_error_handling``          ``isError: true`` with a text block
* ``test_tool_with_progress``      progress 0/100, 50/100, 100/100 (~50 ms apart) on the
                                   request's ``_meta.progressToken``, then text
* ``json_schema_2020_12_tool``     an inputSchema with ``$schema``, ``$defs``, ``$ref`` and
                                   ``additionalProperties: false`` (optional ``name``, ``address``)

Transport: newline-delimited JSON-RPC 2.0 on stdin/stdout; diagnostics go to
stderr.  Requests: ``initialize``, ``ping``, ``logging/setLevel``, ``tools/list``,
``tools/call``; any other method gets -32601.  Notifications are accepted and
ignored (``notifications/cancelled`` only stops a running call's remaining
notifications).  Each ``tools/call`` runs on its own thread so that ``ping`` and
other calls are answered while a slow tool sleeps.  Exits on stdin EOF.

Python 3.9+ compatible.
"""

import base64
import io
import json
import struct
import sys
import threading
import time
import wave
import zlib

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
SERVER_NAME = "toolscript-conformance-fixture"
SERVER_VERSION = "1.0.0"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
STEP_SECONDS = 0.05  # the "~50 ms" between the logging / progress notifications
NO_ARGUMENTS = {"type": "object", "properties": {}}
SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"


# -- content fixtures ------------------------------------------------------------------


def _png_1x1_red() -> bytes:
    """A valid 1x1 RGB PNG whose single pixel is red."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # width, height, depth 8, RGB, defaults
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then R G B
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    """A valid WAV file: 10 ms of 8 kHz, 16-bit mono silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG_BASE64 = base64.b64encode(_png_1x1_red()).decode("ascii")
WAV_BASE64 = base64.b64encode(_wav_silence()).decode("ascii")


def _text(text):
    return {"type": "text", "text": text}


def _image():
    return {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}


# -- tools ------------------------------------------------------------------------------

TOOLS = [
    {
        "name": "test_simple_text",
        "description": "Returns one text content block.",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_image_content",
        "description": "Returns one image content block (a 1x1 red PNG).",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_audio_content",
        "description": "Returns one audio content block (a short silent WAV).",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_embedded_resource",
        "description": "Returns one embedded text resource (test://embedded-resource).",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_multiple_content_types",
        "description": "Returns a text, an image and an embedded JSON resource.",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_tool_with_logging",
        "description": "Sends three info-level log notifications about 50 ms apart, then returns text.",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_error_handling",
        "description": "Always fails: returns isError true with a text message.",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "test_tool_with_progress",
        "description": "Reports progress 0, 50 and 100 of 100 about 50 ms apart, then returns text.",
        "inputSchema": NO_ARGUMENTS,
    },
    {
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features",
        "inputSchema": {
            "$schema": SCHEMA_2020_12,
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    },
]


class Server:
    def __init__(self, stdin, stdout):
        self.stdin = stdin
        self.stdout = stdout
        self.write_lock = threading.Lock()
        self.log_level = "info"  # until the client sends logging/setLevel
        self.cancelled = set()  # ids of requests the client cancelled (json-encoded)
        self.state_lock = threading.Lock()

    # -- output ---------------------------------------------------------------------

    def send(self, message):
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        with self.write_lock:
            try:
                self.stdout.write(line.encode("utf-8"))
                self.stdout.flush()
            except (BrokenPipeError, ValueError):
                pass

    def result(self, request_id, result):
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id, code, message):
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- input ----------------------------------------------------------------------

    def serve(self):
        while True:
            line = self.stdin.readline()
            if not line:
                return
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.error(None, -32700, "Parse error: the line is not JSON")
                continue
            if isinstance(message, list):
                # Batches (2025-03-26 only): handle each element in turn.
                for item in message:
                    self.handle(item)
            else:
                self.handle(message)

    def handle(self, message):
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.error(message.get("id") if isinstance(message, dict) else None, -32600, "Invalid Request")
            return
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response to a request we never send; ignore
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if "id" not in message:
            self.on_notification(method, params)
            return
        request_id = message["id"]
        if method == "initialize":
            self.result(request_id, self.initialize(params))
        elif method == "ping":
            self.result(request_id, {})
        elif method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                self.error(request_id, -32602, "Invalid params: unknown log level %r" % (level,))
            else:
                self.log_level = level
                self.result(request_id, {})
        elif method == "tools/list":
            self.result(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            worker = threading.Thread(target=self.call_tool, args=(request_id, params), daemon=True)
            worker.start()
        else:
            self.error(request_id, -32601, "Method not found: %s" % method)

    def on_notification(self, method, params):
        if method == "notifications/cancelled":
            with self.state_lock:
                self.cancelled.add(json.dumps(params.get("requestId")))

    def initialize(self, params):
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        }

    # -- tools ------------------------------------------------------------------------

    def is_cancelled(self, request_id):
        with self.state_lock:
            return json.dumps(request_id) in self.cancelled

    def log(self, level, data):
        if LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            self.notify("notifications/message", {"level": level, "logger": "conformance-fixture", "data": data})

    def call_tool(self, request_id, params):
        name = params.get("name")
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        token = meta.get("progressToken")
        try:
            if name == "test_simple_text":
                result = {"content": [_text("This is a simple text response for testing.")]}
            elif name == "test_image_content":
                result = {"content": [_image()]}
            elif name == "test_audio_content":
                result = {"content": [{"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}]}
            elif name == "test_embedded_resource":
                resource = {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                }
                result = {"content": [{"type": "resource", "resource": resource}]}
            elif name == "test_multiple_content_types":
                resource = {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                }
                result = {
                    "content": [
                        _text("Multiple content types test:"),
                        _image(),
                        {"type": "resource", "resource": resource},
                    ]
                }
            elif name == "test_tool_with_logging":
                messages = ["Tool execution started", "Tool processing data", "Tool execution completed"]
                for index, data in enumerate(messages):
                    if index:
                        time.sleep(STEP_SECONDS)
                    if self.is_cancelled(request_id):
                        return
                    self.log("info", data)
                result = {"content": [_text("Tool with logging executed successfully")]}
            elif name == "test_error_handling":
                result = {"isError": True, "content": [_text("This tool intentionally returns an error for testing")]}
            elif name == "test_tool_with_progress":
                for index, progress in enumerate((0, 50, 100)):
                    if index:
                        time.sleep(STEP_SECONDS)
                    if self.is_cancelled(request_id):
                        return
                    if token is not None:
                        self.notify("notifications/progress", {"progressToken": token, "progress": progress, "total": 100})
                result = {"content": [_text("Tool with progress executed successfully")]}
            elif name == "json_schema_2020_12_tool":
                arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
                result = {"content": [_text("Received: " + json.dumps(arguments, sort_keys=True))]}
            else:
                self.error(request_id, -32602, "Unknown tool: %s" % (name,))
                return
        except Exception as exc:  # a fixture bug: answer instead of leaving the call hanging
            self.error(request_id, -32603, "Internal error: %s: %s" % (type(exc).__name__, exc))
            return
        if not self.is_cancelled(request_id):
            self.result(request_id, result)


def main():
    Server(sys.stdin.buffer, sys.stdout.buffer).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
