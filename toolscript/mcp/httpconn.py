"""HTTP client connections, shared by the HTTP transports and the OAuth flow.

A small keep-alive pool over ``http.client`` (TCP_NODELAY on every socket:
without it, small requests stall ~40 ms on Nagle + delayed ACK), bounded
reading of a response body, and the wording of socket failures, so every
error names the URL (without its secrets) and the likely fix.
"""

import http.client
import socket
import ssl
import threading
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import urlsplit, urlunsplit

from toolscript import __version__
from toolscript.mcp.errors import TransportError

USER_AGENT = f"toolscript/{__version__}"
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
# What reading a response body can raise when the peer vanishes or another
# thread closes the connection under the reader (http.client then fails with
# ValueError or AttributeError on its half-closed file object).
READ_ERRORS = (OSError, http.client.HTTPException, ValueError, AttributeError)


class Connection(http.client.HTTPConnection):
    """An HTTP connection that keeps hold of its socket.

    http.client drops ``conn.sock`` when a response says "Connection: close"
    (the response then owns the socket), yet we still need the socket to set
    read timeouts on a stream and to shut it down from another thread.
    """

    raw_sock: socket.socket


class TlsConnection(http.client.HTTPSConnection, Connection):
    """The same over TLS."""


class Endpoint:
    """A parsed http(s) URL: where to connect and what path to request."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TransportError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        path = parts.path or "/"
        self.target = path + (f"?{parts.query}" if parts.query else "")
        self.origin = (self.scheme, self.host, self.port)

    def same_origin(self, other: "Endpoint") -> bool:
        return self.origin == other.origin

    def __str__(self) -> str:
        return self.url


def redact_url(url: str) -> str:
    """The URL without userinfo or query string, safe to print in errors."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def open_connection(endpoint: Endpoint, timeout: Optional[float]) -> Connection:
    """A connected HTTP(S) connection with TCP_NODELAY set."""
    if endpoint.scheme == "https":
        conn: Connection = TlsConnection(endpoint.host, endpoint.port, timeout=timeout, context=ssl.create_default_context())
    else:
        conn = Connection(endpoint.host, endpoint.port, timeout=timeout)
    try:
        conn.connect()
    except OSError as exc:
        conn.close()
        raise TransportError(describe_oserror(exc, endpoint.url)) from exc
    try:
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    conn.raw_sock = conn.sock
    return conn


def describe_oserror(exc: BaseException, url: str) -> str:
    """One line for a socket-level failure, with the likely fix."""
    where = redact_url(url)
    if isinstance(exc, ConnectionRefusedError):
        return f"cannot connect to {where}: connection refused (is the server running on that port?)"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host of {where} (check the URL's host name)"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"timed out talking to {where} (is the server up? raise \"timeout\" in the config if it is slow)"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error talking to {where}: {exc.reason or exc}"
    if isinstance(exc, _STALE):
        return f"{where} closed the connection unexpectedly"
    return f"cannot talk to {where}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"


def read_bounded(resp: http.client.HTTPResponse, max_bytes: int) -> Optional[bytes]:
    """The whole body, or None when it is over ``max_bytes`` (then the rest is left unread)."""
    declared = resp.getheader("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > max_bytes:
        return None
    body = resp.read(max_bytes + 1)
    return None if len(body) > max_bytes else body


class Pool:
    """Idle keep-alive connections to one endpoint, reused across requests."""

    def __init__(self, endpoint: Endpoint, connect_timeout: float, max_idle: int = 8) -> None:
        self.endpoint = endpoint
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._idle: List[Connection] = []
        self._lock = threading.Lock()

    def exchange(
        self,
        method: str,
        target: str,
        body: Optional[bytes],
        headers: Dict[str, str],
        read_timeout: Optional[float],
        track: Optional[Callable[[Connection], None]] = None,
    ) -> Tuple[http.client.HTTPResponse, Connection]:
        """Send one request and return its response (headers read, body not yet).

        ``track(conn)`` is told the connection before anything is sent, so
        another thread can shut it down while we wait for a silent server.
        """
        for attempt in range(2):
            with self._lock:
                conn = self._idle.pop() if self._idle and attempt == 0 else None
            if conn is not None and conn.sock is None:
                conn = None  # closed while idle (e.g. by a concurrent close)
            reused = conn is not None
            if conn is None:
                conn = open_connection(self.endpoint, self.connect_timeout)
            if track is not None:
                track(conn)
            try:
                conn.raw_sock.settimeout(read_timeout)
                conn.request(method, target, body=body, headers=headers)
                return conn.getresponse(), conn
            except _STALE as exc:
                conn.close()
                if reused:
                    continue  # the server closed an idle connection; try a fresh one
                raise TransportError(describe_oserror(exc, self.endpoint.url)) from exc
            except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: a header http.client refuses
                conn.close()
                raise TransportError(describe_oserror(exc, self.endpoint.url)) from exc
        raise TransportError(f"{redact_url(self.endpoint.url)} keeps closing connections")  # pragma: no cover

    def release(self, conn: Connection, resp: http.client.HTTPResponse) -> None:
        """Return the connection for reuse if its response was read to the end."""
        if resp.isclosed() and not resp.will_close and conn.sock is not None:
            with self._lock:
                if len(self._idle) < self.max_idle:
                    self._idle.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def shutdown(conn: Optional[Connection]) -> None:
    """Close a connection another thread may be blocked reading from."""
    if conn is None:
        return
    sock = conn.raw_sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    conn.close()
