"""End to end: the servers a user has in Claude Code reach toolscript, and Claude Code's own copies keep working.

The real ``claude`` CLI (tests/peers) runs offline against ``fake_anthropic``
with toolscript's plugin (built from this checkout) and no toolscript config at
all: its only MCP servers are two copies of tests/mcp_servers/lock_server.py
in Claude Code's user scope (``~/.claude.json``), each of which allows one
running copy:

* ``locked`` takes its lock as it starts and holds it while it runs (a fixed
  port, a database file).  Claude Code starts its copy at session start and
  keeps it until the session ends, so while the session lasts no other copy can
  run: toolscript must not take the lock first (its gateway uses the tool list
  cached by an earlier ``toolscript servers check`` and starts nothing), and a
  script's call is refused with the server's own reason while Claude Code's
  copy goes on answering.
* ``profile`` takes its lock at its first tool call and holds it until it
  exits (a browser profile).  toolscript lists its tools in the session without
  taking the lock, a script's call works, and toolscript stops its copy
  ``IDLE_RELEASE_SECONDS`` after that call, so Claude Code's copy can take the
  lock for the model's call afterwards.

The fake model's turns: ``toolscript list-servers``; ``toolscript exec -f
both.py`` (calls both servers); ``mcp__locked__hold``; then, after thinking
past the idle time, ``mcp__profile__hold``.  Each server logs every start, refusal
and call with its pid, which tells Claude Code's copies from toolscript's.
"""

import json
import os
import shutil
import subprocess
from typing import Any, Dict, List

import pytest

from claude_code_files import lock_entry, read_log
from claude_scene import CLAUDE_TIMEOUT, PLUGIN_DIR, Scene, claude_binary, marked_processes
from conftest import run_pyz
from fake_anthropic import FakeAnthropic, tool_result_text
from toolscript.gateway.upstream import IDLE_RELEASE_SECONDS

SCRIPT_FILE = "both.py"
SCRIPT_CODE = """\
from toolscript import tools, ToolError
print("profile:", tools.profile.hold())
try:
    print("locked:", tools.locked.hold())
except ToolError as err:
    print("locked refused:", err.message)
"""
# Seconds the fake model thinks before its profile call: toolscript's idle copy is gone by then.
# (Claude Code refuses a Bash `sleep` this long, so the wait is the model's.)
IDLE_WAIT = int(IDLE_RELEASE_SECONDS) + 8
TURNS = [
    {"bash": "toolscript list-servers", "description": "List the MCP servers toolscript serves"},
    {"bash": f"toolscript exec -f {SCRIPT_FILE}", "description": "Call both servers from a script"},
    {"tool": "mcp__locked__hold", "input": {}},
    {"tool": "mcp__profile__hold", "input": {}, "delay": IDLE_WAIT},
    {"text": "Done."},
]


def plugin_with(pyz: str, root: str) -> str:
    """A copy of the plugin whose zipapp is ``pyz`` (built from this checkout; the committed one is left alone)."""
    plugin = os.path.join(root, "plugin")
    shutil.copytree(PLUGIN_DIR, plugin)
    shutil.copyfile(pyz, os.path.join(plugin, "bin", "toolscript.pyz"))
    return plugin


def events(log: str) -> List[str]:
    return [f"{pid} {event}" for pid, event in read_log(log)]


@pytest.mark.timeout(300)
def test_claude_codes_servers_serve_toolscript_and_claude_codes_copies_keep_working(tmp_path, pyz):
    claude = claude_binary()
    scene = Scene(str(tmp_path))
    os.remove(os.path.join(scene.project, ".toolscript.json"))  # no toolscript config at all: only Claude Code's
    plugin = plugin_with(pyz, str(tmp_path))
    logs = {name: os.path.join(scene.root, f"{name}.log") for name in ("locked", "profile")}
    servers = {
        "locked": lock_entry(os.path.join(scene.root, "locked.lock"), logs["locked"], "--name", "locked"),
        "profile": lock_entry(os.path.join(scene.root, "profile.lock"), logs["profile"], "--lock-at", "call", "--name", "profile"),
    }
    with open(os.path.join(scene.home, ".claude.json"), "w") as f:
        json.dump({"mcpServers": servers}, f)
    with open(os.path.join(scene.project, SCRIPT_FILE), "w") as f:
        f.write(SCRIPT_CODE)

    # An earlier check (any session, or the user's `toolscript servers check`) left locked's tool list cached.
    checked = run_pyz(pyz, "servers", "check", "locked", env=scene.env(), cwd=scene.project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "from ~/.claude.json (user scope)" in checked.stdout
    before = len(read_log(logs["locked"]))

    api = FakeAnthropic(TURNS, log_path=scene.request_log)
    proc = None
    try:
        with api:
            proc = subprocess.run(
                [claude, "-p", "use both servers", "--model", "haiku", "--output-format", "json", "--plugin-dir", plugin,
                 "--debug-file", scene.debug_log, "--allowedTools", "Bash(toolscript *)",
                 "mcp__locked__hold", "mcp__profile__hold"],
                env=scene.env(api.url), cwd=scene.project, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, timeout=CLAUDE_TIMEOUT + IDLE_WAIT,
            )

        def explain(what: str) -> str:
            shown = {name: events(path) for name, path in logs.items()}
            return f"{what}\nserver logs: {json.dumps(shown)}\n{scene.diagnostics(api, proc)}"

        assert proc.returncode == 0, explain("claude -p failed")
        results: Dict[str, Any] = {}
        for block, turn in zip(api.tool_results(), ("list", "exec", "locked", "profile")):
            results[turn] = block
        assert len(results) == 4, explain("expected four tool results")

        listed = tool_result_text(results["list"])
        assert "~/.claude.json (user scope)" in listed and "locked" in listed and "profile" in listed, explain("list-servers")

        locked_log, profile_log = read_log(logs["locked"])[before:], read_log(logs["profile"])
        # locked: Claude Code's copy started first, and toolscript started none before it (the cached list served).
        claude_locked = locked_log[0]
        assert claude_locked[1] == "start", explain("Claude Code's copy of locked did not start first")
        # Claude Code's copy answers the model...
        assert f"held by {claude_locked[0]}" in tool_result_text(results["locked"]), explain("Claude Code's locked copy failed")
        # ...and toolscript's call was refused by the server itself, without disturbing that copy.
        exec_text = tool_result_text(results["exec"])
        assert "locked refused:" in exec_text and "the lock is taken" in exec_text, explain("the script's locked call")
        assert [event for pid, event in locked_log if pid != claude_locked[0]] == ["taken"], explain("toolscript's locked copies")

        # profile: the script's call ran in toolscript's copy...
        toolscript_profile = [pid for pid, event in profile_log if event == "call"][0]
        assert f"profile: held by {toolscript_profile}" in exec_text, explain("the script's profile call")
        # ...which let go when idle, so Claude Code's copy (another pid) took the lock for the model.
        profile_text = tool_result_text(results["profile"])
        assert "held by" in profile_text and str(toolscript_profile) not in profile_text, explain("Claude Code's profile call")
        assert results["profile"].get("is_error") is not True, explain("Claude Code's profile copy failed")
        assert (toolscript_profile, "exit") in profile_log, explain("toolscript's profile copy was not released when idle")
    finally:
        for pid, _cmdline in marked_processes(scene.marker):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
