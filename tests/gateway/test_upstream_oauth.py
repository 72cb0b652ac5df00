"""The gateway and OAuth: stored tokens used, refreshed mid-session, "needs auth" instead of an opaque 401, recovery without a restart.

Upstream: ``tests/mcp_servers/oauth_server.py`` (MCP server + authorization
server, with knobs to expire and revoke tokens).  Sign-ins go through the real
``toolscript auth`` CLI with the fixture's test browser, into the state dir the
gateway reads (``oauth_signin``).  A legacy HTTP+SSE upstream gets the same:
refreshed on expiry, "needs auth" without a sign-in or once it is revoked.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, run_cli, running_gateway, wait_for
from mcp_servers import oauth_server
from oauth_signin import BROWSER, NEEDS_AUTH, echo, remote, sign_in, signed_in_gateway, stored_grant
from toolscript.config.load import ServerConfig


@pytest.fixture
def state(tmp_path, monkeypatch):
    """The state dir, shared by the in-process gateway and the CLI runs."""
    path = tmp_path / "state"
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(path))
    return path


def stored_secrets(state):
    grant = stored_grant(state)
    return {grant["access_token"], grant["refresh_token"]} - {None}


@pytest.mark.timeout(120)
def test_the_stored_token_is_used(tmp_path, state):
    with signed_in_gateway(tmp_path, state) as (server, gw, upstream):
        result = echo(gw)
        assert result.ok, result.error
        assert result.data["content"][0]["text"] == "Echo: hi"


@pytest.mark.timeout(120)
def test_a_token_expired_mid_session_is_refreshed_and_the_call_succeeds(tmp_path, state):
    with signed_in_gateway(tmp_path, state) as (server, gw, upstream):
        before = stored_secrets(state)
        server.admin("expire")  # the server stops accepting every access token it issued
        result = echo(gw, "after expiry")
        assert result.ok, result.error
        assert server.stats()["refresh_token"] >= 1
        assert upstream.state == "ready"
        assert stored_secrets(state).isdisjoint(before)  # the refreshed tokens were stored again


@pytest.mark.timeout(120)
def test_a_short_lived_token_is_refreshed_before_it_is_used(tmp_path, state):
    with signed_in_gateway(tmp_path, state, "--token-lifetime", "1") as (server, gw, upstream):
        time.sleep(1.5)  # the token the gateway holds has expired by now
        result = echo(gw)
        assert result.ok, result.error
        assert server.stats()["refresh_token"] >= 1


@pytest.mark.timeout(120)
def test_no_stored_token_is_needs_auth_everywhere_not_a_401(tmp_path, state, run_cli):
    with oauth_server.start() as server:
        with running_gateway([remote(server)], tmp_path) as (gw, url):
            upstream = gw.upstreams["remote"]
            assert wait_for(lambda: upstream.state == "needs-auth", 20), upstream.describe()
            assert upstream.describe()["error"] == NEEDS_AUTH
            result = echo(gw)
            assert not result.ok and NEEDS_AUTH in result.error["message"]
            assert "401" not in result.error["message"]

            listed = run_cli("--gateway-url", url, "list-servers")
            assert listed.returncode == 0
            assert "needs-auth" in listed.stdout and NEEDS_AUTH in listed.stdout
            status = run_cli("--gateway-url", url, "gateway", "status")
            assert status.returncode == 1 and "next: toolscript auth remote" in status.stdout
            overview = run_cli("--gateway-url", url, "status")
            assert NEEDS_AUTH in overview.stdout
            doctor = run_cli("--gateway-url", url, "doctor", "--json", "--no-servers")
            line = [c for c in json.loads(doctor.stdout) if c["check"] == "gateway"][0]
            assert line["status"] == "warn" and "remote needs-auth" in line["detail"] and "toolscript auth remote" in line["fix"]

            # Signing in is picked up by the running gateway: no restart.
            sign_in(tmp_path, server, state)
            assert wait_for(lambda: upstream.state == "ready", 20), upstream.describe()
            assert echo(gw).ok


@pytest.mark.timeout(120)
def test_servers_check_and_doctor_say_needs_auth(tmp_path, state, run_cli):
    with oauth_server.start() as server:
        config = tmp_path / "c.json"
        config.write_text(json.dumps({"mcpServers": {"remote": {"url": server.url}}}))
        checked = run_cli("--config", str(config), "servers", "check", "--json")
        assert checked.returncode == 1
        assert json.loads(checked.stdout)[0]["error"] == NEEDS_AUTH
        doctor = run_cli("--config", str(config), "doctor", "--json")
        line = [c for c in json.loads(doctor.stdout) if c["check"] == "server:remote"][0]
        assert NEEDS_AUTH in line["detail"] and line["fix"].startswith("toolscript") and "auth remote" in line["fix"]
        sign_in(tmp_path, server, state)
        assert run_cli("--config", str(config), "servers", "check").returncode == 0


@pytest.mark.timeout(120)
def test_a_revoked_token_that_cannot_be_refreshed_is_needs_auth_and_recovers_after_sign_in(tmp_path, state):
    with signed_in_gateway(tmp_path, state) as (server, gw, upstream):
        assert echo(gw).ok
        server.admin("revoke")  # access and refresh tokens alike
        result = echo(gw)
        assert not result.ok
        assert NEEDS_AUTH in result.error["message"], result.error
        assert upstream.state == "needs-auth" and upstream.error == NEEDS_AUTH
        assert server.stats()["refresh_refused"] >= 1  # it tried to refresh first
        sign_in(tmp_path, server, state)
        assert wait_for(lambda: upstream.state == "ready", 20), upstream.describe()
        assert echo(gw, "back").ok


@pytest.mark.timeout(120)
def test_without_refresh_tokens_expiry_is_needs_auth(tmp_path, state):
    with signed_in_gateway(tmp_path, state, "--no-refresh") as (server, gw, upstream):
        server.admin("expire")
        result = echo(gw)
        assert not result.ok and NEEDS_AUTH in result.error["message"]
        assert upstream.state == "needs-auth"


@pytest.mark.timeout(120)
def test_a_tool_that_needs_more_scope_fails_alone_and_a_step_up_sign_in_fixes_it(tmp_path, state):
    with signed_in_gateway(tmp_path, state, "--write-tool", "add") as (server, gw, upstream):
        refused = gw.call("remote__add", {"a": 1, "b": 2}, source="test")
        assert not refused.ok
        message = refused.error["message"]
        assert "needs auth: run toolscript auth remote --scope" in message and "mcp:write" in message, message
        assert upstream.state == "ready" and echo(gw).ok  # the other tools still work
        sign_in(tmp_path, server, state, "--scope", "mcp:read mcp:write")
        added = gw.call("remote__add", {"a": 1, "b": 2}, source="test")
        assert added.ok, added.error
        assert added.data["structuredContent"] == {"sum": 3}


@pytest.mark.timeout(180)
def test_no_token_ever_reaches_the_gateway_log(tmp_path):
    """A real gateway process at DEBUG: sign in, refresh, revoke, sign in again; its log holds none of the tokens."""
    state = tmp_path / "state"
    with oauth_server.start() as server:
        (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {"remote": {"url": server.url}}}))
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(state),
               "TOOLSCRIPT_AUTH_BROWSER": BROWSER}

        def toolscript(*args, **extra):
            return subprocess.run([sys.executable, "-m", "toolscript", *args, "--session", "oauth"], env=dict(env, **extra),
                                  cwd=str(tmp_path), capture_output=True, text=True, timeout=60)

        seen = set()

        def remember():
            seen.update(stored_secrets(state))

        assert toolscript("auth", "remote").returncode == 0
        remember()
        started = toolscript("gateway", "start", "--detach", "--json", DEBUG="1")
        assert started.returncode == 0, started.stderr
        try:
            def invoke():
                return toolscript("tools", "invoke", "remote__echo", "--args", '{"message": "x"}')

            assert wait_for(lambda: invoke().returncode == 0, 30)
            server.admin("expire")
            assert invoke().returncode == 0  # refreshed
            remember()
            server.admin("revoke")
            refused = invoke()
            assert refused.returncode != 0 and NEEDS_AUTH in refused.stdout + refused.stderr
            assert toolscript("auth", "remote").returncode == 0
            remember()
            assert wait_for(lambda: invoke().returncode == 0, 30)
            remember()
        finally:
            log_text = (state / "gateways" / "oauth.log").read_text()
            toolscript("gateway", "stop")
    assert NEEDS_AUTH in log_text  # the log says what happened ...
    assert len(seen) >= 4
    for secret in seen:  # ... and never shows a token
        assert secret not in log_text
    assert "Bearer " not in log_text


@pytest.mark.timeout(120)
def test_oauth_false_and_a_static_authorization_header_opt_out(tmp_path, state):
    from toolscript.config.load import OAuthConfig

    with oauth_server.start() as server:
        sign_in(tmp_path, server, state)  # a stored token exists, and still is not sent
        off = ServerConfig(name="off", type="http", source="test", url=server.url, timeout=20, oauth=OAuthConfig(enabled=False))
        static = ServerConfig(name="static", type="http", source="test", url=server.url, timeout=20,
                              headers={"Authorization": "Bearer not-from-the-store"})
        with running_gateway([off, static], tmp_path) as (gw, _):
            assert wait_for(lambda: all(u.state == "failed" for u in gw.upstreams.values()), 20), gw.servers(wait=False)
            for upstream in gw.upstreams.values():
                assert "401" in upstream.error and "needs auth" not in upstream.error


@pytest.mark.timeout(120)
def test_logout_takes_effect_in_a_running_gateway(tmp_path, state):
    with signed_in_gateway(tmp_path, state) as (server, gw, upstream):
        assert echo(gw).ok
        assert run_cli("auth", "--logout", "remote").returncode == 0
        result = echo(gw)  # the token still works at the server; the gateway no longer sends it
        assert not result.ok and NEEDS_AUTH in result.error["message"]
        assert upstream.state == "needs-auth"


# -- a legacy HTTP+SSE server with OAuth ----------------------------------------------------------


@pytest.mark.timeout(120)
def test_sse_server_sign_in_then_calls_through_the_gateway_survive_expiry_by_refreshing(tmp_path, state):
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
def test_sse_server_without_a_sign_in_is_needs_auth_and_recovers_after_toolscript_auth(tmp_path, state):
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
def test_sse_server_whose_sign_in_is_revoked_mid_session_is_needs_auth(tmp_path, state):
    with signed_in_gateway(tmp_path, state, sse=True) as (server, gw, upstream):
        server.admin("revoke")  # access and refresh tokens: nothing left to refresh with
        result = echo(gw)
        assert not result.ok and NEEDS_AUTH in result.error["message"], result.error
        assert wait_for(lambda: upstream.state == "needs-auth", 20), upstream.describe()
