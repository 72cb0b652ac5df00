"""The per-session state files and start lock: named by the Claude Code session a gateway serves."""

import json
import os
import subprocess
import sys

from gateway_processes import base_env
from toolscript.config.load import Config
from toolscript.gateway import state
from toolscript.gateway.service import Gateway


def test_only_a_descriptor_that_already_holds_the_session_lock_is_adopted(tmp_path):
    environ = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    other = os.open(str(tmp_path / "other"), os.O_RDWR | os.O_CREAT, 0o600)
    free = os.open(state.lock_path("s", environ), os.O_RDWR | os.O_CREAT, 0o600)
    closed = os.dup(other)
    os.close(closed)
    try:
        assert not state.adopt_lock("s", other, environ)  # not the lock file
        assert not state.adopt_lock("s", closed, environ)  # not open
        assert not state.adopt_lock("s", free, environ)  # the lock file, but nobody holds its lock
        with state.session_lock("s", 5, environ) as fd:
            assert not state.adopt_lock("s", free, environ)  # held, but through another open of the file
            inherited = os.dup(fd)  # what a child inherits: the very open file that holds the lock
            assert not state.adopt_lock("t", inherited, environ)  # another session's lock
            assert state.adopt_lock("s", inherited, environ)
            assert not os.get_inheritable(inherited)  # a gateway's servers do not get it
            os.close(inherited)
        with state.session_lock("s", 0, environ):
            pass  # probing the free lock above did not keep it
    finally:
        os.close(other)
        os.close(free)


def test_health_session_is_text_and_matches_status(tmp_path):
    config = Config(servers={}, files=[], warnings=[])
    assert Gateway(config, workspace=str(tmp_path)).health()["session"] == "default"
    undecodable = os.fsdecode(b"s-\xff\xfe")  # how argv hands Python invalid UTF-8
    health = Gateway(config, workspace=str(tmp_path), session=undecodable).health()
    json.dumps(health, ensure_ascii=False).encode("utf-8")  # no UnicodeEncodeError (a 500 on /health)
    assert health["session"].startswith("s-")
    # The raw argv name and its sanitised copy name the same state file.
    environ = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    assert state.state_path(undecodable, environ) == state.state_path(state.text_session(undecodable), environ)


def test_commands_take_an_undecodable_session_name(tmp_path):
    env = base_env(tmp_path, PYTHONIOENCODING="utf-8")
    argv = [sys.executable.encode(), b"-m", b"toolscript", b"gateway", b"status", b"--session", b"s-\xff"]
    result = subprocess.run(argv, env=env, cwd=str(tmp_path), capture_output=True, timeout=60)
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
    assert b"not running" in result.stdout
