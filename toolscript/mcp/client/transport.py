"""What every transport provides, and the bounded reading they share.

``Transport`` is the protocol the session talks to; stdio, Streamable HTTP and
legacy SSE implement all of it, so nobody needs ``hasattr`` on a transport.

An upstream may write a message of any size, or one line that never ends.  A
transport reads at most ``max_message_bytes`` of a message; past that it keeps
only the first and last ``HEAD_TAIL_BYTES`` (enough to find a top-level
``"id"``) and discards the middle, so memory stays bounded whatever the server
writes.  An oversized answer to a known request fails that request alone
(``MessageTooLarge``); one that cannot be matched to a request closes the
transport, and the gateway's backoff restarts the server.
"""

import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Protocol, Union

from toolscript.mcp.errors import MessageTooLarge

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # the same default as the config's maxMessageBytes
HEAD_TAIL_BYTES = 1024
DISCARD_CHUNK_BYTES = 64 * 1024

# on_message(message, related): ``related`` is the id of the request whose
# response stream carried the message, when the transport knows it.
OnMessage = Callable[[Any, Optional[Any]], None]
OnClose = Callable[[Optional[Exception]], None]
OnRequestError = Callable[[Any, Exception], None]


class Transport(Protocol):
    """Moves JSON-RPC messages between the session and one server."""

    name: str  # "stdio" | "http" | "sse"
    protocol_version: Optional[str]  # set by the session after the handshake
    # True when on_message is told which request a message belongs to (Streamable
    # HTTP's per-request response streams); False when messages share one stream.
    relates_messages: bool

    def start(self, on_message: OnMessage, on_close: OnClose, on_request_error: OnRequestError) -> None:
        """Spawn the process or open the stream; raises McpError."""

    def send(self, message: Dict[str, Any]) -> None:
        """Send one message; raises McpError."""

    def initialized(self) -> None:
        """The handshake completed."""

    def abandon(self, request_id: Any) -> None:
        """The session stopped waiting for this request's answer."""

    def close(self) -> None:
        """Stop: end the process or the connections.  Safe to call twice, and from another thread."""

    def stderr_tail(self, lines: int = 10) -> str:
        """The last lines the server wrote to stderr ("" when there is no process)."""


def format_bytes(size: int) -> str:
    """``8388608`` -> ``"8 MiB"``, ``65536`` -> ``"64 KiB"``."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MiB"
    return f"{size} bytes"


def describe_request(method: str, params: Any) -> str:
    """``tools/call 'x'`` for a tool call, else the method."""
    if method == "tools/call" and isinstance(params, dict):
        return f"tools/call {params.get('name')!r}"
    return method


def too_large(what: str, limit: int, server_name: str) -> MessageTooLarge:
    """The error for a message over the cap, naming the limit and the config key."""
    where = f" for server {server_name!r}" if server_name else ""
    return MessageTooLarge(
        f"{what} is over the {format_bytes(limit)} limit (maxMessageBytes{where}; raise it in the config if that is expected)",
        limit,
    )


@dataclass
class Oversized:
    """A line longer than the cap: its first and last bytes, and how long it was."""

    head: bytes
    tail: bytes
    size: int
    ended: bool  # False when reading stopped before the end of the line


def read_line(
    readline: Callable[[int], bytes], max_bytes: int, keep_reading: Optional[Callable[[bytes], bool]] = None
) -> Union[bytes, Oversized]:
    """One line (with its newline) of at most ``max_bytes``, or ``Oversized``.

    An oversized line is discarded chunk by chunk; ``keep_reading(head)`` is
    asked before each chunk and can stop the reading early (an endless line
    nobody is waiting for).  ``b""`` means EOF.
    """
    line = readline(max_bytes + 1)
    if len(line) <= max_bytes or line.endswith(b"\n"):
        return line
    head, tail, size = line[:HEAD_TAIL_BYTES], line[-HEAD_TAIL_BYTES:], len(line)
    del line  # do not hold the cap's worth of bytes while discarding the rest
    while True:
        if keep_reading is not None and not keep_reading(head):
            return Oversized(head, tail, size, ended=False)
        chunk = readline(DISCARD_CHUNK_BYTES)
        if not chunk:
            return Oversized(head, tail, size, ended=True)
        size += len(chunk)
        tail = (tail + chunk)[-HEAD_TAIL_BYTES:]
        if chunk.endswith(b"\n"):
            return Oversized(head, tail, size, ended=True)


_HEAD_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+)\s*,')
_TAIL_ID = re.compile(rb'[,{]\s*"id"\s*:\s*(-?\d+)\s*\}\s*$')
# An answer whose id comes last (the TypeScript SDK writes {"result":...,"jsonrpc":"2.0","id":N}).
_RESPONSE_HEAD = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:')


def head_id(head: bytes) -> Optional[int]:
    """The top-level id at the very start of a response (``{"jsonrpc":"2.0","id":N,``)."""
    match = _HEAD_ID.match(head)
    if match is None or b'"method"' in head[match.end():match.end() + 40]:
        return None  # a request from the server, not an answer to ours
    return int(match.group(1))


def tail_id(tail: bytes) -> Optional[int]:
    """The top-level id at the very end of a message (``,"id":N}``)."""
    match = _TAIL_ID.search(tail)
    return int(match.group(1)) if match else None


class PendingRequests:
    """The requests sent and not yet answered, so an oversized or broken answer fails the right one.

    Shared by the transports whose messages all arrive on one stream (stdio,
    legacy SSE): there the only way to tell whom a message answers is its id.
    """

    def __init__(self, max_message_bytes: int, server_name: str, on_request_error: OnRequestError) -> None:
        self.max_message_bytes = max_message_bytes
        self.server_name = server_name
        self.on_request_error = on_request_error
        self._pending: Dict[Any, str] = {}  # request id -> "tools/call 'x'"
        self._lock = threading.Lock()
        # While an oversized message is being discarded: whether it is, and
        # the id its head named (its request, if still pending, already failed).
        self._discarding = False
        self._head_id: Optional[int] = None

    def add(self, message: Dict[str, Any]) -> None:
        """Call before sending: the answer may arrive before send() returns."""
        if "method" in message and message.get("id") is not None:
            with self._lock:
                self._pending[message["id"]] = describe_request(message["method"], message.get("params"))

    def answered(self, message: Any) -> None:
        """Forget the request a delivered response answers."""
        if isinstance(message, dict) and "method" not in message and isinstance(message.get("id"), (int, str)):
            self.pop(message["id"])

    def pop(self, request_id: Any) -> Optional[str]:
        with self._lock:
            return self._pending.pop(request_id, None)

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __contains__(self, request_id: Any) -> bool:
        return request_id in self._pending

    def match(self, head: bytes, tail: bytes) -> Optional[int]:
        """The pending request a message answers, judged by the top-level id at its start or end."""
        for found in (head_id(head), tail_id(tail)):
            if found is not None and found in self._pending:
                return found
        return None

    def fail(self, request_id: Any, error: Optional[Exception] = None) -> None:
        """Fail one request (by default: its answer was over the cap)."""
        what = self.pop(request_id) or "a request"
        if error is None:
            error = too_large(f"the result of {what}", self.max_message_bytes, self.server_name)
        self.on_request_error(request_id, error)

    def keep_reading(self, head: bytes) -> bool:
        """Whether to go on discarding an oversized message (see ``read_line``).

        An answer whose head names its id fails that request at once and is
        discarded to its end.  One that may name its id at the end is read
        on while someone waits for an answer.  Anything else (an endless
        line, a huge notification) answers nobody: stop now.
        """
        if not self._discarding:
            self._discarding = True
            self._head_id = head_id(head)
            if self._head_id is not None:
                if self._head_id in self._pending:
                    self.fail(self._head_id)
            elif not _RESPONSE_HEAD.match(head):
                return False
        return self._head_id is not None or bool(self._pending)

    @property
    def stuck(self) -> bool:
        """Discarding a message that can no longer answer anybody (its readers should stop it)."""
        return self._discarding and self._head_id is None and not self._pending

    def settle(self, message: Oversized) -> None:
        """After an oversized message: fail the request it answers, or raise ``MessageTooLarge``."""
        named, self._head_id, self._discarding = self._head_id, None, False
        if named is not None:
            return  # its request (if still waiting) was failed when the head was read
        if message.ended:
            found = self.match(message.head, message.tail)
            if found is not None:
                self.fail(found)
                return
        raise too_large("a message from the server that matches no pending request", self.max_message_bytes, self.server_name)
