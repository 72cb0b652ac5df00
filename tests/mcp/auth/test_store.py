"""``toolscript.mcp.auth.store``: grants kept between runs, private files, refreshes serialized across processes.

A grant file is written 0600 from creation (and made private when found
readable by others), a symlink is replaced rather than written through, a
grant is never handed to another URL, two processes refreshing at once use
one refresh, and a refresh that lost the race with a logout stores nothing.
"""

import json
import os
import stat
import subprocess
import sys
import time
from typing import Any, Dict

import pytest

from conftest import REPO_ROOT, run_cli
from fake_oauth import make_grant, post_initialize
from mcp_servers import oauth_server
from oauth_signin import sign_in, signed_in, state  # noqa: F401  (fixtures)


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
        status, _ = post_initialize(server.url, token)
        assert status == 200


# -- the store's files ------------------------------------------------------------------------------------


def _store_env(tmp_path: Any, monkeypatch: Any) -> str:
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    from toolscript.mcp.auth import store as oauth_store

    return oauth_store.store_dir()


def test_a_grant_file_readable_by_others_is_made_private_when_read(tmp_path: Any, monkeypatch: Any) -> None:
    import stat

    from toolscript.mcp.auth import store as oauth_store

    directory = _store_env(tmp_path, monkeypatch)
    oauth_store.save("remote", make_grant("http://127.0.0.1:9/token"))
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
    oauth_store.save("remote", make_grant("http://127.0.0.1:9/token"))
    path = os.path.join(directory, "remote.json")
    assert elsewhere.read_text() == "not yours"
    assert not os.path.islink(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o600


# -- the store, in process --------------------------------------------------------------------------------


def _example_grant(**changes):
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
        oauth_store.save("srv", _example_grant())
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(oauth_store.grant_path("srv")).st_mode) == 0o600
    assert oauth_store.load("srv", "https://mcp.example.com/mcp").access_token == "at-0123456789abcdef"
    assert [name for name, _ in oauth_store.list_grants()] == ["srv"]


def test_store_does_not_hand_a_token_to_another_url(tmp_path, monkeypatch):
    from toolscript.mcp.auth import store as oauth_store

    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    oauth_store.save("srv", _example_grant())
    assert oauth_store.load("srv", "https://mcp.example.com/mcp/") is not None
    assert oauth_store.load("srv", "https://MCP.example.com:443/mcp/sub") is not None
    assert oauth_store.load("srv", "https://evil.example.com/mcp") is None
    assert oauth_store.load("srv", "http://mcp.example.com/mcp") is None
    assert oauth_store.load("srv", "https://mcp.example.com/mcpx") is None
    assert oauth_store.delete("srv") is True and oauth_store.delete("srv") is False


# -- a refresh that lost the race with a logout ----------------------------------------------------


def _auth_cli(config: Any, env: Dict[str, str], *args: str) -> Any:
    return run_cli("--config", str(config), "auth", *args, env=env)


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
