"""A small OAuth-protected MCP server with its own authorization server, for the OAuth tests (tests/mcp/auth/).

One stdlib ``ThreadingHTTPServer`` in a background thread plays every part
(run in-process so a test can look at what it saw and revoke tokens):

- the protected resource: ``/mcp`` (Streamable HTTP: initialize, tools/list,
  tools/call answering JSON, a GET stream that is refused with 405 once
  authorized, DELETE) and ``/sse`` + ``/messages`` (legacy HTTP+SSE), each
  demanding ``Authorization: Bearer`` and answering 401 with a
  ``WWW-Authenticate`` that points at the protected resource metadata, or 403
  ``insufficient_scope`` when ``call_scope`` is not granted for tools/call;
- its protected resource metadata (RFC 9728) at ``prm_path``;
- the authorization server under ``as_prefix``: RFC 8414 metadata,
  ``/authorize`` (approves at once: redirects with a code), ``/token``
  (authorization_code with PKCE S256 checked, refresh_token, client
  authentication checked) and ``/register`` (RFC 7591).

Every request is logged in ``requests`` as (method, path, Authorization
header or None).  Not toolscript code: it shares nothing with the client.
"""

import base64
import hashlib
import json
import queue
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, unquote, urlencode, urlsplit


class OAuthFixture:
    def __init__(
        self,
        *,
        prm_path: Optional[str] = "/.well-known/oauth-protected-resource/mcp",
        prm_resource: Optional[str] = None,
        prm_authorization_server: Optional[str] = None,
        open_access: bool = False,
        scopes_supported: Optional[List[str]] = None,
        www_scope: Optional[str] = None,
        call_scope: Optional[str] = None,
        as_prefix: str = "",
        issuer_override: Optional[str] = None,
        auth_methods: Tuple[str, ...] = ("none",),
        registered_method: Optional[str] = None,
        token_lifetime: Optional[int] = 3600,
        issue_refresh: bool = True,
        metadata_extra: Optional[Dict[str, Any]] = None,
        callback_iss: Optional[str] = None,
    ) -> None:
        self.prm_path = prm_path
        self.prm_resource = prm_resource
        self.prm_authorization_server = prm_authorization_server  # what the metadata names instead of this server
        self.open_access = open_access  # /mcp needs no token
        self.scopes_supported = scopes_supported
        self.www_scope = www_scope
        self.call_scope = call_scope
        self.as_prefix = as_prefix
        self.issuer_override = issuer_override
        self.auth_methods = list(auth_methods)
        self.registered_method = registered_method
        self.token_lifetime = token_lifetime
        self.issue_refresh = issue_refresh
        self.metadata_extra = dict(metadata_extra or {})  # merged into the authorization server metadata
        self.callback_iss = callback_iss  # an "iss" for the authorization response (RFC 9207); "" = the issuer
        self.requests: List[Tuple[str, str, Optional[str]]] = []
        self.tokens: Dict[str, List[str]] = {}  # access token -> scopes
        self.refresh_tokens: Dict[str, List[str]] = {}
        self.codes: Dict[str, Dict[str, Any]] = {}
        self.clients: Dict[str, Dict[str, Any]] = {}
        self.authorize_queries: List[Dict[str, str]] = []
        self.token_forms: List[Dict[str, str]] = []
        self.lock = threading.Lock()
        self.httpd: Optional[ThreadingHTTPServer] = None
        self.base = ""

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> "OAuthFixture":
        fixture = self

        class Handler(_Handler):
            pass

        Handler.fixture = fixture
        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, name="oauth-fixture", daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    def __enter__(self) -> "OAuthFixture":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def mcp_url(self) -> str:
        return self.base + "/mcp"

    @property
    def sse_url(self) -> str:
        return self.base + "/sse"

    @property
    def issuer(self) -> str:
        return self.base + self.as_prefix

    # -- what tests do ---------------------------------------------------------

    def revoke(self, refresh: bool = False) -> None:
        """Forget every access token (and the refresh tokens too when asked)."""
        with self.lock:
            self.tokens.clear()
            if refresh:
                self.refresh_tokens.clear()

    def issue(self, scopes: List[str], lifetime: Optional[int] = None) -> Tuple[str, str]:
        """A valid (access, refresh) token pair, as if authorized before."""
        with self.lock:
            access, refresh = "at-" + secrets.token_hex(8), "rt-" + secrets.token_hex(8)
            self.tokens[access] = list(scopes)
            self.refresh_tokens[refresh] = list(scopes)
            return access, refresh

    def seen(self, method: str, path: str) -> List[Optional[str]]:
        """The Authorization headers of the requests seen for ``method path``."""
        with self.lock:
            return [auth for m, p, auth in self.requests if m == method and p == path]

    def paths(self) -> List[str]:
        with self.lock:
            return [p for _, p, _ in self.requests]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up (a closed GET stream) is normal here


class _Handler(BaseHTTPRequestHandler):
    fixture: OAuthFixture
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing --------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any = b"", headers: Optional[Dict[str, str]] = None, ctype: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> str:
        path = urlsplit(self.path).path
        with self.fixture.lock:
            self.fixture.requests.append((self.command, path, self.headers.get("Authorization")))
        return path

    def _challenge(self, extra: str = "") -> str:
        f = self.fixture
        parts = []
        if f.prm_path is not None:
            parts.append(f'resource_metadata="{f.base}{f.prm_path}"')
        if f.www_scope:
            parts.append(f'scope="{f.www_scope}"')
        if extra:
            parts.append(extra)
        return "Bearer " + ", ".join(parts) if parts else "Bearer"

    def _scopes(self) -> Optional[List[str]]:
        """The scopes of a valid bearer token, or None (then a 401 was sent)."""
        if self.fixture.open_access:
            return []
        header = self.headers.get("Authorization") or ""
        token = header[7:] if header.startswith("Bearer ") else ""
        with self.fixture.lock:
            scopes = self.fixture.tokens.get(token)
        if scopes is None:
            self._send(401, {"error": "invalid_token"}, {"WWW-Authenticate": self._challenge('error="invalid_token"')})
        return scopes

    # -- routes ----------------------------------------------------------------

    def do_GET(self) -> None:
        f = self.fixture
        path = self._record()
        if f.prm_path is not None and path == f.prm_path:
            doc: Dict[str, Any] = {"resource": f.prm_resource or f.mcp_url, "authorization_servers": [f.prm_authorization_server or f.issuer]}
            if f.scopes_supported is not None:
                doc["scopes_supported"] = f.scopes_supported
            return self._send(200, doc)
        if path == f"/.well-known/oauth-authorization-server{f.as_prefix}":
            return self._send(200, self._as_metadata())
        if path == f.as_prefix + "/authorize":
            return self._authorize()
        if path == "/mcp":
            if self._scopes() is not None:
                self._send(405, b"", {"Allow": "POST, DELETE"})
            return
        if path == "/sse":
            return self._sse()
        self._send(404, {"error": "not_found"})

    def do_DELETE(self) -> None:
        path = self._record()
        if path == "/mcp" and self._scopes() is not None:
            self._send(200, b"")
        elif path != "/mcp":
            self._send(404, b"")

    def do_POST(self) -> None:
        f = self.fixture
        path = self._record()
        body = self._body()
        if path == f.as_prefix + "/token":
            return self._token(body)
        if path == f.as_prefix + "/register":
            return self._register(body)
        if path in ("/mcp", "/messages"):
            scopes = self._scopes()
            if scopes is None:
                return
            message = json.loads(body.decode())
            if message.get("method") == "tools/call" and f.call_scope and f.call_scope not in scopes:
                needed = " ".join(sorted(set(scopes) | {f.call_scope}))
                challenge = f'Bearer error="insufficient_scope", scope="{needed}", resource_metadata="{f.base}{f.prm_path}"'
                return self._send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": challenge})
            answer = _mcp_answer(message)
            if path == "/messages":
                session = parse_qs(urlsplit(self.path).query).get("session", [""])[0]
                stream = _SSE_STREAMS.get(session)
                if stream is not None and answer is not None:
                    stream.put(answer)
                return self._send(202, b"")
            if answer is None:
                return self._send(202, b"")
            headers = {"Mcp-Session-Id": "fixture-session"} if message.get("method") == "initialize" else {}
            return self._send(200, answer, headers)
        self._send(404, {"error": "not_found"})

    # -- the authorization server ------------------------------------------------

    def _as_metadata(self) -> Dict[str, Any]:
        f = self.fixture
        doc: Dict[str, Any] = {
            "issuer": f.issuer_override or f.issuer,
            "authorization_endpoint": f.issuer + "/authorize",
            "token_endpoint": f.issuer + "/token",
            "registration_endpoint": f.issuer + "/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": f.auth_methods,
        }
        if f.scopes_supported is not None:
            doc["scopes_supported"] = f.scopes_supported
        doc.update(f.metadata_extra)
        return doc

    def _authorize(self) -> None:
        f = self.fixture
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        with f.lock:
            f.authorize_queries.append(query)
        code = "code-" + secrets.token_hex(8)
        with f.lock:
            f.codes[code] = query
        params = {"code": code, "state": query.get("state", "")}
        if f.callback_iss is not None:
            params["iss"] = f.callback_iss or f.issuer
        target = query["redirect_uri"] + "?" + urlencode(params)
        self._send(302, b"", {"Location": target})

    def _client_auth(self, form: Dict[str, str]) -> Optional[str]:
        """The authenticated client id, or None (then a 401 was sent)."""
        header = self.headers.get("Authorization") or ""
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            client_id, secret, method = unquote(client_id), unquote(secret), "client_secret_basic"
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret")
            method = "client_secret_post" if secret else "none"
        client = self.fixture.clients.get(client_id)
        if client is None or client["method"] != method or (method != "none" and client.get("secret") != secret):
            # A careless server that echoes what it was given: the client must not repeat it.
            self._send(401, {"error": "invalid_client", "error_description": f"client {client_id} presented {secret!r} with {method}"})
            return None
        return client_id

    def _token(self, body: bytes) -> None:
        f = self.fixture
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        with f.lock:
            f.token_forms.append(form)
        client_id = self._client_auth(form)
        if client_id is None:
            return
        if form.get("grant_type") == "authorization_code":
            with f.lock:
                query = f.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if query is None or query.get("code_challenge") != challenge or query.get("redirect_uri") != form.get("redirect_uri"):
                return self._send(400, {"error": "invalid_grant", "error_description": f"bad code {form.get('code')}"})
            scopes = (query.get("scope") or "").split()
        elif form.get("grant_type") == "refresh_token":
            with f.lock:
                scopes = f.refresh_tokens.pop(form.get("refresh_token", ""), None)  # rotated: each works once
            if scopes is None:
                return self._send(400, {"error": "invalid_grant", "error_description": "refresh token revoked"})
        else:
            return self._send(400, {"error": "unsupported_grant_type"})
        access = "at-" + secrets.token_hex(8)
        answer: Dict[str, Any] = {"access_token": access, "token_type": "Bearer", "scope": " ".join(scopes)}
        if f.token_lifetime is not None:
            answer["expires_in"] = f.token_lifetime
        with f.lock:
            f.tokens[access] = scopes
            if f.issue_refresh:
                refresh = "rt-" + secrets.token_hex(8)
                f.refresh_tokens[refresh] = scopes
                answer["refresh_token"] = refresh
        self._send(200, answer)

    def _register(self, body: bytes) -> None:
        f = self.fixture
        request = json.loads(body.decode())
        method = f.registered_method or request.get("token_endpoint_auth_method") or "client_secret_basic"
        client_id = "client-" + secrets.token_hex(4)
        secret = None if method == "none" else "secret-" + secrets.token_hex(8)
        with f.lock:
            f.clients[client_id] = {"method": method, "secret": secret, "request": request}
        answer = {"client_id": client_id, "token_endpoint_auth_method": method, "redirect_uris": request.get("redirect_uris")}
        if secret:
            answer["client_secret"] = secret
        self._send(201, answer)

    # -- legacy SSE ----------------------------------------------------------------

    def _sse(self) -> None:
        if self._scopes() is None:
            return
        session = secrets.token_hex(4)
        stream: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        _SSE_STREAMS[session] = stream
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            self.wfile.write(f"event: endpoint\ndata: /messages?session={session}\n\n".encode())
            self.wfile.flush()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    message = stream.get(timeout=0.5)
                except queue.Empty:
                    continue
                self.wfile.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
                self.wfile.flush()
        except OSError:
            pass
        finally:
            _SSE_STREAMS.pop(session, None)
            self.close_connection = True


_SSE_STREAMS: Dict[str, "queue.Queue[Dict[str, Any]]"] = {}


def _mcp_answer(message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The JSON-RPC answer of a handshake-era MCP server with one tool, ``whoami``."""
    if "id" not in message:
        return None
    method, rid = message.get("method"), message["id"]
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion") or "2025-11-25"
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-fixture", "version": "1.0"}}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}}
    if method == "tools/call":
        return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "you are authorized"}]}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": rid, "result": {}}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}}
