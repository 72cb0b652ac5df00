"""End to end: the real ``claude`` CLI runs the plugin's UserPromptSubmit hook, and the suggestion reaches the model.

``claude -p`` with ``--plugin-dir plugins/toolscript`` against the fake Messages
API, in a scratch HOME that has a user skill ``pptx``: the SessionStart hook
starts the session's gateway, the prompt hook suggests, and the request body the
fake receives for the conversation carries the suggestion (``Skill("pptx")``,
and a gateway tool id).  Run twice: with the ``local`` backend (no model call),
and with ``api``, where the hook's own Messages API call goes to the same fake:
that request must carry our system prompt, and the conversation's request the
skill the fake's reply named.
"""

import json
import os

import pytest

from claude_scene import CLAUDE_TIMEOUT, PLUGIN_DIR, Scene, claude_binary  # the same scratch world and CLI
from fake_anthropic import FakeAnthropic
from toolscript.claude_code import suggest

PROMPT = "turn these meeting notes into a pptx slide deck, and tell me the current time in utc"
SKILL = "---\nname: pptx\ndescription: Use when creating or editing PowerPoint presentations (.pptx slide decks).\n---\n# pptx\n"


def run_claude(scene, api, backend):
    import subprocess

    folder = os.path.join(scene.home, ".claude", "skills", "pptx")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "SKILL.md"), "w", encoding="utf-8") as f:
        f.write(SKILL)
    env = scene.env(api.url)
    env["TOOLSCRIPT_SUGGEST_BACKEND"] = backend
    argv = [claude_binary(), "-p", PROMPT, "--model", "haiku", "--output-format", "json", "--plugin-dir", PLUGIN_DIR,
            "--debug-file", scene.debug_log]
    return subprocess.run(argv, env=env, cwd=scene.project, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=CLAUDE_TIMEOUT)


def conversation(api):
    """The CLI's own /v1/messages requests (it streams; the hook's call does not)."""
    return [r for r in api.message_requests() if r["body"].get("stream") is True]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("backend", ["local", "api"])
def test_the_prompt_hooks_suggestion_reaches_the_model(tmp_path, backend):
    scene = Scene(str(tmp_path))
    reply = '{"skills": ["pptx"], "toolQueries": ["current time in a timezone"]}'
    api = FakeAnthropic([{"text": reply}], log_path=scene.request_log)
    with api:
        proc = run_claude(scene, api, backend)
    explain = scene.diagnostics(api, proc)
    assert proc.returncode == 0 and json.loads(proc.stdout)["is_error"] is False, explain
    main = conversation(api)
    assert main, explain
    body = json.dumps(main[0]["body"])
    assert 'Skill(\\"pptx\\")' in body, explain
    assert "builtin__time.now" in body and "toolscript get-types" in body, explain
    hook_calls = [r for r in api.message_requests() if r["body"].get("stream") is not True]
    if backend == "local":
        assert hook_calls == [], explain  # the local ranker asks no model
    else:
        assert len(hook_calls) == 1, explain
        sent = hook_calls[0]["body"]
        assert suggest.SYSTEM_PROMPT in json.dumps(sent["system"]) or sent["system"] == suggest.SYSTEM_PROMPT, explain
        assert PROMPT in json.dumps(sent["messages"]) and "- pptx:" in json.dumps(sent["messages"]), explain
    with open(os.path.join(scene.state_dir, "hooks.log"), encoding="utf-8") as f:
        log = f.read()
    assert f"prompt: {backend} answered" in log, explain
