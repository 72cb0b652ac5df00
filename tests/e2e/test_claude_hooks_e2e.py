"""End to end: the real ``claude`` CLI runs the plugin's hooks, through its hook server or as commands.

The plugin here is a copy of ``plugins/toolscript`` holding a fresh build of this
checkout (the ``pyz`` fixture), loaded with ``--plugin-dir``; the CLI (pinned in
tests/peers) talks to ``fake_anthropic.FakeAnthropic``, whose request log is
what is checked:

- **The PreToolUse brief before a Bash call.**  An earlier session's memory
  names a command; the new session's model runs that command; the request
  after the Bash call carries ``PreToolUse:Bash hook additional context``
  with the memory, which no earlier request had.  Run with the plugin as
  shipped (the hook server answers, ``hook.sh`` steps aside) and without its
  server (``hook.sh`` runs ``toolscript hook pre-tool-use``, as on a Claude Code
  before 2.1.330); and with no plugin, through the hooks ``toolscript setup``
  wrote into the project.
- **Suggestions on a session's first prompt** while its MCP server is still
  connecting: the server starts answering 2 s after the gateway starts it,
  the prompt comes before that, and the suggestion in the first request still
  names its tool.
"""

import json
import os
import shlex
import shutil
import subprocess
import uuid

import pytest

from claude_scene import CLAUDE_TIMEOUT, PLUGIN_DIR, Scene, claude_binary, tail
from conftest import run_pyz, trust_project_file
from fake_anthropic import FakeAnthropic
from mcp_servers.launch import stdio_command

PRE_CONTEXT = "PreToolUse:Bash hook additional context"


def plugin_copy(root, pyz, *, with_server=True):
    """The plugin as shipped, holding this checkout's build; without ``.mcp.json`` when ``with_server`` is false."""
    folder = os.path.join(str(root), "plugin")
    shutil.copytree(PLUGIN_DIR, folder, ignore=shutil.ignore_patterns("toolscript.pyz"))
    shutil.copyfile(pyz, os.path.join(folder, "bin", "toolscript.pyz"))
    if not with_server and os.path.exists(os.path.join(folder, ".mcp.json")):
        os.unlink(os.path.join(folder, ".mcp.json"))
    return folder


def run_claude(scene, api, plugin, prompt, allowed=None, env=None):
    argv = [claude_binary(), "-p", prompt, "--model", "haiku", "--output-format", "json", "--plugin-dir", plugin,
            "--debug-file", scene.debug_log]
    if allowed:
        argv += ["--allowedTools", allowed]
    return subprocess.run(argv, env=env or scene.env(api.url), cwd=scene.project, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=CLAUDE_TIMEOUT)


def conversation(api):
    return [r for r in api.message_requests() if r["body"].get("stream") is True]


def hooks_log(scene):
    try:
        with open(os.path.join(scene.state_dir, "hooks.log"), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def seed_memory(scene, monkeypatch, marker):
    """An earlier session of this project ran the command the test's model will run, then a dozen other things."""
    from toolscript.claude_code import memory_hooks

    monkeypatch.setenv("HOME", scene.home)
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", scene.state_dir)
    monkeypatch.delenv("TOOLSCRIPT_DATA_DIR", raising=False)

    def ran(command, stdout):
        memory_hooks.post_tool_use({"session_id": "s-earlier", "cwd": scene.project, "tool_name": "Bash",
                                    "tool_input": {"command": command},
                                    "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}})

    ran(f"echo deploying {marker} canary", f"the {marker} canary needs the eu-west quota raised first")
    # Newer, unrelated work: what SessionStart brings back as the project's recent work.
    for index in range(12):
        ran(f"pytest tests/test_unrelated_{index}.py -q", f"{index + 3} passed")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mechanism", ["server", "command"])
def test_the_pre_tool_use_brief_reaches_the_model_after_a_bash_call(tmp_path, pyz, monkeypatch, mechanism):
    scene = Scene(str(tmp_path))
    marker = f"zephyr{uuid.uuid4().hex[:8]}"
    seed_memory(scene, monkeypatch, marker)
    plugin = plugin_copy(tmp_path, pyz, with_server=mechanism == "server")
    script = [{"bash": f"echo deploying {marker} canary", "description": "Deploy the canary"}, {"text": "Deployed."}]
    with FakeAnthropic(script, log_path=scene.request_log) as api:
        proc = run_claude(scene, api, plugin, "go ahead", allowed="Bash(echo *)")
    explain = scene.diagnostics(api, proc) + "\n--- hooks.log\n" + tail(os.path.join(scene.state_dir, "hooks.log"), 4000)
    assert proc.returncode == 0 and json.loads(proc.stdout)["is_error"] is False, explain
    requests = conversation(api)
    assert len(requests) == 2, explain
    before, after = (json.dumps(r["body"]) for r in requests)
    assert marker not in before, explain  # neither SessionStart nor the prompt brought it back
    assert PRE_CONTEXT in after and "Related earlier work" in after, explain
    assert "eu-west quota" in after.split(PRE_CONTEXT, 1)[1][:2000], explain  # the brief is the earlier memory
    log = hooks_log(scene)
    if mechanism == "server":
        assert "PreToolUse: done in" in log and "(hook server)" in log, explain
        assert "hook server: answering the hooks of Claude Code pid" in log, explain
        # hook.sh stepped aside: no toolscript process answered the events the server did.
        assert [line for line in log.splitlines() if "PreToolUse: done in" in line and "(hook server)" not in line] == [], explain
    else:
        assert "PreToolUse: done in" in log and "(hook server)" not in log, explain


@pytest.mark.timeout(300)
def test_setup_users_get_the_brief_before_a_bash_call_too(tmp_path, pyz, monkeypatch):
    scene = Scene(str(tmp_path))
    marker = f"zephyr{uuid.uuid4().hex[:8]}"
    seed_memory(scene, monkeypatch, marker)
    done = run_pyz(pyz, "setup", "--project", scene.project, cwd=scene.project, env=scene.env())
    assert done.returncode == 0, done.stderr
    script = [{"bash": f"echo deploying {marker} canary", "description": "Deploy the canary"}, {"text": "Deployed."}]
    with FakeAnthropic(script, log_path=scene.request_log) as api:
        argv = [claude_binary(), "-p", "go ahead", "--model", "haiku", "--output-format", "json", "--debug-file",
                scene.debug_log, "--allowedTools", "Bash(echo *)"]
        proc = subprocess.run(argv, env=scene.env(api.url), cwd=scene.project, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=CLAUDE_TIMEOUT)
    explain = scene.diagnostics(api, proc)
    assert proc.returncode == 0, explain
    before, after = (json.dumps(r["body"]) for r in conversation(api))
    assert marker not in before and PRE_CONTEXT in after and "eu-west quota" in after, explain


@pytest.mark.timeout(300)
def test_the_first_prompt_gets_suggestions_from_a_server_still_connecting(tmp_path, pyz):
    scene = Scene(str(tmp_path))
    # The server starts only once the prompt's hook has asked the model (the fake API's first request):
    # so it is surely still connecting when the prompt comes, and up within the suggestion's budget.
    waits = f"while [ ! -s {shlex.quote(scene.request_log)} ]; do sleep 0.05; done"
    late = f"{waits}; exec {' '.join(shlex.quote(part) for part in stdio_command('--name', 'late'))}"
    config = {"mcpServers": {"late": {"command": "/bin/sh", "args": ["-c", late]}}}
    path = os.path.join(scene.project, ".toolscript.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    trust_project_file(path, {"HOME": scene.home, "TOOLSCRIPT_STATE_DIR": scene.state_dir})
    plugin = plugin_copy(tmp_path, pyz)
    reply = '{"skills": [], "toolQueries": ["echo a message back"]}'
    with FakeAnthropic([{"text": reply}], log_path=scene.request_log) as api:
        env = dict(scene.env(api.url), TOOLSCRIPT_SUGGEST_BACKEND="api")
        proc = run_claude(scene, api, plugin, "say hello back to me, word for word", env=env)
    explain = scene.diagnostics(api, proc) + "\n--- hooks.log\n" + tail(os.path.join(scene.state_dir, "hooks.log"), 4000)
    assert proc.returncode == 0, explain
    requests = conversation(api)
    assert requests, explain
    first = json.dumps(requests[0]["body"])
    assert "UserPromptSubmit hook additional context" in first and "late__echo" in first, explain
    assert "prompt: api answered" in hooks_log(scene) and "1 tool(s)" in hooks_log(scene), explain
