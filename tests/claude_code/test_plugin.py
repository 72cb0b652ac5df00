"""The Claude Code plugin as shipped: layout, versions, the bundled zipapp, and the hooks.

The hooks run as Claude Code runs them: the plugin's shell scripts with the
event JSON on stdin and CLAUDE_PLUGIN_ROOT / CLAUDE_ENV_FILE in the
environment.  (tests/e2e/test_claude_e2e.py runs them under the real `claude`.)
"""

import json
import os
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import REPO_ROOT, trust_project_file
from mcp_servers.launch import FIXTURE

import toolscript
from toolscript.gateway.state import pid_alive

PLUGIN = os.path.join(REPO_ROOT, "plugins", "toolscript")
BUNDLED = os.path.join(PLUGIN, "bin", "toolscript.pyz")


# -- layout -------------------------------------------------------------------------------


def test_manifests_and_versions_agree():
    with open(os.path.join(PLUGIN, ".claude-plugin", "plugin.json")) as f:
        plugin = json.load(f)
    with open(os.path.join(REPO_ROOT, ".claude-plugin", "marketplace.json")) as f:
        market = json.load(f)
    assert plugin["name"] == "toolscript" and plugin["version"] == toolscript.__version__
    [entry] = market["plugins"]
    assert entry["name"] == "toolscript" and entry["version"] == toolscript.__version__
    assert os.path.normpath(os.path.join(REPO_ROOT, entry["source"])) == PLUGIN


def test_hooks_json_runs_the_one_hook_script_for_all_six_events():
    with open(os.path.join(PLUGIN, "hooks", "hooks.json")) as f:
        hooks = json.load(f)["hooks"]
    events = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit", "PreToolUse": "pre-tool-use",
              "PostToolUse": "post-tool-use", "Stop": "stop", "SessionEnd": "session-end"}
    assert set(hooks) == set(events)
    assert hooks["PostToolUse"][0]["matcher"] == "*"  # memory records every tool's action
    assert hooks["PreToolUse"][0]["matcher"] == "Edit|Write|Bash"  # the brief is about what these touch
    for event, name in events.items():
        [group] = hooks[event]
        [hook] = group["hooks"]
        assert hook["type"] == "command" and hook["command"] == f'"${{CLAUDE_PLUGIN_ROOT}}/hooks/hook.sh" {name}'
        assert isinstance(hook["timeout"], int) and hook["timeout"] <= 10  # seconds, not milliseconds
        # Capture that answers nothing runs in the background where Claude Code runs the command hook.
        assert hook.get("async", False) is (event == "PostToolUse")
    script = os.path.join(PLUGIN, "hooks", "hook.sh")
    assert os.access(script, os.X_OK)
    with open(script) as f:
        lines = [line for line in f.read().splitlines() if line and not line.startswith("#")]
    assert lines[-1] == 'exec "$py" -I -S "$(dirname "$0")/../bin/toolscript.pyz" hook "$1"'  # all logic is in Python


def test_the_hook_server_answers_four_events_through_mcp_tool_hooks():
    """plugin.json adds mcp-hooks.json (a Claude Code without mcp_tool hooks fails to load that file alone) and
    .mcp.json declares the server those hooks call, by the name Claude Code gives a plugin's server."""
    from toolscript.claude_code import hook_server

    with open(os.path.join(PLUGIN, ".claude-plugin", "plugin.json")) as f:
        assert json.load(f)["hooks"] == "./hooks/mcp-hooks.json"
    with open(os.path.join(PLUGIN, ".mcp.json")) as f:
        server = json.load(f)["mcpServers"][hook_server.SERVER_NAME]
    assert server == {"command": "${CLAUDE_PLUGIN_ROOT}/bin/toolscript", "args": ["hooks-mcp"]}
    with open(os.path.join(PLUGIN, "hooks", "mcp-hooks.json")) as f:
        fast = json.load(f)["hooks"]
    with open(os.path.join(PLUGIN, "hooks", "hooks.json")) as f:
        commands = json.load(f)["hooks"]
    names = {"UserPromptSubmit": "user-prompt-submit", "PreToolUse": "pre-tool-use", "PostToolUse": "post-tool-use",
             "Stop": "stop"}
    assert set(fast) == set(names) and set(names.values()) == set(hook_server.EVENTS)
    needs = {"UserPromptSubmit": {"prompt"}, "PreToolUse": {"tool_name", "tool_input"},
             "PostToolUse": {"tool_name", "tool_input", "tool_response"}, "Stop": {"stop_hook_active", "last_assistant_message"}}
    for event, name in names.items():
        [group] = fast[event]
        assert group.get("matcher") == commands[event][0].get("matcher")  # the same tools as the command hook
        [hook] = group["hooks"]
        assert (hook["type"], hook["server"], hook["tool"]) == ("mcp_tool", f"plugin:toolscript:{hook_server.SERVER_NAME}", name)
        assert isinstance(hook["timeout"], int) and hook["timeout"] <= 10
        fields = needs[event] | {"session_id", "cwd"}
        assert {key: hook["input"][key] for key in fields} == {key: "${%s}" % key for key in fields}


def test_bundled_zipapp_is_not_stale(tmp_path):
    """The committed plugin copy must hold exactly what the source builds (run 'make plugin')."""
    import build_pyz

    fresh = build_pyz.build(str(tmp_path / "fresh.pyz"))

    def contents(path):
        with zipfile.ZipFile(path) as archive:
            return {name: archive.read(name) for name in archive.namelist()}

    stale = sorted(set(contents(fresh).items()) ^ set(contents(BUNDLED).items()))
    assert not stale, f"plugins/toolscript/bin/toolscript.pyz is stale ({len(stale)} entries differ, e.g. {stale[0][0]}); run 'make plugin' and commit it"


def test_launcher_runs_the_bundled_zipapp_with_nothing_installed(tmp_path):
    env = {"PATH": "/usr/bin:/bin:" + os.path.dirname(sys.executable), "HOME": str(tmp_path)}
    result = subprocess.run([os.path.join(PLUGIN, "bin", "toolscript"), "--version"], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stdout.strip() == f"toolscript {toolscript.__version__}"


# -- the hooks ----------------------------------------------------------------------------


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


def hook(name, event, *, env, timeout=30):
    started = time.monotonic()
    result = subprocess.run([os.path.join(PLUGIN, "hooks", "hook.sh"), name], input=json.dumps(event) if isinstance(event, dict) else event,
                            env=env, capture_output=True, text=True, timeout=timeout)
    return result, time.monotonic() - started


@pytest.fixture
def claude_env(tmp_path):
    """The environment Claude Code gives a plugin hook, with a scratch state dir."""
    env_file = tmp_path / "sessionstart-hook-0.sh"
    env_file.write_text("export SOMETHING_ELSE=1\n")
    return {
        "PATH": "/usr/bin:/bin:" + os.path.dirname(sys.executable),
        "HOME": str(tmp_path),
        "CLAUDE_PLUGIN_ROOT": PLUGIN,
        "CLAUDE_ENV_FILE": str(env_file),
        "TOOLSCRIPT_STATE_DIR": str(tmp_path / "state"),
    }


def state_file(env, session):
    return os.path.join(env["TOOLSCRIPT_STATE_DIR"], "gateways", f"{session}.json")


def test_session_start_and_end(tmp_path, claude_env):
    project = tmp_path / "project"
    project.mkdir()
    # The server cannot answer until the test opens its gate, and its timeout (120 s) outlasts the
    # hook's (30 s): the hook returning at all proves it does not wait for the MCP servers.
    # (How fast it returns is measured by bench/plugin.py.)
    gate = tmp_path / "gate"
    gated = ("import os, runpy, sys, time\n"
             f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.05)\n"
             f"sys.argv = [{FIXTURE!r}, 'stdio']\nrunpy.run_path({FIXTURE!r}, run_name='__main__')\n")
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fixture": {"command": sys.executable, "args": ["-c", gated], "timeout": 120}}}))
    trust_project_file(project / ".toolscript.json", claude_env)  # the user approved it: its server does start
    event = {"session_id": "sess-1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    result, _ = hook("session-start", event, env=claude_env)
    gate.write_text("")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    with open(state_file(claude_env, "sess-1")) as f:
        info = json.load(f)
    exports = open(claude_env["CLAUDE_ENV_FILE"]).read().splitlines()
    assert exports[0] == "export SOMETHING_ELSE=1"  # other lines are kept
    assert f"export TOOLSCRIPT_GATEWAY_URL={info['url']}" in exports
    assert f'export PATH={PLUGIN}/bin:"$PATH"' in exports

    # The gateway serves the project's config, and the exported PATH and URL work from a shell.
    shell = subprocess.run(["sh", "-c", f". {claude_env['CLAUDE_ENV_FILE']} && toolscript tools invoke fixture__echo --args '{{\"message\": \"from bash\"}}'"],
                           env=claude_env, capture_output=True, text=True, timeout=60)
    assert shell.returncode == 0, shell.stderr
    assert json.loads(shell.stdout)["data"]["content"][0]["text"] == "Echo: from bash"

    # resume / clear / compact reuse the gateway and do not pile up lines.
    for source in ("resume", "clear", "compact"):
        again, _ = hook("session-start", dict(event, source=source), env=claude_env)
        assert again.returncode == 0 and again.stdout == ""
    assert open(claude_env["CLAUDE_ENV_FILE"]).read().splitlines() == exports
    with open(state_file(claude_env, "sess-1")) as f:
        assert json.load(f)["pid"] == info["pid"]

    ended, seconds = hook("session-end", {"session_id": "sess-1", "hook_event_name": "SessionEnd", "reason": "other"}, env=claude_env)
    assert ended.returncode == 0 and ended.stdout == ""
    assert not os.path.exists(state_file(claude_env, "sess-1"))
    assert wait_until(lambda: not pid_alive(info["pid"]))


def test_sessions_are_isolated(tmp_path, claude_env):
    hook("session-start", {"session_id": "A", "cwd": str(tmp_path)}, env=claude_env)
    hook("session-start", {"session_id": "B", "cwd": str(tmp_path)}, env=claude_env)
    try:
        with open(state_file(claude_env, "A")) as f:
            url_a = json.load(f)["url"]
        with open(state_file(claude_env, "B")) as f:
            url_b = json.load(f)["url"]
        assert url_a != url_b
        # A script run in session A cannot use session B's gateway: B refuses A's token.
        base_b, token_a = url_b.split("/t/")[0], url_a.split("/t/")[1]
        env = dict(claude_env, PYTHONPATH=REPO_ROOT, TOOLSCRIPT_GATEWAY_URL=f"{base_b}/t/{token_a}")
        crossed = subprocess.run([sys.executable, "-m", "toolscript", "list-servers"], env=env, capture_output=True, text=True, timeout=30)
        assert crossed.returncode == 1 and "refused our token" in crossed.stderr
    finally:
        for session in ("A", "B"):
            hook("session-end", {"session_id": session}, env=claude_env)


def test_hooks_never_break_the_session(tmp_path, claude_env):
    # Malformed stdin, an invalid config, a missing env file: exit 0, nothing or one JSON object.
    project = tmp_path / "bad"
    project.mkdir()
    (project / ".toolscript.json").write_text('{"mcpServers": {"x": {"command": 1}}}')
    trust_project_file(project / ".toolscript.json", claude_env)  # approved, so it is read, and found invalid
    result, _ = hook("session-start", json.dumps({"session_id": "bad-1", "cwd": str(project)}), env=claude_env)
    assert result.returncode == 0
    answer = json.loads(result.stdout)
    context = answer["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "could not start" in context["additionalContext"] and "mcpServers.x.command" in context["additionalContext"]
    assert "toolscript gateway start --detach --session bad-1" in context["additionalContext"]
    assert f'export PATH={PLUGIN}/bin:"$PATH"' in open(claude_env["CLAUDE_ENV_FILE"]).read()  # the CLI still works

    for garbage in ("", "not json", "[1, 2]", '{"session_id": 5}'):
        result, _ = hook("session-end", garbage, env=claude_env)
        assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    no_env_file = {k: v for k, v in claude_env.items() if k != "CLAUDE_ENV_FILE"}
    result, _ = hook("session-start", {"session_id": "ok-2", "cwd": str(tmp_path)}, env=no_env_file)
    assert result.returncode == 0 and result.stdout == ""
    hook("session-end", {"session_id": "ok-2"}, env=no_env_file)
    assert "gateway did not start" in open(os.path.join(claude_env["TOOLSCRIPT_STATE_DIR"], "hooks.log")).read()


def test_session_end_without_a_gateway_or_with_a_stale_state_file(tmp_path, claude_env):
    result, _ = hook("session-end", {"session_id": "never-started"}, env=claude_env)
    assert result.returncode == 0 and result.stdout == ""
    os.makedirs(os.path.dirname(state_file(claude_env, "stale")), exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(state_file(claude_env, "stale"), "w") as f:
        json.dump({"url": "http://127.0.0.1:9/t/x", "pid": dead.pid, "session": "stale"}, f)
    result, _ = hook("session-end", {"session_id": "stale"}, env=claude_env)
    assert result.returncode == 0 and not os.path.exists(state_file(claude_env, "stale"))


def test_after_one_hook_the_hooks_skip_a_version_managers_python3_shim(tmp_path, claude_env):
    """python3 on PATH is a shim (as pyenv's is): the first hook runs through it, the next ones do not."""
    shims = tmp_path / "shims"
    shims.mkdir()
    calls = tmp_path / "shim-calls"
    shim = shims / "python3"
    shim.write_text(f'#!/bin/sh\necho called >> "{calls}"\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    env = dict(claude_env, PATH=f"{shims}:/usr/bin:/bin", TOOLSCRIPT_SUGGEST="0", TOOLSCRIPT_MEMORY="0")
    event = {"session_id": "shim", "cwd": str(tmp_path), "prompt": "hello"}
    for _ in range(3):
        result, _ = hook("user-prompt-submit", event, env=env)
        assert result.returncode == 0, result.stderr
    assert calls.read_text().count("called") == 1
    noted = os.path.join(claude_env["TOOLSCRIPT_STATE_DIR"], "python")
    assert open(noted).read().strip() == os.path.realpath(sys.executable)
    # A noted interpreter that is gone: back to python3 from PATH, which notes the real one again.
    with open(noted, "w") as f:
        f.write("/nonexistent/python3\n")
    result, _ = hook("user-prompt-submit", event, env=env)
    assert result.returncode == 0 and calls.read_text().count("called") == 2
    assert open(noted).read().strip() == os.path.realpath(sys.executable)


def test_hooks_can_be_disabled_and_unknown_events_are_ignored(tmp_path, claude_env):
    env = dict(claude_env, TOOLSCRIPT_HOOKS_DISABLED="1")
    result, _ = hook("session-start", {"session_id": "off", "cwd": str(tmp_path)}, env=env)
    assert result.returncode == 0 and not os.path.exists(state_file(env, "off"))
    unknown = subprocess.run([sys.executable, BUNDLED, "hook", "some-future-event"], input="{}", env=claude_env, capture_output=True, text=True, timeout=30)
    assert unknown.returncode == 0 and unknown.stdout == ""


def test_gateway_exits_with_its_claude_session(tmp_path, claude_env):
    claude = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        env = dict(claude_env, CLAUDE_PID=str(claude.pid))
        hook("session-start", {"session_id": "crashy", "cwd": str(tmp_path)}, env=env)
        with open(state_file(env, "crashy")) as f:
            pid = json.load(f)["pid"]
        claude.kill()  # Claude Code dies without running SessionEnd
        claude.wait()
        assert wait_until(lambda: not os.path.exists(state_file(env, "crashy")) and not pid_alive(pid))
    finally:
        if claude.poll() is None:
            claude.kill()
