"""Starting, reusing and stopping a session's gateway as a process, as a shell or a hook does.

``toolscript gateway start --detach`` starts one gateway per session however
many starts race (the session's start lock, handed down to the detached
gateway), and ``stop`` stops only the gateway it was asked to.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

import peers
from conftest import REPO_ROOT, wait_for
from gateway_processes import base_env, pids_with, toolscript
from mcp_servers.launch import FIXTURE
from toolscript.errors import UserError
from toolscript.gateway import launch, state
from toolscript.gateway.client import find_url
from toolscript.gateway.state import pid_alive


def children_of(pid):
    out = subprocess.run(["ps", "-eo", "pid,ppid"], capture_output=True, text=True).stdout.split("\n")[1:]
    pairs = [tuple(map(int, line.split())) for line in out if line.strip()]
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in pairs if parent in frontier} - found
        found |= frontier
    return found


def test_detached_gateway_lifecycle_leaves_no_processes(tmp_path):
    config = {"mcpServers": {"fixture": {"command": sys.executable, "args": [FIXTURE, "stdio"]}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    started = toolscript("gateway", "start", "--detach", "--session", "s1", "--json", env=dict(env, DEBUG="1"), cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["url"].startswith("http://127.0.0.1:") and "/t/" in info["url"]
    state_file = tmp_path / "state" / "gateways" / "s1.json"
    assert oct(state_file.stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "state" / "gateways").stat().st_mode & 0o777) == "0o700"

    # A second start for the same session reuses the live gateway.
    again = toolscript("gateway", "start", "--detach", "--session", "s1", "--json", env=env, cwd=tmp_path)
    assert json.loads(again.stdout)["pid"] == info["pid"] and json.loads(again.stdout)["alreadyRunning"]

    status = toolscript("gateway", "status", "--session", "s1", env=env, cwd=tmp_path)
    assert status.returncode == 0 and "fixture" in status.stdout and "ready" in status.stdout
    assert info["url"].split("/t/")[1] not in status.stdout  # the token is not printed
    assert wait_for(lambda: children_of(info["pid"]))  # the fixture server runs under the gateway
    children = children_of(info["pid"])

    invoked = toolscript("tools", "invoke", "fixture__echo", "--args", '{"message": "cli"}', "--session", "s1", env=env, cwd=tmp_path)
    assert invoked.returncode == 0 and json.loads(invoked.stdout)["data"]["content"][0]["text"] == "Echo: cli"

    # The token is a secret: the debug log of a gateway that served requests never shows it.
    log = (tmp_path / "state" / "gateways" / "s1.log").read_text()
    assert "GET /t/****/health" in log and info["url"].split("/t/")[1] not in log

    stopped = toolscript("gateway", "stop", "--session", "s1", env=env, cwd=tmp_path)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not state_file.exists()
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in children | {info["pid"]}), timeout=10)

    after = toolscript("gateway", "status", "--session", "s1", env=env, cwd=tmp_path)
    assert after.returncode == 1 and "not running" in after.stdout and "gateway start --detach" in after.stdout
    # A cleanly stopped gateway leaves no session log behind.
    assert not (tmp_path / "state" / "gateways" / "s1.log").exists()


@pytest.mark.timeout(120)
def test_racing_detached_starts_leave_exactly_one_gateway(tmp_path):
    env = base_env(tmp_path)
    workspace = str(tmp_path / "ws")
    os.mkdir(workspace)
    argv = [sys.executable, "-m", "toolscript", "gateway", "start", "--detach", "--session", "race", "--json", "--workspace", workspace]
    racers = [subprocess.Popen(argv, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [racer.communicate(timeout=90) for racer in racers]
    try:
        assert all(racer.returncode == 0 for racer in racers), [err for _, err in outputs]
        answers = [json.loads(out) for out, _ in outputs]
        assert len({a["url"] for a in answers}) == 1 and len({a["pid"] for a in answers}) == 1
        assert sum(1 for a in answers if not a["alreadyRunning"]) == 1
        # Exactly one gateway process for the session, and it is the one every racer reported.
        assert pids_with("gateway", "start", "race", workspace) == [answers[0]["pid"]]
        assert state.read_state("race", env)["pid"] == answers[0]["pid"]
    finally:
        toolscript("gateway", "stop", "--session", "race", env=env, cwd=tmp_path)
    assert wait_for(lambda: not pids_with("gateway", "start", "race", workspace))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("claim", ["old-variable", "descriptor-of-another-file", "descriptor-of-the-free-lock-file"])
def test_a_start_that_does_not_hold_the_lock_waits_for_it_and_finds_the_live_gateway(tmp_path, claim):
    """Only a descriptor that holds the session's start lock lets a start skip the lock and the live check.

    The claims a process could make without holding the lock: the variable a
    detached gateway's environment once carried (any process can inherit or set
    it), or ``--lock-fd`` naming a descriptor that is not the held lock.  Each
    must end in "already running", never in a second gateway for the session.
    """
    env = base_env(tmp_path)
    workspace = str(tmp_path)  # tells this test's gateways from those of the other cases, running in parallel
    start = ["gateway", "start", "--session", "claim", "--json", "--workspace", workspace]
    first = json.loads(toolscript(*start, "--detach", env=env, cwd=tmp_path).stdout)
    argv = [sys.executable, "-m", "toolscript", *start]
    claimant_env, fds = dict(env), []
    if claim == "old-variable":
        claimant_env["TOOLSCRIPT_GATEWAY_LOCK_HELD"] = "1"
    else:
        path = str(tmp_path / "other") if claim == "descriptor-of-another-file" else state.lock_path("claim", env)
        fds.append(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        argv += ["--lock-fd", str(fds[0])]
    claimant = subprocess.Popen(argv, env=claimant_env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, pass_fds=fds)
    try:
        # Either it answers and exits, or it became a second gateway and took over the state file.
        assert wait_for(lambda: claimant.poll() is not None or (state.read_state("claim", env) or first)["pid"] != first["pid"], timeout=60)
        assert claimant.poll() is not None, "a start that did not hold the lock started a second gateway"
        out, err = claimant.communicate(timeout=10)
        assert claimant.returncode == 0, err
        answer = json.loads(out)
        assert answer["alreadyRunning"] is True and answer["pid"] == first["pid"]
        assert pids_with("gateway", "start", "claim", workspace) == [first["pid"]]
    finally:
        for fd in fds:
            os.close(fd)
        if claimant.poll() is None:
            claimant.terminate()
            claimant.communicate(timeout=30)
        toolscript("gateway", "stop", "--session", "claim", env=env, cwd=tmp_path)
        if state.pid_alive(first["pid"]):
            os.kill(first["pid"], signal.SIGTERM)
    assert wait_for(lambda: not state.pid_alive(first["pid"]))


@pytest.mark.timeout(60)
def test_a_detached_gateway_lets_the_start_lock_go_once_it_is_live(tmp_path):
    env = base_env(tmp_path)
    info = json.loads(toolscript("gateway", "start", "--detach", "--session", "free", "--json", env=env, cwd=tmp_path).stdout)
    lock_file = state.lock_path("free", env)

    def lock_free():
        try:
            with state.session_lock("free", 0, env):
                return True
        except UserError:
            return False

    try:
        assert wait_for(lock_free)
        # The gateway keeps no copy of the lock's descriptor, and so passes none to its servers.
        held = []
        for name in os.listdir(f"/proc/{info['pid']}/fd"):
            try:
                held.append(os.readlink(f"/proc/{info['pid']}/fd/{name}"))
            except OSError:
                pass
        assert lock_file not in held
    finally:
        toolscript("gateway", "stop", "--session", "free", env=env, cwd=tmp_path)


def test_outdated_session_url_falls_back_and_never_orphans_the_live_gateway(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": REPO_ROOT, "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state")}
    started = toolscript("gateway", "start", "--detach", "--session", "s2", "--json", env=env, cwd=tmp_path)
    info = json.loads(started.stdout)
    dead = f"http://127.0.0.1:{peers.free_port()}/t/old-token"
    session_env = dict(env, TOOLSCRIPT_GATEWAY_URL=dead, CLAUDE_CODE_SESSION_ID="s2")
    try:
        # The session's environment still names a gateway that was replaced: the state file wins.
        listed = toolscript("list-servers", env=session_env, cwd=tmp_path)
        assert listed.returncode == 0 and "builtin" in listed.stdout
        status = toolscript("gateway", "status", env=session_env, cwd=tmp_path)
        assert status.returncode == 0 and f"pid {info['pid']}" in status.stdout
        # Stopping by the dead URL must not delete the live gateway's state file.
        stopped = toolscript("gateway", "stop", "--gateway-url", dead, "--session", "s2", env=env, cwd=tmp_path)
        assert stopped.returncode == 0 and "not running" in stopped.stdout
        assert (tmp_path / "state" / "gateways" / "s2.json").exists()
        assert "old-token" not in stopped.stdout + stopped.stderr
    finally:
        toolscript("gateway", "stop", "--session", "s2", env=env, cwd=tmp_path)
    assert wait_for(lambda: not pid_alive(info["pid"]))


@pytest.mark.timeout(120)
def test_explicit_session_wins_over_the_environment_and_stop_stops_only_what_is_named(tmp_path):
    env = base_env(tmp_path)
    default = json.loads(toolscript("gateway", "start", "--detach", "--json", env=env, cwd=tmp_path).stdout)
    s1 = json.loads(toolscript("gateway", "start", "--detach", "--session", "s1", "--json", env=env, cwd=tmp_path).stdout)
    shell = dict(env, TOOLSCRIPT_GATEWAY_URL=default["url"])  # after eval "$(toolscript gateway start --detach)"
    try:
        assert find_url(None, "s1", shell) == s1["url"]
        assert find_url(None, None, shell) == default["url"]
        status = toolscript("gateway", "status", "--session", "s1", "--json", env=shell, cwd=tmp_path)
        assert json.loads(status.stdout)["health"]["pid"] == s1["pid"]

        missing = toolscript("gateway", "stop", "--session", "s2", env=shell, cwd=tmp_path)
        assert missing.returncode == 0 and "not running" in missing.stdout
        assert state.pid_alive(default["pid"]) and state.pid_alive(s1["pid"])
        listed = toolscript("list-servers", "--session", "s2", env=shell, cwd=tmp_path)
        assert listed.returncode == 1 and "'s2'" in listed.stderr and "--session s2" in listed.stderr

        stopped = toolscript("gateway", "stop", "--session", "s1", env=shell, cwd=tmp_path)
        assert stopped.returncode == 0 and str(s1["pid"]) in stopped.stdout
        assert wait_for(lambda: not state.pid_alive(s1["pid"]))
        assert state.pid_alive(default["pid"])
    finally:
        toolscript("gateway", "stop", "--session", "s1", env=env, cwd=tmp_path)
        toolscript("gateway", "stop", env=env, cwd=tmp_path)


def test_errors_never_show_the_token(tmp_path):
    log = tmp_path / "g.log"
    log.write_text("starting\ntoolscript: error: something about http://127.0.0.1:4242/t/s3cr3tT0ken/mcp went wrong\n")
    tail = launch.log_tail(str(log))
    assert "s3cr3tT0ken" not in tail and "/t/****" in tail
    assert not tail.startswith("toolscript: error:")


@pytest.mark.timeout(60)
def test_a_failed_detached_start_prints_one_error_line(tmp_path):
    (tmp_path / ".toolscript.json").write_text("{not json")
    result = toolscript("gateway", "start", "--detach", "--session", "bad", env=base_env(tmp_path), cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.count("toolscript: error:") == 1, result.stderr


@pytest.mark.timeout(60)
def test_unreachable_gateway_status_is_flat_and_does_not_point_at_itself(tmp_path):
    env = base_env(tmp_path)
    info = json.loads(toolscript("gateway", "start", "--detach", "--session", "dead", "--json", env=env, cwd=tmp_path).stdout)
    os.kill(info["pid"], 9)
    assert wait_for(lambda: not state.pid_alive(info["pid"]))
    status = toolscript("gateway", "status", "--session", "dead", env=env, cwd=tmp_path)
    assert status.returncode == 1 and "not running" in status.stdout
    assert "gateway status" not in status.stdout
    for line in status.stdout.splitlines():
        depth = 0
        for ch in line:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            assert depth <= 1, f"nested parentheses: {line}"
    listed = toolscript("list-servers", "--session", "dead", env=env, cwd=tmp_path)
    assert "not reachable" in listed.stderr and "((" not in listed.stderr and "(" not in listed.stderr.split("not reachable", 1)[1]


@pytest.mark.timeout(120)
def test_status_explains_hidden_tools_and_a_clean_stop_removes_the_log(tmp_path):
    config = {"mcpServers": {"fixture": {"command": sys.executable, "args": [FIXTURE, "stdio"], "excludeTools": ["echo"]}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = base_env(tmp_path)
    info = json.loads(toolscript("gateway", "start", "--detach", "--session", "h", "--json", env=env, cwd=tmp_path).stdout)
    try:
        status = toolscript("gateway", "status", "--session", "h", env=env, cwd=tmp_path)
        assert "(1 hidden: includeTools/excludeTools)" in status.stdout, status.stdout
        assert "session h)" in status.stdout
        assert os.path.exists(info["log"])
    finally:
        toolscript("gateway", "stop", "--session", "h", env=env, cwd=tmp_path)
    assert wait_for(lambda: not os.path.exists(info["log"]))
