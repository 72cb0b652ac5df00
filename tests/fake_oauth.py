"""Stand-ins for the parties of an OAuth sign-in, shared by the OAuth test files.

* ``follow``: the test browser; it GETs an authorization URL and returns the
  redirect's Location (``OAuthFixture`` approves at once), never following it.
* ``server`` (fixture): ``tests/mcp_servers/oauth_fixture.py`` run in process
  (an MCP endpoint that demands a bearer token, its protected resource
  metadata, and the authorization server it trusts); ``authorized(server)``
  signs in to it; ``MemoryStore`` keeps a grant the way the file store would.
* ``token_endpoint`` (fixture, ``TokenEndpoint``): answers whatever the test
  sets; ``hostile`` (fixture, ``Hostile``): a server whose every answer the
  test scripts; ``make_grant`` builds a grant that points at such a server.
* ``post_initialize(url, token)``: an MCP initialize with a bearer token, to
  see whether a server still takes the token.

Import fixtures by name (``from fake_oauth import server  # noqa: F401``).
"""

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from mcp_servers.oauth_fixture import OAuthFixture
from toolscript.config.load import ServerConfig
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.auth.flow import Grant


REDIRECT = "http://127.0.0.1:9/callback"  # read from the Location header, never connected to


def follow(url: str) -> str:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.request("GET", parts.path + "?" + parts.query)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 302, resp.status
        return urljoin(url, resp.getheader("Location") or "")
    finally:
        conn.close()


@pytest.fixture
def server():
    with OAuthFixture() as fixture:
        yield fixture


def server_config(url: str, type_: str = "http") -> ServerConfig:
    return ServerConfig(name="remote", type=type_, source="<test>", url=url, timeout=10.0)


class MemoryStore:
    """An in-memory token store, used the way the file store (auth/store.py) is."""

    def __init__(self, grant: Optional[Grant] = None) -> None:
        self.grant = grant
        self.saves: List[Grant] = []

    def load(self) -> Optional[Grant]:
        return self.grant

    def save(self, grant: Grant) -> None:
        self.grant = grant
        self.saves.append(grant)


def authorized(server: OAuthFixture, **kwargs: Any) -> Grant:
    return oauth.authorize(server.mcp_url, follow, REDIRECT, timeout=10, **kwargs)


class QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client under test hangs up on oversized answers: that is the point


def serve_http(handler: Any, tls: Any = None) -> QuietHTTPServer:
    """A loopback server on a free port answering with ``handler`` (over ``tls``, an SSLContext, when given),
    served from a daemon thread; the caller shuts it down."""
    httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def send_json(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


# -- a token endpoint that answers what the test sets ----------------------------------------------


class TokenEndpoint:
    """A token endpoint that answers whatever the test sets (status, raw body)."""

    def __init__(self) -> None:
        self.status, self.body, self.forms = 200, b"{}", []  # type: Tuple[int, bytes, List[Dict[str, str]]]
        self.delay = 0.0
        self.then: List[Tuple[int, bytes]] = []  # answers for the requests after the next one, in order
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                endpoint.forms.append(form)
                time.sleep(endpoint.delay)
                status, body = endpoint.status, endpoint.body
                if endpoint.then:
                    endpoint.status, endpoint.body = endpoint.then.pop(0)
                send_json(self, status, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = serve_http(Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/token"

    def answer(self, doc: Any, status: int = 200) -> None:
        self.status, self.body = status, doc if isinstance(doc, bytes) else json.dumps(doc).encode()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def token_endpoint():
    endpoint = TokenEndpoint()
    yield endpoint
    endpoint.close()


def make_grant(token_endpoint: str, **changes: Any) -> Grant:
    values = dict(resource="http://127.0.0.1:9/mcp", issuer="http://127.0.0.1:9", authorization_endpoint="http://127.0.0.1:9/authorize",
                  token_endpoint=token_endpoint, client_id="c", client_secret=None, token_endpoint_auth_method="none",
                  access_token="at-old", refresh_token="rt-old", expires_at=time.time() - 1, scope="s", redirect_uri=REDIRECT)
    values.update(changes)
    return Grant(**values)


# -- a server whose answers the test scripts -------------------------------------------------------


class Hostile:
    """A stdlib HTTP server whose answers the test scripts: ``routes[(method, path)] = (status, headers, body)``.

    A GET answered with ``text/event-stream`` keeps the stream open after its body.  Every request is
    recorded as (method, path, Authorization).
    """

    def __init__(self) -> None:
        self.routes: Dict[Tuple[str, str], Tuple[int, Dict[str, str], bytes]] = {}
        self.seen: List[Tuple[str, str, Optional[str]]] = []
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                path = urlsplit(self.path).path
                hostile.seen.append((self.command, path, self.headers.get("Authorization")))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, headers, body = hostile.routes.get((self.command, path), (404, {}, b"{}"))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                streaming = headers.get("Content-Type") == "text/event-stream"
                if not streaming:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                if streaming:
                    time.sleep(3)
                    self.close_connection = True

            do_GET = do_POST = do_DELETE = _answer  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = serve_http(Handler)
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hostile():
    servers: List[Hostile] = []

    def make() -> Hostile:
        servers.append(Hostile())
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def post_initialize(url: str, token: str) -> Tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    try:
        conn.request("POST", parts.path, body=body, headers={"Authorization": "Bearer " + token, "Content-Type": "application/json",
                                                             "Accept": "application/json, text/event-stream"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()
