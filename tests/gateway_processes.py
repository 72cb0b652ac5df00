"""What the gateway's tests share: server configs for the fixture server, the ``toolscript``
command as a process, and the process table (Linux /proc).

* ``fixture_server(name, *options, timeout)``: a stdio ServerConfig for tests/mcp_servers/fixture_server.py.
* ``silent_server(name, marker, timeout)``: a stdio server that never answers ``initialize``.
* ``base_env(tmp_path, **extra)``: the environment of a ``toolscript`` process with its own HOME and state dir.
* ``toolscript(*args, env, cwd, timeout)``: ``python -m toolscript ARGS`` from the checkout.
* ``pids_with(*words)``: live processes with every one of ``words`` among their arguments.
"""

import os
import subprocess
import sys

from conftest import REPO_ROOT
from mcp_servers.launch import FIXTURE
from toolscript.config.load import ServerConfig
from toolscript.gateway import state


def fixture_server(name="fixture", *options, timeout=10.0):
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio", *options], timeout=timeout)


def silent_server(name, marker, timeout=15.0):
    """A stdio server that never answers initialize: it stays ``connecting``."""
    code = "import time; time.sleep(600)"
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=["-c", code, marker], timeout=timeout)


def base_env(tmp_path, **extra):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    env.update(extra)
    return env


def toolscript(*args, env, cwd, timeout=60):
    return subprocess.run([sys.executable, "-m", "toolscript", *args], env=env, cwd=str(cwd), capture_output=True, text=True, timeout=timeout)


def cmdlines():
    """{pid: argv} of every process (Linux /proc)."""
    result = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if argv and state.pid_alive(int(name)):
            result[int(name)] = argv
    return result


def pids_with(*words):
    return sorted(pid for pid, argv in cmdlines().items() if all(w in argv for w in words))
