"""``toolscript ask --backend claude`` (toolscript/models/ask_claude.py): claude -p as the model, the gateway as its tools.

The end-to-end tests run the real ``claude`` CLI (tests/peers, as test_claude_e2e.py
does; missing -> skip, fail under ``TOOLSCRIPT_REQUIRE_PEERS=1``) against
``fake_anthropic.FakeAnthropic``, with a gateway served from this process
(``conftest.running_gateway``: built-ins only, or the fixture MCP server).  The fake
model's tool_use names the tool as claude lists it (``mcp__ts__builtin__time_now``),
and the tests check that name in the ``tools`` of the request the fake received.

The process tests put a fake ``claude`` (a Python script) first on PATH: one that hangs
(timeout, Ctrl-C: no process left), one that prints malformed lines among good ones,
one that fails printing the gateway URL (the token must not reach the error).
"""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from typing import Dict, List, Optional

import pytest

import peers
from conftest import REPO_ROOT, missing_prerequisite, running_gateway, sigint_as_at_a_terminal, wait_for
from fake_anthropic import FakeAnthropic, tool_result_text
from toolscript.config.load import ServerConfig
from toolscript.gateway.state import pid_alive
from toolscript.models import ask_claude
from toolscript.models.ask_claude import AskResult, Trace, claude_tool_name, name_map, read_lines, run_claude, tool_flags

FIXTURE_SERVER = os.path.join(REPO_ROOT, "tests", "mcp_servers", "fixture_server.py")
RUN_TIMEOUT = 90.0  # seconds for one claude run (2-5 s when healthy)
TIME_NOW = "mcp__ts__builtin__time_now"


def _claude_dir() -> str:
    """The directory of the real claude CLI, to put first on PATH."""
    try:
        return os.path.dirname(peers.claude_binary())
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
        raise  # not reached


def _env(home: str, api_url: str, path_first: str) -> Dict[str, str]:
    env = {
        "HOME": home,
        "PATH": path_first + os.pathsep + os.environ.get("PATH", os.defpath),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "test",
    }
    for keep in ("LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    return env


def _fixture() -> ServerConfig:
    return ServerConfig(name="fixture", type="stdio", source="test", command=sys.executable, args=[FIXTURE_SERVER, "stdio"], timeout=10.0)


def _ask(tmp_path, url: str, api: FakeAnthropic, allow=(), max_steps: int = 5, timeout: float = RUN_TIMEOUT, system=None) -> AskResult:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return run_claude(
        "What time is it?",
        gateway_url=url,
        allow=list(allow),
        model=None,
        max_steps=max_steps,
        system=system,
        timeout=timeout,
        env=_env(str(home), api.url, _claude_dir()),
        cwd=str(home),
    )


def _request_tools(api: FakeAnthropic) -> List[str]:
    requests = api.message_requests()
    assert requests, "claude never asked the fake API"
    return [t.get("name") for t in requests[0]["body"].get("tools") or []]


# --- the real claude CLI against the fake API -----------------------------------------------


@pytest.mark.timeout(180)
def test_claude_calls_a_gateway_builtin_and_answers(tmp_path) -> None:
    script = [{"tool": TIME_NOW, "input": {}}, {"text": "It is later than you think."}]
    with running_gateway([], tmp_path) as (_gw, url), FakeAnthropic(script) as api:
        result = _ask(tmp_path, url, api, system="Answer briefly.")
        why = api.summary()
        # The gateway's MCP endpoint is claude's only tool source, dots made underscores.
        tools = _request_tools(api)
        assert TIME_NOW in tools, why
        assert all(name.startswith("mcp__ts__") or name == "DeferredToolPlaceholder" for name in tools), tools
        [sent] = api.tool_results()
        assert sent.get("is_error") is not True and '"iso"' in tool_result_text(sent), why
        system = api.message_requests()[0]["body"].get("system")
        assert "Answer briefly." in json.dumps(system), why

    assert result.stopped == "answered" and result.error is None, result
    assert result.answer == "It is later than you think."
    assert result.steps == 2
    assert result.usage["input_tokens"] > 0 and result.usage["output_tokens"] > 0
    [call] = result.tool_calls
    assert call["tool"] == "builtin__time.now" and call["args"] == {} and call["id"]
    [done] = result.tool_results
    assert done["id"] == call["id"] and done["tool"] == "builtin__time.now"
    assert done["ok"] is True and done["cached"] is False and isinstance(done["ms"], int)
    assert str(done["data"]["iso"]).startswith("20"), done


@pytest.mark.timeout(180)
def test_claude_calls_an_mcp_server_tool_and_sees_its_error(tmp_path) -> None:
    script = [
        {"tool": "mcp__ts__fixture__add", "input": {"a": 2, "b": 3}},
        {"tool": "mcp__ts__fixture__fail", "input": {"message": "the fixture says no"}},
        {"text": "2 + 3 = 5"},
    ]
    with running_gateway([_fixture()], tmp_path) as (_gw, url), FakeAnthropic(script) as api:
        result = _ask(tmp_path, url, api, allow=["fixture__*"])
        tools = _request_tools(api)
        why = api.summary()
    # The allow list also decides what claude lists: no built-in is offered.
    assert "mcp__ts__fixture__add" in tools and not [t for t in tools if t.startswith("mcp__ts__builtin__")], tools
    assert result.stopped == "answered" and result.answer == "2 + 3 = 5", (result, why)
    assert [c["tool"] for c in result.tool_calls] == ["fixture__add", "fixture__fail"]
    assert result.tool_calls[0]["args"] == {"a": 2, "b": 3}
    added, failed = result.tool_results
    assert added["ok"] is True and added["data"] == {"sum": 5}, added
    assert failed["ok"] is False and failed["tool"] == "fixture__fail"
    assert failed["error"]["code"] == "execution_error" and "the fixture says no" in failed["error"]["message"]
    assert result.steps == 3


@pytest.mark.timeout(180)
def test_allow_list_that_excludes_the_tool_denies_the_call(tmp_path) -> None:
    script = [{"tool": TIME_NOW, "input": {}}, {"text": "I could not tell the time."}]
    with running_gateway([], tmp_path) as (_gw, url), FakeAnthropic(script) as api:
        result = _ask(tmp_path, url, api, allow=["tools.echo"])
        tools = _request_tools(api)
        [sent] = api.tool_results()
    assert "mcp__ts__builtin__tools_echo" in tools and TIME_NOW not in tools, tools
    # claude did not call the gateway: the model got an error back, and so does our result.
    assert sent.get("is_error") is True and '"iso"' not in tool_result_text(sent)
    assert result.stopped == "answered" and result.answer == "I could not tell the time."
    [call] = result.tool_calls
    assert call["tool"] == "builtin__time.now"
    [denied] = result.tool_results
    assert denied["ok"] is False and denied["error"]["code"] == "tool_not_found", denied
    assert denied["error"]["message"] == (
        'tool "builtin__time.now" is not in --tool-allow (tools.echo): add it there, or use a listed tool'
    )


@pytest.mark.timeout(180)
def test_max_steps_stops_a_model_that_never_answers(tmp_path) -> None:
    script = [{"tool": TIME_NOW, "input": {}}]  # past the end: the last turn, forever
    with running_gateway([], tmp_path) as (_gw, url), FakeAnthropic(script) as api:
        result = _ask(tmp_path, url, api, max_steps=2)
    assert result.stopped == "max_steps", result
    assert result.answer == "" and "--max-steps" in (result.error or "")
    assert result.tool_calls and all(c["tool"] == "builtin__time.now" for c in result.tool_calls)


@pytest.mark.timeout(180)
def test_plain_mcp_tool_names_map_back_to_ids(tmp_path) -> None:
    # mcpToolNames "plain": the endpoint lists "add", so claude's name is mcp__ts__add.
    script = [{"tool": "mcp__ts__add", "input": {"a": 4, "b": 5}}, {"text": "9"}]
    with running_gateway([_fixture()], tmp_path, mcp_tool_names="plain") as (_gw, url), FakeAnthropic(script) as api:
        result = _ask(tmp_path, url, api, allow=["fixture__add"])
        tools = _request_tools(api)
    assert "mcp__ts__add" in tools and "mcp__ts__fixture__add" not in tools, tools
    assert result.stopped == "answered" and result.answer == "9", result
    assert [c["tool"] for c in result.tool_calls] == ["fixture__add"]
    assert result.tool_results[0]["ok"] is True and result.tool_results[0]["data"] == {"sum": 9}


@pytest.mark.timeout(180)
def test_a_model_api_error_is_an_error_line(tmp_path) -> None:
    script = [{"status": 401, "error_type": "authentication_error", "error_message": "invalid x-api-key"}]
    with running_gateway([], tmp_path) as (_gw, url), FakeAnthropic(script) as api:
        result = _ask(tmp_path, url, api)
    assert result.stopped == "error" and result.answer == "", result
    assert "the claude CLI failed" in result.error and "401" in result.error and "\n" not in result.error


# --- a fake claude: processes, malformed streams, errors ---------------------------------------


HANGING_CLAUDE = """\
#!{python}
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open({pids!r}, "w") as fh:
    fh.write("%d %d" % (os.getpid(), child.pid))
time.sleep(600)
"""

STREAMING_CLAUDE = """\
#!{python}
import json, sys
sys.stdin.read()
lines = {lines!r}
for line in lines:
    sys.stdout.write(line + "\\n")
sys.stdout.flush()
sys.stderr.write({stderr!r})
sys.exit({status})
"""


def _install(bin_dir, name: str, text: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _read_pids(path) -> Optional[List[int]]:
    try:
        text = path.read_text()
    except OSError:
        return None
    parts = text.split()
    return [int(p) for p in parts] if len(parts) == 2 else None


def _fake_env(tmp_path) -> Dict[str, str]:
    return {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin") + os.pathsep + os.environ.get("PATH", "")}


@pytest.mark.timeout(60)
def test_a_hanging_claude_times_out_and_leaves_no_process(tmp_path) -> None:
    pids_file = tmp_path / "pids"
    _install(tmp_path / "bin", "claude", HANGING_CLAUDE.format(python=sys.executable, pids=str(pids_file)))
    with running_gateway([], tmp_path) as (_gw, url):
        started = time.monotonic()
        result = run_claude(
            "hello", gateway_url=url, allow=[], model=None, max_steps=3, system=None,
            timeout=3, env=_fake_env(tmp_path), cwd=str(tmp_path),
        )
        elapsed = time.monotonic() - started
    assert result.stopped == "error" and "within 3 s" in (result.error or ""), result
    assert elapsed < 60, elapsed  # the timeout fired (generous: 3 s expected)
    pids = _read_pids(pids_file)
    assert pids, "the fake claude never started"
    assert wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=10), f"left running: {pids}"


LINGERING_CLAUDE = """\
#!{python}
import json, os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open({pids!r}, "w") as fh:
    fh.write("%d %d" % (os.getpid(), child.pid))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done early", "num_turns": 1}}), flush=True)
time.sleep(600)
"""


@pytest.mark.timeout(60)
def test_a_claude_that_lingers_after_its_result_is_answered_and_stopped(tmp_path) -> None:
    pids_file = tmp_path / "pids"
    _install(tmp_path / "bin", "claude", LINGERING_CLAUDE.format(python=sys.executable, pids=str(pids_file)))
    with running_gateway([], tmp_path) as (_gw, url):
        result = run_claude("hello", gateway_url=url, allow=[], model=None, max_steps=3, system=None,
                            timeout=300, env=_fake_env(tmp_path), cwd=str(tmp_path))
    assert result.stopped == "answered" and result.answer == "done early", result
    pids = _read_pids(pids_file)
    assert pids and wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=10), f"left running: {pids}"


RUNNER = """\
import json, signal, sys
sys.path.insert(0, {root!r})
from toolscript.models.ask_claude import run_claude

def on_usr1(signum, frame):
    raise RuntimeError("unwound by SIGUSR1")

signal.signal(signal.SIGUSR1, on_usr1)
result = run_claude("hello", gateway_url={url!r}, allow=[], model=None, max_steps=3, system=None,
                    timeout=120, env={env!r}, cwd={cwd!r})
print(json.dumps(result._asdict()), flush=True)
"""


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", ["SIGINT", "SIGUSR1"])
def test_ctrl_c_or_an_exception_stops_claude_and_its_children(tmp_path, how: str) -> None:
    # SIGINT is Ctrl-C (KeyboardInterrupt: an "interrupted" result); SIGUSR1's handler raises
    # another exception, which propagates, but only after claude's group is gone.
    pids_file = tmp_path / "pids"
    _install(tmp_path / "bin", "claude", HANGING_CLAUDE.format(python=sys.executable, pids=str(pids_file)))
    with running_gateway([], tmp_path) as (_gw, url):
        code = RUNNER.format(root=REPO_ROOT, url=url, env=_fake_env(tmp_path), cwd=str(tmp_path))
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=sigint_as_at_a_terminal)
        try:
            pids = wait_for(lambda: _read_pids(pids_file), timeout=30)
            assert pids, "the fake claude never started"
            proc.send_signal(getattr(signal, how))
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if how == "SIGINT":
        assert proc.returncode == 0, err
        assert json.loads(out)["stopped"] == "interrupted", out
    else:
        assert proc.returncode != 0 and "unwound by SIGUSR1" in err, err
    assert wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=10), f"left running: {pids}"


def _stream_lines() -> List[str]:
    assistant = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": TIME_NOW, "input": {}}],
                    "usage": {"input_tokens": 3, "output_tokens": 1}},
    }
    user = {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": '{"iso": "2030"}'}]},
    }
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 2,
              "usage": {"input_tokens": 20, "output_tokens": 7}}
    return [
        "not json at all",
        json.dumps(assistant),
        '{"type": "assistant", "message": ',  # cut short
        "[1, 2, 3]",
        '{"type": "user", "message": "not a message"}',
        '{"type": "result"',  # cut short: not the result
        json.dumps(user),
        "",
        json.dumps(result),
    ]


@pytest.mark.timeout(60)
def test_malformed_stream_lines_are_skipped(tmp_path) -> None:
    fake = STREAMING_CLAUDE.format(python=sys.executable, lines=_stream_lines(), stderr="", status=0)
    _install(tmp_path / "bin", "claude", fake)
    with running_gateway([], tmp_path) as (_gw, url):
        result = run_claude("hello", gateway_url=url, allow=[], model=None, max_steps=3, system=None,
                            timeout=60, env=_fake_env(tmp_path), cwd=str(tmp_path))
    assert result.stopped == "answered" and result.answer == "done", result
    assert result.tool_calls == [{"id": "tu1", "tool": "builtin__time.now", "args": {}}]
    assert [(r["tool"], r["ok"], r["data"]) for r in result.tool_results] == [("builtin__time.now", True, {"iso": "2030"})]
    assert result.steps == 2 and result.usage == {"input_tokens": 20, "output_tokens": 7}


@pytest.mark.timeout(60)
def test_a_failing_claude_gives_one_line_without_the_token(tmp_path) -> None:
    with running_gateway([], tmp_path) as (_gw, url):
        token = url.rsplit("/t/", 1)[1]
        fake = STREAMING_CLAUDE.format(python=sys.executable, lines=["garbage"], stderr=f"MCP server failed: {url}/mcp\n", status=1)
        _install(tmp_path / "bin", "claude", fake)
        result = run_claude("hello", gateway_url=url, allow=[], model=None, max_steps=3, system=None,
                            timeout=60, env=_fake_env(tmp_path), cwd=str(tmp_path))
    assert result.stopped == "error" and result.answer == ""
    assert "status 1" in result.error and "/t/****" in result.error and token not in result.error, result.error
    assert "\n" not in result.error


def test_no_claude_on_path_says_what_to_do(tmp_path) -> None:
    with running_gateway([], tmp_path) as (_gw, url):
        result = run_claude("hello", gateway_url=url, allow=[], model=None, max_steps=3, system=None,
                            timeout=5, env={"PATH": str(tmp_path)}, cwd=str(tmp_path))
    assert result.stopped == "error" and "claude CLI is not on PATH" in result.error and "--backend api" in result.error


# --- pieces, without processes ----------------------------------------------------------------


def test_read_lines_skips_an_oversized_line() -> None:
    import io

    stream = io.BytesIO(b'{"a": 1}\n' + b'{"big": "' + b"x" * 100 + b'"}\n' + b"\xff\xfe{}\n" + b'{"b": 2}\n' + b"x" * 50)
    assert list(read_lines(stream, limit=40)) == [{"a": 1}, {"b": 2}]


def test_claude_names_and_the_map_back() -> None:
    assert claude_tool_name("builtin__time.now") == "mcp__ts__builtin__time_now"
    assert claude_tool_name("srv__a-b.c d") == "mcp__ts__srv__a-b_c_d"
    tools = [
        {"id": "builtin__time.now", "server": "builtin", "name": "time.now"},
        {"id": "a__get", "server": "a", "name": "get"},
        {"id": "b__get", "server": "b", "name": "get"},
    ]
    names = name_map(tools)
    # Prefixed (the default) and plain (mcpToolNames: "plain", unique names only) both map back.
    assert names["mcp__ts__builtin__time_now"] == "builtin__time.now"
    assert names["mcp__ts__time_now"] == "builtin__time.now"
    assert names["mcp__ts__a__get"] == "a__get" and "mcp__ts__get" not in names
    assert tool_flags(tools, []) == ["--allowedTools", "mcp__ts__*"]
    flags = tool_flags(tools, ["time.now", "a__*"])
    allowed = flags[flags.index("--allowedTools") + 1].split(",")
    denied = flags[flags.index("--disallowedTools") + 1].split(",")
    assert set(allowed) == {"mcp__ts__builtin__time_now", "mcp__ts__time_now", "mcp__ts__a__get"}
    assert set(denied) == {"mcp__ts__b__get"}
    # Only "*" is special in a pattern (as in toolscript.models.ask.allowed): "?" is a literal.
    assert tool_flags(tools, ["a__g?t"]) == ["--disallowedTools", ",".join(sorted(names))]


def test_a_permission_denial_is_tool_not_found() -> None:
    trace = Trace({"mcp__ts__builtin__time_now": "builtin__time.now"}, [])
    trace.feed({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": TIME_NOW, "input": {}}]}}, 1.0)
    trace.feed({"type": "system", "subtype": "permission_denied", "tool_name": TIME_NOW, "tool_use_id": "t1"}, 1.1)
    trace.feed({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
         "content": "Claude requested permissions to use mcp__ts__builtin__time_now, but you haven't granted it yet."}]}}, 1.2)
    [denied] = trace.tool_results
    assert denied["ok"] is False and denied["error"]["code"] == "tool_not_found" and denied["ms"] == 200
    assert denied["error"]["message"] == 'unknown tool "builtin__time.now": the gateway has no such tool'



def test_is_error_result_is_an_error_line() -> None:
    trace = Trace({}, ["sk-secret-value-123"])
    trace.feed({"type": "result", "subtype": "success", "is_error": True, "num_turns": 1,
                "result": "API Error: 401 bad key sk-secret-value-123\nmore"}, 1.0)
    result = ask_claude.result_of(trace, 3)
    assert result.stopped == "error" and "401" in result.error and "sk-secret" not in result.error and "\n" not in result.error


def test_one_message_streamed_as_several_lines_is_one_step() -> None:
    # claude prints one assistant line per content block, all with the message's id.
    trace = Trace({"mcp__ts__builtin__time_now": "builtin__time.now"}, [])
    usage = {"input_tokens": 10, "output_tokens": 1}
    trace.feed({"type": "assistant", "message": {"id": "m1", "usage": usage, "content": [{"type": "text", "text": "Let me "}]}}, 1.0)
    trace.feed({"type": "assistant", "message": {"id": "m1", "usage": usage, "content": [{"type": "text", "text": "check."}]}}, 1.0)
    trace.feed({"type": "assistant", "message": {"id": "m1", "usage": usage, "content": [
        {"type": "tool_use", "id": "t1", "name": TIME_NOW, "input": {}}]}}, 1.0)
    assert trace.turns == 1 and trace.usage == usage and trace.last_text == "Let me check."
    trace.feed({"type": "assistant", "message": {"id": "m2", "usage": usage, "content": [{"type": "text", "text": "Now."}]}}, 2.0)
    assert trace.turns == 2 and trace.usage == {"input_tokens": 20, "output_tokens": 2} and trace.last_text == "Now."
    assert [c["tool"] for c in trace.tool_calls] == ["builtin__time.now"]


ARGV_CLAUDE = """\
#!{python}
import json, os, stat, sys
argv = sys.argv[1:]
config = argv[argv.index("--mcp-config") + 1]
with open({out!r}, "w") as fh:
    json.dump({{"argv": argv, "config": open(config).read(), "mode": stat.S_IMODE(os.stat(config).st_mode),
               "stdin": sys.stdin.read(), "env": dict(os.environ)}}, fh)
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "ok", "num_turns": 1}}))
"""


@pytest.mark.timeout(60)
def test_the_token_reaches_claude_in_a_private_file_not_in_argv(tmp_path) -> None:
    seen = tmp_path / "seen.json"
    _install(tmp_path / "bin", "claude", ARGV_CLAUDE.format(python=sys.executable, out=str(seen)))
    with running_gateway([], tmp_path) as (_gw, url):
        token = url.rsplit("/t/", 1)[1]
        env = dict(_fake_env(tmp_path), CLAUDECODE="1")
        result = run_claude("the question", gateway_url=url, allow=["time.now"], model="sonnet", max_steps=7,
                            system="be brief", timeout=60, env=env, cwd=str(tmp_path))
    assert result.stopped == "answered" and result.answer == "ok", result
    got = json.loads(seen.read_text())
    argv = got["argv"]
    assert token not in " ".join(argv)
    assert json.loads(got["config"]) == {"mcpServers": {"ts": {"type": "http", "url": url + "/mcp"}}}
    assert got["mode"] == 0o600 and not os.path.exists(argv[argv.index("--mcp-config") + 1])
    assert got["stdin"] == "the question"
    for flag, value in [("--output-format", "stream-json"), ("--model", "sonnet"), ("--tools", ""), ("--max-turns", "7"),
                        ("--permission-mode", "dontAsk"),
                        ("--settings", '{"disableAllHooks": true}'), ("--system-prompt", "be brief"),
                        ("--allowedTools", "mcp__ts__builtin__time_now,mcp__ts__time_now")]:
        assert argv[argv.index(flag) + 1] == value, (flag, argv)
    for flag in ("-p", "--verbose", "--strict-mcp-config", "--no-session-persistence", "--disallowedTools"):
        assert flag in argv
    assert got["env"]["TOOLSCRIPT_HOOKS_DISABLED"] == "1" and got["env"]["CLAUDE_CODE_MAX_RETRIES"] == "1"
    assert got["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and "CLAUDECODE" not in got["env"]
