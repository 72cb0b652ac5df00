"""End to end: the real ``claude`` CLI, offline, with ``toolscript mcp`` as an MCP server and no plugin.

Claude Code gets two stdio servers from ``--mcp-config``: toolscript's code
mode (the zipapp built from this checkout, ``python toolscript.pyz mcp``) and
the fixture MCP server on its own, with its tool search on
(``ENABLE_TOOL_SEARCH=true``).  From the fake API's request log the test
checks what the model is shown: the three code-mode tools with their full
schemas in the first request (their ``anthropic/alwaysLoad``), the other
server's tools deferred (named, without schemas).  The fake model then calls
``search_tools`` and ``run_script``, whose script calls the fixture server
the project's ``.toolscript.json`` configures (through the gateway
``toolscript mcp`` started), and the test reads the answers Claude Code sent
back.  When the run ends, nothing of toolscript is left running.

Permissions: ``--allowedTools`` names the two tools (``--dangerously-skip-permissions``
is refused as root).  Missing CLI -> skip (fail under ``TOOLSCRIPT_REQUIRE_PEERS=1``).
"""

import json
import os
import subprocess
import sys
import time

import pytest

from claude_scene import CLAUDE_TIMEOUT, FIXTURE_SERVER, GONE_TIMEOUT, Scene, claude_binary, marked_processes
from fake_anthropic import FakeAnthropic, tool_result_text
from toolscript.gateway.codemode_tools import TOOLS

CODE_MODE = {f"mcp__toolscript__{tool['name']}": tool for tool in TOOLS}
SCRIPT_CODE = "from toolscript import tools\nprint('sum is', tools.fixture.add(a=20, b=22)['sum'])"
SCRIPT = [
    {"tool": "mcp__toolscript__search_tools", "input": {"query": "add two integers"}},
    {"tool": "mcp__toolscript__run_script", "input": {"code": SCRIPT_CODE}},
    {"text": "The sum is 42."},
]


def _run_claude(claude: str, scene: Scene, api: FakeAnthropic, pyz: str) -> "subprocess.CompletedProcess[str]":
    servers = {
        "toolscript": {"command": sys.executable, "args": [pyz, "mcp"]},
        "direct": {"command": sys.executable, "args": [FIXTURE_SERVER, "stdio"]},
    }
    argv = [
        claude, "-p", "add 20 and 22 with the fixture server", "--model", "sonnet", "--output-format", "json",
        "--mcp-config", json.dumps({"mcpServers": servers}), "--strict-mcp-config", "--debug-file", scene.debug_log,
        "--allowedTools", "mcp__toolscript__search_tools", "mcp__toolscript__run_script",
    ]
    env = dict(scene.env(api.url), ENABLE_TOOL_SEARCH="true")
    for name in ("TOOLSCRIPT_BWRAP", "TOOLSCRIPT_EXEC_LAYER"):
        if name in os.environ:
            env[name] = os.environ[name]
    return subprocess.run(argv, env=env, cwd=scene.project, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=CLAUDE_TIMEOUT)


@pytest.mark.timeout(240)
def test_code_mode_tools_stay_loaded_while_claude_code_defers_the_rest(tmp_path, pyz) -> None:
    claude = claude_binary()
    scene = Scene(str(tmp_path))
    api = FakeAnthropic(SCRIPT, log_path=scene.request_log)
    proc = None
    try:
        with api:
            proc = _run_claude(claude, scene, api, pyz)

        def explain(what: str) -> str:
            return f"{what}\n{scene.diagnostics(api, proc)}"

        assert proc.returncode == 0, explain("claude -p failed")
        result = json.loads(proc.stdout)
        assert result.get("is_error") is False and not result.get("permission_denials"), explain("the run failed or a call was denied")

        # -- the first request: code mode loaded with full schemas, the other server deferred
        first = api.message_requests()[0]["body"]
        shown = {tool["name"]: tool for tool in first.get("tools") or []}
        for name, ours in CODE_MODE.items():
            assert name in shown, explain(f"{name} is not among the tools of the first request")
            assert shown[name]["input_schema"] == ours["inputSchema"], explain(f"{name} lost its schema")
            assert shown[name]["description"] == ours["description"] and not shown[name].get("defer_loading")
        assert "ToolSearch" in shown, explain("Claude Code's tool search is off")
        assert [name for name in shown if name.startswith("mcp__direct__")] == [], explain("the other server's tools were loaded")
        assert "mcp__direct__add" in json.dumps(first), explain("the other server's tools are not named as deferred")

        # -- the model searched, then ran one script that called the fixture through the gateway
        searched, ran = api.tool_results()[:2]
        assert searched.get("is_error") is not True and tool_result_text(searched).startswith("fixture__add ("), explain("search_tools")
        assert ran.get("is_error") is not True and tool_result_text(ran).strip() == "sum is 42", explain("run_script")

        # -- nothing of toolscript outlives the session (the marker is in every process it started)
        deadline = time.monotonic() + GONE_TIMEOUT
        while (marked_processes(scene.marker) or scene.state_files()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marked_processes(scene.marker) == [] and scene.state_files() == {}, explain("toolscript left something running")
    finally:
        for pid, _cmdline in marked_processes(scene.marker):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
