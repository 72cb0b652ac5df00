"""An in-process gateway behind its HTTP server, and raw-socket helpers: for tests that talk HTTP to it.

``served(tmp_path, *servers, **limits)`` yields (gateway, HTTP server, url);
``fixture_server()`` is the stdlib fixture server's config with a call timeout
far beyond any test's wait, so only a cancellation reaches it; ``cancellations``
asks the fixture which calls it saw cancelled.
"""

import contextlib
import socket
import sys
from urllib.parse import urlsplit

from mcp_servers.launch import FIXTURE
from toolscript.config.load import Config, ServerConfig
from toolscript.gateway.http_api import serve
from toolscript.gateway.service import Gateway


# Far beyond how long the cancellation tests wait, so only a cancellation (not a timeout) reaches the fixture.
LONG_CALL_TIMEOUT = 300.0


def fixture_server(name="fixture", *options):
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio", *options], timeout=LONG_CALL_TIMEOUT)


@contextlib.contextmanager
def served(tmp_path, *servers, session=None, **limits):
    """(gateway, http server, url) for an in-process gateway with these HTTP limits."""
    config = Config(servers={s.name: s for s in servers}, files=[], warnings=[])
    gw = Gateway(config, workspace=str(tmp_path), session=session)
    server, _ = serve(gw, **limits)
    gw.start()
    try:
        yield gw, server, server.url
    finally:
        server.shutdown_all()
        gw.stop()


def connect(url, timeout=10.0):
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
    return sock


def read_until_closed(sock, limit=1 << 20):
    """Everything the server sends until it closes (a reset after its answer counts as closed)."""
    data = b""
    while len(data) < limit:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def status_of(data):
    return int(data.split(b" ", 2)[1])


def nested(depth):
    return "[" * depth + "]" * depth


def cancellations(client):
    result = client.post("/call", {"tool": "fixture__get_cancellations", "arguments": {}})
    return result["data"]["structuredContent"]["cancelled"]
