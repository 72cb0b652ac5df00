"""A TCP listener on 127.0.0.1 for test servers: a thread accepts connections and hands each one on.

``Loopback(handle)`` listens on a free port (``port``) and calls ``handle(conn)``
for each connection from its own thread, until ``close()``.  The accept wakes
every 50 ms to see whether the test is over, so ``close()`` returns at once.
``read_head(conn)`` reads an HTTP request up to its blank line.
"""

import socket
import threading
from typing import Callable


class Loopback:
    def __init__(self, handle: Callable[[socket.socket], None]) -> None:
        self.handle = handle
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.handle(conn)

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(10)
        self.listener.close()


def read_head(conn: socket.socket) -> bytes:
    """What arrived up to and including the end of an HTTP head (maybe body bytes after it), or all of it at a hang-up."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            break
        data += piece
    return data
