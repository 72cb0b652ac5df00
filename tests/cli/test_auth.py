"""``toolscript auth``, the token store and the "oauth" config, against a real OAuth-protected MCP server.

The server is ``tests/mcp_servers/oauth_server.py`` (an MCP server and the
authorization server it trusts, in one process); the "browser" is its
``browse`` mode, which follows the authorization URL's redirect to the CLI's
loopback callback (``$TOOLSCRIPT_AUTH_BROWSER``), or prints the callback URL
for ``--paste``.


Signing out (``--logout``) revokes the tokens at the server (RFC 7009) when it
offers revocation, waits for a refresh under way, and still deletes the local
grant when the server is gone.  A client ID metadata document
(``clientMetadataUrl``) is used when the server supports one.
"""

import json
import os
import select
import shlex
import stat
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Dict, List

import pytest

from conftest import REPO_ROOT, missing_prerequisite, run_cli
from fake_oauth import post_initialize, send_json, serve_http
from mcp_servers import oauth_server
from mcp_servers.launch import start_fixture
from oauth_signin import sign_in, signed_in, state, stored_grant  # noqa: F401  (fixtures)
from toolscript.mcp.auth import flow as oauth
from toolscript.mcp.auth.flow import Grant


BROWSER = " ".join(shlex.quote(word) for word in oauth_server.BROWSER)


@pytest.fixture
def server():
    with oauth_server.start() as running:
        yield running


@pytest.fixture
def setup(tmp_path, server):
    """(config path, environment, state dir) for a config naming ``remote`` (the OAuth server) and a stdio server."""
    state = tmp_path / "state"
    config = tmp_path / "config.json"
    write_config(config, server)
    env = dict(os.environ, HOME=str(tmp_path), TOOLSCRIPT_STATE_DIR=str(state), TOOLSCRIPT_AUTH_BROWSER=BROWSER)
    env.pop("DISPLAY", None)
    env.pop("BROWSER", None)
    return str(config), env, state


def write_config(path, server, **remote):
    entry = dict({"url": server.url}, **remote)
    servers = {"remote": entry, "local": {"command": sys.executable, "args": ["-c", "pass"]}, "open": {"url": server.url, "oauth": False},
               "static": {"url": server.url, "headers": {"Authorization": "Bearer static-value"}}}
    path.write_text(json.dumps({"mcpServers": servers}))


def auth(config, env, *args, **kwargs):
    return run_cli("--config", config, "auth", *args, env=env, **kwargs)


def stored(state, name="remote"):
    with open(os.path.join(str(state), "oauth", name + ".json")) as f:
        return json.load(f)["grant"]


def secrets_of(grant):
    return [value for value in (grant["access_token"], grant["refresh_token"], grant.get("client_secret")) if value]


# -- signing in -------------------------------------------------------------------------------------


def test_sign_in_with_the_browser_stores_the_token_0600_and_never_prints_it(setup, server):
    config, env, state = setup
    proc = auth(config, env, "remote")
    assert proc.returncode == 0, proc.stderr
    assert "signed in to remote" in proc.stdout and "scope mcp:read" in proc.stdout
    path = os.path.join(str(state), "oauth", "remote.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    grant = stored(state)
    assert grant["resource"] == server.url and grant["issuer"] == server.base
    for secret in secrets_of(grant):
        assert secret not in proc.stdout + proc.stderr
    stats = server.stats()
    assert (stats["registrations"], stats["authorization_code"]) == (1, 1)
    assert not [name for name in os.listdir(os.path.dirname(path)) if name.startswith(".tmp")]


def test_signing_in_again_reuses_the_client_registration(setup, server):
    config, env, state = setup
    assert auth(config, env, "remote").returncode == 0
    first = stored(state)
    proc = auth(config, env, "remote")
    assert proc.returncode == 0, proc.stderr
    second = stored(state)
    assert second["access_token"] != first["access_token"]
    assert second["client_id"] == first["client_id"]
    assert server.stats()["registrations"] == 1


def test_a_tampered_state_in_the_callback_is_refused_and_nothing_is_stored(setup, server):
    config, env, state = setup
    env["TOOLSCRIPT_AUTH_BROWSER"] = BROWSER + " --tamper-state"
    # The forged answer is refused without ending the wait (the right one may still come): the wait then times out.
    proc = auth(config, env, "remote", "--timeout", "5")
    assert proc.returncode == 1
    assert "state does not match" in proc.stderr and "still waiting" in proc.stderr
    assert "did not come back" in proc.stderr and "toolscript auth remote" in proc.stderr
    assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))
    assert server.stats()["authorization_code"] == 0  # the code was never exchanged


def test_a_refused_authorization_says_so(setup, server):
    config, env, state = setup
    server.admin("deny", enabled=True)
    proc = auth(config, env, "remote")
    assert proc.returncode == 1
    assert "access_denied" in proc.stderr
    assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))


def _start_cli(config, env, *args):
    return subprocess.Popen(
        [sys.executable, "-m", "toolscript", "--config", config, "auth", "remote", *args],
        env=dict(env, PYTHONPATH=REPO_ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _authorization_url(proc, timeout=30.0):
    """Read the CLI's stderr (raw: select and a buffered reader do not mix) until it shows the authorization URL."""
    deadline = time.monotonic() + timeout
    seen = b""
    fd = proc.stderr.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        seen += chunk
        for line in seen.decode("utf-8", "replace").splitlines(keepends=True):
            if "/authorize?" in line and line.endswith("\n"):
                return line.strip(), seen.decode("utf-8", "replace")
    raise AssertionError(f"no authorization URL in the CLI's stderr: {seen!r}")


@pytest.mark.timeout(120)
def test_paste_signs_in_from_another_device(setup, server):
    config, env, state = setup
    del env["TOOLSCRIPT_AUTH_BROWSER"]
    proc = _start_cli(config, env, "--paste")
    try:
        url, _ = _authorization_url(proc)
        # The "other device": follows the authorization URL, and the user copies where it ended up.
        browsed = subprocess.run(oauth_server.BROWSER + ["--print", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        assert browsed.returncode == 0, browsed.stderr
        callback = browsed.stdout.strip()
        assert callback.startswith("http://127.0.0.1:") and "code=" in callback
        out, err = proc.communicate(callback + "\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "signed in to remote" in out
    assert stored(state)["access_token"] not in out + err


@pytest.mark.timeout(120)
def test_no_browser_prints_the_url_and_the_callback_still_lands(setup, server):
    config, env, state = setup
    proc = _start_cli(config, env, "--no-browser")
    try:
        url, seen = _authorization_url(proc)
        assert "Open this URL" in seen
        browsed = subprocess.run(oauth_server.BROWSER + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        assert browsed.returncode == 0, browsed.stderr
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert os.path.exists(os.path.join(str(state), "oauth", "remote.json"))
    assert server.stats()["authorization_code"] == 1


def test_nobody_coming_back_times_out_with_what_to_do(setup):
    config, env, state = setup
    proc = auth(config, env, "remote", "--no-browser", "--timeout", "1")
    assert proc.returncode == 1
    assert "did not come back within 1s" in proc.stderr and "--paste" in proc.stderr


def test_without_a_display_the_url_is_printed_not_opened(setup, server):
    config, env, state = setup
    del env["TOOLSCRIPT_AUTH_BROWSER"]
    proc = auth(config, env, "remote", "--timeout", "1")
    assert proc.returncode == 1
    assert "Open this URL in a browser on this machine" in proc.stderr


def test_a_server_that_needs_no_sign_in_is_left_alone(tmp_path):
    fixture = start_fixture("http")
    try:
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"mcpServers": {"plain": {"url": fixture.url}}}))
        env = dict(os.environ, TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"))
        proc = run_cli("--config", str(config), "auth", "plain", env=env)
    finally:
        fixture.stop()
    assert proc.returncode == 0, proc.stderr
    assert "without asking for authorization" in proc.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["nosuch"], "unknown server 'nosuch'"),
        (["local"], "is a stdio server"),
        (["open"], '"oauth": false'),
        (["static"], "sends its own Authorization header"),
        ([], "name the server"),
        (["--list", "remote"], "--list takes no SERVER"),
    ],
)
def test_usage_errors_exit_2_with_one_line(setup, args, message):
    config, env, _ = setup
    proc = auth(config, env, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_help_has_examples():
    proc = run_cli("auth", "--help")
    assert proc.returncode == 0
    assert "examples:" in proc.stdout and "--paste" in proc.stdout and "--logout" in proc.stdout


# -- list and logout ------------------------------------------------------------------------------------


def test_list_shows_masked_tokens_and_logout_deletes(setup, server):
    config, env, state = setup
    assert auth(config, env, "remote").returncode == 0
    grant = stored(state)
    listed = auth(config, env, "--list")
    assert listed.returncode == 0
    assert "remote" in listed.stdout and server.base in listed.stdout and "mcp:read" in listed.stdout
    as_json = auth(config, env, "--list", "--json")
    entries = json.loads(as_json.stdout)
    assert [e["server"] for e in entries] == ["remote"]
    assert entries[0]["accessToken"] == grant["access_token"][:4] + f"… ({len(grant['access_token'])} chars)"
    assert entries[0]["refreshable"] is True
    for secret in secrets_of(grant):
        assert secret not in listed.stdout + as_json.stdout
    out = auth(config, env, "--logout", "remote")
    assert out.returncode == 0 and "deleted" in out.stdout
    assert not os.path.exists(os.path.join(str(state), "oauth", "remote.json"))
    again = auth(config, env, "--logout", "remote")
    assert again.returncode == 1 and "no stored token" in again.stderr
    assert "no stored tokens" in auth(config, env, "--list").stdout


def test_a_corrupt_token_file_is_kept_aside_with_what_to_do(setup):
    config, env, state = setup
    folder = os.path.join(str(state), "oauth")
    os.makedirs(folder, mode=0o700)
    with open(os.path.join(folder, "remote.json"), "w") as f:
        f.write('{"grant": {"access_token": "at-half-written')
    proc = auth(config, env, "--list")
    assert proc.returncode == 0
    assert "unreadable" in proc.stderr and "toolscript auth remote" in proc.stderr
    assert "at-half-written" not in proc.stderr
    kept = [name for name in os.listdir(folder) if name.startswith("remote.json.corrupt-")]
    assert len(kept) == 1
    with open(os.path.join(folder, kept[0])) as f:
        assert "at-half-written" in f.read()  # kept, not lost


# -- the "oauth" config ----------------------------------------------------------------------------------


def test_oauth_config_is_validated_with_clear_errors(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {
        "a": {"url": "https://x.example/mcp", "oauth": {"clientID": "c", "redirectPort": 70000}},
        "b": {"url": "https://x.example/mcp", "oauth": "yes"},
        "c": {"url": "https://x.example/mcp", "oauth": {"clientSecret": "s", "clientMetadataUrl": "http://x.example/c.json"}},
    }}))
    proc = run_cli("--config", str(config), "config", "validate")
    assert proc.returncode == 1
    out = proc.stdout
    assert 'mcpServers.a.oauth.clientID: unknown key' in out and 'did you mean "clientId"' in out
    assert "mcpServers.a.oauth.redirectPort: expected a port number from 1 to 65535, got 70000" in out
    assert "mcpServers.b.oauth: expected an object (or false to never sign in), got string" in out
    assert '"clientSecret" needs "clientId"' in out
    assert "must be an https URL" in out


def test_oauth_config_masks_the_client_secret_and_takes_variables(tmp_path):
    from toolscript.config.load import load_config

    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {
        "a": {"url": "https://x.example/mcp", "oauth": {"clientId": "cid", "clientSecret": "${CLIENT_SECRET}", "scope": "read write",
                                                       "clientMetadataUrl": "https://me.example/client.json", "redirectPort": 8765}},
        "b": {"url": "https://x.example/mcp", "oauth": {"clientId": "cid", "clientSecret": "literal-secret-value"}},
        "c": {"url": "https://x.example/mcp", "oauth": False},
    }}))
    env = dict(os.environ, CLIENT_SECRET="from-the-environment")
    loaded = load_config([str(config)], environ=env)
    a = loaded.servers["a"].oauth
    assert (a.client_id, a.client_secret, a.scope, a.redirect_port) == ("cid", "from-the-environment", "read write", 8765)
    assert loaded.servers["c"].oauth.enabled is False
    shown = run_cli("--config", str(config), "config", "show", "--json", env=env)
    servers = json.loads(shown.stdout)["servers"]
    assert servers["a"]["oauth"]["clientSecret"] == "${CLIENT_SECRET}"
    assert servers["b"]["oauth"]["clientSecret"] == "****"
    assert servers["c"]["oauth"] is False
    text = run_cli("--config", str(config), "config", "show", env=env).stdout
    assert "literal-secret-value" not in shown.stdout + text and "from-the-environment" not in shown.stdout + text
    assert "oauth.clientSecret = ****" in text


def test_configured_client_and_redirect_port_are_used(tmp_path, setup):
    """A client registered by hand (clientId/clientSecret) and its fixed redirect port: no registration happens."""
    _, env, state = setup
    with oauth_server.start("--client", "handmade:s3cret-value") as server:
        config = tmp_path / "fixed.json"
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        config.write_text(json.dumps({"mcpServers": {"remote": {
            "url": server.url, "oauth": {"clientId": "handmade", "clientSecret": "${SECRET}", "redirectPort": port}}}}))
        env["SECRET"] = "s3cret-value"
        proc = auth(str(config), env, "remote")
        assert proc.returncode == 0, proc.stderr
        grant = stored(state)
        assert grant["client_id"] == "handmade" and grant["redirect_uri"] == f"http://127.0.0.1:{port}/callback"
        assert server.stats()["registrations"] == 0
        assert "s3cret-value" not in proc.stdout + proc.stderr


# -- toolscript auth --logout revokes at the server (RFC 7009) ---------------------------------------------------


def _auth_cli(config: Any, env: Dict[str, str], *args: str) -> Any:
    return run_cli("--config", str(config), "auth", *args, env=env)


@pytest.mark.timeout(120)
def test_logout_revokes_the_refresh_and_access_token_at_the_server(tmp_path: Any) -> None:
    state = tmp_path / "state"
    with signed_in(tmp_path, state) as (server, config, env):
        grant = stored_grant(state)
        assert grant["revocation_endpoint"] == server.base + "/revoke"  # kept at sign-in from the metadata
        assert post_initialize(server.url, grant["access_token"])[0] == 200
        proc = _auth_cli(config, env, "--logout", "remote")
        assert proc.returncode == 0, proc.stderr
        assert "revoked at the server" in proc.stdout and "refresh and access tokens" in proc.stdout
        assert grant["access_token"] not in proc.stdout + proc.stderr and grant["refresh_token"] not in proc.stdout + proc.stderr
        stats = server.stats()
        assert (stats.get("revoked_refresh_token"), stats.get("live_access_tokens")) == (1, 0), stats
        assert post_initialize(server.url, grant["access_token"])[0] == 401
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
            send_json(self, 200 if doc is not None else 404, json.dumps(doc).encode() if doc is not None else b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = serve_http(Handler, tls=context)
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
        assert post_initialize(server.url, grant["access_token"])[0] == 200
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
        assert post_initialize(server.url, refreshed.access_token)[0] == 401  # the newest tokens were the ones revoked
