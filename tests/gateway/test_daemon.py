"""The gateway process: its start lock, and stopping cleanly on a signal whenever it comes."""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, wait_for
from gateway_processes import base_env, pids_with, toolscript
from toolscript.errors import UserError
from toolscript.gateway import daemon, state


def test_the_start_lock_is_handed_down_only_through_a_descriptor_that_holds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    with state.session_lock("s", 5) as fd:
        inherited = os.dup(fd)  # what a detached gateway inherits: the same open file, holding the lock
        lock = daemon.StartLock("s", inherited)
        assert lock.handed_down
        lock.release()
        with pytest.raises(OSError):
            os.fstat(inherited)  # released: the descriptor is closed
    with daemon.StartLock("s", None) as lock:
        assert not lock.handed_down
        with pytest.raises(UserError, match="still starting"):
            with state.session_lock("s", 0):
                pass
    with state.session_lock("s", 0):
        pass  # let go at the end of the block


_STOP_LOOP_CHILD = r"""
import sys
from toolscript.gateway.daemon import StopSignals, wait_for_stop
for line in sys.stdin:
    signals = StopSignals()
    sys.stdout.write("waiting\n")
    sys.stdout.flush()
    wait_for_stop(signals, poll=0.0001)  # a fast poll: the loop spends its time where a signal could hurt
    signals.close()
    sys.stdout.write("stopped\n")
    sys.stdout.flush()
"""


@pytest.mark.timeout(120)
def test_a_stop_signal_at_any_moment_ends_the_serve_loop():
    # A signal handler that takes a lock the interrupted main thread holds
    # (an Event's, as the loop waiting on that Event does) hangs the gateway
    # for good.  So: many SIGTERMs, each at a random moment of the real loop.
    import random
    import select
    import signal

    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    child = subprocess.Popen([sys.executable, "-c", _STOP_LOOP_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=REPO_ROOT)
    rounds = 1500
    try:
        for done in range(rounds):
            child.stdin.write(b"go\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"waiting\n"
            time.sleep(random.uniform(0, 0.002))
            child.send_signal(signal.SIGTERM)
            ready, _, _ = select.select([child.stdout], [], [], 10)
            assert ready, f"the serve loop hung after a SIGTERM (after {done} clean stops)"
            assert child.stdout.readline() == b"stopped\n"
    finally:
        child.kill()
        child.wait(10)


@pytest.mark.timeout(120)
def test_stop_while_a_server_is_still_connecting_leaves_no_process(tmp_path):
    marker = f"toolscript-test-connecting-{os.getpid()}-{tmp_path.name}"
    config = {"mcpServers": {"slow": {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)", marker], "timeout": 60}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = base_env(tmp_path)
    started = toolscript("gateway", "start", "--detach", "--session", "conn", "--json", env=env, cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: pids_with(marker))  # the server runs and never answers initialize
    stopped = toolscript("gateway", "stop", "--session", "conn", env=env, cwd=tmp_path)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert wait_for(lambda: not pids_with(marker), timeout=20), "the connecting server outlived its gateway"
