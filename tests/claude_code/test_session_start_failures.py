"""The SessionStart hook when it cannot start the session's gateway: it tells the model why, and never breaks the session."""

import json

import pytest

from gateway_processes import base_env
from toolscript.gateway import state


@pytest.mark.timeout(60)
def test_session_start_hook_tells_the_model_when_cwd_is_missing(tmp_path, run_cli):
    env = base_env(tmp_path)
    event = json.dumps({"session_id": "gone", "cwd": str(tmp_path / "no-such-dir")})
    result = run_cli("hook", "session-start", env=env, input=event, cwd=str(tmp_path))
    assert result.returncode == 0
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    assert "does not exist" in answer["additionalContext"] and "gateway start --detach" in answer["additionalContext"]
    assert state.read_state("gone", env) is None


@pytest.mark.timeout(60)
def test_session_start_hook_tells_the_model_when_input_is_nested_too_deep(tmp_path, run_cli):
    env = base_env(tmp_path)
    result = run_cli("hook", "session-start", env=env, input="[" * 200000 + "]" * 200000, cwd=str(tmp_path))
    assert result.returncode == 0
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert "nested too deeply" in answer["additionalContext"]
    with open(tmp_path / "state" / "hooks.log") as f:
        assert "nested too deeply" in f.read()


def test_an_unexpected_session_start_failure_is_told_to_the_model(tmp_path, monkeypatch):
    import io

    from toolscript.claude_code import hooks as hookio

    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv(hookio.DISABLE_VAR, raising=False)

    def broken(event):
        raise RuntimeError("boom")

    out = io.StringIO()
    assert hookio.run("SessionStart", broken, stdin=io.StringIO('{"session_id": "x"}'), stdout=out) == 0
    answer = json.loads(out.getvalue())["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart" and "hook failed" in answer["additionalContext"]
    quiet = io.StringIO()
    hookio.run("SessionEnd", broken, stdin=io.StringIO("{}"), stdout=quiet)
    assert quiet.getvalue() == ""
