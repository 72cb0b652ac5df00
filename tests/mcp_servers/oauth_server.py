#!/usr/bin/env python3
"""Stdlib-only MCP server behind OAuth 2.1, with the authorization server it trusts, for toolscript's auth tests.

    python3 oauth_server.py serve [knobs]      prints ``LISTENING <port>`` once it listens on 127.0.0.1
    python3 oauth_server.py browse URL [...]   a test "browser": follows an authorization URL to its callback

One process, one port, two roles:

* the protected MCP server: ``/mcp`` is ``fixture_server.py``'s Streamable HTTP
  server (same tools: echo, add, ...), but every request needs a valid
  ``Authorization: Bearer`` token issued for resource ``http://127.0.0.1:P/mcp``.
  ``/sse`` (GET, the stream) + ``/messages`` (POST) is its legacy HTTP+SSE
  server, the same way behind resource ``http://127.0.0.1:P/sse`` (its metadata
  at ``/.well-known/oauth-protected-resource/sse``).
  Without one: 401 with ``WWW-Authenticate: Bearer resource_metadata="...",
  scope="mcp:read"``.  A tool named by ``--write-tool`` needs scope
  ``mcp:write``: a call with a token lacking it gets 403 ``insufficient_scope``
  (step-up).
* the authorization server: protected resource metadata (RFC 9728) at
  ``/.well-known/oauth-protected-resource/mcp`` (and the root variant),
  authorization server metadata (RFC 8414) at
  ``/.well-known/oauth-authorization-server``, dynamic client registration
  (RFC 7591) at ``/register``, ``/authorize`` that approves at once and
  redirects to the client's ``redirect_uri`` with ``code`` and ``state`` (PKCE
  S256 and the ``resource`` parameter required), and ``/token`` for the
  ``authorization_code`` and ``refresh_token`` grants (refresh tokens rotate),
  and ``/revoke`` (RFC 7009 token revocation; revoking a refresh token revokes
  the access tokens of its sign-in too).

Knobs (flags at start, or POST ``/_admin/<knob>`` with a JSON body while running):

    --token-lifetime S    access tokens expire after S seconds (default 3600)   POST /_admin/lifetime {"seconds": S}
    --no-refresh          issue no refresh tokens and refuse the grant          POST /_admin/refresh {"enabled": false}
    --write-tool NAME     tools/call NAME needs scope mcp:write (repeatable)
    --client ID:SECRET    a pre-registered confidential client (any loopback redirect)
    --deny                /authorize answers error=access_denied
    --token-delay S       /token waits S seconds before answering (two refreshes then overlap)
    --reuse-detection     a rotated refresh token presented again revokes its whole sign-in (OAuth 2.1 4.3.1)
    --no-revocation       no /revoke and no revocation_endpoint in the metadata (RFC 7009 revocation is on by default)
    --cimd-ca PEM         accept client ID metadata documents: an https client_id is fetched (the certificate
                          verified against PEM) and its redirect_uris used; the metadata says it is supported
                          POST /_admin/revoke  revokes every access and refresh token
                          POST /_admin/expire  expires every access token now
                          GET  /_admin/stats   counters: registrations, authorizations, token grants, 401s

``browse URL [--tamper-state] [--print]`` GETs the authorization URL, takes
the 302's Location (the client's callback), optionally changes its ``state``,
then GETs the callback (or with ``--print`` only prints the callback URL, for
a test that pastes it).  Exit status 0 when the callback answered 2xx.

Diagnostics (never tokens) go to stderr.  Python 3.9+, standard library only.
"""

import argparse
import base64
import hashlib
import http.client
import json
import os
import secrets
import sys
import threading
import time
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_server  # noqa: E402  (the MCP side: its Fixture and Streamable HTTP handler)

READ_SCOPE = "mcp:read"
WRITE_SCOPE = "mcp:write"
SCOPES = (READ_SCOPE, WRITE_SCOPE)
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
SSE_PATHS = ("/sse", "/messages", "/messages/")  # the legacy HTTP+SSE endpoint: a protected resource of its own


def log(msg):
    fixture_server.log("oauth: " + msg)


class AuthState(object):
    """Everything the authorization server remembers: clients, codes, tokens, knobs, counters."""

    def __init__(self, opts):
        self.lock = threading.Lock()
        self.lifetime = float(opts.token_lifetime)
        self.refresh_enabled = not opts.no_refresh
        self.deny = opts.deny
        self.write_tools = set(opts.write_tool or [])
        self.token_delay = float(opts.token_delay)  # seconds /token waits before answering (to make two refreshes overlap)
        self.reuse_detection = opts.reuse_detection
        self.revocation = not opts.no_revocation  # metadata names /revoke (RFC 7009)
        self.cimd_ca = opts.cimd_ca  # accept client ID metadata documents, fetched over https trusting this CA file  # a rotated refresh token presented again revokes its whole family
        self.families = {}  # refresh or access token -> the family (one sign-in and its refreshes)
        self.used_refresh = {}  # rotated refresh token -> its family
        self.clients = {}  # client_id -> {"secret", "redirect_uris", "auth_method", "any_loopback"}
        for spec in opts.client or []:
            cid, _, secret = spec.partition(":")
            self.clients[cid] = {"secret": secret or None, "redirect_uris": [], "any_loopback": True,
                                 "auth_method": "client_secret_basic" if secret else "none"}
        self.codes = {}  # code -> {...}
        self.access = {}  # token -> {"expires", "scope", "client_id", "resource"}
        self.refresh = {}  # token -> {"scope", "client_id", "resource"}
        self.stats = {"registrations": 0, "authorizations": 0, "authorization_code": 0, "refresh_token": 0,
                      "refresh_refused": 0, "unauthorized": 0, "insufficient_scope": 0, "mcp_requests": 0}

    def count(self, key):
        with self.lock:
            self.stats[key] = self.stats.get(key, 0) + 1

    def revoke_family(self, family):
        """Forget every access and refresh token of ``family`` (call with the lock held)."""
        for token in [t for t, f in self.families.items() if f == family]:
            self.access.pop(token, None)
            self.refresh.pop(token, None)
        self.stats["families_revoked"] = self.stats.get("families_revoked", 0) + 1

    def issue(self, client_id, scope, resource, family=None):
        """A token response (and the tokens remembered)."""
        family = family or secrets.token_hex(6)
        access = "at-" + secrets.token_urlsafe(24)
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": int(self.lifetime) if self.lifetime >= 1 else 1,
                  "scope": scope}
        with self.lock:
            self.access[access] = {"expires": time.time() + self.lifetime, "scope": scope, "client_id": client_id,
                                   "resource": resource}
            self.families[access] = family
            if self.refresh_enabled:
                refresh = "rt-" + secrets.token_urlsafe(24)
                self.refresh[refresh] = {"scope": scope, "client_id": client_id, "resource": resource, "family": family}
                self.families[refresh] = family
                answer["refresh_token"] = refresh
        return answer


def s256(verifier):
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def is_loopback_uri(uri):
    parts = urlsplit(uri)
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")


def same_except_port(a, b):
    """RFC 8252 7.3: a loopback redirect URI matches whatever its port."""
    pa, pb = urlsplit(a), urlsplit(b)
    return is_loopback_uri(a) and (pa.scheme, pa.hostname, pa.path) == (pb.scheme, pb.hostname, pb.path)


class OAuthHandler(fixture_server.StreamableHandler):

    # -- routing ------------------------------------------------------------------------------------

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def resource(self):
        """The protected resource this request is for: the legacy SSE endpoint (/sse and its /messages) or /mcp."""
        return self.base() + ("/sse" if self.url_path() in SSE_PATHS else "/mcp")

    def prm_url(self):
        return self.base() + "/.well-known/oauth-protected-resource" + ("/sse" if self.url_path() in SSE_PATHS else "/mcp")

    def read_body(self):
        # The step-up check reads the body before the MCP handler does: read it once per request.
        if getattr(self, "_body", None) is None:
            self._body = fixture_server.BaseHandler.read_body(self)
        return self._body

    def do_GET(self):
        self._body = None
        path = self.url_path()
        if path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
                    "/.well-known/oauth-protected-resource/sse"):
            resource = self.base() + ("/sse" if path.endswith("/sse") else "/mcp")
            return self.send_json(200, {"resource": resource, "authorization_servers": [self.base()],
                                        "scopes_supported": list(SCOPES), "bearer_methods_supported": ["header"]})
        if path == "/.well-known/oauth-authorization-server":
            return self.send_json(200, self.as_metadata())
        if path == "/authorize":
            return self.authorize()
        if path == "/_admin/stats":
            with self.server.auth.lock:
                stats = dict(self.server.auth.stats)
                stats["live_access_tokens"] = len(self.server.auth.access)
            return self.send_json(200, stats)
        if path == "/mcp" and self.check_token(None):
            return fixture_server.StreamableHandler.do_GET(self)
        if path == "/sse":
            if self.check_token(None):
                return fixture_server.LegacySSEHandler.do_GET(self)
            return
        if path != "/mcp":
            self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")

    def do_POST(self):
        self._body = None
        path = self.url_path()
        if path == "/register":
            return self.register()
        if path == "/token":
            return self.token()
        if path == "/revoke" and self.server.auth.revocation:
            return self.revoke()
        if path.startswith("/_admin/"):
            return self.admin(path[len("/_admin/"):])
        if path == "/mcp":
            if self.check_token(self.read_body()):
                return fixture_server.StreamableHandler.do_POST(self)
            return
        if path in ("/messages", "/messages/"):
            if self.check_token(self.read_body()):
                return fixture_server.LegacySSEHandler.do_POST(self)
            return
        self.drain_body_if_any()
        self.send_raw(404, [("Content-Type", "text/plain")], b"Not Found")

    def do_DELETE(self):
        self._body = None
        if self.url_path() == "/mcp" and not self.check_token(None):
            return
        return fixture_server.StreamableHandler.do_DELETE(self)

    # -- the protected resource ---------------------------------------------------------------------

    def challenge(self, status, error, scope):
        auth = self.server.auth
        auth.count("unauthorized" if status == 401 else "insufficient_scope")
        value = 'Bearer resource_metadata="%s", scope="%s"' % (self.prm_url(), scope)
        if error:
            value += ', error="%s"' % error
        self.drain_body_if_any()
        self.send_json(status, {"error": error or "unauthorized"}, headers=[("WWW-Authenticate", value)])
        return False

    def check_token(self, body):
        """True when the request carries a live token for this resource (and the scope its tool needs)."""
        auth = self.server.auth
        auth.count("mcp_requests")
        header = self.headers.get("Authorization") or ""
        if not header.startswith("Bearer "):
            return self.challenge(401, None, READ_SCOPE)
        token = header[len("Bearer "):].strip()
        with auth.lock:
            info = auth.access.get(token)
        if info is None or info["expires"] <= time.time() or info["resource"] != self.resource():
            return self.challenge(401, "invalid_token", READ_SCOPE)
        if body and auth.write_tools:
            try:
                msg = json.loads(body.decode("utf-8"))
            except ValueError:
                msg = None
            if (isinstance(msg, dict) and msg.get("method") == "tools/call"
                    and (msg.get("params") or {}).get("name") in auth.write_tools
                    and WRITE_SCOPE not in (info["scope"] or "").split()):
                return self.challenge(403, "insufficient_scope", READ_SCOPE + " " + WRITE_SCOPE)
        return True

    # -- the authorization server -----------------------------------------------------------------------

    def as_metadata(self):
        base = self.base()
        meta = {
            "issuer": base,
            "authorization_endpoint": base + "/authorize",
            "token_endpoint": base + "/token",
            "registration_endpoint": base + "/register",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        }
        if self.server.auth.cimd_ca:
            meta["client_id_metadata_document_supported"] = True
        if self.server.auth.revocation:
            meta["revocation_endpoint"] = base + "/revoke"
            meta["revocation_endpoint_auth_methods_supported"] = list(AUTH_METHODS)
        return meta

    def register(self):
        auth = self.server.auth
        try:
            meta = json.loads(self.read_body().decode("utf-8"))
        except ValueError:
            return self.send_json(400, {"error": "invalid_client_metadata", "error_description": "not JSON"})
        uris = meta.get("redirect_uris") if isinstance(meta, dict) else None
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            return self.send_json(400, {"error": "invalid_redirect_uri", "error_description": "redirect_uris required"})
        method = meta.get("token_endpoint_auth_method") or "client_secret_basic"
        if method not in AUTH_METHODS:
            method = "client_secret_basic"
        cid = "client-" + secrets.token_hex(8)
        secret = None if method == "none" else "cs-" + secrets.token_urlsafe(16)
        with auth.lock:
            auth.clients[cid] = {"secret": secret, "redirect_uris": list(uris), "auth_method": method, "any_loopback": False}
        auth.count("registrations")
        log("registered %s (%s) for %s" % (cid, method, ", ".join(uris)))
        answer = dict(meta, client_id=cid, client_id_issued_at=int(time.time()), token_endpoint_auth_method=method)
        if secret:
            answer["client_secret"] = secret
            answer["client_secret_expires_at"] = 0
        return self.send_json(201, answer)

    def authorize(self):
        auth = self.server.auth
        q = dict((k, v[0]) for k, v in parse_qs(urlsplit(self.path).query).items())
        cid, redirect = q.get("client_id"), q.get("redirect_uri")
        with auth.lock:
            client = auth.clients.get(cid)
        if client is None and auth.cimd_ca and (cid or "").startswith("https://"):
            client, problem = fetch_client_metadata(cid, auth.cimd_ca)
            if client is None:
                return self.send_json(400, {"error": "invalid_client", "error_description": problem})
            with auth.lock:
                auth.clients[cid] = client
            auth.count("cimd_fetches")
        if client is None:
            return self.send_json(400, {"error": "invalid_client", "error_description": "unknown client_id"})
        allowed = client["redirect_uris"]
        if not redirect or not (redirect in allowed or any(same_except_port(redirect, u) for u in allowed)
                                or (client["any_loopback"] and is_loopback_uri(redirect))):
            # Never redirect to an unregistered URI: answer here.
            return self.send_json(400, {"error": "invalid_request", "error_description": "redirect_uri not registered"})

        def back(params):
            parts = urlsplit(redirect)
            query = (parts.query + "&" if parts.query else "") + urlencode(params)
            self.send_raw(302, [("Location", urlunsplit((parts.scheme, parts.netloc, parts.path, query, "")))], b"")

        state = q.get("state")
        extra = {"state": state} if state is not None else {}
        if q.get("response_type") != "code":
            return back(dict(extra, error="unsupported_response_type"))
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return back(dict(extra, error="invalid_request", error_description="PKCE S256 required"))
        if q.get("resource") not in (self.base() + "/mcp", self.base() + "/sse"):
            return back(dict(extra, error="invalid_target", error_description="resource must be %s/mcp or /sse" % self.base()))
        if auth.deny:
            return back(dict(extra, error="access_denied", error_description="the user said no"))
        scope = " ".join(s for s in (q.get("scope") or READ_SCOPE).split() if s in SCOPES) or READ_SCOPE
        code = "code-" + secrets.token_urlsafe(16)
        with auth.lock:
            auth.codes[code] = {"client_id": cid, "redirect_uri": redirect, "challenge": q["code_challenge"],
                                "scope": scope, "resource": q["resource"], "expires": time.time() + 120}
        auth.count("authorizations")
        return back(dict({"code": code}, iss=self.base(), **extra))

    def revoke(self):
        """RFC 7009: forget the token (a refresh token takes its sign-in's access tokens along); 200 even when unknown."""
        auth = self.server.auth
        form = dict((k, v[0]) for k, v in parse_qs(self.read_body().decode("utf-8")).items())
        cid, error = self.client_from_request(form)
        if error:
            return self.send_json(401, {"error": error})
        token = form.get("token") or ""
        with auth.lock:
            kind = "refresh_token" if token in auth.refresh else "access_token" if token in auth.access else "unknown"
            if kind == "refresh_token":
                family = auth.families.get(token)
                auth.refresh.pop(token, None)
                for other in [t for t, f in auth.families.items() if f == family and t in auth.access]:
                    auth.access.pop(other, None)
            elif kind == "access_token":
                auth.access.pop(token, None)
            key = "revoked_" + kind
            auth.stats[key] = auth.stats.get(key, 0) + 1
        log("revoked a %s (hint %s)" % (kind, form.get("token_type_hint")))
        return self.send_json(200, {})

    def client_from_request(self, form):
        """(client_id, error) after client authentication per the client's registered method."""
        auth = self.server.auth
        cid, secret = form.get("client_id"), form.get("client_secret")
        header = self.headers.get("Authorization") or ""
        if header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:]).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return None, "invalid_client"
            from urllib.parse import unquote_plus
            user, _, password = decoded.partition(":")
            cid, secret = unquote_plus(user), unquote_plus(password)
        with auth.lock:
            client = auth.clients.get(cid)
        if client is None:
            return None, "invalid_client"
        if client["secret"] is not None and secret != client["secret"]:
            return None, "invalid_client"
        return cid, None

    def token(self):
        auth = self.server.auth
        form = dict((k, v[0]) for k, v in parse_qs(self.read_body().decode("utf-8")).items())
        if auth.token_delay:
            time.sleep(auth.token_delay)
        cid, error = self.client_from_request(form)
        if error:
            return self.send_json(401, {"error": error})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with auth.lock:
                code = auth.codes.pop(form.get("code") or "", None)  # single use, even when it fails below
            if code is None or code["expires"] < time.time() or code["client_id"] != cid:
                return self.send_json(400, {"error": "invalid_grant", "error_description": "unknown or used code"})
            if form.get("redirect_uri") != code["redirect_uri"]:
                return self.send_json(400, {"error": "invalid_grant", "error_description": "redirect_uri differs"})
            if s256(form.get("code_verifier") or "") != code["challenge"]:
                return self.send_json(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
            if form.get("resource") not in (None, code["resource"]):
                return self.send_json(400, {"error": "invalid_target"})
            auth.count("authorization_code")
            return self.send_json(200, auth.issue(cid, code["scope"], code["resource"]), headers=[("Cache-Control", "no-store")])
        if grant == "refresh_token":
            with auth.lock:
                presented = form.get("refresh_token") or ""
                old = auth.refresh.get(presented)
                usable = old is not None and old["client_id"] == cid and auth.refresh_enabled
                if usable:
                    del auth.refresh[presented]  # rotation: a refresh token works once
                    auth.used_refresh[presented] = old["family"]
                elif auth.reuse_detection and presented in auth.used_refresh:
                    # OAuth 2.1 4.3.1: a rotated refresh token used again means it leaked; end the whole sign-in.
                    auth.revoke_family(auth.used_refresh[presented])
            if not usable:
                auth.count("refresh_refused")
                return self.send_json(400, {"error": "invalid_grant", "error_description": "refresh token not valid"})
            auth.count("refresh_token")
            return self.send_json(200, auth.issue(cid, old["scope"], old["resource"], old["family"]), headers=[("Cache-Control", "no-store")])
        return self.send_json(400, {"error": "unsupported_grant_type"})

    def admin(self, knob):
        auth = self.server.auth
        try:
            body = json.loads(self.read_body().decode("utf-8") or "{}")
        except ValueError:
            body = {}
        with auth.lock:
            if knob == "revoke":
                auth.access.clear()
                auth.refresh.clear()
            elif knob == "expire":
                for info in auth.access.values():
                    info["expires"] = 0
            elif knob == "lifetime":
                auth.lifetime = float(body.get("seconds", 3600))
            elif knob == "refresh":
                auth.refresh_enabled = bool(body.get("enabled", True))
            elif knob == "deny":
                auth.deny = bool(body.get("enabled", True))
            else:
                return self.send_json(404, {"error": "unknown knob %s" % knob})
        log("admin: %s %s" % (knob, json.dumps(body)))
        return self.send_json(200, {"ok": True})


def fetch_client_metadata(client_id, ca_file):
    """A client from its client ID metadata document at the https URL ``client_id``: (client, None) or (None, problem).

    As an authorization server must: https only, the certificate verified (against ``ca_file``, the test's CA),
    a bounded JSON object whose ``client_id`` is the URL it came from, public clients only.
    """
    import ssl
    parts = urlsplit(client_id)
    if parts.scheme != "https" or not parts.path or parts.path == "/":
        return None, "a client ID metadata document URL must be https with a path"
    context = ssl.create_default_context(cafile=ca_file)
    conn = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=10, context=context)
    try:
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""), headers={"Accept": "application/json"})
        resp = conn.getresponse()
        body = resp.read(65537)
    except (OSError, http.client.HTTPException) as exc:
        return None, "cannot fetch the client metadata document: %s" % exc
    finally:
        conn.close()
    if resp.status != 200 or len(body) > 65536:
        return None, "the client metadata document answered HTTP %d (%d bytes)" % (resp.status, len(body))
    try:
        doc = json.loads(body.decode("utf-8"))
    except ValueError:
        return None, "the client metadata document is not JSON"
    if not isinstance(doc, dict) or doc.get("client_id") != client_id:
        return None, "the client metadata document's client_id is not its URL"
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        return None, "the client metadata document has no redirect_uris"
    if doc.get("token_endpoint_auth_method", "none") != "none":
        return None, "only public clients (token_endpoint_auth_method none) may use a client metadata document here"
    log("client metadata document %s accepted (%s)" % (client_id, ", ".join(uris)))
    return {"secret": None, "redirect_uris": list(uris), "auth_method": "none", "any_loopback": False}, None


class OAuthHTTPServer(fixture_server.FixtureHTTPServer):
    auth = None  # the AuthState, set by serve()


def serve(opts):
    fx_opts = fixture_server.parse_args(["http", "--name", "oauth-fixture"])
    fx = fixture_server.Fixture(fx_opts)
    srv = OAuthHTTPServer(("127.0.0.1", opts.port), OAuthHandler, fx, fx_opts)
    srv.auth = AuthState(opts)

    def expire(session):
        srv.drop_session(session)
    fx.expire_hook = expire
    sys.stdout.write("LISTENING %d\n" % srv.server_address[1])
    sys.stdout.flush()
    log("listening on http://127.0.0.1:%d/mcp" % srv.server_address[1])
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        os._exit(0)


def get(url, headers=None):
    """(status, headers dict lower-cased, body) of one GET, redirects not followed."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=30)
    try:
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""), headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), resp.read()
    finally:
        conn.close()


def browse(opts):
    status, headers, body = get(opts.url)
    location = headers.get("location")
    if status != 302 or not location:
        sys.stderr.write("browse: the authorization URL answered %d without a redirect: %s\n" % (status, body[:300]))
        return 1
    if opts.tamper_state:
        parts = urlsplit(location)
        q = dict((k, v[0]) for k, v in parse_qs(parts.query).items())
        q["state"] = "tampered-" + secrets.token_hex(4)
        location = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(q), ""))
    if opts.print:
        sys.stdout.write(location + "\n")
        return 0
    status, _, body = get(location)
    sys.stderr.write("browse: callback answered %d\n" % status)
    return 0 if 200 <= status < 300 else 1


# -- for tests: start one as a process --------------------------------------------------------------

class Running(object):
    """A started ``serve`` process: its URLs, knobs and counters."""

    def __init__(self, process, port, log_path):
        self.process, self.port, self.log_path = process, port, log_path
        self.base = "http://127.0.0.1:%d" % port
        self.url = self.base + "/mcp"
        self.sse_url = self.base + "/sse"

    def admin(self, knob, **body):
        import urllib.request
        req = urllib.request.Request(self.base + "/_admin/" + knob, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read().decode())

    def stats(self):
        import urllib.request
        with urllib.request.urlopen(self.base + "/_admin/stats", timeout=10) as resp:
            return json.loads(resp.read().decode())

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start(*knobs, timeout=10.0):
    """Run ``serve KNOBS`` on a free port and wait for it to listen."""
    import subprocess
    import tempfile

    from launch import listening_port  # tests/mcp_servers/launch.py (tests only: the server itself never imports it)
    log_file = tempfile.NamedTemporaryFile(prefix="oauth-server-", suffix=".log", delete=False)
    process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", *knobs], stdout=subprocess.PIPE,
                               stderr=log_file, start_new_session=True)
    log_file.close()
    return Running(process, listening_port(process, log_file.name, "oauth_server", timeout), log_file.name)


BROWSER = [sys.executable, os.path.abspath(__file__), "browse"]


def main(argv=None):
    p = argparse.ArgumentParser(description="OAuth-protected MCP fixture server (and test browser)")
    sub = p.add_subparsers(dest="mode")
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--token-lifetime", type=float, default=3600.0)
    s.add_argument("--no-refresh", action="store_true")
    s.add_argument("--write-tool", action="append")
    s.add_argument("--client", action="append", metavar="ID:SECRET")
    s.add_argument("--deny", action="store_true")
    s.add_argument("--token-delay", type=float, default=0.0)
    s.add_argument("--reuse-detection", action="store_true")
    s.add_argument("--no-revocation", action="store_true")
    s.add_argument("--cimd-ca", metavar="PEM")
    b = sub.add_parser("browse")
    b.add_argument("url")
    b.add_argument("--tamper-state", action="store_true")
    b.add_argument("--print", action="store_true")
    opts = p.parse_args(sys.argv[1:] if argv is None else argv)
    if opts.mode == "serve":
        serve(opts)
    elif opts.mode == "browse":
        sys.exit(browse(opts))
    else:
        p.error("serve or browse")


if __name__ == "__main__":
    main()
