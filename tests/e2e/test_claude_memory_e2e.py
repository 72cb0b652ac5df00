"""End to end: the real ``claude`` CLI, two Claude Code sessions, one memory.

The first session (``claude -p`` with the plugin, against the fake Messages API)
runs one Bash command whose output carries a marker; the PostToolUse hook records
it.  The second, in the same project, asks about it: the request body the fake
receives carries the marker (the SessionStart and UserPromptSubmit hooks
injected it), and the fake's model then calls ``memory.search`` through
``toolscript exec``, whose tool result carries the marker too.
"""

import json
import os
import subprocess
import uuid

import pytest

from claude_scene import CLAUDE_TIMEOUT, PLUGIN_DIR, Scene, claude_binary
from fake_anthropic import FakeAnthropic


def run(scene, api, prompt, allowed):
    argv = [claude_binary(), "-p", prompt, "--model", "haiku", "--output-format", "json", "--plugin-dir", PLUGIN_DIR,
            "--debug-file", scene.debug_log, "--allowedTools", allowed]
    return subprocess.run(argv, env=scene.env(api.url), cwd=scene.project, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=CLAUDE_TIMEOUT)


@pytest.mark.timeout(300)
def test_session_two_remembers_session_one(tmp_path):
    scene = Scene(str(tmp_path))
    marker = f"zephyr{uuid.uuid4().hex[:10]}"
    first = [{"bash": f"echo deployed the {marker} canary", "description": "Deploy the canary"}, {"text": "Done."}]
    with FakeAnthropic(first, log_path=scene.request_log) as api:
        proc = run(scene, api, "deploy the canary", "Bash(echo *)")
        assert proc.returncode == 0, scene.diagnostics(api, proc)
    search = (f"toolscript exec 'from toolscript import tools; "
              f"print(tools.builtin.memory_search(query=\"{marker} canary\")[\"results\"][0][\"summary\"])'")
    second = [{"bash": search, "description": "Look up the canary in memory"}, {"text": "It was deployed."}]
    with FakeAnthropic(second, log_path=scene.request_log) as api:
        proc = run(scene, api, f"what happened with the {marker} canary deployment?", "Bash(toolscript *)")
        explain = scene.diagnostics(api, proc)
        assert proc.returncode == 0 and json.loads(proc.stdout)["is_error"] is False, explain
        conversation = [r for r in api.message_requests() if r["body"].get("stream") is True]
        assert conversation and marker in json.dumps(conversation[0]["body"]), explain  # injected by the hooks
        assert "## Relevant Context" in json.dumps(conversation[0]["body"]), explain
        results = api.tool_results()
        assert results and marker in json.dumps(results[0]), explain  # memory.search through exec found it
    log = open(os.path.join(scene.state_dir, "hooks.log"), encoding="utf-8").read()
    assert "memory: session" in log
