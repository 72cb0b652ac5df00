"""``toolscript.mcp.auth.flow``: discovery, registration, the authorization code flow, refresh, revocation, probe.

Against ``tests/mcp_servers/oauth_fixture.py`` (an MCP endpoint that demands a
bearer token, its protected resource metadata, and an authorization server
that checks PKCE, client authentication and refresh tokens), and against
scripted servers (``fake_oauth``) that answer what a hostile or broken
authorization server would.  "The browser" is ``fake_oauth.follow``.  The
conformance suite's own authorization scenarios run in
tests/e2e/test_conformance_client.py.
"""

import json
import math
import time
from typing import Any, Callable, Dict, List
from urllib.parse import parse_qs, urlsplit

import pytest

from fake_oauth import REDIRECT, Hostile, TokenEndpoint, authorized, follow, hostile, make_grant, server, token_endpoint  # noqa: F401  (fixtures)
from mcp_servers.oauth_fixture import OAuthFixture
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.auth import login as oauth_login
from toolscript.mcp.auth.flow import AuthRequired, ClientSettings, Grant, OAuthError


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
    grant = authorized(server)
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
    authorized(server)
    assert server.authorize_queries[-1]["scope"] == "mcp:read"
    server.www_scope, server.scopes_supported = None, None
    authorized(server)
    assert "scope" not in server.authorize_queries[-1]
    authorized(server, client=ClientSettings(scope="configured"))
    assert server.authorize_queries[-1]["scope"] == "configured"


def test_pkce_verifier_and_state_are_fresh_each_time(server: OAuthFixture) -> None:
    authorized(server)
    authorized(server)
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
        authorized(server)
    assert server.authorize_queries == [] and server.clients == {}


def test_an_issuer_that_differs_from_the_metadata_url_is_refused(server: OAuthFixture) -> None:
    server.issuer_override = "http://127.0.0.1:1/other"
    with pytest.raises(OAuthError, match="names issuer"):
        authorized(server)


def test_a_non_loopback_http_authorization_server_is_refused_without_contacting_it(server: OAuthFixture) -> None:
    server.prm_authorization_server = "http://auth.invalid"  # plain http at a public name
    with pytest.raises(OAuthError, match="not https"):
        authorized(server)
    assert server.clients == {}


def test_path_issuer_metadata_is_found_by_path_insertion(server: OAuthFixture) -> None:
    server.as_prefix = "/tenant1"
    grant = authorized(server)
    assert grant.issuer == server.base + "/tenant1"
    assert "/.well-known/oauth-authorization-server/tenant1" in server.paths()
    assert "/.well-known/oauth-authorization-server" not in server.paths()  # never the root for a path issuer


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
def test_token_endpoint_client_authentication_follows_registration(server: OAuthFixture, method: str) -> None:
    server.auth_methods = [method]
    server.registered_method = method
    grant = authorized(server)  # the fixture refuses any other client authentication with 401
    assert grant.token_endpoint_auth_method == method
    assert server.clients[grant.client_id]["request"]["token_endpoint_auth_method"] == method
    assert server.clients[grant.client_id]["request"]["grant_types"] == ["authorization_code", "refresh_token"]


def test_pre_registered_client_skips_registration(server: OAuthFixture) -> None:
    server.auth_methods = ["client_secret_post"]
    server.clients["mine"] = {"method": "client_secret_post", "secret": "s3cret-value"}
    grant = authorized(server, client=ClientSettings(client_id="mine", client_secret="s3cret-value"))
    assert (grant.client_id, grant.token_endpoint_auth_method) == ("mine", "client_secret_post")
    assert list(server.clients) == ["mine"]


def test_client_id_metadata_document_is_used_only_when_the_server_supports_it(server: OAuthFixture) -> None:
    cimd = "https://toolscript.example/client.json"
    grant = authorized(server, client=ClientSettings(client_metadata_url=cimd))
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
        authorized(server, client=ClientSettings(client_id="c", client_secret="the-wrong-secret"))
    assert "the-wrong-secret" not in str(info.value) and "***" in str(info.value)


# -- refresh, grants, probe ----------------------------------------------------------------


def test_refresh_rotates_tokens_and_a_refused_refresh_token_needs_auth(server: OAuthFixture) -> None:
    grant = authorized(server)
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


# -- authorization server mix-up and plain http -------------------------------------------------------


def test_a_missing_iss_is_refused_when_the_authorization_server_promises_one() -> None:
    # RFC 9207 2.4: a client that knows the server sends iss must reject an answer without it (a mix-up attack).
    with OAuthFixture(metadata_extra={"authorization_response_iss_parameter_supported": True}) as server:
        with pytest.raises(OAuthError, match="RFC 9207"):
            oauth.authorize(server.mcp_url, follow, REDIRECT, timeout=10)
        assert server.token_forms == []  # the code was never exchanged


def test_an_iss_from_another_issuer_is_refused_and_the_right_one_accepted() -> None:
    with OAuthFixture(callback_iss="https://evil.example", metadata_extra={"authorization_response_iss_parameter_supported": True}) as server:
        with pytest.raises(OAuthError, match="another issuer"):
            oauth.authorize(server.mcp_url, follow, REDIRECT, timeout=10)
        assert server.token_forms == []
    with OAuthFixture(callback_iss="", metadata_extra={"authorization_response_iss_parameter_supported": True}) as server:
        assert oauth.authorize(server.mcp_url, follow, REDIRECT, timeout=10).access_token


def test_a_plain_http_mcp_server_on_another_host_never_gets_a_token() -> None:
    # Its 401 may point at https metadata (so discovery alone would not object); the token would then go out in clear.
    challenge = 'Bearer resource_metadata="https://metadata.invalid/.well-known/oauth-protected-resource"'
    with pytest.raises(OAuthError, match="not https"):
        oauth.authorize("http://mcp.invalid/mcp", follow, REDIRECT, www_authenticate=challenge, timeout=2)


# -- hostile token responses -----------------------------------------------------------------------


@pytest.mark.parametrize("expires_in", [float("nan"), float("inf"), 1e300, "1e400", "nan", -3600, 0, "-5", 10 ** 30])
def test_a_hostile_expires_in_gives_a_usable_grant_that_lists_and_round_trips(token_endpoint: TokenEndpoint, expires_in: Any) -> None:
    from toolscript.mcp.auth import store as oauth_store

    body = json.dumps({"access_token": "at-new-token", "token_type": "Bearer", "expires_in": expires_in}).encode()  # NaN/Infinity as Python writes them
    token_endpoint.answer(body)
    grant = oauth.refresh(make_grant(token_endpoint.url), timeout=10)
    assert grant.access_token == "at-new-token"
    assert grant.expires_at is None or (math.isfinite(grant.expires_at) and time.time() < grant.expires_at <= time.time() + oauth.MAX_EXPIRES_IN_SECONDS)
    shown = oauth_store.describe(grant)  # auth --list and the sign-in message format the expiry
    assert oauth_login.expires_in(grant)
    assert json.loads(json.dumps(grant.to_dict(), allow_nan=False))["access_token"] == "at-new-token"
    assert shown["accessToken"].startswith("at-n")


def test_a_stored_grant_with_a_non_finite_expiry_is_read_as_no_expiry() -> None:
    data = make_grant("http://127.0.0.1:9/token").to_dict()
    for bad in (float("nan"), float("inf"), 1e300):
        data["expires_at"] = bad
        assert Grant.from_dict(data).expires_at is None


@pytest.mark.parametrize("token", ["at with space", "at\r\nX-Injected: 1", "at\x00", "", 42, ["at"], "at-é"])
def test_an_access_token_that_cannot_be_a_header_value_is_refused(token_endpoint: TokenEndpoint, token: Any) -> None:
    token_endpoint.answer({"access_token": token, "token_type": "Bearer", "expires_in": 60})
    with pytest.raises(OAuthError) as caught:
        oauth.refresh(make_grant(token_endpoint.url), timeout=10)
    assert "\n" not in str(caught.value) and "X-Injected" not in str(caught.value)


@pytest.mark.parametrize("body", [b"<html>oops</html>", b"[1, 2]", b"\xff\xfe", b"x" * (oauth.MAX_RESPONSE_BYTES + 10), b""])
def test_a_token_answer_that_is_not_a_json_object_is_an_error_not_a_crash(token_endpoint: TokenEndpoint, body: bytes) -> None:
    token_endpoint.answer(body)
    with pytest.raises(OAuthError):
        oauth.refresh(make_grant(token_endpoint.url), timeout=10)


@pytest.mark.timeout(60)
def test_a_token_endpoint_that_never_answers_times_out(token_endpoint: TokenEndpoint) -> None:
    token_endpoint.delay = 8
    started = time.monotonic()
    with pytest.raises(OAuthError, match="timed out"):
        oauth.refresh(make_grant(token_endpoint.url), timeout=1)
    assert time.monotonic() - started < 7  # generous: the timeout is 1s


def test_metadata_on_another_origin_is_fetched_without_the_token(hostile: Callable[[], Hostile]) -> None:
    # The 401's resource_metadata may name any https (or loopback) URL: it is fetched, but never with a token.
    mcp, metadata = hostile(), hostile()
    challenge = f'Bearer resource_metadata="{metadata.base}/prm"'
    mcp.routes[("POST", "/mcp")] = (401, {"WWW-Authenticate": challenge}, b"{}")
    metadata.routes[("GET", "/prm")] = (200, {"Content-Type": "application/json"},
                                        json.dumps({"resource": mcp.base + "/mcp", "authorization_servers": [metadata.base]}).encode())
    with pytest.raises(OAuthError, match="no OAuth metadata"):
        oauth.authorize(mcp.base + "/mcp", follow, REDIRECT, timeout=5)  # no AS metadata there: fails after fetching the PRM
    assert metadata.seen and all(authorization is None for _, _, authorization in metadata.seen)


# -- server-supplied text on the terminal ------------------------------------------------------------------


def test_an_error_description_cannot_put_escape_sequences_on_the_terminal(token_endpoint: TokenEndpoint) -> None:
    token_endpoint.answer({"error": "invalid_client\x1b[2J", "error_description": "bad\x1b]0;pwned\x07\nsecond line"}, status=401)
    with pytest.raises(OAuthError) as caught:
        oauth.refresh(make_grant(token_endpoint.url), timeout=10)
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message and "\n" not in message
    assert "invalid_client" in message and "second line" in message


def test_a_refusal_in_the_callback_cannot_put_escape_sequences_on_the_terminal() -> None:
    with OAuthFixture() as server:
        def refused(url: str) -> str:
            state = parse_qs(urlsplit(url).query)["state"][0]
            return REDIRECT + "?error=access_denied%1B%5B31m&error_description=no%0D%0Away%1B%5D0%3Bx%07&state=" + state
        with pytest.raises(OAuthError) as caught:
            oauth.authorize(server.mcp_url, refused, REDIRECT, timeout=10)
    message = str(caught.value)
    assert "access_denied" in message and not any(char in message for char in "\x1b\x07\r\n")


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:1/authorize\x1b[2J", "http://127.0.0.1:1/auth orize", "http://127.0.0.1:1/a\nb"])
def test_a_metadata_url_with_control_characters_is_refused_before_it_is_printed(endpoint: str) -> None:
    with OAuthFixture(metadata_extra={"authorization_endpoint": endpoint}) as server:
        opened: List[str] = []
        with pytest.raises(OAuthError, match="control characters") as caught:
            oauth.authorize(server.mcp_url, lambda url: opened.append(url) or "", REDIRECT, timeout=10)
    assert opened == [] and "\x1b" not in str(caught.value) and "\n" not in str(caught.value)


# -- revocation (RFC 7009) -------------------------------------------------------------------------


def test_revoke_authenticates_the_client_and_hides_every_secret_in_errors(token_endpoint: TokenEndpoint) -> None:
    token_endpoint.answer({"error": "invalid_client", "error_description": "cs-secret-value with rt-old-refresh"}, status=401)
    grant = make_grant("http://127.0.0.1:9/token", revocation_endpoint=token_endpoint.url, refresh_token="rt-old-refresh",
                   client_secret="cs-secret-value", token_endpoint_auth_method="client_secret_post")
    with pytest.raises(OAuthError, match="refused the refresh token") as caught:
        oauth.revoke(grant)
    assert "cs-secret-value" not in str(caught.value) and "rt-old-refresh" not in str(caught.value)
    assert token_endpoint.forms[0] == {"token": "rt-old-refresh", "token_type_hint": "refresh_token", "client_id": "c",
                                       "client_secret": "cs-secret-value"}


def test_an_access_token_the_server_does_not_revoke_is_not_a_failure(token_endpoint: TokenEndpoint) -> None:
    grant = make_grant("http://127.0.0.1:9/token", revocation_endpoint=token_endpoint.url)
    token_endpoint.answer({})
    assert oauth.revoke(grant) == ["refresh_token", "access_token"]
    token_endpoint.then = [(400, json.dumps({"error": "unsupported_token_type"}).encode())]  # the access token: not revocable here
    assert oauth.revoke(grant) == ["refresh_token"]
    token_endpoint.answer({"error": "unsupported_token_type"}, status=400)  # not even the refresh token: a failure
    with pytest.raises(OAuthError, match="refused the refresh token"):
        oauth.revoke(grant)


# -- hostile metadata -------------------------------------------------------------------------------------------


def _metadata(base: str, **changes: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
                           "registration_endpoint": base + "/register", "code_challenge_methods_supported": ["S256"]}
    doc.update(changes)
    return {k: v for k, v in doc.items() if v != "<drop>"}


@pytest.mark.parametrize("prm_servers, as_doc, registration, message", [
    (None, b"x" * (oauth.MAX_RESPONSE_BYTES + 1), None, "more than"),  # oversized: not read past the bound
    (None, b"<html>not json</html>", None, "no OAuth metadata"),
    (None, {"authorization_endpoint": ["x"]}, None, "not an http"),
    (None, {"code_challenge_methods_supported": "S256"}, None, "PKCE S256"),
    (None, {"issuer": None}, None, "refusing it"),
    (None, {"token_endpoint": 7}, None, "not an http"),
    (None, {"registration_endpoint": 5}, None, "no dynamic client registration"),
    ([42], None, None, "not an http"),
    ([{"issuer": "x"}], None, None, "control characters"),
    (None, None, {"client_id": 5}, "registration"),
    (None, None, b"[]", "registration"),
], ids=["huge", "not-json", "endpoint-list", "pkce-string", "issuer-null", "token-endpoint-int", "registration-int",
        "as-int", "as-object", "client-id-int", "registration-list"])
def test_hostile_metadata_and_registration_answers_are_one_line_errors(
    hostile: Callable[[], Hostile], prm_servers: Any, as_doc: Any, registration: Any, message: str
) -> None:
    server = hostile()
    json_type = {"Content-Type": "application/json"}
    server.routes[("POST", "/mcp")] = (401, {"WWW-Authenticate": f'Bearer resource_metadata="{server.base}/prm"'}, b"{}")
    server.routes[("GET", "/prm")] = (200, json_type, json.dumps(
        {"resource": server.base + "/mcp", "authorization_servers": prm_servers or [server.base]}).encode())
    body = as_doc if isinstance(as_doc, bytes) else json.dumps(_metadata(server.base, **(as_doc or {}))).encode()
    server.routes[("GET", "/.well-known/oauth-authorization-server")] = (200, json_type, body)
    answer = registration if isinstance(registration, bytes) else json.dumps(registration or {"client_id": "c"}).encode()
    server.routes[("POST", "/register")] = (201, json_type, answer)
    with pytest.raises(OAuthError, match=message) as caught:
        oauth.authorize(server.base + "/mcp", follow, REDIRECT, timeout=5)
    assert "\n" not in str(caught.value)
