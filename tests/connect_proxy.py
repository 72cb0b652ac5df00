"""A forward proxy for tests that speaks only CONNECT: it opens a tunnel and relays bytes both ways.

``ConnectProxy(refuse=None)`` listens on 127.0.0.1; ``url`` is its address for
HTTPS_PROXY, ``requests`` the request lines it got.  ``refuse=407`` answers every
CONNECT with that status instead of opening the tunnel.
"""

import socket
import threading
from typing import Any, List, Optional

from loopback import Loopback, read_head


class ConnectProxy:
    def __init__(self, refuse: Optional[int] = None) -> None:
        self.refuse = refuse
        self.requests: List[str] = []
        self.loopback: Optional[Loopback] = None
        self.url = ""

    def __enter__(self) -> "ConnectProxy":
        self.loopback = Loopback(lambda conn: threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start())
        self.port = self.loopback.port
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.loopback is not None:
            self.loopback.close()

    def _tunnel(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        with conn:
            head = read_head(conn)
            if b"\r\n\r\n" not in head:
                return
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            self.requests.append(line)
            method, where, _ = line.split(" ", 2)
            if method != "CONNECT" or self.refuse:
                conn.sendall(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\n\r\n" % (self.refuse or 405))
                return
            host, _, port = where.rpartition(":")
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            with upstream:
                back = threading.Thread(target=_relay, args=(upstream, conn), daemon=True)
                back.start()
                _relay(conn, upstream)
                back.join(10)


def _relay(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
