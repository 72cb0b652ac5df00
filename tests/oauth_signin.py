"""Signing in to the OAuth test server, and a gateway that uses the sign-in: shared by the OAuth test files.

The server is ``tests/mcp_servers/oauth_server.py`` (MCP server + authorization server as a process).  A
sign-in goes through the real ``toolscript auth`` CLI with the server's test browser, into ``state``: the
state dir the test's gateway reads (the test sets TOOLSCRIPT_STATE_DIR to it; the ``state`` fixture does).
"""

import contextlib
import json
import os
import shlex
from typing import Any, Dict, Iterator, Optional, Tuple

import pytest

from conftest import run_cli, running_gateway, wait_for
from mcp_servers import oauth_server
from toolscript.config.load import ServerConfig

BROWSER = " ".join(shlex.quote(word) for word in oauth_server.BROWSER)
NEEDS_AUTH = "needs auth: run toolscript auth remote"


@pytest.fixture
def state(tmp_path: Any, monkeypatch: Any) -> Any:
    """The test's state dir (``tmp_path/state``), set as TOOLSCRIPT_STATE_DIR for this process."""
    path = tmp_path / "state"
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(path))
    return path


def sign_in(tmp_path: Any, server: Any, state: Any, *args: str, name: str = "remote", url: Optional[str] = None,
            **entry: Any) -> Tuple[Any, Dict[str, str]]:
    """``toolscript auth NAME ARGS`` against ``server`` (its ``url``, or the one given, plus config ``entry``
    keys such as ``type``); the config file and environment it ran with, for later ``auth`` runs."""
    config = tmp_path / f"auth-{name}.json"
    config.write_text(json.dumps({"mcpServers": {name: dict({"url": url or server.url}, **entry)}}))
    env = dict(os.environ, TOOLSCRIPT_STATE_DIR=str(state), TOOLSCRIPT_AUTH_BROWSER=BROWSER)
    proc = run_cli("--config", str(config), "auth", name, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return config, env


def stored_grant(state: Any, name: str = "remote") -> Dict[str, Any]:
    """The grant ``toolscript auth`` stored for ``name``."""
    with open(os.path.join(str(state), "oauth", name + ".json")) as f:
        return json.load(f)["grant"]


def remote(server: Any, sse: bool = False) -> ServerConfig:
    """The gateway's config of the server, "remote": Streamable HTTP, or its legacy SSE endpoint."""
    if sse:
        return ServerConfig(name="remote", type="sse", source="test", url=server.sse_url, timeout=20)
    return ServerConfig(name="remote", type="http", source="test", url=server.url, timeout=20)


def echo(gw: Any, message: str = "hi") -> Any:
    return gw.call("remote__echo", {"message": message}, source="test")


@contextlib.contextmanager
def signed_in(tmp_path: Any, state: Any, *server_args: str) -> Iterator[Tuple[Any, Any, Dict[str, str]]]:
    """The OAuth test server (started with ``server_args``) and a sign-in to it stored in ``state``:
    ``(server, config file, environment)``, the last two for more ``toolscript auth`` runs."""
    with oauth_server.start(*server_args) as server:
        config, env = sign_in(tmp_path, server, state)
        yield server, config, env


@contextlib.contextmanager
def signed_in_gateway(tmp_path: Any, state: Any, *server_args: str, sse: bool = False) -> Iterator[Tuple[Any, Any, Any]]:
    """The OAuth test server (started with ``server_args``), signed in to, and an in-process gateway whose
    upstream "remote" (over ``sse`` or Streamable HTTP) is ready: ``(server, gateway, upstream)``."""
    with oauth_server.start(*server_args) as server:
        sign_in(tmp_path, server, state, **({"url": server.sse_url, "type": "sse"} if sse else {}))
        with running_gateway([remote(server, sse)], tmp_path) as (gw, _):
            upstream = gw.upstreams["remote"]
            assert wait_for(lambda: upstream.state == "ready", 20), upstream.describe()
            yield server, gw, upstream
