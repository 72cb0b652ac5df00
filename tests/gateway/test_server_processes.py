"""Stopping an MCP server ends everything it started, also what left its process group.

A stdio server runs in a process group of its own, and stopping it signals
that group; a grandchild that called ``setsid()`` is in another group (and
session), which signalling the group alone would leave running after
``gateway stop``.  These servers never answer ``initialize`` (they stay
``connecting``) and start a grandchild that leaves the group, in the two ways
a program does it:

* ``setsid``: a child that starts a session of its own while the server lives;
* ``daemon``: the classic double fork, whose middle process exits at once, so
  the grandchild's parent is init before the server is ever stopped.

Where a cgroup can be made (root here) the server runs in one and both are
ended; elsewhere only the process tree read from /proc is known, which still
holds the ``setsid`` grandchild but not the daemon (named in the skip).
"""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

import gateway_processes
from conftest import REPO_ROOT, missing_prerequisite, wait_for
from toolscript.system import cgroups
from toolscript.config.load import ServerConfig
from toolscript.gateway import state
from toolscript.gateway.upstream import Upstream

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")

SLEEPER = "import sys, time; time.sleep(600)"
SERVERS = {
    "setsid": (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', %r, sys.argv[1] + '-left'], start_new_session=True)\n"
        "time.sleep(600)\n" % SLEEPER
    ),
    "daemon": (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execv(sys.executable, [sys.executable, '-c', %r, sys.argv[1] + '-left'])\n"
        "    os._exit(0)\n"
        "time.sleep(600)\n" % SLEEPER
    ),
}


def pids_with(word):
    """Live processes with ``word`` as one of their arguments (zombies, which have no identity left, not counted)."""
    return [pid for pid in gateway_processes.pids_with(word) if cgroups.identity(pid) is not None]


def need(how):
    if how == "daemon" and cgroups.hierarchy() is None:
        missing_prerequisite("a double-forked daemon is out of the process tree: ending it needs a cgroup (root, or a delegated cgroup v2)")


def server(how, marker):
    return ServerConfig(name=how, type="stdio", source="test", command=sys.executable, args=["-c", SERVERS[how], marker], timeout=30.0)


def kill_leftovers(marker):
    for pid in pids_with(marker + "-left"):
        os.kill(pid, 9)


def stop_returns(upstream):
    """``upstream.stop()`` on a thread of its own: True when it returned.

    A grandchild left running holds the server's stdout open, and closing it
    then waits behind the reader thread: stop() would hang the test itself.
    """
    stopper = threading.Thread(target=upstream.stop, args=(time.monotonic() + 20,), daemon=True)
    stopper.start()
    stopper.join(30)
    return not stopper.is_alive()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", list(SERVERS))
def test_stopping_a_server_ends_what_left_its_process_group(how, tmp_path):
    need(how)
    marker = f"toolscript-test-{how}-{os.getpid()}-{tmp_path.name}"
    upstream = Upstream(server(how, marker), lambda u: None)
    upstream.start()
    try:
        assert wait_for(lambda: pids_with(marker + "-left")), "the server did not start its grandchild"
        assert stop_returns(upstream), f"stop() hung: the {how} grandchild still holds the server's stdout"
        assert wait_for(lambda: not pids_with(marker), timeout=10), "the server outlived stop()"
        assert wait_for(lambda: not pids_with(marker + "-left"), timeout=10), f"the {how} grandchild outlived stop()"
    finally:
        kill_leftovers(marker)
        upstream.stop(time.monotonic() + 10)


@pytest.mark.timeout(60)
def test_the_emergency_exit_kills_what_left_the_process_group_too(tmp_path):
    need("daemon")
    marker = f"toolscript-test-kill-{os.getpid()}-{tmp_path.name}"
    upstream = Upstream(server("daemon", marker), lambda u: None)
    upstream.start()
    try:
        assert wait_for(lambda: pids_with(marker + "-left"))
        upstream.kill_now()
        assert wait_for(lambda: not pids_with(marker + "-left"), timeout=10), "kill_now() left the daemon running"
    finally:
        kill_leftovers(marker)
        upstream.stop(time.monotonic() + 10)


@pytest.mark.timeout(120)
def test_gateway_stop_ends_a_servers_setsid_grandchild(tmp_path):
    """The way a user meets it: toolscript gateway start --detach, then toolscript gateway stop."""
    marker = f"toolscript-test-gwstop-{os.getpid()}-{tmp_path.name}"
    config = {"mcpServers": {"spawner": {"command": sys.executable, "args": ["-c", SERVERS["setsid"], marker], "timeout": 60}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}

    def toolscript(*args):
        return subprocess.run([sys.executable, "-m", "toolscript", *args], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)

    try:
        started = toolscript("gateway", "start", "--detach", "--session", "spawn", "--json")
        assert started.returncode == 0, started.stderr
        assert wait_for(lambda: pids_with(marker + "-left"), timeout=20), "the server did not start its grandchild"
        stopped = toolscript("gateway", "stop", "--session", "spawn")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
        assert wait_for(lambda: not pids_with(marker + "-left"), timeout=20), "the setsid grandchild outlived gateway stop"
    finally:
        toolscript("gateway", "stop", "--session", "spawn")
        kill_leftovers(marker)
        for pid in pids_with(marker):
            os.kill(pid, 9)


def test_a_servers_cgroup_is_made_and_removed_where_the_system_allows(tmp_path):
    """Where a cgroup can be made, the server runs in it while it lives, and it goes with the server."""
    from toolscript.mcp.client.stdio import StdioTransport

    if cgroups.hierarchy() is None:
        missing_prerequisite("no writable cgroup hierarchy with the pids controller here: servers fall back to their process tree")
    transport = StdioTransport(sys.executable, ["-c", SLEEPER])
    transport.start(lambda message, related: None, lambda error: None, lambda request_id, error: None)
    try:
        group = transport._group
        assert group is not None and transport.process.pid in group.pids()
    finally:
        transport.close()
    assert not os.path.exists(group.path)


@pytest.mark.timeout(60)
def test_without_a_cgroup_the_process_tree_still_ends_a_setsid_grandchild(tmp_path, monkeypatch):
    """The fallback (a user who may not make cgroups): the grandchild is found below the server before it stops."""
    monkeypatch.setattr(cgroups, "create", lambda kind, pids_max=0: None)
    marker = f"toolscript-test-tree-{os.getpid()}-{tmp_path.name}"
    upstream = Upstream(server("setsid", marker), lambda u: None)
    upstream.start()
    try:
        assert wait_for(lambda: pids_with(marker + "-left"))
        assert stop_returns(upstream), "stop() hung: the setsid grandchild still holds the server's stdout"
        assert wait_for(lambda: not pids_with(marker + "-left"), timeout=10), "the setsid grandchild outlived stop()"
    finally:
        kill_leftovers(marker)
        upstream.stop(time.monotonic() + 10)
