"""``toolscript.mcp.auth.bearer.BearerAuth`` in the HTTP transports, against a real protected server.

Every request carries the token (POSTs, GET streams, the DELETE); a 401 is
refreshed, picked up from another process's sign-in, or answered by an
interactive sign-in; a 403 for more scope steps up; the token never goes to
another origin, by an SSE endpoint event or an HTTP redirect.
"""

import threading
import time
from typing import Callable, List, Optional

import pytest

from fake_oauth import REDIRECT, Hostile, MemoryStore, authorized, follow, hostile, make_grant, server, server_config  # noqa: F401  (fixtures)
from mcp_servers.oauth_fixture import OAuthFixture
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.auth.bearer import BearerAuth
from toolscript.mcp.auth.flow import AuthRequired, Grant, OAuthError
from toolscript.mcp.client.connect import open_session


# -- through the transports ----------------------------------------------------------------


def test_streamable_http_sends_the_token_on_post_get_and_delete(server: OAuthFixture) -> None:
    store = MemoryStore(authorized(server))
    server.requests.clear()  # only what the session sends
    auth = BearerAuth("remote", store.load, store.save)
    session = open_session(server_config(server.mcp_url), auth=auth)
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
    store = MemoryStore(authorized(server))
    server.requests.clear()  # only what the session sends
    session = open_session(server_config(server.sse_url, "sse"), auth=BearerAuth("remote", store.load, store.save))
    try:
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    bearer = "Bearer " + store.grant.access_token
    assert server.seen("GET", "/sse") == [bearer]
    assert set(server.seen("POST", "/messages")) == {bearer}


def test_a_token_revoked_mid_session_is_refreshed_and_the_request_retried(server: OAuthFixture) -> None:
    store = MemoryStore(authorized(server))
    first = store.grant
    session = open_session(server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        server.revoke()
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    assert store.grant.access_token != first.access_token and len(store.saves) == 1


def test_a_token_about_to_expire_is_refreshed_before_the_request(server: OAuthFixture) -> None:
    server.token_lifetime = 30  # inside the one-minute margin
    store = MemoryStore(authorized(server))
    first = store.grant
    session = open_session(server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        session.list_tools(timeout=10)
    finally:
        session.close()
    assert store.saves and store.grant.access_token != first.access_token
    assert "Bearer " + first.access_token not in server.seen("POST", "/mcp")  # never sent the expiring one


def test_revoked_tokens_without_a_way_to_renew_say_needs_auth(server: OAuthFixture) -> None:
    store = MemoryStore(authorized(server))
    session = open_session(server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    try:
        server.revoke(refresh=True)
        with pytest.raises(AuthRequired, match="^needs auth: run toolscript auth remote$"):
            session.call_tool("whoami", {}, timeout=10)
    finally:
        session.close()


def test_connecting_without_a_grant_fails_with_needs_auth(server: OAuthFixture) -> None:
    store = MemoryStore()
    with pytest.raises(AuthRequired, match="^needs auth: run toolscript auth remote$"):
        open_session(server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
    with pytest.raises(AuthRequired):
        open_session(server_config(server.sse_url, "sse"), auth=BearerAuth("remote", store.load, store.save))


def test_a_grant_saved_by_another_process_is_picked_up_on_401(server: OAuthFixture) -> None:
    store = MemoryStore(authorized(server))
    auth = BearerAuth("remote", store.load, store.save)
    session = open_session(server_config(server.mcp_url), auth=auth)
    try:
        server.revoke(refresh=True)
        store.grant = authorized(server)  # "toolscript auth remote" ran meanwhile
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()


def test_interactive_authorization_on_first_401_and_step_up_on_403(server: OAuthFixture) -> None:
    server.www_scope, server.call_scope = "mcp:read", "mcp:write"
    store = MemoryStore()
    runs: List[Optional[str]] = []

    def interactive(www: Optional[str]) -> Grant:
        runs.append(www)
        return oauth.authorize(server.mcp_url, follow, REDIRECT, www_authenticate=www, previous=store.grant, timeout=10)

    session = open_session(server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save, interactive))
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
    store = MemoryStore(authorized(server))
    session = open_session(server_config(server.mcp_url), auth=BearerAuth("remote", store.load, store.save))
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
    store = MemoryStore(authorized(server))
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
    store = MemoryStore()
    auth = BearerAuth("remote", store.load, store.save, lambda www: runs.append(www) or authorized(server))
    assert auth.on_unauthorized(401, None, used=None) is True  # the first request: authorizes
    assert auth.on_unauthorized(401, None, used=None) is True  # a concurrent one sent without a token: just retry
    assert len(runs) == 1


def test_legacy_sse_post_refused_mid_session_is_refreshed_and_retried(server: OAuthFixture) -> None:
    store = MemoryStore(authorized(server))
    first = store.grant
    session = open_session(server_config(server.sse_url, "sse"), auth=BearerAuth("remote", store.load, store.save))
    try:
        server.revoke()  # the open stream stays; the next POST is refused
        assert session.call_tool("whoami", {}, timeout=10)["content"][0]["text"] == "you are authorized"
    finally:
        session.close()
    assert store.grant.access_token != first.access_token
    assert server.seen("POST", "/messages")[-2:] == ["Bearer " + first.access_token, "Bearer " + store.grant.access_token]


# -- the bearer token never goes to another origin -------------------------------------------------


def _auth_with_token(url: str) -> BearerAuth:
    grant = make_grant("http://127.0.0.1:9/token", resource=url, access_token="at-secret-token", expires_at=time.time() + 3600)
    return BearerAuth("remote", lambda: grant, lambda new: None)


@pytest.mark.parametrize("endpoint", ["{other}/messages", "//localhost:{port}/messages", "https://127.0.0.1:{port}/messages"])
def test_a_legacy_sse_endpoint_event_naming_another_origin_gets_no_token(hostile: Callable[[], Hostile], endpoint: str) -> None:
    from toolscript.config.load import ServerConfig
    from toolscript.mcp.client.connect import open_session
    from toolscript.mcp.errors import McpError

    server, other = hostile(), hostile()
    event = "event: endpoint\ndata: " + endpoint.format(other=other.base, port=server.port) + "\n\n"
    server.routes[("GET", "/sse")] = (200, {"Content-Type": "text/event-stream"}, event.encode())
    config = ServerConfig(name="remote", type="sse", source="<test>", url=server.base + "/sse", timeout=5.0)
    with pytest.raises(McpError, match="another origin"):
        open_session(config, auth=_auth_with_token(config.url))
    assert other.seen == [] and [s for s in server.seen if s[0] == "POST"] == []


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_an_http_redirect_is_not_followed_with_the_token(hostile: Callable[[], Hostile], status: int) -> None:
    from toolscript.config.load import ServerConfig
    from toolscript.mcp.client.connect import open_session
    from toolscript.mcp.errors import McpError

    server, other = hostile(), hostile()
    server.routes[("POST", "/mcp")] = (status, {"Location": other.base + "/mcp"}, b"")
    config = ServerConfig(name="remote", type="http", source="<test>", url=server.base + "/mcp", timeout=5.0)
    with pytest.raises(McpError):
        open_session(config, auth=_auth_with_token(config.url))
    assert other.seen == []
