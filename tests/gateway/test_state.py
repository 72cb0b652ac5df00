"""The per-session state files and start lock: named by the Claude Code session a gateway serves."""

import fcntl
import json
import os
import subprocess
import sys
import threading
import time

from conftest import wait_for
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


def test_a_lock_file_removed_while_a_start_waits_is_not_relied_on(tmp_path):
    """A start that waited on a lock file which was removed meanwhile locks the file now at that path."""
    environ = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    path = state.lock_path("s", environ)
    holder = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    got = {}

    def start():
        with state.session_lock("s", 10, environ) as fd:
            got["file"] = os.fstat(fd)
            got["named"] = os.stat(path)

    waiter = threading.Thread(target=start)
    waiter.start()
    assert wait_for(lambda: opened(path) == 2)  # the waiter has the old file open and polls its lock
    os.unlink(path)  # what a stopping gateway does while it holds the lock
    os.close(holder)
    waiter.join(10)
    assert not waiter.is_alive()
    assert (got["file"].st_dev, got["file"].st_ino) == (got["named"].st_dev, got["named"].st_ino)


def opened(path):
    """How many descriptors of this process are open on ``path`` (Linux /proc)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == path
        except OSError:
            pass
    return count


def aged(path, days=2.0):
    with open(path, "a"):
        pass
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_the_sweep_removes_only_lock_files_nobody_uses(tmp_path):
    environ = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    folder = state.gateways_dir(environ)
    names = ("gone", "dead", "held", "live", "fresh", "mine")
    for name in names:
        aged(state.lock_path(name, environ), days=0 if name == "fresh" else 2)
    aged(os.path.join(folder, "gone.log"))
    state.write_state("dead", {"url": "http://127.0.0.1:1/t/x", "pid": 2 ** 22 + 12345}, environ)  # no such process
    looks_like_a_gateway = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "toolscript", "gateway", "start"])
    try:
        state.write_state("live", {"url": "http://127.0.0.1:1/t/x", "pid": looks_like_a_gateway.pid}, environ)
        with state.session_lock("held", 0, environ):
            removed = state.sweep_locks(keep="mine", environ=environ)
    finally:
        looks_like_a_gateway.kill()
        looks_like_a_gateway.wait()
    left = sorted(n for n in os.listdir(folder) if n.endswith(".lock"))
    assert left == ["fresh.lock", "held.lock", "live.lock", "mine.lock"], left
    assert sorted(os.path.basename(p) for p in removed) == ["dead.lock", "gone.lock"]
    assert os.path.exists(os.path.join(folder, "gone.log"))  # only lock files are swept


def test_a_gateway_sweeps_stale_lock_files_at_start_and_removes_its_own_at_a_clean_stop(tmp_path):
    env = base_env(tmp_path)
    folder = tmp_path / "state" / "gateways"
    folder.mkdir(parents=True, mode=0o700)
    stale = folder / "ended-long-ago.lock"
    aged(str(stale))
    started = subprocess.run([sys.executable, "-m", "toolscript", "gateway", "start", "--detach", "--session", "s1", "--json"],
                             env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: not stale.exists(), timeout=10), sorted(os.listdir(folder))
    assert (folder / "s1.lock").exists()  # a running gateway's session keeps its lock file
    stopped = subprocess.run([sys.executable, "-m", "toolscript", "gateway", "stop", "--session", "s1"],
                             env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert wait_for(lambda: not (folder / "s1.lock").exists(), timeout=10), sorted(os.listdir(folder))
