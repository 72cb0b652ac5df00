"""The real ``claude`` CLI runs the hooks ``toolscript setup`` wrote into a project's .claude/settings.json."""

import json
import os
import subprocess
import time

import pytest

from claude_scene import CLAUDE_TIMEOUT, GONE_TIMEOUT, Scene, claude_binary
from conftest import run_pyz
from fake_anthropic import FakeAnthropic, tool_result_text


@pytest.mark.timeout(240)
def test_real_claude_runs_the_hooks_setup_registered(tmp_path, pyz):
    """The written settings are accepted: SessionStart starts a gateway, the Bash tool sees our launcher, SessionEnd stops it."""
    claude = claude_binary()
    scene = Scene(str(tmp_path / "scene"))
    proc = run_pyz(pyz, "setup", "--project", scene.project, cwd=scene.project, env=scene.env())
    assert proc.returncode == 0, proc.stderr
    script = [{"bash": "printenv TOOLSCRIPT_GATEWAY_URL PATH", "description": "Show the gateway URL"}, {"text": "Done."}]
    api = FakeAnthropic(script, log_path=scene.request_log, on_message=lambda entry: scene.state_files())
    run = None
    with api:
        run = subprocess.run(
            [claude, "-p", "hello", "--model", "haiku", "--output-format", "json", "--debug-file", scene.debug_log,
             "--allowedTools", "Bash(printenv *)"],
            env=scene.env(api.url), cwd=scene.project, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=CLAUDE_TIMEOUT,
        )
    explain = scene.diagnostics(api, run)
    assert run.returncode == 0, explain
    result = json.loads(run.stdout)
    assert result.get("is_error") is False, explain
    observed = [r.get("observed") for r in api.message_requests()]
    states = [v for snapshot in observed if isinstance(snapshot, dict) for v in snapshot.values() if isinstance(v, dict)]
    assert states, "no gateway state file while the model was asked: SessionStart did not run\n" + explain
    session_id = result.get("session_id")
    assert any(session_id in name for snapshot in observed if isinstance(snapshot, dict) for name in snapshot), explain
    results = api.tool_results()
    assert results, explain
    lines = tool_result_text(results[0]).strip().splitlines()
    assert len(lines) == 2 and lines[0] == states[0]["url"], explain
    assert lines[1].split(os.pathsep)[0] == os.path.join(scene.project, ".claude", "toolscript"), explain
    deadline = time.monotonic() + GONE_TIMEOUT
    while scene.state_files() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not scene.state_files(), "SessionEnd did not stop the gateway\n" + explain
