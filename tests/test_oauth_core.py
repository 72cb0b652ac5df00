"""toolscript/mcp/auth/flow.py and the OAuth hook of the HTTP transports, against a real protected server.

The server is tests/mcp_servers/oauth_fixture.py: an MCP endpoint (Streamable
HTTP and legacy SSE) that demands a bearer token, its protected resource
metadata, and an authorization server that checks PKCE, client authentication
and refresh tokens.  "The browser" is ``follow``: it GETs the authorization
URL and returns the redirect's Location (the fixture approves at once).

The conformance suite's own authorization scenarios run in
tests/test_conformance_client.py.
"""

import http.client
import threading
import time
from typing import Any, Dict, List, Optional
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from mcp_servers.oauth_fixture import OAuthFixture
from toolscript.config.load import ServerConfig
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.client.connect import open_session
from toolscript.mcp.auth.bearer import BearerAuth
from toolscript.mcp.auth.flow import AuthRequired, ClientSettings, Grant, OAuthError

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


def _server_config(url: str, type_: str = "http") -> ServerConfig:
    return ServerConfig(name="remote", type=type_, source="<test>", url=url, timeout=10.0)


class Store:
    """An in-memory token store, as O2's file store would be used."""

    def __init__(self, grant: Optional[Grant] = None) -> None:
        self.grant = grant
        self.saves: List[Grant] = []

    def load(self) -> Optional[Grant]:
        return self.grant

    def save(self, grant: Grant) -> None:
        self.grant = grant
        self.saves.append(grant)


def _authorized(server: OAuthFixture, **kwargs: Any) -> Grant:
    return oauth.authorize(server.mcp_url, follow, REDIRECT, timeout=10, **kwargs)


# -- WWW-Authenticate ----------------------------------------------------------------


def test_www_authenticate_parsing_tolerates_quoting_commas_and_several_challenges() -> None:
    header = 'Basic realm="a, b", Bearer error="insufficient_scope",scope="files:read files:write" , resource_metadata=' \
             '"https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="say \\"please\\""'
    assert oauth.bearer_challenge(header) == {
        "error": "insufficient_scope",
        "scope": "files:read files:write",
        "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "error_description": 'say "please"',
    }
    assert oauth.bearer_challenge("bearer scope=tools realm=x") == {"scope": "tools", "realm": "x"}  # unquoted, any case
    assert oauth.bearer_challenge('Basic realm="x"') == {}
    assert oauth.bearer_challenge("") == {}
    assert oauth.bearer_challenge('=junk, Bearer scope="a"') == {"scope": "a"}


# -- discovery order -----------------------------------------------------------------


def test_metadata_urls_follow_the_spec_order() -> None:
    assert oauth.prm_urls("https://h.example/api/mcp", "https://h.example/custom.json") == [
        "https://h.example/custom.json",
        "https://h.example/.well-known/oauth-protected-resource/api/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert oauth.prm_urls("https://h.example/") == ["https://h.example/.well-known/oauth-protected-resource"]
    assert oauth.as_metadata_urls("https://auth.example/tenant1") == [
        "https://auth.example/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example/.well-known/openid-configuration/tenant1",
        "https://auth.example/tenant1/.well-known/openid-configuration",
    ]
    assert oauth.as_metadata_urls("https://auth.example") == [
        "https://auth.example/.well-known/oauth-authorization-server",
        "https://auth.example/.well-known/openid-configuration",
    ]


def test_resource_must_name_the_server() -> None:
    assert oauth.resource_matches("https://h.example/mcp", "https://h.example/mcp")
    assert oauth.resource_matches("https://h.example", "https://h.example/mcp")  # a parent path
    assert oauth.resource_matches("https://H.example:443/mcp/", "https://h.example/mcp")
    assert not oauth.resource_matches("https://h.example/mc", "https://h.example/mcp")
    assert not oauth.resource_matches("https://evil.example/mcp", "https://h.example/mcp")
    assert not oauth.resource_matches("http://h.example/mcp", "https://h.example/mcp")


# -- the authorization code flow -------------------------------------------------------


def test_authorize_discovers_registers_and_exchanges_with_pkce(server: OAuthFixture) -> None:
    server.scopes_supported = ["mcp:tools", "offline_access"]
    grant = _authorized(server)
    query = server.authorize_queries[-1]
    assert query["code_challenge_method"] == "S256" and query["state"] and query["resource"] == server.mcp_url
    assert query["scope"] == "mcp:tools offline_access"  # the resource's scopes, plus offline_access the AS lists
    assert grant.resource == server.mcp_url and grant.issuer == server.issuer
    assert grant.access_token in server.tokens and grant.refresh_token in server.refresh_tokens
    assert grant.token_endpoint_auth_method == "none" and grant.client_id in server.clients
    assert server.token_forms[-1]["resource"] == server.mcp_url
    assert grant.expires_at is not None and grant.expires_at > time.time() + 3000
    # Discovery went by the 401's resource_metadata (no well-known guessing needed).
    assert server.paths()[:3] == ["/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"]


def test_scope_comes_from_www_authenticate_first_and_is_omitted_when_nothing_names_one(server: OAuthFixture) -> None:
    server.www_scope, server.scopes_supported = "mcp:read", ["mcp:read", "mcp:write"]
    _authorized(server)
    assert server.authorize_queries[-1]["scope"] == "mcp:read"
    server.www_scope, server.scopes_supported = None, None
    _authorized(server)
    assert "scope" not in server.authorize_queries[-1]
    _authorized(server, client=ClientSettings(scope="configured"))
    assert server.authorize_queries[-1]["scope"] == "configured"


def test_pkce_verifier_and_state_are_fresh_each_time(server: OAuthFixture) -> None:
    _authorized(server)
    _authorized(server)
    first, second = server.authorize_queries[-2:]
    assert first["state"] != second["state"] and first["code_challenge"] != second["code_challenge"]
    assert len(server.token_forms[-1]["code_verifier"]) >= 43


def test_a_tampered_state_is_refused_before_any_token_request(server: OAuthFixture) -> None:
    def tampered(url: str) -> str:
        callback = follow(url)
        return callback.replace("state=", "state=x")

    with pytest.raises(OAuthError, match="state does not match"):
        oauth.authorize(server.mcp_url, tampered, REDIRECT, timeout=10)
    assert server.token_forms == []


def test_an_authorization_error_in_the_redirect_is_reported(server: OAuthFixture) -> None:
    def denied(url: str) -> str:
        state = parse_qs(urlsplit(url).query)["state"][0]
        return f"{REDIRECT}?error=access_denied&error_description=the+user+said+no&state={state}"

    with pytest.raises(OAuthError, match="refused: access_denied: the user said no"):
        oauth.authorize(server.mcp_url, denied, REDIRECT, timeout=10)


def test_a_resource_that_is_not_the_server_is_refused_before_authorizing(server: OAuthFixture) -> None:
    server.prm_resource = "https://evil.example.com/mcp"
    with pytest.raises(OAuthError, match="refusing to authorize"):
        _authorized(server)
    assert server.authorize_queries == [] and server.clients == {}


def test_an_issuer_that_differs_from_the_metadata_url_is_refused(server: OAuthFixture) -> None:
    server.issuer_override = "http://127.0.0.1:1/other"
    with pytest.raises(OAuthError, match="names issuer"):
        _authorized(server)


def test_a_non_loopback_http_authorization_server_is_refused_without_contacting_it(server: OAuthFixture) -> None:
    server.prm_authorization_server = "http://auth.invalid"  # plain http at a public name
    with pytest.raises(OAuthError, match="not https"):
        _authorized(server)
    assert server.clients == {}


def test_path_issuer_metadata_is_found_by_path_insertion(server: OAuthFixture) -> None:
    server.as_prefix = "/tenant1"
    grant = _authorized(server)
    assert grant.issuer == server.base + "/tenant1"
    assert "/.well-known/oauth-authorization-server/tenant1" in server.paths()
    assert "/.well-known/oauth-authorization-server" not in server.paths()  # never the root for a path issuer


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
def test_token_endpoint_client_authentication_follows_registration(server: OAuthFixture, method: str) -> None:
    server.auth_methods = [method]
    server.registered_method = method
    grant = _authorized(server)  # the fixture refuses any other client authentication with 401
    assert grant.token_endpoint_auth_method == method
    assert server.clients[grant.client_id]["request"]["token_endpoint_auth_method"] == method
    assert server.clients[grant.client_id]["request"]["grant_types"] == ["authorization_code", "refresh_token"]


def test_pre_registered_client_skips_registration(server: OAuthFixture) -> None:
    server.auth_methods = ["client_secret_post"]
    server.clients["mine"] = {"method": "client_secret_post", "secret": "s3cret-value"}
    grant = _authorized(server, client=ClientSettings(client_id="mine", client_secret="s3cret-value"))
    assert (grant.client_id, grant.token_endpoint_auth_method) == ("mine", "client_secret_post")
    assert list(server.clients) == ["mine"]


def test_client_id_metadata_document_is_used_only_when_the_server_supports_it(server: OAuthFixture) -> None:
    cimd = "https://toolscript.example/client.json"
    grant = _authorized(server, client=ClientSettings(client_metadata_url=cimd))
    assert grant.client_id != cimd  # not advertised: dynamic registration


def test_no_secret_reaches_an_error_message(server: OAuthFixture) -> None:
    # The token endpoint echoes the (one-use) code back in its error: it must not reach the user.
    seen: Dict[str, str] = {}

    def replay(url: str) -> str:
        callback = follow(url)
        seen["code"] = parse_qs(urlsplit(callback).query)["code"][0]
        server.codes.clear()  # the code is used up before we exchange it
        return callback

    with pytest.raises(OAuthError, match="invalid_grant") as info:
        oauth.authorize(server.mcp_url, replay, REDIRECT, timeout=10)
    assert seen["code"] not in str(info.value) and "***" in str(info.value)


def test_the_client_secret_is_masked_when_the_server_echoes_it(server: OAuthFixture) -> None:
    server.auth_methods = ["client_secret_post"]
    server.clients["c"] = {"method": "client_secret_post", "secret": "right"}
    with pytest.raises(OAuthError, match="invalid_client") as info:
        _authorized(server, client=ClientSettings(client_id="c", client_secret="the-wrong-secret"))
    assert "the-wrong-secret" not in str(info.value) and "***" in str(info.value)


# -- refresh, grants, probe ----------------------------------------------------------------


def test_refresh_rotates_tokens_and_a_refused_refresh_token_needs_auth(server: OAuthFixture) -> None:
    grant = _authorized(server)
    renewed = oauth.refresh(grant, timeout=10)
    assert renewed.access_token != grant.access_token and renewed.access_token in server.tokens
    assert renewed.refresh_token != grant.refresh_token and renewed.client_id == grant.client_id
    assert server.token_forms[-1]["resource"] == server.mcp_url
    with pytest.raises(AuthRequired, match="^needs auth: run toolscript auth SERVER$"):
        oauth.refresh(grant, timeout=10)  # the old refresh token was rotated away


def test_grant_round_trips_through_json_and_rejects_garbage() -> None:
    grant = Grant("https://h/mcp", "https://a", "https://a/authorize", "https://a/token", "cid", None, "none", "tok", "ref", 123.5, "s", "http://127.0.0.1:1/cb")
    assert Grant.from_dict(grant.to_dict()) == grant
    with pytest.raises(OAuthError, match="run toolscript auth again"):
        Grant.from_dict({"resource": "x"})
    with pytest.raises(OAuthError):
        Grant.from_dict(dict(grant.to_dict(), access_token=5))
    assert "tok" not in oauth.mask("tok") and oauth.mask("abcdefghijkl").startswith("abcd")


def test_probe_returns_the_challenge_or_none(server: OAuthFixture) -> None:
    assert "resource_metadata=" in (oauth.probe(server.mcp_url, timeout=10) or "")
    with OAuthFixture(open_access=True) as open_server:
        assert oauth.probe(open_server.mcp_url, timeout=10) is None
        assert open_server.seen("DELETE", "/mcp") == [None]  # the session the probe opened is closed again


# -- through the transports ----------------------------------------------------------------


def test_streamable_http_sends_the_token_on_post_get_and_delete(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    server.requests.clear()  # only what the session sends
    auth = BearerAuth("remote", store.load, store.save)
    session = open_session(_server_config(server.mcp_url), auth=auth)
    try:
        assert [t["name"] for t in session.list_tools(timeout=10)] == ["whoami"]
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
        deadline = time.monotonic() + 10
        while not server.seen("GET", "/mcp") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        session.close()
    bearer = "Bearer " + store.grant.access_token
    assert set(server.seen("POST", "/mcp")) == {bearer}
    assert server.seen("GET", "/mcp") == [bearer]
    assert server.seen("DELETE", "/mcp") == [bearer]


def test_legacy_sse_sends_the_token_on_the_stream_and_posts(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    server.requests.clear()  # only what the session sends
    session = open_session(_server_config(server.sse_url, "sse"), auth=BearerAuth("remote", store.load, store.save))
    try:
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    bearer = "Bearer " + store.grant.access_token
    assert server.seen("GET", "/sse") == [bearer]
    assert set(server.seen("POST", "/messages")) == {bearer}


def test_a_token_revoked_mid_session_is_refreshed_and_the_request_retried(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    first = store.grant
    session = open_session(_server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        server.revoke()
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    assert store.grant.access_token != first.access_token and len(store.saves) == 1


def test_a_token_about_to_expire_is_refreshed_before_the_request(server: OAuthFixture) -> None:
    server.token_lifetime = 30  # inside the one-minute margin
    store = Store(_authorized(server))
    first = store.grant
    session = open_session(_server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        session.list_tools(timeout=10)
    finally:
        session.close()
    assert store.saves and store.grant.access_token != first.access_token
    assert "Bearer " + first.access_token not in server.seen("POST", "/mcp")  # never sent the expiring one


def test_revoked_tokens_without_a_way_to_renew_say_needs_auth(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    session = open_session(_server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        server.revoke(refresh=True)
        with pytest.raises(AuthRequired, match="^needs auth: run toolscript auth remote$"):
            session.call_tool("whoami", {}, timeout=10)
    finally:
        session.close()


def test_connecting_without_a_grant_fails_with_needs_auth(server: OAuthFixture) -> None:
    store = Store()
    with pytest.raises(AuthRequired, match="^needs auth: run toolscript auth remote$"):
        open_session(_server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    with pytest.raises(AuthRequired):
        open_session(_server_config(server.sse_url, "sse"), auth=BearerAuth("remote", store.load, store.save))


def test_a_grant_saved_by_another_process_is_picked_up_on_401(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    auth = BearerAuth("remote", store.load, store.save)
    session = open_session(_server_config(server.mcp_url), auth=auth)
    try:
        server.revoke(refresh=True)
        store.grant = _authorized(server)  # "toolscript auth remote" ran meanwhile
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()


def test_interactive_authorization_on_first_401_and_step_up_on_403(server: OAuthFixture) -> None:
    server.www_scope, server.call_scope = "mcp:read", "mcp:write"
    store = Store()
    runs: List[Optional[str]] = []

    def interactive(www: Optional[str]) -> Grant:
        runs.append(www)
        return oauth.authorize(server.mcp_url, follow, REDIRECT, www_authenticate=www, previous=store.grant, timeout=10)

    session = open_session(_server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save, interactive))
    try:
        session.list_tools(timeout=10)
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    assert len(runs) == 2 and "insufficient_scope" in (runs[1] or "")
    assert [q.get("scope") for q in server.authorize_queries] == ["mcp:read", "mcp:read mcp:write"]
    assert len(server.clients) == 1  # the step-up reused the registration


def test_step_up_without_interactive_needs_auth_and_a_scope_never_enough_stops(server: OAuthFixture) -> None:
    server.call_scope = "mcp:admin"
    store = Store(_authorized(server))
    session = open_session(_server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        with pytest.raises(AuthRequired):
            session.call_tool("whoami", {}, timeout=10)
    finally:
        session.close()
    # A server that keeps asking for a scope it was given: one step-up, then a clear error, not a loop.
    auth = BearerAuth("remote", store.load, store.save, lambda www: Grant.from_dict(dict(store.grant.to_dict(), scope="mcp:admin")))
    with pytest.raises(OAuthError, match="even though it was granted mcp:admin"):
        auth.on_unauthorized(403, 'Bearer error="insufficient_scope", scope="mcp:admin"')
        auth.on_unauthorized(403, 'Bearer error="insufficient_scope", scope="mcp:admin"')
    assert auth.on_unauthorized(403, 'Bearer error="forbidden"') is False  # not a scope problem: not ours


def test_concurrent_401s_refresh_once(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    auth = BearerAuth("remote", store.load, store.save)
    used = auth.authorization()
    server.revoke()
    results: List[bool] = []
    threads = [threading.Thread(target=lambda: results.append(auth.on_unauthorized(401, None, used=used))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [True] * 4
    assert len(store.saves) == 1  # the others saw the renewed grant and just retried


def test_a_request_sent_before_a_grant_existed_just_retries_once_one_exists(server: OAuthFixture) -> None:
    runs: List[Optional[str]] = []
    store = Store()
    auth = BearerAuth("remote", store.load, store.save, lambda www: runs.append(www) or _authorized(server))
    assert auth.on_unauthorized(401, None, used=None) is True  # the first request: authorizes
    assert auth.on_unauthorized(401, None, used=None) is True  # a concurrent one sent without a token: just retry
    assert len(runs) == 1


def test_a_numeric_string_expires_in_is_understood(server: OAuthFixture) -> None:
    grant = oauth._grant_from({"access_token": "t", "expires_in": "120"}, None, None, **{k: "" for k in (
        "resource", "issuer", "authorization_endpoint", "token_endpoint", "client_id", "token_endpoint_auth_method", "redirect_uri")}, client_secret=None)
    assert grant.expires_at is not None and 100 < grant.expires_at - time.time() <= 120


def test_a_client_metadata_url_must_be_https_with_a_path() -> None:
    server = oauth._Server("https://h/mcp", "https://a", {"client_id_metadata_document_supported": True}, [])
    with pytest.raises(OAuthError, match="must be an https URL"):
        oauth._register(server, ClientSettings(client_metadata_url="http://toolscript.example/client.json"), REDIRECT, 1.0)
    assert oauth._register(server, ClientSettings(client_metadata_url="https://toolscript.example/client.json"), REDIRECT, 1.0) == (
        "https://toolscript.example/client.json", None, "none")


def test_legacy_sse_post_refused_mid_session_is_refreshed_and_retried(server: OAuthFixture) -> None:
    store = Store(_authorized(server))
    first = store.grant
    session = open_session(_server_config(server.sse_url, "sse"), auth=BearerAuth("remote", store.load, store.save))
    try:
        server.revoke()  # the open stream stays; the next POST is refused
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    assert store.grant.access_token != first.access_token
    assert server.seen("POST", "/messages")[-2:] == ["Bearer " + first.access_token, "Bearer " + store.grant.access_token]
