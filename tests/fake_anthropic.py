#!/usr/bin/env python3
"""A fake Anthropic Messages API for driving the real ``claude`` CLI offline.

Stdlib only, Python 3.9 compatible, written from how the real CLI was observed to
talk to the API (its requests, streaming and retries); no third-party code.

Routes (HTTP/1.1 on 127.0.0.1, a random port):

* ``HEAD <any path>`` and ``GET /api/hello`` -> 200 (the CLI's reachability probe).
* ``POST /v1/messages`` (the CLI adds ``?beta=true``) -> the next turn of the
  SCRIPT, as server-sent events when the body has ``"stream": true`` (the CLI
  always streams), else as one JSON message.
* ``POST /v1/messages/count_tokens`` -> ``{"input_tokens": 42}``.
* ``GET /_requests`` -> every request logged so far, as a JSON list.
* anything else -> 404 with an Anthropic-shaped JSON error.

Every request (method, path, headers, JSON body) is kept in memory and, when a
log path is given, appended to it as one JSON line.

The SCRIPT is a list of turns.  Which turn answers a ``/v1/messages`` request is
decided by counting the ``tool_result`` blocks in the request's ``messages``: no
tool result yet -> turn 0, one -> turn 1, and so on (past the end: the last
turn).  A turn is a dict:

* ``{"text": "..."}``: a text answer, ``stop_reason: end_turn``;
* ``{"bash": "COMMAND", "description": "..."}``: a ``tool_use`` of the ``Bash``
  tool with ``{"command": COMMAND, "description": ...}``, ``stop_reason: tool_use``;
* ``{"tool": "NAME", "input": {...}}``: a ``tool_use`` of any tool;
* ``{"tools": [{"tool": "NAME", "input": {...}}, ...]}``: several ``tool_use``
  blocks in one turn (parallel tool calls).
* ``{"tool": "NAME", "input_json": TEXT}``: the ``tool_use`` input sent as
  that JSON text verbatim (what ``json.dumps`` cannot write: 100,000 levels deep).

A tool turn may also carry ``"text"``, sent as a text block before the tool_use.
A bare string is short for ``{"text": STRING}``.  Any turn may also carry:

* ``"thinking": "..."``: a thinking block (with a fake signature) before the
  other blocks, as models that think answer;
* ``"stop_reason": "..."``: instead of the one the blocks imply (``"refusal"``);
* ``"delay": SECONDS``: wait that long before answering (cut short by ``stop()``);
* ``"trickle": SECONDS``: send the (non-streaming) answer's body one byte every
  SECONDS, after prompt headers (a server or proxy that stalls mid-answer).

An error turn answers with an HTTP error instead of a message:
``{"status": 429, "retry_after": 1, "error_type": "rate_limit_error",
"error_message": "...", "error_code": "...", "headers": {...}}`` (all but
``status`` optional; ``retry_after`` becomes the ``retry-after`` header,
``error_code`` the body's ``error.details.error_code``).  ``{"drop": true}``
closes the connection without answering (a reset, as a flaky proxy does).

``FakeAnthropic(script, sequential=True)`` hands out turns in request order
instead (the n-th ``/v1/messages`` request gets turn n, past the end the last):
what a client that retries needs, since a retry carries no new tool result.
``api.count()`` is the number of requests to ``/v1/messages`` so far
(``api.count(route)`` for another path; ``api.counts()`` for all of them).

Streaming events, in order (each ``event: NAME`` + ``data: JSON`` + blank line):
``message_start`` (the message with empty content), ``ping``, then per content
block ``content_block_start`` (text ``""`` or tool_use with ``input: {}``),
``content_block_delta`` (``text_delta`` / ``input_json_delta`` with
``partial_json`` pieces), ``content_block_stop``; then ``message_delta``
(``stop_reason``, ``usage.output_tokens``) and ``message_stop``.  The response
has ``content-type: text/event-stream`` and ``connection: close``.

Use from Python::

    with FakeAnthropic([{"bash": "echo hi"}, {"text": "done"}], log_path=...) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        ...
        api.requests            # the logged requests
        api.tool_results()      # every tool_result block the CLI sent back

or from a shell: ``python3 fake_anthropic.py --script turns.json [--log req.jsonl]
[--port N]`` prints ``LISTENING <port>`` once it listens and serves until killed.
"""

import argparse
import itertools
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

Turn = Union[str, Dict[str, Any]]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
REQUESTS_PATH = "/_requests"
DEFAULT_MODEL = "claude-haiku-5-5"
TURN_KEYS = {"text", "bash", "tool", "tools", "status", "thinking", "stop_reason", "drop"}
RAW_INPUT = "\u0000raw tool input\u0000"  # stands for a turn's input_json until the answer is encoded
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
INPUT_TOKENS = 42
JSON_CHUNK = 16  # characters per input_json_delta piece (several deltas per tool_use)
TEXT_CHUNK = 24  # characters per text_delta piece


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _chunks(text: str, size: int) -> List[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def count_tool_results(body: Any) -> int:
    """How many ``tool_result`` blocks the request's ``messages`` carry."""
    count = 0
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return count


def tool_result_text(block: Dict[str, Any]) -> str:
    """The text of a ``tool_result`` block (its content is a string or a list of blocks)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


class FakeAnthropic:
    """The fake API server; a context manager that starts and stops it."""

    def __init__(
        self,
        script: Sequence[Turn],
        log_path: Optional[str] = None,
        port: int = 0,
        on_message: Optional[Callable[[Dict[str, Any]], Any]] = None,
        sequential: bool = False,
    ) -> None:
        if not script:
            raise ValueError("the script needs at least one turn")
        self.script: List[Dict[str, Any]] = [self._normalise(turn) for turn in script]
        self.log_path = log_path
        #: Called with each logged ``/v1/messages`` request before it is answered
        #: (while the CLI waits): a test can look at the world mid-run.  Whatever it
        #: returns is stored in the request's log entry as ``"observed"``.
        self.on_message = on_message
        self.requests: List[Dict[str, Any]] = []
        self.sequential = sequential
        self._answered = 0  # /v1/messages requests given a turn so far (for ``sequential``)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._server.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @staticmethod
    def _normalise(turn: Turn) -> Dict[str, Any]:
        if isinstance(turn, str):
            return {"text": turn}
        if not isinstance(turn, dict) or not (TURN_KEYS & set(turn)):
            raise ValueError(f"a turn is a string or a dict with one of {sorted(TURN_KEYS)}: {turn!r}")
        return dict(turn)

    # --- lifecycle ---------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FakeAnthropic":
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # cut every delayed answer short
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the log -------------------------------------------------------------------

    def record(self, entry: Dict[str, Any]) -> None:
        with self._lock:
            entry["seq"] = len(self.requests)
            self.requests.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(_dumps(entry) + "\n")

    def snapshot(self) -> List[Dict[str, Any]]:
        with self._lock:
            return list(self.requests)

    def count(self, route: str = MESSAGES_PATH) -> int:
        """How many requests reached ``route`` (a path without its query) so far."""
        return sum(1 for r in self.snapshot() if r["route"] == route)

    def counts(self) -> Dict[str, int]:
        """Requests so far per route."""
        result: Dict[str, int] = {}
        for request in self.snapshot():
            result[request["route"]] = result.get(request["route"], 0) + 1
        return result

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the server stops first; True when it is stopping."""
        return self._stopping.wait(seconds)

    def message_requests(self) -> List[Dict[str, Any]]:
        """The logged ``POST /v1/messages`` requests (not count_tokens)."""
        return [r for r in self.snapshot() if r["method"] == "POST" and r["route"] == MESSAGES_PATH]

    def tool_results(self) -> List[Dict[str, Any]]:
        """Every distinct ``tool_result`` block sent to ``/v1/messages``, by tool_use_id, in order."""
        seen: Dict[str, Dict[str, Any]] = {}
        for request in self.message_requests():
            body = request.get("body")
            for message in (body.get("messages") or []) if isinstance(body, dict) else []:
                content = message.get("content") if isinstance(message, dict) else None
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())

    def summary(self, limit: int = 4000) -> str:
        """A short human-readable account of the requests, for assertion messages."""
        lines = []
        for request in self.snapshot():
            body = request.get("body")
            line = f"#{request['seq']} {request['method']} {request['path']}"
            if isinstance(body, dict) and "messages" in body:
                line += (
                    f" model={body.get('model')} stream={body.get('stream')} messages={len(body['messages'])}"
                    f" tools={len(body.get('tools') or [])} tool_results={count_tool_results(body)}"
                    f" -> turn {request.get('turn')}"
                )
            lines.append(line)
        for block in self.tool_results():
            text = tool_result_text(block)
            lines.append(f"tool_result {block.get('tool_use_id')} is_error={block.get('is_error')}: {text[:600]!r}")
        text = "\n".join(lines) or "<no requests>"
        return text if len(text) <= limit else text[: limit - 20] + "\n...<truncated>"

    # --- answers -------------------------------------------------------------------

    def turn_for(self, body: Any) -> Tuple[int, Dict[str, Any]]:
        if self.sequential:
            with self._lock:
                index = min(self._answered, len(self.script) - 1)
                self._answered += 1
        else:
            index = min(count_tool_results(body), len(self.script) - 1)
        return index, self.script[index]

    @staticmethod
    def error_body(turn: Dict[str, Any]) -> Dict[str, Any]:
        """The Anthropic-shaped JSON error an error turn answers with."""
        status = int(turn["status"])
        error: Dict[str, Any] = {
            "type": str(turn.get("error_type") or ERROR_TYPES.get(status, "api_error")),
            "message": str(turn.get("error_message") or f"fake API: scripted error {status}"),
        }
        if turn.get("error_code"):
            error["details"] = {"error_code": str(turn["error_code"])}
        return {"type": "error", "error": error, "request_id": "req_fake"}

    def build_message(self, turn: Dict[str, Any], model: str) -> Dict[str, Any]:
        """The complete assistant message for ``turn`` (the non-streaming answer)."""
        n = next(self._ids)
        content: List[Dict[str, Any]] = []
        if turn.get("thinking"):
            content.append({"type": "thinking", "thinking": str(turn["thinking"]), "signature": f"fake-signature-{n:04d}"})
        if turn.get("text"):
            content.append({"type": "text", "text": str(turn["text"])})
        if "bash" in turn:
            tool_input: Dict[str, Any] = {"command": str(turn["bash"])}
            tool_input["description"] = str(turn.get("description") or "Run a toolscript command")
            content.append({"type": "tool_use", "id": f"toolu_fake{n:04d}", "name": "Bash", "input": tool_input})
        elif "tool" in turn:
            tool_use_input: Any = RAW_INPUT if "input_json" in turn else dict(turn.get("input") or {})
            content.append({"type": "tool_use", "id": f"toolu_fake{n:04d}", "name": str(turn["tool"]), "input": tool_use_input})
        for k, use in enumerate(turn.get("tools") or []):
            content.append(
                {"type": "tool_use", "id": f"toolu_fake{n:04d}_{k}", "name": str(use["tool"]), "input": dict(use.get("input") or {})}
            )
        if not content:
            content.append({"type": "text", "text": ""})
        stop_reason = str(turn.get("stop_reason") or ("tool_use" if content[-1]["type"] == "tool_use" else "end_turn"))
        output_tokens = max(1, len(_dumps(content)) // 4)
        return {
            "id": f"msg_fake{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 10,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    @staticmethod
    def stream_events(message: Dict[str, Any]) -> Iterator[Tuple[str, Dict[str, Any]]]:
        """The SSE events (name, data) that stream ``message``."""
        start = dict(message, content=[], stop_reason=None, stop_sequence=None)
        start["usage"] = dict(message["usage"], output_tokens=1)
        yield "message_start", {"type": "message_start", "message": start}
        yield "ping", {"type": "ping"}
        for index, block in enumerate(message["content"]):
            if block["type"] == "thinking":
                yield "content_block_start", {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
                for piece in _chunks(block["thinking"], TEXT_CHUNK):
                    yield "content_block_delta", {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    }
                yield "content_block_delta", {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
            elif block["type"] == "text":
                yield "content_block_start", {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
                for piece in _chunks(block["text"], TEXT_CHUNK):
                    yield "content_block_delta", {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    }
            else:
                yield "content_block_start", {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                }
                for piece in _chunks(_dumps(block["input"]), JSON_CHUNK):
                    yield "content_block_delta", {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        }
        yield "message_stop", {"type": "message_stop"}


def _make_handler(api: FakeAnthropic) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "fake-anthropic/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # the request log is the record; keep test output quiet

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes: without this, Nagle plus the
            # client's delayed ACK can stall a keep-alive client ~40 ms per answer.
            try:
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

        def handle(self) -> None:
            try:
                super().handle()
            except (ConnectionError, socket.timeout):
                pass  # the client gave up (a timeout test): nothing to answer

        # --- helpers ---------------------------------------------------------------

        def _route(self) -> str:
            return urlsplit(self.path).path.rstrip("/") or "/"

        def _read_body(self) -> Tuple[bytes, Any]:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            try:
                return raw, json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError):
                return raw, None

        def _log(self, body: Any, raw: bytes = b"", **extra: Any) -> Dict[str, Any]:
            entry: Dict[str, Any] = {
                "method": self.command,
                "path": self.path,
                "route": self._route(),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body if body is not None or not raw else raw.decode("utf-8", "replace"),
            }
            entry.update(extra)
            api.record(entry)
            return entry

        def _send_json(self, status: int, obj: Any, close: bool = False, headers: Optional[Dict[str, str]] = None) -> None:
            self._send_raw(_dumps(obj).encode("utf-8"), status, close, headers)

        def _send_raw(self, data: bytes, status: int = 200, close: bool = False, headers: Optional[Dict[str, str]] = None) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", "req_fake")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if close:
                self.send_header("connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _not_found(self) -> None:
            self._send_json(
                404,
                {
                    "type": "error",
                    "error": {"type": "not_found_error", "message": f"fake API: no route {self.command} {self.path}"},
                    "request_id": "req_fake",
                },
            )

        # --- verbs -----------------------------------------------------------------

        def do_HEAD(self) -> None:
            self._log(None)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            route = self._route()
            if route == REQUESTS_PATH:
                self._send_json(200, api.snapshot())
                return
            self._log(None)
            if route == "/api/hello":
                self._send_json(200, {"message": "hello"})
            else:
                self._not_found()

        def do_POST(self) -> None:
            raw, body = self._read_body()
            route = self._route()
            if route == COUNT_TOKENS_PATH:
                self._log(body, raw)
                self._send_json(200, {"input_tokens": INPUT_TOKENS})
                return
            if route != MESSAGES_PATH:
                self._log(body, raw)
                self._not_found()
                return
            if not isinstance(body, dict):
                self._log(body, raw)
                self._send_json(
                    400,
                    {"type": "error", "error": {"type": "invalid_request_error", "message": "body is not a JSON object"}},
                )
                return
            index, turn = api.turn_for(body)
            entry = self._log(body, raw, turn=index)
            if api.on_message is not None:
                try:
                    entry["observed"] = api.on_message(entry)
                except Exception as exc:  # a broken observer must not hang the CLI
                    entry["observed"] = f"on_message failed: {exc!r}"
            if turn.get("delay") and api.wait(float(turn["delay"])):
                self.close_connection = True
                return  # the server is stopping: no answer
            if turn.get("drop"):
                self.close_connection = True
                return
            if "status" in turn:
                headers = {str(k): str(v) for k, v in (turn.get("headers") or {}).items()}
                if turn.get("retry_after") is not None:
                    headers["retry-after"] = str(turn["retry_after"])
                self._send_json(int(turn["status"]), api.error_body(turn), headers=headers)
                return
            message = api.build_message(turn, str(body.get("model") or DEFAULT_MODEL))
            if "input_json" in turn and not body.get("stream"):
                self._send_raw(_dumps(message).replace(_dumps(RAW_INPUT), str(turn["input_json"])).encode("utf-8"))
                return
            if turn.get("trickle") and not body.get("stream"):
                self._send_trickle(message, float(turn["trickle"]))
                return
            if body.get("stream"):
                self._send_stream(message)
            else:
                self._send_json(200, message)

        def do_PUT(self) -> None:
            raw, body = self._read_body()
            self._log(body, raw)
            self._not_found()

        do_DELETE = do_PATCH = do_PUT

        def _send_trickle(self, message: Dict[str, Any], pause: float) -> None:
            data = _dumps(message).encode("utf-8")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            for i in range(len(data)):
                if api.wait(pause):
                    break
                self.wfile.write(data[i : i + 1])
            self.close_connection = True

        def _send_stream(self, message: Dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.send_header("request-id", "req_fake")
            self.end_headers()
            self.close_connection = True
            for name, data in api.stream_events(message):
                self.wfile.write(f"event: {name}\ndata: {_dumps(data)}\n\n".encode("utf-8"))
                self.wfile.flush()

    return Handler


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="A fake Anthropic Messages API that follows a script of turns.")
    parser.add_argument("--script", required=True, help="JSON file: a list of turns")
    parser.add_argument("--log", default=None, help="append every request to this file as JSON lines")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as fh:
        script = json.load(fh)
    api = FakeAnthropic(script, log_path=args.log, port=args.port)
    print(f"LISTENING {api.port}", flush=True)
    try:
        api._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        api._server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
