"""A legacy HTTP+SSE server with OAuth, end to end through the gateway.

Signed in with ``toolscript auth``, its calls survive a token expiry by
refreshing; without a sign-in it is "needs auth" and recovers once the user
signs in; a sign-in revoked mid-session makes it "needs auth" again.
"""

from typing import Any

import pytest

from conftest import running_gateway, wait_for
from mcp_servers import oauth_server
from oauth_signin import NEEDS_AUTH, echo, remote, sign_in, signed_in_gateway, state, stored_grant  # noqa: F401  (fixtures)


@pytest.mark.timeout(120)
def test_sse_server_sign_in_then_calls_through_the_gateway_survive_expiry_by_refreshing(tmp_path: Any, state: Any) -> None:
    with signed_in_gateway(tmp_path, state, sse=True) as (server, gw, upstream):
        grant = stored_grant(state)  # as signed in: nothing has expired yet
        assert grant["resource"] == server.sse_url  # the SSE endpoint's own protected resource
        assert upstream.describe()["transport"] == "sse"
        result = echo(gw)
        assert result.ok, result.error
        assert result.data["content"][0]["text"] == "Echo: hi"

        server.admin("expire")  # every access token dies; the SSE stream stays open, the next POST gets a 401
        result = echo(gw, "after expiry")
        assert result.ok, result.error
        assert result.data["content"][0]["text"] == "Echo: after expiry"
        assert server.stats()["refresh_token"] >= 1
        assert stored_grant(state)["access_token"] != grant["access_token"]  # the refreshed grant was stored
        assert upstream.state == "ready"


@pytest.mark.timeout(120)
def test_sse_server_without_a_sign_in_is_needs_auth_and_recovers_after_toolscript_auth(tmp_path: Any, state: Any) -> None:
    with oauth_server.start() as server:
        with running_gateway([remote(server, sse=True)], tmp_path) as (gw, _):
            upstream = gw.upstreams["remote"]
            assert wait_for(lambda: upstream.state == "needs-auth", 20), upstream.describe()
            assert upstream.describe()["error"] == NEEDS_AUTH
            result = echo(gw)
            assert not result.ok and NEEDS_AUTH in result.error["message"]

            sign_in(tmp_path, server, state, url=server.sse_url, type="sse")
            assert wait_for(lambda: upstream.state == "ready", 20), upstream.describe()
            assert echo(gw).ok


@pytest.mark.timeout(120)
def test_sse_server_whose_sign_in_is_revoked_mid_session_is_needs_auth(tmp_path: Any, state: Any) -> None:
    with signed_in_gateway(tmp_path, state, sse=True) as (server, gw, upstream):
        server.admin("revoke")  # access and refresh tokens: nothing left to refresh with
        result = echo(gw)
        assert not result.ok and NEEDS_AUTH in result.error["message"], result.error
        assert wait_for(lambda: upstream.state == "needs-auth", 20), upstream.describe()
