"""HTTP/1.1 for the whole package: what the gateway's two servers share, and the one client.

Server side (the JSON API and the MCP endpoint):

- ``response_head``: the status line and headers of every answer.  One function
  frames them, so both servers answer alike and the sandbox runtime's small
  parser (``codemode/runtime.py``) has one format to understand.  Callers
  append the body and send head and body in one write: two small writes stall
  ~40 ms on Nagle + delayed ACK.
- ``decode_json`` / ``encode_json``: request bodies with a nesting bound, and
  answers that any string can go into.
- ``DisconnectWatcher``: notices a client that hangs up while its request runs,
  so the work it asked for can be cancelled.

Client side: ``request`` (or ``connect`` + ``exchange``), one request over a raw socket
and one bounded answer, then the connection closes.  The package's one HTTP client (the
sandbox runtime keeps a copy of its own: it runs isolated from the package); its users
are the CLI's calls to the gateway's JSON API (``toolscript.gateway.client``), the ask
loop's cancellable tool calls through the gateway (``toolscript.models.ask``) and the
Messages API (``toolscript.models.messages``).  Not ``http.client``: importing it pulls
in the ``email`` parser (~17-20 ms), a cost every command talking to the gateway and
every hook calling a model would pay; ``ssl`` is imported only for an https connection.

What the client does: the request line and headers (with ``Connection: close``: no
keep-alive, no caller needs it); a body framed by ``Content-Length``, by chunks, or by
the end of the stream; interim 1xx answers skipped; a CONNECT tunnel through a proxy.
Every wait on the socket gets ``timeout`` seconds, and never more than what is left
before ``deadline`` (so a server trickling a byte at a time cannot stretch an overall
budget).  The head and the body each have a cap; past it the read stops with
``TooLarge``/``Malformed`` naming the limit, so a server that never stops talking costs
at most the cap in memory.  Its errors: ``OSError`` for the connection (``socket.timeout``
when a wait ran out), ``Dropped`` (an OSError) when it closed before any answer came, so
the request may never have been seen; ``Malformed`` (a ValueError) when the answer is not
HTTP we can read; ``TooLarge`` (a Malformed) when its body passes the cap.

Standard library only, nothing of ours but the log.
"""

import json
import selectors
import socket
import threading
import time
from http import HTTPStatus
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from toolscript import log

logger = log.get("http")

# Request bodies nesting deeper than this are refused: Python's JSON parser,
# encoder and our schema checks all recurse, and a few thousand levels crash them.
MAX_JSON_DEPTH = 100


def response_head(
    status: int,
    *,
    content_type: Optional[str] = None,
    content_length: Optional[int] = None,
    cache_control: Optional[str] = "no-store",
    close: bool = False,
    extra: Sequence[Tuple[str, str]] = (),
) -> bytes:
    """``HTTP/1.1 <status> <reason>`` and the headers, ending with the blank line.

    ``content_length`` None means no Content-Length (a stream that ends when the
    connection closes, so ``close`` should be true).  ``extra`` headers follow
    the standard ones in order.  Header values must not contain CR or LF.
    """
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    if content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    if cache_control is not None:
        lines.append(f"Cache-Control: {cache_control}")
    for name, value in extra:
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} has a line break")
        lines.append(f"{name}: {value}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# -- JSON in and out -----------------------------------------------------------------


class JsonTooDeep(ValueError):
    """A request body nests arrays/objects deeper than we accept."""


def decode_json(data: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A request body as JSON; ValueError with a one-line reason if it is not UTF-8 JSON, JsonTooDeep if it nests too deep."""
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels") from None
    if _nests_deeper(value, max_depth):
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels")
    return value


def _nests_deeper(value: Any, limit: int) -> bool:
    """Does ``value`` have more than ``limit`` levels of arrays/objects?  Iterative, so any depth is safe."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON; strings that cannot be UTF-8 (lone surrogates from argv or file names) are escaped."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


# -- noticing clients that hang up ---------------------------------------------------


class DisconnectWatcher:
    """One thread that sets a request's cancel event when its client closes the connection.

    While a call runs nothing reads its socket, so a client that gives up is
    only noticed by watching: readable with no data (EOF, or a reset) means it
    is gone and its upstream call should be cancelled.  Readable *with* data is
    a pipelined next request, so that socket is simply no longer watched.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._selector: Optional[selectors.BaseSelector] = None
        self._wake: Optional[Tuple[socket.socket, socket.socket]] = None
        self._watched: Dict[socket.socket, threading.Event] = {}
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    def watch(self, sock: Any, cancel: threading.Event) -> Callable[[], None]:
        """Watch ``sock`` until the returned function is called (call it before closing the socket)."""
        if not isinstance(sock, socket.socket):
            return lambda: None
        with self._lock:
            if self._closed:
                return lambda: None
            if self._selector is None:
                self._start()
            assert self._selector is not None
            try:
                self._selector.register(sock, selectors.EVENT_READ, cancel)
            except (OSError, ValueError, KeyError):  # already closed, or watched twice
                return lambda: None
            self._watched[sock] = cancel

        def unwatch() -> None:
            with self._lock:
                if self._watched.get(sock) is cancel:
                    self._forget(sock)

        return unwatch

    def close(self) -> None:
        with self._lock:
            self._closed = True
            wake = self._wake
        if wake is not None:
            try:
                wake[1].send(b"x")
            except OSError:
                pass
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2.0)

    def _start(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake = socket.socketpair()
        self._selector.register(self._wake[0], selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="http-disconnect-watcher", daemon=True)
        self._thread.start()

    def _forget(self, sock: socket.socket) -> None:
        """Stop watching (the lock is held)."""
        self._watched.pop(sock, None)
        assert self._selector is not None
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass

    def _run(self) -> None:
        selector, wake = self._selector, self._wake
        assert selector is not None and wake is not None
        try:
            while True:
                events = selector.select()
                with self._lock:
                    if self._closed:
                        return
                    for key, _ in events:
                        sock = key.fileobj
                        if key.data is None or not isinstance(sock, socket.socket) or self._watched.get(sock) is not key.data:
                            continue  # the wake-up socket, or unwatched meanwhile
                        try:
                            gone = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:  # reset by the peer
                            gone = True
                        self._forget(sock)
                        if gone:
                            key.data.set()
        except Exception:  # the watcher must never take the server down
            logger.debug("the disconnect watcher stopped", exc_info=True)
        finally:
            with self._lock:
                for sock in list(self._watched):
                    self._forget(sock)
                selector.close()
                for end in wake:
                    end.close()

# -- the client ----------------------------------------------------------------------


MAX_HEAD_BYTES = 64 * 1024  # status line and headers of one answer
MAX_CHUNK_LINE = 4096  # one chunk-size line of a chunked body, extensions included
RECV_BYTES = 65536
# Header fields this module writes itself: a caller's value for them is dropped, never sent twice.
FRAMING_FIELDS = ("content-length", "transfer-encoding", "connection")


class Response(NamedTuple):
    status: int
    headers: Dict[str, str]  # lower-cased names; the last of a repeated name wins
    body: bytes


class Malformed(ValueError):
    """The answer is not HTTP we can read: a bad status line or framing, cut short, a head over its cap."""


class TooLarge(Malformed):
    """The answer's body is larger than the cap the caller set (``limit`` bytes)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than the {size_text(limit)} limit")
        self.limit = limit


class Dropped(ConnectionError):
    """The connection closed or was reset before the answer's status line: the request may not have been seen."""


def size_text(n: int) -> str:
    """``n`` bytes in words: "4 MiB", "64 KiB", "100 bytes"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def authority(host: str, port: int, tls: bool = False) -> str:
    """The ``Host`` value for ``host:port``: IPv6 in brackets, the scheme's default port left out."""
    name = f"[{host}]" if ":" in host else host
    return name if port == (443 if tls else 80) else f"{name}:{port}"


def request_head(method: str, target: str, host: str, headers: Optional[Mapping[str, str]] = None, length: Optional[int] = None) -> bytes:
    """The request line and headers, ending with the blank line.

    ``host`` is the ``Host`` value unless ``headers`` names one.  ``length`` is the body's
    size (None: no body).  Raises ValueError for a line break or NUL in a header (it would
    split the request) or a value that is not Latin-1; the message never repeats the value.
    """
    headers = headers or {}
    if any(c in method + target for c in "\r\n\0"):
        raise ValueError("the request target has a line break or NUL in it")
    lines = [f"{method} {target} HTTP/1.1"]
    if not any(name.lower() == "host" for name in headers):
        lines.append(f"Host: {host}")
    for name, value in headers.items():
        if any(c in name + value for c in "\r\n\0") or ":" in name:
            raise ValueError(f"the header {name.splitlines()[0][:40]!r} has a line break, NUL or colon in it")
        if name.lower() not in FRAMING_FIELDS:
            lines.append(f"{name}: {value}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: close")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("a header value is not Latin-1 text") from None


class _Waits:
    """Each socket wait: ``timeout`` seconds, never past ``deadline`` (a time.monotonic() value)."""

    def __init__(self, timeout: Optional[float], deadline: Optional[float]) -> None:
        self.timeout = timeout
        self.deadline = deadline

    def arm(self, sock: socket.socket) -> None:
        wait = self.timeout
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("the overall time budget is spent")
            wait = remaining if wait is None else min(wait, remaining)
        sock.settimeout(wait)


def connect(
    host: str,
    port: int,
    *,
    timeout: Optional[float] = None,
    deadline: Optional[float] = None,
    tls: bool = False,
    tunnel: Optional[Tuple[str, int]] = None,
) -> socket.socket:
    """A connected socket to ``host:port``; TLS (the system's trust, the host's name checked) when ``tls``.

    ``tunnel``: reach ``host:port`` through the proxy at this (host, port) with CONNECT.
    Raises OSError (``ssl.SSLError`` is one) when it cannot.
    """
    waits = _Waits(timeout, deadline)
    first = tunnel or (host, port)
    connect_wait = timeout
    if deadline is not None:
        connect_wait = max(0.01, min(timeout or float("inf"), deadline - time.monotonic()))
    sock = socket.create_connection(first, timeout=connect_wait)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tunnel:
            _open_tunnel(sock, host, port, waits)
        if tls:
            import ssl  # only here: plain-HTTP callers (the gateway, a local base URL) never pay for it

            waits.arm(sock)  # the handshake waits too
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        return sock
    except BaseException:
        sock.close()
        raise


def _open_tunnel(sock: socket.socket, host: str, port: int, waits: _Waits) -> None:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # CONNECT always names the port
    waits.arm(sock)
    sock.sendall(f"CONNECT {where} HTTP/1.1\r\nHost: {where}\r\n\r\n".encode("latin-1"))
    reader = _Reader(sock, waits)
    status, _ = _read_head(reader, MAX_HEAD_BYTES)
    if not 200 <= status < 300:
        raise OSError(f"the proxy refused the tunnel to {where} (status {status})")
    if reader.buffer:
        raise Malformed("the proxy sent data before the tunnel was open")


def exchange(
    sock: socket.socket,
    request: bytes,
    *,
    max_body: int,
    timeout: Optional[float] = None,
    deadline: Optional[float] = None,
    max_head: int = MAX_HEAD_BYTES,
    method: str = "",
) -> Response:
    """Send ``request`` (head and body) on ``sock`` and read the one answer, its body at most ``max_body`` bytes.

    ``method`` "HEAD": the answer has no body whatever its headers say.
    """
    waits = _Waits(timeout, deadline)
    reader = _Reader(sock, waits)
    try:
        waits.arm(sock)
        sock.sendall(request)
        status, headers = _read_head(reader, max_head)
    except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
        raise Dropped(f"the connection was dropped ({type(exc).__name__})") from None
    if method == "HEAD" or status in (204, 304):
        return Response(status, headers, b"")
    return Response(status, headers, _read_body(reader, headers, max_body))


def request(
    host: str,
    port: int,
    method: str,
    target: str,
    *,
    max_body: int,
    headers: Optional[Mapping[str, str]] = None,
    body: Optional[bytes] = None,
    timeout: Optional[float] = None,
    deadline: Optional[float] = None,
    tls: bool = False,
) -> Response:
    """One request on a fresh connection (see ``exchange``); the connection is closed after."""
    head = request_head(method, target, authority(host, port, tls), headers, None if body is None else len(body))
    sock = connect(host, port, timeout=timeout, deadline=deadline, tls=tls)
    try:
        return exchange(sock, head + (body or b""), max_body=max_body, timeout=timeout, deadline=deadline, method=method)
    finally:
        sock.close()


class _Reader:
    """Buffered reads from the socket, one ``recv`` per wait (a read of n bytes would wait for all n)."""

    def __init__(self, sock: socket.socket, waits: _Waits) -> None:
        self.sock = sock
        self.waits = waits
        self.buffer = bytearray()
        self.eof = False

    def fill(self) -> bool:
        """One more piece into the buffer; False once the server has closed its side."""
        if self.eof:
            return False
        self.waits.arm(self.sock)
        piece = self.sock.recv(RECV_BYTES)
        if not piece:
            self.eof = True
            return False
        self.buffer += piece
        return True

    def take(self, n: int) -> bytes:
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def line(self, limit: int, what: str) -> bytes:
        """One CRLF- (or LF-) terminated line without its ending, at most ``limit`` bytes."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                return self.take(end + 1).rstrip(b"\r\n")
            if len(self.buffer) > limit:
                raise Malformed(f"the answer's {what} is longer than {size_text(limit)}")
            if not self.fill():
                raise Malformed(f"the connection closed inside the answer's {what}")

    def exactly(self, n: int, what: str) -> bytes:
        while len(self.buffer) < n:
            if not self.fill():
                raise Malformed(f"the answer ended early: the connection closed before the end of its {what}")
        return self.take(n)


def _read_head(reader: _Reader, limit: int) -> Tuple[int, Dict[str, str]]:
    """The status and lower-cased headers (the last of a repeated name wins), skipping 1xx answers."""
    while True:
        while True:
            if not b"HTTP/".startswith(bytes(reader.buffer[:5])):
                # Not HTTP (an SSH banner, say): no need to wait for a blank line that may never come.
                raise Malformed(f"the answer is not HTTP (it starts {_clip(bytes(reader.buffer[:20]).decode('latin-1'), 20)!r})")
            ends = [i for i in (reader.buffer.find(b"\r\n\r\n"), reader.buffer.find(b"\n\n")) if i >= 0]
            if ends:
                break
            if len(reader.buffer) > limit:
                raise Malformed(f"the answer's headers are larger than {size_text(limit)}")
            if not reader.fill():
                if not reader.buffer:  # closed without a word: the request may never have been seen
                    raise Dropped("the connection was dropped before an answer")
                raise Malformed("the connection closed inside the answer's headers")
        end = min(ends)
        if end > limit:
            raise Malformed(f"the answer's headers are larger than {size_text(limit)}")
        head = reader.take(end).decode("latin-1")
        reader.take(4 if reader.buffer.startswith(b"\r\n\r\n") else 2)
        lines = head.replace("\r\n", "\n").split("\n")
        fields = lines[0].split(None, 2)
        if len(fields) < 2 or not fields[0].startswith("HTTP/1.") or len(fields[1]) != 3 or not fields[1].isdigit():
            raise Malformed(f"the answer is not HTTP (status line {_clip(lines[0], 40)!r})")
        status = int(fields[1])
        headers: Dict[str, str] = {}
        name = ""
        for line in lines[1:]:
            if line[:1] in (" ", "\t") and name:  # an obsolete folded continuation line
                headers[name] += " " + line.strip()
                continue
            raw_name, sep, value = line.partition(":")
            if sep and raw_name.strip():
                name = raw_name.strip().lower()
                headers[name] = value.strip()
        if status >= 200:
            return status, headers
        # 100 Continue / 103 Early Hints: an interim answer; the real one follows.


def _read_body(reader: _Reader, headers: Mapping[str, str], limit: int) -> bytes:
    """By chunked transfer coding, Content-Length, or to the end of the stream; never over ``limit``."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: List[bytes] = []
        size = 0
        while True:
            size_line = reader.line(MAX_CHUNK_LINE, "chunk size")
            digits = size_line.split(b";", 1)[0].strip()
            try:
                length = int(digits, 16)
            except ValueError:
                raise Malformed(f"the answer has a bad chunk size {_clip(digits[:20].decode('latin-1'), 20)!r}") from None
            if length < 0:
                raise Malformed("the answer has a negative chunk size")
            if length == 0:
                break
            size += length
            if size > limit:
                raise TooLarge(limit)  # the sizes alone say so: refused before the data comes
            chunks.append(reader.exactly(length, "chunk"))
            if reader.line(MAX_CHUNK_LINE, "chunk end"):  # the data ends with a bare CRLF
                raise Malformed("the answer's chunk is longer than its size says")
        # Trailers (rare) are not read: the connection closes after this one answer, and
        # waiting for them would only let a server that never sends the last CRLF stall us.
        return b"".join(chunks)
    raw_length = headers.get("content-length")
    if raw_length is not None:
        if not raw_length.strip().isdigit():
            raise Malformed(f"the answer has a bad Content-Length {_clip(raw_length, 20)!r}")
        length = int(raw_length.strip())
        if length > limit:
            raise TooLarge(limit)
        return reader.exactly(length, "body")
    # Neither: the body runs to the end of the stream (we asked for Connection: close).
    # (Part of it may have come with the head: the buffer is checked before any read.)
    while len(reader.buffer) <= limit and reader.fill():
        pass
    if len(reader.buffer) > limit:
        raise TooLarge(limit)
    return reader.take(len(reader.buffer))


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
