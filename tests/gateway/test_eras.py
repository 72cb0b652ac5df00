"""The gateway remembers each upstream's protocol era across runs (toolscript/gateway/eras.py).

An older stdio server that ignores ``server/discover`` costs half the connect
timeout on every connect unless the gateway remembers that it speaks the
handshake; these tests run real gateways (in-process) against scripted
servers, one after the other on one state directory, and read the methods
each server received.
"""

import json
import sys
import time

import pytest

from conftest import running_gateway, wait_for
from mcp_servers.launch import ERA_SERVER, start_fixture
from toolscript.config.load import ServerConfig
from toolscript.gateway import eras


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def silent_server(tmp_path, timeout):
    log = tmp_path / "methods.log"
    config = ServerConfig(name="old", type="stdio", source="test", command=sys.executable, args=[ERA_SERVER, "silent", str(log)], timeout=timeout)
    return config, log


def run_once(config, workspace):
    """Start a gateway for ``config``, wait until the server is ready, stop; returns the upstream's state."""
    with running_gateway([config], workspace) as (gw, _url):
        assert gw.wait_for_servers() == []
        upstream = gw.upstreams[config.name]
        return upstream.state, upstream.protocol_version


@pytest.mark.timeout(60)
def test_a_server_that_ignores_discover_is_probed_once_then_remembered(tmp_path, state):
    config, log = silent_server(tmp_path, timeout=4.0)
    assert run_once(config, tmp_path) == ("ready", "2025-11-25")
    assert log.read_text().split()[:2] == ["server/discover", "initialize"]
    assert eras.recall(config) == "handshake"
    assert oct((state / "eras.json").stat().st_mode & 0o777) == "0o600"

    log.unlink()
    assert run_once(config, tmp_path) == ("ready", "2025-11-25")
    # The second gateway went straight to the handshake: no probe, no wait.
    assert log.read_text().split()[:2] == ["initialize", "notifications/initialized"]


@pytest.mark.timeout(60)
def test_a_changed_command_is_a_new_server_and_an_old_hint_is_not_trusted(tmp_path, state, monkeypatch):
    config, log = silent_server(tmp_path, timeout=4.0)
    eras.remember(config, "handshake")
    other = ServerConfig(name="old", type="stdio", source="test", command=sys.executable, args=config.args + ["x"], timeout=4.0)
    assert eras.recall(other) is None
    # A week later the hint expires: an upgraded server gets probed again.
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + eras.MAX_AGE + 60)
    assert eras.recall(config) is None


@pytest.mark.timeout(60)
def test_a_wrong_hint_costs_one_attempt_and_is_forgotten(tmp_path, state, monkeypatch):
    from toolscript.gateway import upstream as upstream_module

    monkeypatch.setattr(upstream_module, "FIRST_BACKOFF", 0.2)
    peer = start_fixture("http")
    try:
        config = ServerConfig(name="remote", type="http", source="test", url=peer.url, timeout=3.0)
        eras.remember(config, "sse")  # wrong: the fixture at /mcp speaks Streamable HTTP
        with running_gateway([config], tmp_path) as (gw, _url):
            assert wait_for(lambda: gw.upstreams["remote"].state == "ready", timeout=30), gw.upstreams["remote"].error
            assert gw.upstreams["remote"].transport != "sse"
        assert eras.recall(config) in ("modern", "handshake")
    finally:
        peer.stop()


def test_a_corrupt_memory_file_means_no_hints_and_is_replaced(tmp_path, state):
    config, _log = silent_server(tmp_path, timeout=4.0)
    state.mkdir(mode=0o700)
    (state / "eras.json").write_text("{not json")
    assert eras.recall(config) is None
    eras.remember(config, "modern")
    assert eras.recall(config) == "modern"
    assert list(json.loads((state / "eras.json").read_text()).values())[0]["era"] == "modern"
