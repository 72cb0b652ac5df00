"""End to end: the real ``claude`` CLI, offline, with toolscript's plugin loaded.

The CLI is ``@anthropic-ai/claude-code`` pinned in ``tests/peers/package.json``
(``npm ci --prefix tests/peers``); it talks to ``fake_anthropic.FakeAnthropic``
on 127.0.0.1 through ``ANTHROPIC_BASE_URL``.  The fake model's script makes the
CLI run two Bash tool calls, then ends the turn:

1. ``printenv TOOLSCRIPT_GATEWAY_URL PATH``: the SessionStart hook started a
   gateway and exported its URL and the plugin's ``bin/`` through
   ``CLAUDE_ENV_FILE``;
2. ``toolscript exec '...'``: the plugin's own ``toolscript`` (PATH has none of
   its own) runs a script calling the fixture MCP server's ``add`` and the
   built-in ``time.now`` through that gateway;

and the test reads the tool results the CLI sent back to the fake API.  (Claude
Code 2.1.330 also *appends* every plugin's ``bin/`` to the Bash tool's PATH on its
own; the hook's export *prepends* it, which is what the test checks.)  After
the run the SessionEnd hook must have stopped the gateway: no state file, no
process left.  ``claude plugin validate`` must pass for the plugin and for the
repository's marketplace file.

Permissions: ``--allowedTools "Bash(toolscript *)" "Bash(printenv *)"``
pre-approves exactly the two commands (no ``$VAR`` in them: the CLI refuses to
pre-approve a command with a variable, and each part of a compound command needs
its own approval).  ``--dangerously-skip-permissions`` is not an option: the CLI
refuses it when run as root, as CI here is.

Everything runs with a scratch HOME, project directory and
``TOOLSCRIPT_STATE_DIR``; missing CLI -> skip (fail under
``TOOLSCRIPT_REQUIRE_PEERS=1``).
"""

import http.client
import json
import os
import subprocess
import time
from typing import Any, Dict, List, Tuple

import pytest

from claude_scene import CLAUDE_TIMEOUT, GONE_TIMEOUT, PLUGIN_DIR, Scene, claude_binary, marked_processes, tail
from conftest import REPO_ROOT
from fake_anthropic import FakeAnthropic, count_tool_results, tool_result_text
from toolscript.gateway.state import pid_alive

VALIDATE_TIMEOUT = 60.0

EXEC_CODE = (
    "from toolscript import tools; "
    'print(tools.fixture.add(a=2, b=3)["sum"], tools.builtin.time_now()["iso"][:2])'
)
ENV_COMMAND = "printenv TOOLSCRIPT_GATEWAY_URL PATH"
EXEC_COMMAND = f"toolscript exec '{EXEC_CODE}'"
EXPECTED_EXEC_OUTPUT = "5 20"  # 2 + 3, and the first two digits of this century's year
SCRIPT = [
    {"text": "Checking the toolscript gateway.", "bash": ENV_COMMAND, "description": "Show the gateway URL"},
    {"bash": EXEC_COMMAND, "description": "Call two tools through toolscript"},
    {"text": "Done: the fixture says 5."},
]


@pytest.fixture
def scene(tmp_path) -> Scene:
    return Scene(str(tmp_path))


def _run_claude(claude: str, scene: Scene, api: FakeAnthropic) -> "subprocess.CompletedProcess[str]":
    argv = [
        claude,
        "-p",
        "use toolscript",
        "--model",
        "haiku",
        "--output-format",
        "json",
        "--plugin-dir",
        PLUGIN_DIR,
        "--debug-file",
        scene.debug_log,
        "--allowedTools",
        "Bash(toolscript *)",
        "Bash(printenv *)",
    ]
    return subprocess.run(
        argv,
        env=scene.env(api.url),
        cwd=scene.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=CLAUDE_TIMEOUT,
    )


@pytest.mark.timeout(240)
def test_plugin_session_end_to_end(scene: Scene) -> None:
    claude = claude_binary()
    if not os.path.isfile(os.path.join(PLUGIN_DIR, "hooks", "hooks.json")):
        pytest.fail(f"the plugin is missing: {PLUGIN_DIR}/hooks/hooks.json")

    api = FakeAnthropic(SCRIPT, log_path=scene.request_log, on_message=lambda entry: scene.state_files())
    proc = None
    leftovers: List[Tuple[int, str]] = []
    started = time.monotonic()
    try:
        with api:
            proc = _run_claude(claude, scene, api)
        elapsed = time.monotonic() - started

        def explain(what: str) -> str:
            return f"{what} (claude ran {elapsed:.1f} s)\n{scene.diagnostics(api, proc)}"

        # -- the run itself
        assert proc.returncode == 0, explain("claude -p failed")
        try:
            result = json.loads(proc.stdout)
        except ValueError:
            pytest.fail(explain("claude -p did not print one JSON result"))
        assert result.get("is_error") is False, explain("the result is an error")
        assert not result.get("permission_denials"), explain("a Bash call was denied")

        requests = api.message_requests()
        assert requests and all(r["body"].get("stream") is True for r in requests), explain("the CLI did not stream")
        assert max(count_tool_results(r["body"]) for r in requests) >= 2, explain("the fake never got both tool results")
        results = api.tool_results()
        assert len(results) >= 2, explain("expected two tool_result blocks")
        env_result, exec_result = results[0], results[1]

        # -- 1. SessionStart started a gateway; its URL and the plugin's bin/ reached the Bash tool
        observed = [r.get("observed") for r in requests]
        during = [s for s in observed if isinstance(s, dict) and s]
        assert during, explain("no gateway state file existed while the model was being asked")
        states = [v for snapshot in during for v in snapshot.values() if isinstance(v, dict)]
        urls = {s.get("url") for s in states}
        pids = {s.get("pid") for s in states if isinstance(s.get("pid"), int)}
        assert len(urls) == 1 and pids, explain(f"expected one gateway during the run, saw {urls}")
        url = urls.pop()
        session_id = result.get("session_id")
        assert session_id and any(session_id in name for snapshot in during for name in snapshot), explain(
            f"no state file named after the session {session_id}"
        )

        env_text = tool_result_text(env_result)
        assert env_result.get("is_error") is not True, explain("printenv failed")
        assert "http://127.0.0.1:" in env_text and "/t/" in env_text, explain("TOOLSCRIPT_GATEWAY_URL not visible to Bash")
        lines = env_text.strip().splitlines()
        assert len(lines) == 2 and lines[0] == url, explain(f"Bash saw another URL than the gateway's {url}")
        # Claude Code itself *appends* a plugin's bin/ to the Bash tool's PATH; the
        # hook's CLAUDE_ENV_FILE export *prepends* it, so first place is the hook's doing.
        assert lines[1].split(os.pathsep)[0] == os.path.join(PLUGIN_DIR, "bin"), explain(
            "the SessionStart hook did not put the plugin's bin/ first on the Bash tool's PATH"
        )

        # -- 2. toolscript exec called the fixture server and a built-in through the gateway
        exec_text = tool_result_text(exec_result)
        assert exec_result.get("is_error") is not True, explain("toolscript exec failed")
        assert EXPECTED_EXEC_OUTPUT in exec_text, explain(f"toolscript exec did not print {EXPECTED_EXEC_OUTPUT!r}")

        # -- 3. SessionEnd stopped the gateway: state file gone, no process left
        deadline = time.monotonic() + GONE_TIMEOUT
        while True:
            leftovers = marked_processes(scene.marker)
            alive = sorted(pid for pid in pids if pid_alive(pid))
            state_now = scene.state_files()
            if not leftovers and not alive and not state_now:
                break
            if time.monotonic() >= deadline:
                pytest.fail(
                    explain(
                        f"{GONE_TIMEOUT:g} s after the run: gateway pids alive {alive}, "
                        f"state files {sorted(state_now)}, processes left {leftovers}"
                    ),
                    pytrace=False,
                )
            time.sleep(0.2)
        # Stopped by the SessionEnd hook, not merely by the gateway noticing claude's exit.
        (pid,) = pids
        hooks_log = tail(os.path.join(scene.state_dir, "hooks.log"), 20000).splitlines()
        assert any("stopped" in line and f"pid {pid}" in line for line in hooks_log), explain(
            f"the SessionEnd hook did not log stopping gateway pid {pid}"
        )
    finally:
        # Never leave anything of ours running, whatever failed above.
        for pid, _cmdline in marked_processes(scene.marker):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


@pytest.mark.parametrize(
    "target",
    [pytest.param(PLUGIN_DIR, id="plugin"), pytest.param(REPO_ROOT, id="marketplace")],
)
def test_claude_plugin_validate(scene: Scene, target: str) -> None:
    claude = claude_binary()
    proc = subprocess.run(
        [claude, "plugin", "validate", target],
        env=scene.env(),
        cwd=scene.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=VALIDATE_TIMEOUT,
    )
    assert proc.returncode == 0, f"claude plugin validate {target} failed:\n{proc.stdout}\n{proc.stderr}"


# --- the fake API on its own (no CLI needed) ----------------------------------------


def _post(api: FakeAnthropic, path: str, body: Any) -> Tuple[int, Dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _sse_events(data: bytes) -> List[Tuple[str, Dict[str, Any]]]:
    events = []
    for chunk in data.decode("utf-8").split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def _user(text: str) -> Dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_fake_api_non_streaming_follows_the_script() -> None:
    with FakeAnthropic([{"bash": "echo hi"}, "all done"]) as api:
        status, headers, data = _post(api, "/v1/messages", {"model": "m1", "max_tokens": 10, "messages": [_user("go")]})
        assert status == 200 and headers["content-type"] == "application/json"
        message = json.loads(data)
        assert message["type"] == "message" and message["role"] == "assistant" and message["model"] == "m1"
        assert message["stop_reason"] == "tool_use"
        [tool_use] = [b for b in message["content"] if b["type"] == "tool_use"]
        assert tool_use["name"] == "Bash" and tool_use["input"]["command"] == "echo hi"

        history = [
            _user("go"),
            {"role": "assistant", "content": message["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "hi"}]},
        ]
        status, _, data = _post(api, "/v1/messages?beta=true", {"model": "m1", "max_tokens": 10, "messages": history})
        message = json.loads(data)
        assert status == 200 and message["stop_reason"] == "end_turn"
        assert message["content"] == [{"type": "text", "text": "all done"}]
        assert [tool_result_text(b) for b in api.tool_results()] == ["hi"]

        status, _, data = _post(api, "/v1/messages/count_tokens?beta=true", {"messages": history})
        assert status == 200 and json.loads(data) == {"input_tokens": 42}
        status, _, data = _post(api, "/v1/complete", {})
        assert status == 404 and json.loads(data)["error"]["type"] == "not_found_error"

        conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
        conn.request("HEAD", "/")
        assert conn.getresponse().status == 200
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
        conn.request("GET", "/_requests")
        logged = json.loads(conn.getresponse().read())
        conn.close()
        assert [(r["method"], r.get("turn")) for r in logged] == [
            ("POST", 0),
            ("POST", 1),
            ("POST", None),
            ("POST", None),
            ("HEAD", None),
        ]


def test_fake_api_streams_text_and_tool_use(tmp_path) -> None:
    log = str(tmp_path / "requests.jsonl")
    with FakeAnthropic([{"text": "let me look", "bash": "printenv X"}, "done"], log_path=log) as api:
        status, headers, data = _post(
            api, "/v1/messages?beta=true", {"model": "m", "max_tokens": 5, "stream": True, "messages": [_user("go")]}
        )
    assert status == 200
    assert headers["content-type"] == "text/event-stream" and headers["connection"] == "close"
    events = _sse_events(data)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    assert events[0][1]["message"]["content"] == []
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[0] == {"type": "text", "text": ""}
    assert starts[1]["type"] == "tool_use" and starts[1]["name"] == "Bash" and starts[1]["input"] == {}
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta" and d["index"] == 0)
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 1)
    assert text == "let me look"
    assert json.loads(partial)["command"] == "printenv X"
    assert sum(1 for n, d in events if n == "content_block_delta" and d["index"] == 1) > 1
    assert [d["index"] for n, d in events if n == "content_block_stop"] == [0, 1]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    with open(log, encoding="utf-8") as fh:
        [entry] = [json.loads(line) for line in fh]
    assert entry["body"]["stream"] is True and entry["turn"] == 0
