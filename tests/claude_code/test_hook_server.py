"""The hook server (``toolscript hooks-mcp``): Claude Code's mcp_tool hooks answered by one warm process.

In-process: the JSON-RPC exchange Claude Code has with it, which clients it
answers, and that each call runs the same handlers as ``toolscript hook``.  As a
process: the registration the plugin's ``hook.sh`` reads, and that ``hook.sh``
steps aside for a live server and only then (tests/claude_code/test_plugin.py
runs the other hooks).  tests/e2e/test_claude_hooks_e2e.py runs it under the
real ``claude``.
"""

import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, git_project, wait_for
from toolscript.claude_code import hook_server
from toolscript.claude_code import memory_hooks
from toolscript.memory.context import BRIEF_HEADER

PLUGIN = os.path.join(REPO_ROOT, "plugins", "toolscript")
CLAUDE = {"name": "claude-code", "version": "2.1.337"}


@pytest.fixture
def world(scratch_dirs, monkeypatch):
    """A scratch HOME, state and data directory, and a project with a git root."""
    monkeypatch.setenv("TOOLSCRIPT_SUGGEST_BACKEND", "local")
    return git_project(scratch_dirs / "project")


class Wire:
    """A HookServer in this process, fed JSON-RPC messages; what it wrote back, by request id."""

    def __init__(self, client=CLAUDE, claude_pid=None, environ=None):
        self.out = io.BytesIO()
        self.server = hook_server.HookServer(self.out, environ=os.environ if environ is None else environ,
                                             claude_pid=claude_pid or os.getpid())
        self.next_id = 0
        if client is not None:
            self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client})
            self.notify("notifications/initialized")

    def notify(self, method, params=None):
        self.server.handle_line(json.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}}).encode())

    def request(self, method, params=None):
        self.next_id += 1
        self.server.handle_line(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                            "params": params or {}}).encode())
        if method == "tools/call":
            for thread in self.server.calls:
                thread.join(30)
        return self.answers()[self.next_id]

    def call(self, tool, **arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments})["result"]

    def answers(self):
        return {m.get("id"): m for m in map(json.loads, self.out.getvalue().splitlines())}


def hook_answer(result):
    """The hook JSON Claude Code reads from a tool result (its text block), or None for no content."""
    if not result["content"]:
        return None
    [block] = result["content"]
    assert block["type"] == "text"
    return json.loads(block["text"])


def seed(project, command="make deploy-canary", stdout="canary deployed to eu-west"):
    memory_hooks.post_tool_use({"session_id": "s-old", "cwd": str(project), "tool_name": "Bash",
                                "tool_input": {"command": command},
                                "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}})


# -- the exchange ----------------------------------------------------------------------------------


def test_the_handshake_lists_no_tools_to_the_model(world):
    wire = Wire(client=None)
    answer = wire.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLAUDE})
    assert answer["result"]["protocolVersion"] == "2025-11-25" and "tools" in answer["result"]["capabilities"]
    wire.notify("notifications/initialized")
    assert wire.request("tools/list")["result"] == {"tools": []}
    assert wire.request("ping")["result"] == {}
    assert wire.request("resources/list")["error"]["code"] == -32601
    wire.server.close()


def test_a_pre_tool_use_call_answers_with_the_brief(world):
    seed(world)
    wire = Wire()
    answer = hook_answer(wire.call("pre-tool-use", session_id="s-new", cwd=str(world), tool_name="Bash",
                                   tool_input=json.dumps({"command": "make deploy-canary", "description": "Deploy"}),
                                   tool_use_id="toolu_1", prompt_id=""))
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert answer["hookSpecificOutput"]["additionalContext"].startswith(BRIEF_HEADER)
    assert "canary deployed" in answer["hookSpecificOutput"]["additionalContext"]
    wire.server.close()


def test_post_tool_use_and_stop_record_and_answer_nothing(world):
    wire = Wire()
    result = wire.call("post-tool-use", session_id="s1", cwd=str(world), tool_name="Bash",
                       tool_input=json.dumps({"command": "make test"}),
                       tool_response=json.dumps({"stdout": "12 passed", "stderr": "", "interrupted": False}))
    assert hook_answer(result) is None
    # Stop never answers with context: Claude Code would send it to the model as a new turn.
    result = wire.call("stop", session_id="s1", cwd=str(world), stop_hook_active="false",
                       last_assistant_message="All 12 tests pass now.")
    assert hook_answer(result) is None
    with memory_hooks.open_configured({}) as db:
        kinds = sorted((m.kind, m.content) for m in db.recent(session="s1"))
    assert kinds == [("action", 'Ran `make test`: output "12 passed"'), ("response", "All 12 tests pass now.")]
    # stop_hook_active arrives as text: "true" means a stop hook is already making the model go on.
    wire.call("stop", session_id="s1", cwd=str(world), stop_hook_active="true", last_assistant_message="Again.")
    with memory_hooks.open_configured({}) as db:
        assert len(db.recent(session="s1")) == 2
    wire.server.close()


def test_a_prompt_call_gives_the_same_answer_as_the_command_hook(world):
    seed(world)
    wire = Wire()
    fields = {"session_id": "s-a", "cwd": str(world), "prompt": "why did make deploy-canary fail in eu-west"}
    answer = hook_answer(wire.call("user-prompt-submit", **fields))
    wire.server.close()
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    done = subprocess.run([sys.executable, "-m", "toolscript", "hook", "user-prompt-submit"],
                          input=json.dumps(dict(fields, session_id="s-b")), env=env, capture_output=True, text=True, timeout=60)
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert answer == json.loads(done.stdout)
    assert "canary deployed" in answer["hookSpecificOutput"]["additionalContext"]


def test_the_event_is_rebuilt_from_the_mapped_fields():
    event = hook_server.event_from_arguments({
        "session_id": "s1", "cwd": "/x", "prompt_id": "", "tool_name": "Bash",
        "tool_input": '{"command": "ls"}', "tool_response": "plain text output", "stop_hook_active": "false"})
    assert event["tool_input"] == {"command": "ls"} and event["tool_response"] == "plain text output"
    assert event["stop_hook_active"] is False and "prompt_id" not in event
    assert (event["session_id"], event["cwd"]) == ("s1", "/x")


# -- which clients it answers ---------------------------------------------------------------------


@pytest.mark.parametrize("client", [{"name": "claude-code", "version": "2.1.118"}, {"name": "claude-code"}, None])
def test_a_client_not_known_to_call_it_is_answered_with_nothing(world, client):
    """Older Claude Code may start the server but not call it, or call it without giving hook.sh CLAUDE_PID:
    the command hooks answer there, so the server stays silent and unregistered."""
    seed(world)
    wire = Wire(client=client)
    if client is None:
        wire.notify("notifications/initialized")
    assert not wire.server.answering
    assert hook_server.registry_path(os.getpid()) and not os.path.exists(hook_server.registry_path(os.getpid()))
    result = wire.call("pre-tool-use", session_id="s-new", cwd=str(world), tool_name="Bash",
                       tool_input=json.dumps({"command": "make deploy-canary"}))
    assert result == {"content": []}
    assert memory_hooks.injected_ids("s-new") == frozenset()  # no handler ran
    wire.server.close()


def test_hooks_disabled_means_no_answers(world, monkeypatch):
    seed(world)
    wire = Wire(environ=dict(os.environ, TOOLSCRIPT_HOOKS_DISABLED="1"))
    assert not wire.server.answering
    result = wire.call("pre-tool-use", session_id="s-new", cwd=str(world), tool_name="Bash",
                       tool_input=json.dumps({"command": "make deploy-canary"}))
    assert result == {"content": []}


def test_an_unknown_tool_is_answered_with_nothing(world):
    wire = Wire()
    assert wire.call("session-start", session_id="s1", cwd=str(world)) == {"content": []}
    assert wire.call("no-such-event") == {"content": []}
    wire.server.close()


def test_registration_names_the_server_for_its_claude_and_goes_when_it_ends(world):
    wire = Wire(claude_pid=424242)
    path = hook_server.registry_path(424242)
    assert wire.server.answering and hook_server.registered_pid(path) == os.getpid()
    wire.server.close()
    assert not os.path.exists(path)


def test_a_dead_servers_registration_is_swept_by_the_next(world, tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = hook_server.registry_path(777777)
    os.makedirs(os.path.dirname(stale), exist_ok=True)
    with open(stale, "w") as f:
        f.write(f"{dead.pid}\n")
    wire = Wire(claude_pid=888888)
    assert not os.path.exists(stale)
    wire.server.close()


# -- as a process, with the plugin's hook.sh ------------------------------------------------------


def start_server(env):
    proc = subprocess.Popen([sys.executable, "-m", "toolscript", "hooks-mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    def send(message):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLAUDE}})
    assert json.loads(proc.stdout.readline())["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc, send


def hook_sh(event_name, payload, env):
    return subprocess.run([os.path.join(PLUGIN, "hooks", "hook.sh"), event_name], input=json.dumps(payload), env=env,
                          capture_output=True, text=True, timeout=60)


def plugin_env(claude_pid):
    """What Claude Code gives a plugin hook, CLAUDE_PID among it (hook.sh runs the plugin's bundled zipapp)."""
    return dict(os.environ, CLAUDE_PID=str(claude_pid), CLAUDE_PLUGIN_ROOT=PLUGIN)


def stored(session):
    with memory_hooks.open_configured({}) as db:
        return [m.content for m in db.recent(session=session)]


def test_hook_sh_steps_aside_while_this_claudes_server_runs(world):
    """The command hook of an event the server answers ends before any Python starts; without a live server it runs."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    proc, _ = start_server(env)  # its parent, this test, plays Claude Code
    try:
        path = hook_server.registry_path(os.getpid())
        assert wait_for(lambda: hook_server.registered_pid(path) == proc.pid)
        payload = {"session_id": "s1", "cwd": str(world), "tool_name": "Bash", "tool_input": {"command": "make test"},
                   "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}
        stepped = hook_sh("post-tool-use", payload, plugin_env(os.getpid()))
        assert stepped.returncode == 0 and stepped.stdout == ""
        assert stored("s1") == []  # no command hook ran: the server is the one Claude Code calls
        other = hook_sh("post-tool-use", dict(payload, session_id="s2"), plugin_env(999999))  # another Claude
        assert other.returncode == 0 and stored("s2") != []
    finally:
        proc.stdin.close()
        proc.wait(30)
    assert not os.path.exists(path)  # gone with the server
    after = hook_sh("post-tool-use", dict(payload, session_id="s3"), plugin_env(os.getpid()))
    assert after.returncode == 0 and stored("s3") != []


def test_a_killed_server_leaves_a_registration_hook_sh_ignores(world):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    proc, _ = start_server(env)
    path = hook_server.registry_path(os.getpid())
    assert wait_for(lambda: hook_server.registered_pid(path) == proc.pid)
    proc.kill()
    proc.wait(30)
    assert os.path.exists(path)
    payload = {"session_id": "s1", "cwd": str(world), "tool_name": "Bash", "tool_input": {"command": "make test"},
               "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}
    ran = hook_sh("post-tool-use", payload, plugin_env(os.getpid()))
    assert ran.returncode == 0 and stored("s1") != []


def test_the_server_ends_cleanly_on_a_signal(world):
    proc, _ = start_server(dict(os.environ, PYTHONPATH=REPO_ROOT))
    path = hook_server.registry_path(os.getpid())
    assert wait_for(lambda: hook_server.registered_pid(path) == proc.pid)
    proc.send_signal(signal.SIGINT)  # how Claude Code ends its MCP servers
    assert proc.wait(30) == 0
    assert not os.path.exists(path)
    assert proc.stderr.read() == b""


@pytest.mark.parametrize("where", ["TOOLSCRIPT_STATE_DIR", "XDG_STATE_HOME", "HOME"])
def test_hook_sh_looks_where_the_server_registers(world, tmp_path, monkeypatch, where):
    """hook.sh finds the state directory as toolscript does: TOOLSCRIPT_STATE_DIR, else $XDG_STATE_HOME/toolscript, else ~/.local/state."""
    from toolscript import paths

    monkeypatch.delenv("TOOLSCRIPT_STATE_DIR")
    if where == "TOOLSCRIPT_STATE_DIR":
        monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "elsewhere"))
    elif where == "XDG_STATE_HOME":
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    else:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert paths.state_dir_path().startswith(str(tmp_path))
    path = hook_server.registry_path(555555)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(f"{os.getpid()}\n")  # a live process: this test
    payload = {"session_id": "s1", "cwd": str(world), "tool_name": "Bash", "tool_input": {"command": "make test"},
               "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}
    assert hook_sh("post-tool-use", payload, plugin_env(555555)).returncode == 0
    assert stored("s1") == []


def test_the_server_can_be_told_to_leave_everything_to_the_command_hooks(world):
    seed(world)
    wire = Wire(environ=dict(os.environ, TOOLSCRIPT_HOOK_SERVER="0"))
    assert not wire.server.answering
    assert not os.path.exists(hook_server.registry_path(os.getpid()))
    result = wire.call("pre-tool-use", session_id="s-new", cwd=str(world), tool_name="Bash",
                       tool_input=json.dumps({"command": "make deploy-canary"}))
    assert result == {"content": []}
