"""HTTP/1.1 pieces both of the gateway's servers share: the JSON API and the MCP endpoint.

- ``response_head``: the status line and headers of every answer.  One function
  frames them, so both servers answer alike and the sandbox runtime's small
  parser (``codemode/runtime.py``) has one format to understand.  Callers
  append the body and send head and body in one write: two small writes stall
  ~40 ms on Nagle + delayed ACK.
- ``decode_json`` / ``encode_json``: request bodies with a nesting bound, and
  answers that any string can go into.
- ``DisconnectWatcher``: notices a client that hangs up while its request runs,
  so the work it asked for can be cancelled.

Standard library only, nothing of ours but the log.
"""

import json
import selectors
import socket
import threading
from http import HTTPStatus
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

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
