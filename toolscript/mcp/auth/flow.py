"""OAuth 2.1 for remote MCP servers: the client side of MCP authorization (2025-11-25, with 2025-03-26 fallbacks).

``authorize`` runs the authorization code flow once: protected resource
metadata discovery (RFC 9728), authorization server metadata (RFC 8414 and
OpenID discovery), the client (pre-registered, a client ID metadata document,
or dynamic client registration per RFC 7591), the scope, PKCE S256, ``state``
and the resource indicator (RFC 8707); ``open_url`` does the browser part and
hands back the URL the browser was redirected to.  The result is a ``Grant``,
everything a later process needs to use and refresh the token.  ``refresh``
and ``revoke`` (RFC 7009) talk to the token and revocation endpoints;
``probe`` asks a server for its 401 challenge.  Using a grant on requests is
``bearer.BearerAuth``'s.

Standard library only.  Every response is read with a bound, every request has
a timeout, endpoints other than loopback must be https, and no secret (token,
client secret, code, verifier) appears in an exception or a log line.
"""

import base64
import hashlib
import ipaddress
import json
import math
import secrets
import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from toolscript import log
from toolscript.mcp.errors import McpError
from toolscript.mcp.httpconn import USER_AGENT, Endpoint, describe_oserror, open_connection, read_bounded, redact_url

logger = log.get("mcp.oauth")

MAX_RESPONSE_BYTES = 1 << 20  # metadata, registration and token answers are small
MAX_EXPIRES_IN_SECONDS = 366 * 86400.0  # a longer (or infinite) token lifetime is read as this: a year is "no expiry" in practice
PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
_MCP_INIT_PROBE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "toolscript", "version": "probe"}},
}


class OAuthError(McpError):
    """An authorization step failed; ``str()`` is one line that says what to do next and holds no secret."""


class AuthRequired(OAuthError):
    """Interactive authorization is needed: the user must run ``toolscript auth NAME``."""

    def __init__(self, server_name: str = "SERVER", reason: str = "") -> None:
        super().__init__(f"needs auth: run toolscript auth {server_name}")
        self.server_name = server_name
        self.reason = reason  # why (for debug logs); never a secret


@dataclass
class ClientSettings:
    """What the user may configure per server (the config's "oauth" object)."""

    client_id: Optional[str] = None  # a pre-registered client
    client_secret: Optional[str] = None
    scope: Optional[str] = None  # overrides the discovered scopes
    client_metadata_url: Optional[str] = None  # an https URL of a client ID metadata document (CIMD)
    client_name: str = "toolscript"


@dataclass
class Grant:
    """All that is stored per server: enough to use, refresh and re-authorize."""

    resource: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    client_id: str
    client_secret: Optional[str]
    token_endpoint_auth_method: str  # client_secret_basic | client_secret_post | none
    access_token: str
    refresh_token: Optional[str]
    expires_at: Optional[float]  # seconds since the epoch
    scope: Optional[str]
    redirect_uri: str
    revocation_endpoint: Optional[str] = None  # RFC 7009, from the authorization server metadata (None: it offers none)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Grant":
        if not isinstance(data, dict):
            raise OAuthError("a stored OAuth grant is not a JSON object; run toolscript auth again")
        values: Dict[str, Any] = {}
        for field in fields(cls):
            value = data.get(field.name)
            if field.name == "expires_at":
                # NaN, infinity or the year 5000: a hand-edited or hostile file; read as "no expiry known".
                seconds = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e11 else None
                value = seconds if seconds is not None and math.isfinite(seconds) else None
            elif value is not None and not isinstance(value, str):
                raise OAuthError(f"a stored OAuth grant has a bad {field.name!r}; run toolscript auth again")
            values[field.name] = value
        for required in ("resource", "token_endpoint", "client_id", "access_token"):
            if not values.get(required):
                raise OAuthError(f"a stored OAuth grant lacks {required!r}; run toolscript auth again")
        values["token_endpoint_auth_method"] = values.get("token_endpoint_auth_method") or "none"
        for name in ("issuer", "authorization_endpoint", "redirect_uri"):
            values[name] = values.get(name) or ""
        return cls(**values)

    def expires_within(self, seconds: float) -> bool:
        return self.expires_at is not None and self.expires_at - time.time() < seconds


def printable(text: str, limit: int = 160) -> str:
    """Server-supplied text as it may reach a terminal: one line, shortened, no escape sequences or control characters."""
    from toolscript.log import terminal_text

    return terminal_text(text[:limit], one_line=True)


def mask(secret: Optional[str]) -> str:
    """A secret as it may be shown: its first 4 characters and its length."""
    if not secret:
        return "(none)"
    return f"{secret[:4]}… ({len(secret)} chars)" if len(secret) > 8 else f"… ({len(secret)} chars)"


# -- WWW-Authenticate ---------------------------------------------------------------

_TOKEN_CHARS = set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def parse_www_authenticate(header: str) -> List[Tuple[str, Dict[str, str]]]:
    """The challenges of a WWW-Authenticate value: [(scheme lower-cased, {param lower-cased: value})].

    Tolerates quoted strings with escapes and commas, unquoted values, several
    challenges in one header and stray separators (RFC 9110 section 11.6.1).
    """
    challenges: List[Tuple[str, Dict[str, str]]] = []
    text, pos, end = header or "", 0, len(header or "")
    while pos < end:
        while pos < end and text[pos] in " \t,":
            pos += 1
        start = pos
        while pos < end and text[pos] in _TOKEN_CHARS:
            pos += 1
        token = text[start:pos]
        if not token:
            pos += 1  # a character that starts nothing: skip it
            continue
        after = pos
        while after < end and text[after] in " \t":
            after += 1
        is_param = after < end and text[after] == "=" and not text.startswith("==", after)
        if not is_param or not challenges:
            if is_param:  # a parameter before any scheme: skip its value
                pos = after + 1
            else:
                challenges.append((token.lower(), {}))
            continue
        pos = after + 1
        while pos < end and text[pos] in " \t":
            pos += 1
        if pos < end and text[pos] == '"':
            pos += 1
            chars = []
            while pos < end and text[pos] != '"':
                if text[pos] == "\\" and pos + 1 < end:
                    pos += 1
                chars.append(text[pos])
                pos += 1
            pos += 1  # the closing quote
            value = "".join(chars)
        else:
            start = pos
            while pos < end and text[pos] not in " \t,":
                pos += 1
            value = text[start:pos]
        challenges[-1][1].setdefault(token.lower(), value)
    return challenges


def bearer_challenge(header: Optional[str]) -> Dict[str, str]:
    """The parameters of the Bearer challenge in a WWW-Authenticate value ({} when there is none)."""
    for scheme, params in parse_www_authenticate(header or ""):
        if scheme == "bearer":
            return params
    return {}


# -- HTTP ---------------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(url: str, what: str) -> str:
    """``url`` if it may carry OAuth traffic: https, or http to a loopback host."""
    if not isinstance(url, str) or any(not char.isprintable() or char.isspace() for char in url):
        # A URL from metadata is printed for the user to open: no escape sequences, no hidden parts.
        raise OAuthError(f"the {what} {printable(str(url), 200)!r} has spaces or control characters; check the server's OAuth metadata")
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OAuthError(f"the {what} {printable(url, 200)!r} is not an http(s) URL; check the server's OAuth metadata")
    if parts.fragment:
        raise OAuthError(f"the {what} {redact_url(url)} has a fragment, which OAuth forbids; check the server's OAuth metadata")
    if parts.scheme != "https" and not _is_loopback(parts.hostname):
        raise OAuthError(f"the {what} {redact_url(url)} is not https; refusing to send credentials over plain http")
    return url


def _http(method: str, url: str, timeout: float, *, body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None) -> Tuple[int, Dict[str, str], bytes]:
    """One request, no redirects followed; (status, lower-cased headers, body read with a bound)."""
    endpoint = Endpoint(url)
    sent = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    sent.update(headers or {})
    try:
        conn = open_connection(endpoint, timeout)
    except McpError as exc:
        raise OAuthError(str(exc)) from exc
    try:
        conn.request(method, endpoint.target, body=body, headers=sent)
        resp = conn.getresponse()
        data = read_bounded(resp, MAX_RESPONSE_BYTES)
        if data is None:
            raise OAuthError(f"{redact_url(url)} answered with more than {MAX_RESPONSE_BYTES} bytes; is this an OAuth endpoint?")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    except OAuthError:
        raise
    except Exception as exc:  # socket errors, timeouts, a malformed answer
        raise OAuthError(describe_oserror(exc, url)) from exc
    finally:
        conn.close()


def _get_json(url: str, timeout: float) -> Optional[Dict[str, Any]]:
    """A JSON object at ``url``, or None when there is none (any 4xx/5xx, or not a JSON object)."""
    status, _, data = _http("GET", url, timeout)
    if status != 200:
        logger.debug("GET %s: HTTP %s", redact_url(url), status)
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        logger.debug("GET %s: not JSON", redact_url(url))
        return None
    return doc if isinstance(doc, dict) else None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], "", "", ""))


# -- discovery ----------------------------------------------------------------------


def prm_urls(server_url: str, resource_metadata: Optional[str] = None) -> List[str]:
    """Where to look for protected resource metadata, in the spec's order."""
    urls = [resource_metadata] if resource_metadata else []
    path = urlsplit(server_url).path.rstrip("/")
    if path:
        urls.append(_origin(server_url) + PRM_WELL_KNOWN + path)
    urls.append(_origin(server_url) + PRM_WELL_KNOWN)
    return urls


def as_metadata_urls(issuer: str) -> List[str]:
    """Where to look for authorization server metadata, in the spec's order (RFC 8414 then OpenID)."""
    origin, path = _origin(issuer), urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


def resource_matches(resource: str, server_url: str) -> bool:
    """True when ``resource`` names the server: same origin, and a path that is the server's or a parent of it."""
    r, s = urlsplit(resource), urlsplit(server_url)
    if (r.scheme.lower(), (r.hostname or "").lower(), r.port or _default_port(r.scheme)) != (
        s.scheme.lower(),
        (s.hostname or "").lower(),
        s.port or _default_port(s.scheme),
    ):
        return False
    rpath, spath = r.path.rstrip("/"), s.path.rstrip("/")
    return spath == rpath or spath.startswith(rpath + "/")


def _default_port(scheme: str) -> int:
    return 443 if scheme.lower() == "https" else 80


def canonical_resource(server_url: str) -> str:
    """The server URL as an RFC 8707 resource: no fragment, no userinfo, lower-case scheme and host."""
    parts = urlsplit(server_url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path, parts.query, ""))


def discover_resource(server_url: str, resource_metadata: Optional[str], timeout: float) -> Optional[Dict[str, Any]]:
    """The protected resource metadata of ``server_url``, or None when it publishes none (a 2025-03-26 server)."""
    for url in prm_urls(server_url, resource_metadata):
        _check_url(url, "protected resource metadata URL")
        doc = _get_json(url, timeout)
        if doc is not None and isinstance(doc.get("authorization_servers"), list) and doc["authorization_servers"]:
            logger.debug("protected resource metadata at %s", redact_url(url))
            return doc
    return None


def discover_authorization_server(issuer: str, timeout: float, *, strict_issuer: bool = True) -> Optional[Dict[str, Any]]:
    """The authorization server metadata of ``issuer``, or None when none of the well-known URLs has it."""
    for url in as_metadata_urls(issuer):
        _check_url(url, "authorization server metadata URL")
        doc = _get_json(url, timeout)
        if doc is None or not doc.get("authorization_endpoint") or not doc.get("token_endpoint"):
            continue
        if strict_issuer and str(doc.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
            raise OAuthError(
                f"the authorization server metadata at {redact_url(url)} names issuer {doc.get('issuer')!r}, "
                f"not {issuer!r}; refusing it (a mix-up attack or a misconfigured server)"
            )
        logger.debug("authorization server metadata at %s", redact_url(url))
        return doc
    return None


@dataclass
class _Server:
    """What discovery found: where to authorize and for what."""

    resource: str
    issuer: str
    metadata: Dict[str, Any]
    scopes_supported: List[str]  # from the protected resource metadata


def _discover(server_url: str, www_authenticate: Optional[str], timeout: float) -> _Server:
    challenge = bearer_challenge(www_authenticate)
    prm = discover_resource(server_url, challenge.get("resource_metadata"), timeout)
    if prm is None:
        # 2025-03-26: no protected resource metadata; the authorization server
        # lives at the MCP server's origin, with default endpoints if it has no metadata.
        origin = _origin(server_url)
        _check_url(origin, "authorization server")
        legacy = discover_authorization_server(origin, timeout, strict_issuer=False) or {
            "issuer": origin,
            "authorization_endpoint": origin + "/authorize",
            "token_endpoint": origin + "/token",
            "registration_endpoint": origin + "/register",
        }
        return _Server(canonical_resource(server_url), str(legacy.get("issuer") or origin), legacy, [])
    resource = prm.get("resource")
    if not isinstance(resource, str) or not resource:
        resource = canonical_resource(server_url)
    elif not resource_matches(resource, server_url):
        raise OAuthError(
            f"the server's protected resource metadata names resource {resource!r}, which is not {redact_url(server_url)}; "
            "refusing to authorize (check the server URL in the config)"
        )
    issuer = str(prm["authorization_servers"][0])
    _check_url(issuer, "authorization server")
    metadata = discover_authorization_server(issuer, timeout)
    if metadata is None:
        raise OAuthError(f"found no OAuth metadata for the authorization server {redact_url(issuer)} (tried RFC 8414 and OpenID discovery)")
    methods = metadata.get("code_challenge_methods_supported")
    if not isinstance(methods, list) or "S256" not in methods:
        raise OAuthError(f"the authorization server {redact_url(issuer)} does not advertise PKCE S256, which MCP requires; ask its operator")
    scopes = prm.get("scopes_supported")
    return _Server(resource, issuer, metadata, [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else [])


# -- the client ---------------------------------------------------------------------


def _auth_method(metadata: Dict[str, Any], has_secret: bool, registered: Optional[str] = None) -> str:
    """How to authenticate at the token endpoint: what registration said, else the best the server supports."""
    if registered in ("client_secret_basic", "client_secret_post", "none"):
        return registered
    supported = metadata.get("token_endpoint_auth_methods_supported")
    if not isinstance(supported, list):
        supported = ["client_secret_basic"]  # RFC 8414's default
    if has_secret:
        for method in ("client_secret_basic", "client_secret_post"):
            if method in supported:
                return method
        if "none" not in supported:
            return "client_secret_basic"
    return "none"


def _register(server: _Server, client: ClientSettings, redirect_uri: str, timeout: float) -> Tuple[str, Optional[str], str]:
    """(client_id, client_secret, token endpoint auth method): pre-registered > CIMD > dynamic registration."""
    metadata = server.metadata
    if client.client_id:
        return client.client_id, client.client_secret, _auth_method(metadata, bool(client.client_secret))
    if client.client_metadata_url and metadata.get("client_id_metadata_document_supported") is True:
        parts = urlsplit(client.client_metadata_url)
        if parts.scheme != "https" or parts.path in ("", "/"):
            raise OAuthError(f'"client_metadata_url" {client.client_metadata_url!r} must be an https URL with a path (a client ID metadata document)')
        return client.client_metadata_url, None, "none"
    endpoint = metadata.get("registration_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise OAuthError(
            f"the authorization server {redact_url(server.issuer)} offers no dynamic client registration; "
            'register a client there and set "oauth": {"client_id": ...} for this server in the config'
        )
    _check_url(endpoint, "registration endpoint")
    supported = metadata.get("token_endpoint_auth_methods_supported")
    wanted = "client_secret_basic"
    if isinstance(supported, list):
        wanted = next((m for m in ("none", "client_secret_basic", "client_secret_post") if m in supported), "client_secret_basic")
    request = {
        "client_name": client.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
    }
    status, _, data = _http("POST", endpoint, timeout, body=json.dumps(request).encode(), headers={"Content-Type": "application/json"})
    answer = _json_object(data)
    if status not in (200, 201) or not isinstance(answer.get("client_id"), str) or not answer.get("client_id"):
        raise OAuthError(f"dynamic client registration at {redact_url(endpoint)} failed ({_describe_oauth_error(status, answer)}); "
                         'register a client by hand and set "oauth": {"client_id": ...} in the config')
    secret = answer.get("client_secret") if isinstance(answer.get("client_secret"), str) else None
    method = _auth_method(metadata, bool(secret), answer.get("token_endpoint_auth_method"))
    logger.debug("registered client %s at %s (token endpoint auth %s)", answer["client_id"], redact_url(endpoint), method)
    return answer["client_id"], secret, method


def _json_object(data: bytes) -> Dict[str, Any]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _describe_oauth_error(status: int, answer: Dict[str, Any]) -> str:
    """An OAuth error answer in a few words: the server's error code and (shortened) description."""
    text = f"HTTP {status}"
    if isinstance(answer.get("error"), str):
        text += f" {printable(answer['error'], 60)}"
    if isinstance(answer.get("error_description"), str):
        text += f": {printable(answer['error_description'], 160)}"
    return text


def choose_scope(client: ClientSettings, challenge: Dict[str, str], server: _Server, previous: Optional[str] = None) -> Optional[str]:
    """The scope to ask for: configured > WWW-Authenticate > the resource's scopes_supported > none.

    A step-up keeps what was granted before; ``offline_access`` is added only
    when the authorization server lists it (so a refresh token may come).
    """
    scope = client.scope or challenge.get("scope") or " ".join(server.scopes_supported) or None
    if previous is not None and challenge.get("scope"):
        scope = f"{scope} {challenge['scope']}"  # a step-up: what the challenge asks for, whatever is configured
    if scope is None:
        return None
    words = (previous or "").split() + scope.split()
    as_scopes = server.metadata.get("scopes_supported")
    if isinstance(as_scopes, list) and "offline_access" in as_scopes:
        words.append("offline_access")
    unique: List[str] = []
    for word in words:
        if word not in unique:
            unique.append(word)
    return " ".join(unique)


def _pkce() -> Tuple[str, str]:
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")
    return verifier, challenge


def _with_query(url: str, params: Dict[str, str]) -> str:
    return url + ("&" if urlsplit(url).query else "?") + urlencode(params)


def authorize(
    server_url: str,
    open_url: Callable[[str], str],
    redirect_uri: str,
    *,
    www_authenticate: Optional[str] = None,
    client: Optional[ClientSettings] = None,
    previous: Optional[Grant] = None,
    timeout: float = 30.0,
) -> Grant:
    """Run the authorization code flow with PKCE for the MCP server at ``server_url``; return the new grant.

    ``open_url(authorization_url)`` must return the URL the browser was sent
    back to (``redirect_uri`` with ``code`` and ``state``).  Without
    ``www_authenticate`` the server is probed for its 401 first.  A
    ``previous`` grant for the same authorization server and redirect URI
    lends its client registration and its scope (a step-up asks for more).
    """
    client = client or ClientSettings()
    _check_url(server_url, "MCP server URL")  # the token will go there: never in clear to another host
    if www_authenticate is None:
        www_authenticate = probe(server_url, timeout)
    challenge = bearer_challenge(www_authenticate)
    server = _discover(server_url, www_authenticate, timeout)
    metadata = server.metadata
    authorization_endpoint = _check_url(str(metadata["authorization_endpoint"]), "authorization endpoint")
    token_endpoint = _check_url(str(metadata["token_endpoint"]), "token endpoint")
    reuse = previous is not None and previous.issuer == server.issuer and previous.redirect_uri == redirect_uri and not client.client_id
    if reuse and previous is not None:
        client_id, client_secret, method = previous.client_id, previous.client_secret, previous.token_endpoint_auth_method
    else:
        client_id, client_secret, method = _register(server, client, redirect_uri, timeout)
    same_resource = previous is not None and previous.resource == server.resource
    scope = choose_scope(client, challenge, server, previous.scope if same_resource and previous is not None else None)
    verifier, code_challenge = _pkce()
    state = secrets.token_urlsafe(32)
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": code_challenge,
        "code_challenge_method": "S256",
        "state": state,
        "resource": server.resource,
    }
    if scope:
        params["scope"] = scope
    logger.debug("authorizing at %s (client %s, scope %s)", redact_url(authorization_endpoint), client_id, scope or "(none)")
    callback = open_url(_with_query(authorization_endpoint, params))
    answer = {k: v[0] for k, v in parse_qs(urlsplit(callback or "").query).items()}
    if answer.get("state") != state:
        raise OAuthError("the authorization answer's state does not match the request (a stale or forged redirect); run toolscript auth again")
    if "error" in answer:
        raise OAuthError(
            f"the authorization server refused: {printable(answer['error'], 60)}"
            + (f": {printable(answer['error_description'], 160)}" if answer.get("error_description") else "")
            + "; run toolscript auth again"
        )
    if "iss" in answer and answer["iss"].rstrip("/") != server.issuer.rstrip("/"):
        raise OAuthError("the authorization answer comes from another issuer than the one asked (RFC 9207); run toolscript auth again")
    if "iss" not in answer and metadata.get("authorization_response_iss_parameter_supported") is True:
        raise OAuthError("the authorization answer lacks the iss its server promises (RFC 9207: a possible mix-up attack); "
                         "run toolscript auth again")
    code = answer.get("code")
    if not code:
        raise OAuthError("the authorization answer has no code; run toolscript auth again")
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier, "resource": server.resource}
    tokens = _token_request(token_endpoint, form, client_id, client_secret, method, timeout, secrets_to_hide=(code, verifier))
    return _grant_from(tokens, None, scope, resource=server.resource, issuer=server.issuer, authorization_endpoint=authorization_endpoint,
                       token_endpoint=token_endpoint, client_id=client_id, client_secret=client_secret, token_endpoint_auth_method=method,
                       redirect_uri=redirect_uri, revocation_endpoint=_revocation_endpoint(metadata))


def _revocation_endpoint(metadata: Dict[str, Any]) -> Optional[str]:
    """The metadata's RFC 7009 revocation endpoint when it is usable (a bad one must not fail a sign-in: it is just not used)."""
    endpoint = metadata.get("revocation_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        return None
    try:
        return _check_url(endpoint, "revocation endpoint")
    except OAuthError as exc:
        logger.debug("not using the revocation endpoint: %s", exc)
        return None


def _token_request(
    endpoint: str,
    form: Dict[str, str],
    client_id: str,
    client_secret: Optional[str],
    method: str,
    timeout: float,
    secrets_to_hide: Tuple[str, ...] = (),
) -> Dict[str, Any]:
    """POST to the token endpoint with the client's authentication; the token answer, or OAuthError."""
    headers, form = _client_authentication(form, client_id, client_secret, method)
    status, _, data = _http("POST", endpoint, timeout, body=urlencode(form).encode("ascii"), headers=headers)
    answer = _json_object(data)
    if status != 200 or not isinstance(answer.get("access_token"), str) or not answer["access_token"]:
        if answer.get("error") == "invalid_grant" and form.get("grant_type") == "refresh_token":
            raise AuthRequired(reason="the authorization server refused the refresh token (invalid_grant)")
        text = _describe_oauth_error(status, answer)
        for secret in secrets_to_hide + ((client_secret,) if client_secret else ()):
            text = text.replace(secret, "***")
        raise OAuthError(f"the token endpoint {redact_url(endpoint)} refused ({text}); run toolscript auth again")
    if not _is_header_safe(answer["access_token"]):
        # It goes into an Authorization header as is: a space, a control character or a CR/LF would break or inject headers.
        raise OAuthError(f"the token endpoint {redact_url(endpoint)} issued an access token with characters a Bearer token cannot have; "
                         "report it to the authorization server's operator")
    token_type = answer.get("token_type")
    if isinstance(token_type, str) and token_type.lower() != "bearer":
        raise OAuthError(f"the token endpoint {redact_url(endpoint)} issued a {token_type[:20]!r} token; toolscript supports only Bearer tokens")
    return answer


def _is_header_safe(token: str) -> bool:
    """Whether ``token`` can follow ``Bearer `` in a header: visible ASCII only (RFC 6750's b64token is stricter still)."""
    return all("\x21" <= char <= "\x7e" for char in token)


def _expires_at(expires_in: Any) -> Optional[float]:
    """When a token with this ``expires_in`` expires: a number or a numeric string as some servers send.

    None (unknown: a 401 will tell) for anything else, and for a lifetime that
    is not positive and finite; a huge one is capped, so the grant stays storable and showable.
    """
    if expires_in is None or isinstance(expires_in, bool):
        return None
    try:
        seconds = float(expires_in)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(seconds) or seconds <= 0:
        return None
    return time.time() + min(seconds, MAX_EXPIRES_IN_SECONDS)


def _client_authentication(form: Dict[str, str], client_id: str, client_secret: Optional[str], method: str) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(headers, form) of a form POST to the token or revocation endpoint, with the client authenticated as registered."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    form = dict(form)
    if method == "client_secret_basic" and client_secret is not None:
        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"  # RFC 6749 2.3.1: form-encoded first
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    else:
        form["client_id"] = client_id
        if method == "client_secret_post" and client_secret is not None:
            form["client_secret"] = client_secret
    return headers, form


def _grant_from(tokens: Dict[str, Any], previous_refresh: Optional[str], requested_scope: Optional[str], **known: Any) -> Grant:
    expires_at = _expires_at(tokens.get("expires_in"))
    refresh_token = tokens.get("refresh_token") if isinstance(tokens.get("refresh_token"), str) else previous_refresh
    scope = tokens.get("scope") if isinstance(tokens.get("scope"), str) else requested_scope
    return Grant(access_token=tokens["access_token"], refresh_token=refresh_token, expires_at=expires_at, scope=scope, **known)


def refresh(grant: Grant, timeout: float = 30.0) -> Grant:
    """A new grant from the refresh token; AuthRequired when there is none or the server refuses it (invalid_grant)."""
    if not grant.refresh_token:
        raise AuthRequired(reason="the token expired and there is no refresh token")
    form = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
    if grant.resource:
        form["resource"] = grant.resource
    tokens = _token_request(
        _check_url(grant.token_endpoint, "token endpoint"), form, grant.client_id, grant.client_secret, grant.token_endpoint_auth_method,
        timeout, secrets_to_hide=(grant.refresh_token,),
    )
    known = {k: v for k, v in grant.to_dict().items() if k not in ("access_token", "refresh_token", "expires_at", "scope")}
    return _grant_from(tokens, grant.refresh_token, grant.scope, **known)


REVOKE_TIMEOUT_SECONDS = 5.0  # logout revokes best effort: an unreachable server must not hold it up


def revoke(grant: Grant, timeout: float = REVOKE_TIMEOUT_SECONDS) -> List[str]:
    """Revoke the grant's tokens at its authorization server (RFC 7009); the kinds revoked, refresh token first.

    [] when the server offers no revocation endpoint (none stored at sign-in,
    and its metadata names none).  A refresh token the server refuses to revoke
    is an ``OAuthError``; an access token it does not revoke
    (``unsupported_token_type``, common for self-contained tokens) is left out
    of the list.  Nothing secret is in an error.
    """
    endpoint = grant.revocation_endpoint
    if not endpoint and grant.issuer:
        # A grant stored before toolscript kept the endpoint: ask the authorization server's metadata.
        metadata = discover_authorization_server(grant.issuer, timeout)
        endpoint = _revocation_endpoint(metadata) if metadata is not None else None
    if not endpoint:
        return []
    _check_url(endpoint, "revocation endpoint")
    hide = tuple(value for value in (grant.refresh_token, grant.access_token, grant.client_secret) if value)
    revoked: List[str] = []
    for token, hint in ((grant.refresh_token, "refresh_token"), (grant.access_token, "access_token")):
        if not token:
            continue
        headers, form = _client_authentication({"token": token, "token_type_hint": hint}, grant.client_id, grant.client_secret,
                                               grant.token_endpoint_auth_method)
        status, _, data = _http("POST", endpoint, timeout, body=urlencode(form).encode("ascii"), headers=headers)
        if status == 200:
            revoked.append(hint)
            continue
        answer = _json_object(data)
        if hint == "access_token" and answer.get("error") == "unsupported_token_type" and revoked:
            continue  # the refresh token is gone; this server lets access tokens run out instead
        text = _describe_oauth_error(status, answer)
        for secret in hide:
            text = text.replace(secret, "***")
        raise OAuthError(f"the revocation endpoint {redact_url(endpoint)} refused the {hint.replace('_', ' ')} ({text})")
    return revoked


def probe(server_url: str, timeout: float = 10.0) -> Optional[str]:
    """The WWW-Authenticate of the server's 401 (``""`` when the 401 has none), or None when it needs no auth.

    POSTs an ``initialize`` as any MCP client would (a Streamable HTTP
    endpoint); a server that refuses POST is asked with GET (a legacy SSE one).
    A session the probe happened to open is deleted again.
    """
    body = json.dumps(_MCP_INIT_PROBE).encode("utf-8")
    endpoint = Endpoint(server_url)
    for method in ("POST", "GET"):
        if method == "POST":
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        else:
            headers = {"Accept": "text/event-stream"}
        headers["User-Agent"] = USER_AGENT
        try:
            conn = open_connection(endpoint, timeout)
        except McpError as exc:
            raise OAuthError(str(exc)) from exc
        try:
            conn.request(method, endpoint.target, body=body if method == "POST" else None, headers=headers)
            resp = conn.getresponse()
            status, challenge, session_id = resp.status, resp.getheader("WWW-Authenticate"), resp.getheader("Mcp-Session-Id")
        except Exception as exc:
            raise OAuthError(describe_oserror(exc, server_url)) from exc
        finally:
            conn.close()  # never read an SSE body to its end
        if status == 401:
            return challenge or ""
        if session_id and 200 <= status < 300:
            try:
                _http("DELETE", server_url, timeout, headers={"Mcp-Session-Id": session_id})
            except OAuthError:
                pass
        if status not in (400, 404, 405):
            return None
    return None
