"""``toolscript auth``, the token store and the "oauth" config, against a real OAuth-protected MCP server.

The server is ``tests/mcp_servers/oauth_server.py`` (an MCP server and the
authorization server it trusts, in one process); the "browser" is its
``browse`` mode, which follows the authorization URL's redirect to the CLI's
loopback callback (``$TOOLSCRIPT_AUTH_BROWSER``), or prints the callback URL
for ``--paste``.
"""

import json
import os
import select
import shlex
import stat
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, run_cli
from mcp_servers import oauth_server
from mcp_servers.launch import start_fixture

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


# -- the store, in process --------------------------------------------------------------------------------


def _grant(**changes):
    from toolscript.mcp.auth.flow import Grant

    values = dict(
        resource="https://mcp.example.com/mcp", issuer="https://auth.example.com", authorization_endpoint="https://auth.example.com/a",
        token_endpoint="https://auth.example.com/t", client_id="c1", client_secret=None, token_endpoint_auth_method="none",
        access_token="at-0123456789abcdef", refresh_token="rt-0123456789abcdef", expires_at=time.time() + 3600, scope="read",
        redirect_uri="http://127.0.0.1:5000/callback",
    )
    values.update(changes)
    return Grant(**values)


def test_store_writes_0600_from_creation_even_with_a_loose_umask(tmp_path, monkeypatch):
    from toolscript.mcp.auth import store as oauth_store

    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    old = os.umask(0)
    try:
        oauth_store.save("srv", _grant())
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(oauth_store.grant_path("srv")).st_mode) == 0o600
    assert oauth_store.load("srv", "https://mcp.example.com/mcp").access_token == "at-0123456789abcdef"
    assert [name for name, _ in oauth_store.list_grants()] == ["srv"]


def test_store_does_not_hand_a_token_to_another_url(tmp_path, monkeypatch):
    from toolscript.mcp.auth import store as oauth_store

    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    oauth_store.save("srv", _grant())
    assert oauth_store.load("srv", "https://mcp.example.com/mcp/") is not None
    assert oauth_store.load("srv", "https://MCP.example.com:443/mcp/sub") is not None
    assert oauth_store.load("srv", "https://evil.example.com/mcp") is None
    assert oauth_store.load("srv", "http://mcp.example.com/mcp") is None
    assert oauth_store.load("srv", "https://mcp.example.com/mcpx") is None
    assert oauth_store.delete("srv") is True and oauth_store.delete("srv") is False


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
