"""OAuth hardening: the faults an adversarial review of the OAuth code found, each proven here, plus the
follow-ups of issue 14 item 3 (legacy SSE servers with OAuth through the gateway, revocation on logout,
client ID metadata documents).

Real programs throughout: the loopback callback listener, ``tests/mcp_servers/oauth_fixture.py`` (in-process
MCP server + authorization server), ``tests/mcp_servers/oauth_server.py`` (the same as a process), the CLI,
and small stdlib HTTP servers below that answer what a hostile or broken authorization server would.
"""

import contextlib
import http.client
import json
import math
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import REPO_ROOT, missing_prerequisite, run_cli, running_gateway, wait_for
from mcp_servers import oauth_server
from mcp_servers.oauth_fixture import OAuthFixture
from oauth_signin import NEEDS_AUTH, echo, remote, sign_in, signed_in, signed_in_gateway, stored_grant
from test_oauth_core import follow as _follow  # the test browser: the authorization URL's redirect, not followed
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.auth import login as oauth_login
from toolscript.mcp.auth.bearer import BearerAuth
from toolscript.mcp.auth.flow import Grant, OAuthError

REDIRECT = "http://127.0.0.1:9/callback"


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client under test hangs up on oversized answers: that is the point


def _serve(handler: Any, tls: Any = None) -> _QuietHTTPServer:
    """A loopback server on a free port answering with ``handler`` (over ``tls``, an SSLContext, when given),
    served from a daemon thread; the caller shuts it down."""
    httpd = _QuietHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def _send_json(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _get(url: str, timeout: float = 10.0) -> Tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""))
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# -- the loopback callback listener -----------------------------------------------------------------


@contextlib.contextmanager
def _listening(expected_state: str) -> Iterator[oauth_login.CallbackListener]:
    """A callback listener waiting for ``expected_state``, closed afterwards."""
    listener = oauth_login.CallbackListener()
    try:
        listener.expected_state = expected_state
        yield listener
    finally:
        listener.close()


def test_a_callback_with_the_wrong_state_does_not_end_the_wait_for_the_right_one() -> None:
    with _listening("the-right-state") as listener:
        status, _ = _get(listener.redirect_uri + "?code=forged&state=someone-elses")
        assert status == 400
        status, _ = _get(listener.redirect_uri + "?code=forged")  # no state at all
        assert status == 400
        status, _ = _get(listener.redirect_uri + "?code=real&state=the-right-state")
        assert status == 200
        arrived = listener.wait(10)
    assert arrived is not None and "code=real" in arrived


def test_a_second_callback_is_refused_and_the_first_answer_kept() -> None:
    with _listening("s") as listener:
        assert _get(listener.redirect_uri + "?code=first&state=s")[0] == 200
        status, body = _get(listener.redirect_uri + "?code=second&state=s")
        arrived = listener.wait(10)
    assert status == 409 and b"already" in body
    assert arrived is not None and "code=first" in arrived


@pytest.mark.timeout(60)
def test_an_idle_connection_to_the_listener_does_not_block_the_real_callback() -> None:
    # Browsers open speculative connections and leave them idle; any local process can too.
    listener = oauth_login.CallbackListener()
    idle = socket.create_connection(("127.0.0.1", listener.port))
    half = socket.create_connection(("127.0.0.1", listener.port))
    try:
        half.sendall(b"GET /callback?code=x HTTP/1.1\r\n")  # a request line, then nothing
        listener.expected_state = "s"
        status, _ = _get(listener.redirect_uri + "?code=real&state=s", timeout=20)
        arrived = listener.wait(10)
    finally:
        idle.close()
        half.close()
        listener.close()
    assert status == 200
    assert arrived is not None and "code=real" in arrived


def test_the_listener_answers_only_its_path_and_listens_on_loopback_only() -> None:
    with _listening("s") as listener:
        assert _get(f"http://127.0.0.1:{listener.port}/favicon.ico")[0] == 404
        assert _get(f"http://127.0.0.1:{listener.port}/callbackx?state=s&code=c")[0] == 404
        assert listener.wait(0.2) is None
        assert listener._server.server_address[0] == "127.0.0.1"


def test_an_oversized_request_line_is_refused_without_ending_the_wait() -> None:
    with _listening("s") as listener:
        status, _ = _get(listener.redirect_uri + "?state=s&pad=" + "x" * 70000)
        assert status == 414
        assert listener.wait(0.2) is None


# -- authorization server mix-up and plain http -------------------------------------------------------


def test_a_missing_iss_is_refused_when_the_authorization_server_promises_one() -> None:
    # RFC 9207 2.4: a client that knows the server sends iss must reject an answer without it (a mix-up attack).
    with OAuthFixture(metadata_extra={"authorization_response_iss_parameter_supported": True}) as server:
        with pytest.raises(OAuthError, match="RFC 9207"):
            oauth.authorize(server.mcp_url, _follow, REDIRECT, timeout=10)
        assert server.token_forms == []  # the code was never exchanged


def test_an_iss_from_another_issuer_is_refused_and_the_right_one_accepted() -> None:
    with OAuthFixture(callback_iss="https://evil.example", metadata_extra={"authorization_response_iss_parameter_supported": True}) as server:
        with pytest.raises(OAuthError, match="another issuer"):
            oauth.authorize(server.mcp_url, _follow, REDIRECT, timeout=10)
        assert server.token_forms == []
    with OAuthFixture(callback_iss="", metadata_extra={"authorization_response_iss_parameter_supported": True}) as server:
        assert oauth.authorize(server.mcp_url, _follow, REDIRECT, timeout=10).access_token


def test_a_plain_http_mcp_server_on_another_host_never_gets_a_token() -> None:
    # Its 401 may point at https metadata (so discovery alone would not object); the token would then go out in clear.
    challenge = 'Bearer resource_metadata="https://metadata.invalid/.well-known/oauth-protected-resource"'
    with pytest.raises(OAuthError, match="not https"):
        oauth.authorize("http://mcp.invalid/mcp", _follow, REDIRECT, www_authenticate=challenge, timeout=2)


# -- hostile token responses --------------------------------------------------------------------------


class _TokenEndpoint:
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
                _send_json(self, status, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = _serve(Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/token"

    def answer(self, doc: Any, status: int = 200) -> None:
        self.status, self.body = status, doc if isinstance(doc, bytes) else json.dumps(doc).encode()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def token_endpoint():
    endpoint = _TokenEndpoint()
    yield endpoint
    endpoint.close()


def _grant(token_endpoint: str, **changes: Any) -> Grant:
    values = dict(resource="http://127.0.0.1:9/mcp", issuer="http://127.0.0.1:9", authorization_endpoint="http://127.0.0.1:9/authorize",
                  token_endpoint=token_endpoint, client_id="c", client_secret=None, token_endpoint_auth_method="none",
                  access_token="at-old", refresh_token="rt-old", expires_at=time.time() - 1, scope="s", redirect_uri=REDIRECT)
    values.update(changes)
    return Grant(**values)


@pytest.mark.parametrize("expires_in", [float("nan"), float("inf"), 1e300, "1e400", "nan", -3600, 0, "-5", 10 ** 30])
def test_a_hostile_expires_in_gives_a_usable_grant_that_lists_and_round_trips(token_endpoint: _TokenEndpoint, expires_in: Any) -> None:
    from toolscript.mcp.auth import store as oauth_store

    body = json.dumps({"access_token": "at-new-token", "token_type": "Bearer", "expires_in": expires_in}).encode()  # NaN/Infinity as Python writes them
    token_endpoint.answer(body)
    grant = oauth.refresh(_grant(token_endpoint.url), timeout=10)
    assert grant.access_token == "at-new-token"
    assert grant.expires_at is None or (math.isfinite(grant.expires_at) and time.time() < grant.expires_at <= time.time() + oauth.MAX_EXPIRES_IN_SECONDS)
    shown = oauth_store.describe(grant)  # auth --list and the sign-in message format the expiry
    assert oauth_login.expires_in(grant)
    assert json.loads(json.dumps(grant.to_dict(), allow_nan=False))["access_token"] == "at-new-token"
    assert shown["accessToken"].startswith("at-n")


def test_a_stored_grant_with_a_non_finite_expiry_is_read_as_no_expiry() -> None:
    data = _grant("http://127.0.0.1:9/token").to_dict()
    for bad in (float("nan"), float("inf"), 1e300):
        data["expires_at"] = bad
        assert Grant.from_dict(data).expires_at is None


@pytest.mark.parametrize("token", ["at with space", "at\r\nX-Injected: 1", "at\x00", "", 42, ["at"], "at-é"])
def test_an_access_token_that_cannot_be_a_header_value_is_refused(token_endpoint: _TokenEndpoint, token: Any) -> None:
    token_endpoint.answer({"access_token": token, "token_type": "Bearer", "expires_in": 60})
    with pytest.raises(OAuthError) as caught:
        oauth.refresh(_grant(token_endpoint.url), timeout=10)
    assert "\n" not in str(caught.value) and "X-Injected" not in str(caught.value)


@pytest.mark.parametrize("body", [b"<html>oops</html>", b"[1, 2]", b"\xff\xfe", b"x" * (oauth.MAX_RESPONSE_BYTES + 10), b""])
def test_a_token_answer_that_is_not_a_json_object_is_an_error_not_a_crash(token_endpoint: _TokenEndpoint, body: bytes) -> None:
    token_endpoint.answer(body)
    with pytest.raises(OAuthError):
        oauth.refresh(_grant(token_endpoint.url), timeout=10)


@pytest.mark.timeout(60)
def test_a_token_endpoint_that_never_answers_times_out(token_endpoint: _TokenEndpoint) -> None:
    token_endpoint.delay = 8
    started = time.monotonic()
    with pytest.raises(OAuthError, match="timed out"):
        oauth.refresh(_grant(token_endpoint.url), timeout=1)
    assert time.monotonic() - started < 7  # generous: the timeout is 1s


# -- two processes refreshing one grant -------------------------------------------------------------------


_USE_STORED_TOKEN = """
import sys
from toolscript.mcp.auth import store as oauth_store
auth = oauth_store.StoredBearerAuth("remote", sys.argv[1])
value = auth.authorization()
print("ok" if value else "none")
"""


@pytest.mark.timeout(120)
def test_two_processes_refreshing_at_once_use_one_refresh_and_both_keep_a_working_token(tmp_path: Any) -> None:
    # With refresh token rotation and reuse detection (OAuth 2.1 4.3.1), the loser of an unserialized race
    # presents a rotated refresh token: the server then revokes the whole sign-in, the winner's new tokens included.
    state = tmp_path / "state"
    with oauth_server.start("--token-lifetime", "30", "--token-delay", "1", "--reuse-detection") as server:
        sign_in(tmp_path, server, state)  # a 30s token: every new process refreshes it before use
        env = dict(os.environ, TOOLSCRIPT_STATE_DIR=str(state), PYTHONPATH=REPO_ROOT)
        procs = [subprocess.Popen([sys.executable, "-c", _USE_STORED_TOKEN, server.url], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [proc.communicate(timeout=60) for proc in procs]
        for proc, (out, err) in zip(procs, outputs):
            assert proc.returncode == 0 and out.strip() == "ok", err
        stats = server.stats()
        assert (stats["refresh_token"], stats["refresh_refused"], stats.get("families_revoked", 0)) == (1, 0, 0), stats
        with open(os.path.join(str(state), "oauth", "remote.json")) as f:
            token = json.load(f)["grant"]["access_token"]
        status, _ = _post_initialize(server.url, token)
        assert status == 200


def _post_initialize(url: str, token: str) -> Tuple[int, bytes]:
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


# -- the bearer token never goes to another origin -----------------------------------------------------------


class _Hostile:
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

        self.httpd = _serve(Handler)
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hostile():
    servers: List[_Hostile] = []

    def make() -> _Hostile:
        servers.append(_Hostile())
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def _auth_with_token(url: str) -> BearerAuth:
    grant = _grant("http://127.0.0.1:9/token", resource=url, access_token="at-secret-token", expires_at=time.time() + 3600)
    return BearerAuth("remote", lambda: grant, lambda new: None)


@pytest.mark.parametrize("endpoint", ["{other}/messages", "//localhost:{port}/messages", "https://127.0.0.1:{port}/messages"])
def test_a_legacy_sse_endpoint_event_naming_another_origin_gets_no_token(hostile: Callable[[], _Hostile], endpoint: str) -> None:
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
def test_an_http_redirect_is_not_followed_with_the_token(hostile: Callable[[], _Hostile], status: int) -> None:
    from toolscript.config.load import ServerConfig
    from toolscript.mcp.client.connect import open_session
    from toolscript.mcp.errors import McpError

    server, other = hostile(), hostile()
    server.routes[("POST", "/mcp")] = (status, {"Location": other.base + "/mcp"}, b"")
    config = ServerConfig(name="remote", type="http", source="<test>", url=server.base + "/mcp", timeout=5.0)
    with pytest.raises(McpError):
        open_session(config, auth=_auth_with_token(config.url))
    assert other.seen == []


def test_metadata_on_another_origin_is_fetched_without_the_token(hostile: Callable[[], _Hostile]) -> None:
    # The 401's resource_metadata may name any https (or loopback) URL: it is fetched, but never with a token.
    mcp, metadata = hostile(), hostile()
    challenge = f'Bearer resource_metadata="{metadata.base}/prm"'
    mcp.routes[("POST", "/mcp")] = (401, {"WWW-Authenticate": challenge}, b"{}")
    metadata.routes[("GET", "/prm")] = (200, {"Content-Type": "application/json"},
                                        json.dumps({"resource": mcp.base + "/mcp", "authorization_servers": [metadata.base]}).encode())
    with pytest.raises(OAuthError, match="no OAuth metadata"):
        oauth.authorize(mcp.base + "/mcp", _follow, REDIRECT, timeout=5)  # no AS metadata there: fails after fetching the PRM
    assert metadata.seen and all(authorization is None for _, _, authorization in metadata.seen)


# -- server-supplied text on the terminal ------------------------------------------------------------------


def test_an_error_description_cannot_put_escape_sequences_on_the_terminal(token_endpoint: _TokenEndpoint) -> None:
    token_endpoint.answer({"error": "invalid_client\x1b[2J", "error_description": "bad\x1b]0;pwned\x07\nsecond line"}, status=401)
    with pytest.raises(OAuthError) as caught:
        oauth.refresh(_grant(token_endpoint.url), timeout=10)
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


# -- the store's files ------------------------------------------------------------------------------------


def _store_env(tmp_path: Any, monkeypatch: Any) -> str:
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    from toolscript.mcp.auth import store as oauth_store

    return oauth_store.store_dir()


def test_a_grant_file_readable_by_others_is_made_private_when_read(tmp_path: Any, monkeypatch: Any) -> None:
    import stat

    from toolscript.mcp.auth import store as oauth_store

    directory = _store_env(tmp_path, monkeypatch)
    oauth_store.save("remote", _grant("http://127.0.0.1:9/token"))
    path = os.path.join(directory, "remote.json")
    os.chmod(path, 0o644)
    assert oauth_store.load("remote", "http://127.0.0.1:9/mcp") is not None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_symlinked_grant_file_is_replaced_not_written_through(tmp_path: Any, monkeypatch: Any) -> None:
    import stat

    from toolscript.mcp.auth import store as oauth_store

    directory = _store_env(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("not yours")
    os.symlink(str(elsewhere), os.path.join(directory, "remote.json"))
    oauth_store.save("remote", _grant("http://127.0.0.1:9/token"))
    path = os.path.join(directory, "remote.json")
    assert elsewhere.read_text() == "not yours"
    assert not os.path.islink(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o600


# -- legacy HTTP+SSE servers with OAuth, end to end through the gateway ---------------------------------------


@pytest.fixture
def state(tmp_path: Any, monkeypatch: Any) -> Any:
    path = tmp_path / "state"
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(path))
    return path


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


# -- toolscript auth --logout revokes at the server (RFC 7009) ---------------------------------------------------


def _auth_cli(config: Any, env: Dict[str, str], *args: str) -> Any:
    return run_cli("--config", str(config), "auth", *args, env=env)


@pytest.mark.timeout(120)
def test_logout_revokes_the_refresh_and_access_token_at_the_server(tmp_path: Any) -> None:
    state = tmp_path / "state"
    with signed_in(tmp_path, state) as (server, config, env):
        grant = stored_grant(state)
        assert grant["revocation_endpoint"] == server.base + "/revoke"  # kept at sign-in from the metadata
        assert _post_initialize(server.url, grant["access_token"])[0] == 200
        proc = _auth_cli(config, env, "--logout", "remote")
        assert proc.returncode == 0, proc.stderr
        assert "revoked at the server" in proc.stdout and "refresh and access tokens" in proc.stdout
        assert grant["access_token"] not in proc.stdout + proc.stderr and grant["refresh_token"] not in proc.stdout + proc.stderr
        stats = server.stats()
        assert (stats.get("revoked_refresh_token"), stats.get("live_access_tokens")) == (1, 0), stats
        assert _post_initialize(server.url, grant["access_token"])[0] == 401
        assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))


@pytest.mark.timeout(120)
def test_logout_json_says_revoked(tmp_path: Any) -> None:
    state = tmp_path / "state"
    with signed_in(tmp_path, state) as (server, config, env):
        proc = _auth_cli(config, env, "--logout", "remote", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"server": "remote", "removed": True, "revocation": "revoked", "revoked": ["refresh_token", "access_token"]}


@pytest.mark.timeout(120)
def test_logout_without_a_revocation_endpoint_deletes_locally_only_and_says_so(tmp_path: Any) -> None:
    state = tmp_path / "state"
    with signed_in(tmp_path, state, "--no-revocation") as (server, config, env):
        assert stored_grant(state)["revocation_endpoint"] is None
        proc = _auth_cli(config, env, "--logout", "remote")
        assert proc.returncode == 0, proc.stderr
        assert "deleted the stored token of remote locally only (the server offers no revocation" in proc.stdout
        assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))
        config, env = sign_in(tmp_path, server, state)
        as_json = json.loads(_auth_cli(config, env, "--logout", "remote", "--json").stdout)
    assert as_json == {"server": "remote", "removed": True, "revocation": "unsupported", "revoked": []}


@pytest.mark.timeout(120)
def test_logout_with_the_server_gone_still_deletes_and_says_revocation_failed(tmp_path: Any) -> None:
    state = tmp_path / "state"
    with oauth_server.start() as server:
        config, env = sign_in(tmp_path, server, state)
    # The server is stopped: revocation cannot reach it.
    proc = _auth_cli(config, env, "--logout", "remote", "--json")
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert (answer["removed"], answer["revocation"], answer["revoked"]) == (True, "failed", [])
    assert "cannot connect" in answer["detail"]
    assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))


@pytest.mark.timeout(120)
def test_logout_of_a_grant_stored_without_the_endpoint_finds_it_in_the_metadata(tmp_path: Any) -> None:
    # Grants stored before toolscript kept the revocation endpoint: the issuer's metadata names it.
    state = tmp_path / "state"
    with signed_in(tmp_path, state) as (server, config, env):
        path = os.path.join(str(state), "oauth", "remote.json")
        with open(path) as f:
            document = json.load(f)
        del document["grant"]["revocation_endpoint"]
        with open(path, "w") as f:
            json.dump(document, f)
        proc = _auth_cli(config, env, "--logout", "remote")
        assert proc.returncode == 0, proc.stderr
        assert "revoked at the server" in proc.stdout
        assert server.stats().get("revoked_refresh_token") == 1


def test_revoke_authenticates_the_client_and_hides_every_secret_in_errors(token_endpoint: _TokenEndpoint) -> None:
    token_endpoint.answer({"error": "invalid_client", "error_description": "cs-secret-value with rt-old-refresh"}, status=401)
    grant = _grant("http://127.0.0.1:9/token", revocation_endpoint=token_endpoint.url, refresh_token="rt-old-refresh",
                   client_secret="cs-secret-value", token_endpoint_auth_method="client_secret_post")
    with pytest.raises(OAuthError, match="refused the refresh token") as caught:
        oauth.revoke(grant)
    assert "cs-secret-value" not in str(caught.value) and "rt-old-refresh" not in str(caught.value)
    assert token_endpoint.forms[0] == {"token": "rt-old-refresh", "token_type_hint": "refresh_token", "client_id": "c",
                                       "client_secret": "cs-secret-value"}


def test_an_access_token_the_server_does_not_revoke_is_not_a_failure(token_endpoint: _TokenEndpoint) -> None:
    grant = _grant("http://127.0.0.1:9/token", revocation_endpoint=token_endpoint.url)
    token_endpoint.answer({})
    assert oauth.revoke(grant) == ["refresh_token", "access_token"]
    token_endpoint.then = [(400, json.dumps({"error": "unsupported_token_type"}).encode())]  # the access token: not revocable here
    assert oauth.revoke(grant) == ["refresh_token"]
    token_endpoint.answer({"error": "unsupported_token_type"}, status=400)  # not even the refresh token: a failure
    with pytest.raises(OAuthError, match="refused the refresh token"):
        oauth.revoke(grant)


# -- a client ID metadata document (config "clientMetadataUrl") ------------------------------------------------


@pytest.fixture
def client_document_host(tmp_path: Any) -> Any:
    """An https server for ``localhost`` (a fresh self-signed certificate) that serves what ``documents[path]`` holds.

    Yields (base URL, documents dict, CA file, requests seen).  The authorization server under test verifies
    the certificate against the CA file, as a real one verifies a public client's host: nothing is weakened.
    """
    import shutil
    import ssl
    import subprocess as sp

    openssl = shutil.which("openssl")
    if not openssl:
        missing_prerequisite("openssl is not installed: cannot make a test certificate")
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    sp.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    documents: Dict[str, Any] = {}
    seen: List[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            doc = documents.get(self.path)
            _send_json(self, 200 if doc is not None else 404, json.dumps(doc).encode() if doc is not None else b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = _serve(Handler, tls=context)
    try:
        yield f"https://localhost:{httpd.server_address[1]}", documents, cert, seen
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.timeout(120)
def test_sign_in_with_a_client_id_metadata_document(tmp_path: Any, state: Any, client_document_host: Any) -> None:
    base, documents, ca_file, seen = client_document_host
    url = base + "/oauth/toolscript-client.json"
    documents["/oauth/toolscript-client.json"] = {
        "client_id": url, "client_name": "toolscript", "redirect_uris": ["http://127.0.0.1/callback"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none",
    }
    with oauth_server.start("--cimd-ca", ca_file) as server:
        config, env = sign_in(tmp_path, server, state, oauth={"clientMetadataUrl": url})
        grant = stored_grant(state)
        assert grant["client_id"] == url and grant["client_secret"] is None and grant["token_endpoint_auth_method"] == "none"
        stats = server.stats()
        assert (stats["registrations"], stats.get("cimd_fetches"), stats["authorization_code"]) == (0, 1, 1), stats
        assert seen == ["/oauth/toolscript-client.json"]  # the authorization server fetched it; toolscript never needs to
        assert _post_initialize(server.url, grant["access_token"])[0] == 200
        # The client ID also works for refreshing and revoking (public client: client_id in the form).
        from toolscript.mcp.auth import store as oauth_store

        oauth_store.save("remote", oauth.refresh(Grant.from_dict(grant), timeout=10))
        assert server.stats()["refresh_token"] == 1
        proc = _auth_cli(config, env, "--logout", "remote")
        assert proc.returncode == 0 and "revoked at the server" in proc.stdout, proc.stdout + proc.stderr
        assert server.stats().get("revoked_refresh_token") == 1  # the refreshed (live) refresh token


@pytest.mark.timeout(120)
def test_a_client_metadata_url_is_ignored_when_the_server_does_not_support_documents(tmp_path: Any) -> None:
    state = tmp_path / "state"
    with oauth_server.start() as server:  # no --cimd-ca: the metadata does not offer client ID metadata documents
        sign_in(tmp_path, server, state, oauth={"clientMetadataUrl": "https://localhost:1/oauth/toolscript-client.json"})
        assert stored_grant(state)["client_id"].startswith("client-")  # registered dynamically instead
        assert server.stats()["registrations"] == 1


_REFUSING_BROWSER = r"""
import sys, urllib.parse, urllib.request, urllib.error
query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(sys.argv[1]).query))
answer = urllib.parse.urlencode({"error": "access_denied\x1b[31m", "error_description": "no\r\nway\x1b]0;x\x07", "state": query["state"]})
try:
    urllib.request.urlopen(query["redirect_uri"] + "?" + answer, timeout=10).read()
except urllib.error.HTTPError:
    pass
"""


@pytest.mark.timeout(120)
def test_a_refusal_reaching_the_cli_callback_cannot_put_escape_sequences_on_the_terminal(tmp_path: Any) -> None:
    state = tmp_path / "state"
    script = tmp_path / "refusing_browser.py"
    script.write_text(_REFUSING_BROWSER)
    with oauth_server.start() as server:
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"mcpServers": {"remote": {"url": server.url}}}))
        env = dict(os.environ, TOOLSCRIPT_STATE_DIR=str(state), TOOLSCRIPT_AUTH_BROWSER=f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
        proc = _auth_cli(config, env, "remote", "--timeout", "30")
    assert proc.returncode == 1
    assert "access_denied" in proc.stderr and "way" in proc.stderr
    assert not any(char in proc.stderr for char in "\x1b\x07\r")


# -- logout and a refresh at the same time ------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_logout_waits_for_a_refresh_under_way_and_revokes_the_tokens_it_stored(tmp_path: Any, state: Any) -> None:
    from toolscript.mcp.auth import store as oauth_store

    with signed_in(tmp_path, state) as (server, config, env):
        with oauth_store.refresh_lock("remote"):  # a gateway in the middle of a refresh
            logout = subprocess.Popen([sys.executable, "-m", "toolscript", "--config", str(config), "auth", "--logout", "remote", "--json"],
                                      env=dict(env, PYTHONPATH=REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            refreshed = oauth.refresh(Grant.from_dict(stored_grant(state)), timeout=10)  # the refresh completes and is stored
            oauth_store.save("remote", refreshed)
            assert logout.poll() is None  # still waiting for the lock
        out, err = logout.communicate(timeout=60)
        assert logout.returncode == 0, err
        assert json.loads(out)["revocation"] == "revoked"
        assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))
        assert _post_initialize(server.url, refreshed.access_token)[0] == 401  # the newest tokens were the ones revoked


@pytest.mark.timeout(120)
def test_a_refresh_after_logout_does_not_store_the_sign_in_again(tmp_path: Any, state: Any) -> None:
    from toolscript.mcp.auth import store as oauth_store

    with signed_in(tmp_path, state, "--no-revocation") as (server, config, env):  # logout can only delete: the refresh token still works
        auth = oauth_store.StoredBearerAuth("remote", server.url)
        grant = auth.grant
        assert grant is not None
        assert _auth_cli(config, env, "--logout", "remote").returncode == 0
        assert auth._try_refresh(grant) is False  # the gateway's refresh that lost the race with the logout
        assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))
        assert server.stats()["refresh_token"] == 0


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
    hostile: Callable[[], _Hostile], prm_servers: Any, as_doc: Any, registration: Any, message: str
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
        oauth.authorize(server.base + "/mcp", _follow, REDIRECT, timeout=5)
    assert "\n" not in str(caught.value)
