"""``toolscript ask``: the tool loop against the fake Messages API, saved conversations (--session), and --tool-allow.

The model is always tests/fake_anthropic.py over real HTTP; tools are the real
built-ins, tools with scripted handlers run through the same executor, or the
fixture MCP server behind a real gateway.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import REPO_ROOT, run_cli, running_gateway, sigint_as_at_a_terminal, wait_for
from loopback import Loopback, read_head
from fake_anthropic import FakeAnthropic, tool_result_text
from mcp_servers.launch import FIXTURE
from toolscript.models import ask, history
from toolscript.tools.builtin import builtin_specs
from toolscript.config.load import ServerConfig
from toolscript.tools.contract import ToolSpec

JSON_KEYS = {"answer", "toolCalls", "toolResults", "sessionContextUpdated", "usage", "steps", "stopped"}


@pytest.fixture
def ask_env(clean_env, tmp_path):
    env = dict(clean_env)
    env["ANTHROPIC_API_KEY"] = "sk-ant-test-key"
    env["TOOLSCRIPT_DATA_DIR"] = str(tmp_path / "data")
    return env


def ask_cli(api, env, *args, cwd=None, input=None):
    env = dict(env, ANTHROPIC_BASE_URL=api.url)
    return run_cli("ask", *args, env=env, cwd=cwd, input=input)


def api_env(api):
    return {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-test-key"}


def local_tools(tmp_path, **extra):
    """The real built-ins plus ``extra`` ToolSpecs, run in this process."""
    specs = builtin_specs()
    specs.update(extra)
    return ask.LocalTools(specs, [str(tmp_path)])


def results_sent(api):
    """tool_use_id -> (is_error, text) of every tool_result the model was sent."""
    return {b["tool_use_id"]: (bool(b.get("is_error")), tool_result_text(b)) for b in api.tool_results()}


@contextlib.contextmanager
def _conversation(env, name):
    """The saved conversation ``name`` in the data dir ``env`` names; its database closed afterwards."""
    db = history.open_history(env)
    try:
        yield history.Conversation(db, name)
    finally:
        db.close()


# --- the loop ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_multi_step_loop_reads_a_file_and_answers(ask_env, workdir):
    with open(os.path.join(workdir, "notes.txt"), "w") as fh:
        fh.write("the secret word is heliotrope\n")
    script = [
        {"tool": "builtin__time_now"},
        {"tool": "builtin__fs_read_file", "input": {"path": "notes.txt"}},
        {"text": "The word is heliotrope."},
    ]
    with FakeAnthropic(script, sequential=True) as api:
        proc = ask_cli(api, ask_env, "what is the secret word?", "--json", cwd=workdir)
        sent = results_sent(api)
        bodies = [r["body"] for r in api.message_requests()]
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["answer"] == "The word is heliotrope."
    assert doc["steps"] == 3 and doc["stopped"] == "answered"
    assert [c["tool"] for c in doc["toolCalls"]] == ["builtin__time.now", "builtin__fs.read_file"]
    assert all(r["ok"] for r in doc["toolResults"])
    assert "heliotrope" in list(sent.values())[1][1]
    # Tools go out under API-safe names with their schemas; no sampling parameters.
    names = [t["name"] for t in bodies[0]["tools"]]
    assert "builtin__fs_read_file" in names and all(re.match(r"^[a-zA-Z0-9_-]{1,64}$", n) for n in names)
    assert not {"temperature", "top_p", "top_k"} & set(bodies[0])
    assert doc["usage"]["input_tokens"] == 30


@pytest.mark.timeout(60)
def test_parallel_tool_calls_run_at_once_and_come_back_in_order(tmp_path):
    both_running = threading.Barrier(2, timeout=10)

    def slow(args, context):
        both_running.wait()  # only passes when the two calls run at the same time
        time.sleep(float(args["sleep"]))
        return {"slept": args["sleep"]}

    schema = {"type": "object", "properties": {"sleep": {"type": "number"}}, "required": ["sleep"]}
    tools = local_tools(tmp_path, **{"test.slow": ToolSpec("test.slow", "sleeps", schema, slow, timeout=20)})
    turn = {"tools": [{"tool": "builtin__test_slow", "input": {"sleep": 0.4}}, {"tool": "builtin__test_slow", "input": {"sleep": 0}}]}
    with FakeAnthropic([turn, {"text": "both done"}], sequential=True) as api:
        result = ask.run_api("go", tools=tools, env=api_env(api))
        request = api.message_requests()[1]["body"]
    assert result.stopped == "answered", result.error
    assert [r["data"] for r in result.tool_results] == [{"slept": 0.4}, {"slept": 0}]
    blocks = request["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in blocks] == ["toolu_fake0001_0", "toolu_fake0001_1"]
    assert json.loads(blocks[0]["content"]) == {"slept": 0.4}


@pytest.mark.timeout(60)
def test_unknown_tool_is_an_error_result_and_the_loop_goes_on(tmp_path):
    script = [{"tool": "no_such_tool", "input": {"x": 1}}, {"tool": "builtin__shell_pwd"}, {"text": "ok"}]
    with FakeAnthropic(script, sequential=True) as api:
        result = ask.run_api("go", tools=local_tools(tmp_path), env=api_env(api))
        sent = list(results_sent(api).values())
    assert result.stopped == "answered" and result.steps == 3
    assert result.tool_results[0]["error"]["code"] == "tool_not_found"
    assert sent[0][0] is True and 'unknown tool "no_such_tool"' in sent[0][1]
    assert result.tool_results[1]["ok"] is True
    assert ask.as_json(result, False)["toolError"]["tool"] == "no_such_tool"


@pytest.mark.timeout(60)
def test_invalid_args_are_an_error_result(tmp_path):
    script = [{"tool": "builtin__fs_read_file", "input": {"path": 5}}, {"text": "sorry"}]
    with FakeAnthropic(script, sequential=True) as api:
        result = ask.run_api("go", tools=local_tools(tmp_path), env=api_env(api))
        sent = list(results_sent(api).values())
    assert result.stopped == "answered"
    assert result.tool_results[0]["error"]["code"] == "invalid_args"
    assert sent[0][0] is True and sent[0][1].startswith("invalid_args:")


@pytest.mark.timeout(60)
def test_a_tool_past_its_timeout_is_an_error_result(tmp_path):
    release = threading.Event()

    def stuck(args, context):
        release.wait(30)
        return {}

    tools = local_tools(tmp_path, **{"test.stuck": ToolSpec("test.stuck", "never ends", {"type": "object"}, stuck, timeout=60)})
    with FakeAnthropic([{"tool": "builtin__test_stuck"}, {"text": "gave up"}], sequential=True) as api:
        started = time.monotonic()
        result = ask.run_api("go", tools=tools, env=api_env(api), tool_timeout=0.5)
        elapsed = time.monotonic() - started
        sent = list(results_sent(api).values())
    release.set()
    assert result.stopped == "answered"
    assert result.tool_results[0]["error"]["code"] == "execution_error"
    assert "timed out after 0.5s" in sent[0][1]
    assert elapsed < 10  # the 0.5 s per-call limit fired (the tool alone would take 30 s)


@pytest.mark.timeout(60)
def test_an_oversized_result_is_truncated_for_the_model(tmp_path):
    big = "x" * (ask.MAX_RESULT_BYTES * 3)
    with FakeAnthropic([{"tool": "builtin__tools_echo", "input": {"text": big}}, {"text": "long"}], sequential=True) as api:
        result = ask.run_api("go", tools=local_tools(tmp_path), env=api_env(api))
        sent = list(results_sent(api).values())
    assert result.tool_results[0]["ok"] is True
    text = sent[0][1]
    assert len(text.encode("utf-8")) <= ask.MAX_RESULT_BYTES
    assert "[truncated by toolscript:" in text


@pytest.mark.timeout(60)
def test_a_429_mid_loop_is_retried_and_the_loop_finishes(tmp_path):
    script = [{"tool": "builtin__time_now"}, {"status": 429, "retry_after": 0}, {"text": "it is now"}]
    with FakeAnthropic(script, sequential=True) as api:
        result = ask.run_api("time?", tools=local_tools(tmp_path), env=api_env(api))
        count = api.count()
    assert result.stopped == "answered", result.error
    assert result.answer == "it is now"
    assert count == 3  # the 429 was one of them


@pytest.mark.timeout(60)
def test_the_overall_budget_ends_a_slow_run(tmp_path):
    with FakeAnthropic([{"tool": "builtin__time_now"}, {"text": "late", "delay": 30}], sequential=True) as api:
        started = time.monotonic()
        result = ask.run_api("t", tools=local_tools(tmp_path), env=api_env(api), timeout=1.0)
        elapsed = time.monotonic() - started
    assert result.stopped == "error" and "within --timeout 1 s" in result.error
    assert result.steps == 1 and result.tool_results[0]["ok"] is True
    assert elapsed < 10  # the 1 s budget fired (the model alone would take 30 s)


@pytest.mark.timeout(60)
def test_a_model_error_ends_the_run_with_exit_1(ask_env, workdir):
    script = [{"tool": "builtin__time_now"}, {"status": 400, "error_message": "bad model"}]
    with FakeAnthropic(script, sequential=True) as api:
        proc = ask_cli(api, ask_env, "time?", "--json", cwd=workdir)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["stopped"] == "error" and "400" in doc["error"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("depth", [100_000, 2_000])
def test_an_answer_nested_too_deep_is_a_clear_error(ask_env, workdir, depth):
    # Parsing a tool_use input this deep ends in RecursionError; the run must end with one clear line instead.
    deep = "[" * depth + "]" * depth
    script = [{"tool": "builtin__time_now", "input_json": '{"x": ' + deep + "}"}, {"text": "done"}]
    with FakeAnthropic(script) as api:  # each run starts without tool results: turn 0
        proc = ask_cli(api, ask_env, "time?", cwd=workdir)
        as_json = ask_cli(api, ask_env, "time?", "--json", cwd=workdir)
    assert proc.returncode == 1
    assert "nested more than 200 levels deep" in proc.stderr and "internal error" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert as_json.returncode == 1
    assert "nested more than 200 levels deep" in json.loads(as_json.stdout)["error"]


@pytest.mark.timeout(60)
def test_a_tool_result_nested_too_deep_is_a_tool_error_not_a_crash():
    deep = b"[" * 100_000 + b"]" * 100_000

    def answer_once(conn):
        with conn:
            read_head(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + deep)

    result = _call_through(answer_once, "fixture__deep")
    assert result["ok"] is False and "nested too deeply" in result["error"]["message"]


def _call_through(answer, tool):
    """``GatewayTools.call(tool)`` against a loopback server whose connections get ``answer(conn)``."""
    server = Loopback(answer)

    class Client:
        host, port, prefix = "127.0.0.1", server.port, "/t/token"

    try:
        return ask.GatewayTools(Client()).call(tool, {}, timeout=10)
    finally:
        server.close()


@pytest.mark.timeout(60)
def test_a_gateway_answer_past_the_size_cap_is_a_tool_error_naming_the_limit(monkeypatch):
    """A gateway (or whatever listens on its port) that streams without end is cut off at the cap.

    The cap is made small here; the server would send 48 MiB and counts what it got rid of
    before the client hung up.  Without a cap the client reads it all into memory.
    """
    from toolscript.gateway import client as gateway_client

    monkeypatch.setattr(gateway_client, "MAX_RESPONSE_BYTES", 1024 * 1024)
    total, sent = 48 * 1024 * 1024, []

    def stream(conn):
        read_head(conn)
        count = 0
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            block = b"x" * 65536
            while count < total:
                conn.sendall(block)
                count += len(block)
        except OSError:
            pass  # the client hung up: what it stopped reading never left this side
        finally:
            sent.append(count)
            conn.close()

    result = _call_through(stream, "fixture__big")
    assert result["ok"] is False and result["error"]["code"] == "execution_error"
    assert "1 MiB" in result["error"]["message"], result["error"]["message"]
    assert sent and sent[0] < total  # the client stopped reading: the rest was never taken in


@pytest.mark.timeout(60)
def test_an_answer_nested_within_the_limit_is_used(ask_env, workdir):
    deep = "[" * 150 + "]" * 150
    script = [{"tool": "builtin__time_now", "input_json": '{"x": ' + deep + "}"}, {"text": "done"}]
    with FakeAnthropic(script) as api:
        proc = ask_cli(api, ask_env, "time?", cwd=workdir)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr


@pytest.mark.timeout(60)
def test_the_step_limit_stops_with_a_message_and_exit_1(ask_env, workdir):
    with FakeAnthropic([{"tool": "builtin__time_now"}], sequential=True) as api:
        proc = ask_cli(api, ask_env, "loop forever", "--max-steps", "3", cwd=workdir)
        count = api.count()
    assert proc.returncode == 1
    assert "--max-steps 3" in proc.stderr
    assert count == 3


# --- the allow-list ----------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_tool_outside_tool_allow_is_neither_listed_nor_callable_in_ask(ask_env, workdir):
    script = [{"tool": "builtin__shell_pwd"}, {"tool": "builtin__time_now"}, {"text": "done"}]
    with FakeAnthropic(script, sequential=True) as api:
        proc = ask_cli(api, ask_env, "go", "--json", "--tool-allow", "time.*", cwd=workdir)
        listed = [t["name"] for t in api.message_requests()[0]["body"]["tools"]]
    assert proc.returncode == 0, proc.stderr
    assert listed == ["builtin__time_now"]
    doc = json.loads(proc.stdout)
    refused, allowed = doc["toolResults"]
    assert refused["error"]["code"] == "tool_not_found"
    assert "is not in --tool-allow (time.*)" in refused["error"]["message"]
    assert allowed["ok"] is True
    assert doc["toolError"]["code"] == "tool_not_found"


def test_tools_invoke_refuses_a_tool_outside_tool_allow(clean_env, workdir):
    refused = run_cli("tools", "invoke", "shell.pwd", "--tool-allow", "time.now,fs.*", env=clean_env, cwd=workdir)
    assert refused.returncode == 1
    result = json.loads(refused.stdout)
    assert result["ok"] is False and result["error"]["code"] == "tool_not_found"
    assert "not in --tool-allow (time.now, fs.*)" in result["error"]["message"]
    ok = run_cli("tools", "invoke", "shell.pwd", "--tool-allow", "shell.*", env=clean_env, cwd=workdir)
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True
    listed = run_cli("tools", "list", "--json", "--tool-allow", "fs.*,builtin__time.now", env=clean_env, cwd=workdir)
    assert [t["name"] for t in json.loads(listed.stdout)] == ["builtin__time.now", "builtin__fs.list_dir", "builtin__fs.read_file"]


def test_allow_patterns():
    assert ask.allowed("github__search", ["github__*"])
    assert ask.allowed("builtin__fs.read_file", ["fs.*"])
    assert not ask.allowed("builtin__time.now", ["fs.*"])
    assert not ask.allowed("evil__fs.read_file", ["fs.*"])  # bare names are for built-ins only
    assert ask.allowed("anything__x", [])
    assert ask.is_read_only("github__get_issue", {"readOnlyHint": True})
    assert not ask.is_read_only("github__create_issue", {"readOnlyHint": False})
    assert ask.is_read_only("builtin__memory.search") and ask.is_read_only("builtin__fs.list_dir")
    assert not ask.is_read_only("builtin__time.now") and not ask.is_read_only("builtin__tools.echo")
    assert ask.provider_names(["a.b", "a_b", "x" * 80]) == {"a_b": "a.b", "a_b_2": "a_b", "x" * 64: "x" * 80}


# --- saved conversations (--session) ----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_conversation_reuses_a_cached_read_only_result_and_keeps_its_messages(tmp_path):
    (tmp_path / "f.txt").write_text("cached content")
    calls = []
    specs = builtin_specs()
    real = specs["fs.read_file"].handler

    def counting(args, context):
        calls.append(args)
        return real(args, context)

    specs["fs.read_file"].handler = counting
    tools = ask.LocalTools(specs, [str(tmp_path)])
    env = {"TOOLSCRIPT_DATA_DIR": str(tmp_path / "data")}
    read = {"tool": "builtin__fs_read_file", "input": {"path": "f.txt"}}
    with _conversation(env, "work") as conversation:
        with FakeAnthropic([read, {"text": "first"}], sequential=True) as api:
            first = ask.run_api("read it", tools=tools, env=api_env(api), conversation=conversation)
        with FakeAnthropic([read, {"text": "second"}], sequential=True) as api:
            second = ask.run_api("again", tools=tools, env=api_env(api), conversation=conversation)
            requests = [r["body"] for r in api.message_requests()]
            sent = list(results_sent(api).values())
    assert first.answer == "first" and second.answer == "second"
    assert len(calls) == 1  # the second identical call never reached the tool
    assert second.tool_results[0]["cached"] is True and second.tool_results[0]["ok"] is True
    assert "cached content" in sent[-1][1]
    # The second run's first request carries the first run's conversation.
    texts = [b.get("text") for m in requests[0]["messages"] for b in m["content"] if b.get("type") == "text"]
    assert texts == ["read it", "first", "again"]
    assert [s["name"] for s in history.list_conversations(env)] == ["work"]


@pytest.mark.timeout(60)
def test_a_tool_use_cut_short_is_not_kept_in_the_conversation(tmp_path):
    with _conversation({"TOOLSCRIPT_DATA_DIR": str(tmp_path / "data")}, "cut") as conversation:
        cut = {"text": "let me look", "tool": "builtin__shell_pwd", "stop_reason": "max_tokens"}
        with FakeAnthropic([cut], sequential=True) as api:
            first = ask.run_api("where?", tools=local_tools(tmp_path), env=api_env(api), conversation=conversation)
        with FakeAnthropic([{"text": ""}], sequential=True) as api:
            ask.run_api("again", tools=local_tools(tmp_path), env=api_env(api), conversation=conversation)
        kept = conversation.messages()
    assert first.stopped == "answered" and first.tool_calls == []
    assert "let me look" in [b.get("text") for m in kept for b in m["content"]]
    blocks = [b for m in kept for b in m["content"]]
    assert not [b for b in blocks if b["type"] == "tool_use"]  # the API refuses a tool_use with no result
    assert all(b.get("text") for b in blocks if b["type"] == "text")  # and empty text blocks


@pytest.mark.timeout(60)
def test_a_conversation_with_tool_calls_continues_without_tools_as_text(tmp_path):
    with _conversation({"TOOLSCRIPT_DATA_DIR": str(tmp_path / "data")}, "flat") as conversation:
        with FakeAnthropic([{"tool": "builtin__tools_echo", "input": {"said": "hi"}}, {"text": "echoed"}], sequential=True) as api:
            ask.run_api("echo", tools=local_tools(tmp_path), env=api_env(api), conversation=conversation)
        with FakeAnthropic([{"text": "no tools now"}], sequential=True) as api:
            result = ask.run_api("and now?", tools=None, env=api_env(api), conversation=conversation)
            body = api.message_requests()[0]["body"]
    assert result.stopped == "answered" and "tools" not in body
    blocks = [b for m in body["messages"] for b in m["content"]]
    assert {b["type"] for b in blocks} == {"text"}
    assert any('[tool result: {"said": "hi"}]' == b["text"] for b in blocks)


@pytest.mark.timeout(60)
def test_time_now_is_never_cached(tmp_path):
    calls = []
    specs = builtin_specs()

    def counting(args, context):
        calls.append(1)
        return {"timestamp": len(calls), "iso": ""}

    specs["time.now"].handler = counting
    now = {"tool": "builtin__time_now"}
    with FakeAnthropic([now, now, {"text": "ok"}], sequential=True) as api:
        result = ask.run_api("t", tools=ask.LocalTools(specs, [str(tmp_path)]), env=api_env(api))
    assert len(calls) == 2 and not any(r["cached"] for r in result.tool_results)


@pytest.mark.timeout(60)
def test_session_commands_list_and_forget(ask_env, workdir):
    with FakeAnthropic([{"text": "hi"}], sequential=True) as api:
        proc = ask_cli(api, ask_env, "hello", "--session", "chat1", "--json", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sessionContextUpdated"] is True
    listed = run_cli("ask", "--list-sessions", "--json", env=ask_env, cwd=workdir)
    assert [(s["name"], s["messages"]) for s in json.loads(listed.stdout)] == [("chat1", 2)]
    assert run_cli("ask", "--forget-session", "chat1", env=ask_env, cwd=workdir).returncode == 0
    assert json.loads(run_cli("ask", "--list-sessions", "--json", env=ask_env, cwd=workdir).stdout) == []
    missing = run_cli("ask", "--forget-session", "chat1", env=ask_env, cwd=workdir)
    assert missing.returncode == 1 and "no ask session named 'chat1'" in missing.stderr


# --- output ------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_json_shape_and_text_mode_trace(ask_env, workdir):
    with FakeAnthropic([{"tool": "builtin__tools_echo", "input": {"a": 1}}, {"text": "echoed"}], sequential=True) as api:
        proc = ask_cli(api, ask_env, "echo", "--json", cwd=workdir)
    doc = json.loads(proc.stdout)
    assert set(doc) == JSON_KEYS  # no toolError when nothing failed
    assert doc["toolCalls"] == [{"id": "toolu_fake0001", "tool": "builtin__tools.echo", "args": {"a": 1}}]
    assert doc["toolResults"][0]["data"] == {"a": 1} and doc["toolResults"][0]["cached"] is False
    assert doc["sessionContextUpdated"] is False
    with FakeAnthropic([{"tool": "builtin__tools_echo", "input": {"a": 1}}, {"text": "echoed"}], sequential=True) as api:
        text = ask_cli(api, ask_env, "-", "-v", cwd=workdir, input="echo please\n")
        question = api.message_requests()[0]["body"]["messages"][0]["content"][0]["text"]
    assert text.returncode == 0 and text.stdout == "echoed\n"
    assert question == "echo please"
    assert 'ask: tool builtin__tools.echo {"a":1}' in text.stderr and " ok" in text.stderr


def test_usage_errors_exit_2(ask_env, workdir):
    assert run_cli("ask", env=ask_env, cwd=workdir).returncode == 2
    assert run_cli("ask", "q", "--max-steps", "0", env=ask_env, cwd=workdir).returncode == 2
    assert run_cli("ask", "q", "--with-tools=maybe", env=ask_env, cwd=workdir).returncode == 2


@pytest.mark.timeout(60)
def test_with_tools_false_sends_no_tools(ask_env, workdir):
    with FakeAnthropic([{"text": "plain"}], sequential=True) as api:
        proc = ask_cli(api, ask_env, "hi", "--with-tools=false", cwd=workdir)
        body = api.message_requests()[0]["body"]
    assert proc.returncode == 0 and proc.stdout == "plain\n"
    assert "tools" not in body


# --- through a gateway -------------------------------------------------------------------------


def fixture_server(name="fixture"):
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[FIXTURE, "stdio"], timeout=30)


@pytest.mark.timeout(90)
def test_a_gateway_mcp_tool_is_called_and_its_result_reaches_the_model(ask_env, tmp_path, workdir):
    script = [{"tool": "fixture__echo", "input": {"message": "from the gateway"}}, {"text": "it said hi"}]
    with running_gateway([fixture_server()], tmp_path) as (gw, url), FakeAnthropic(script, sequential=True) as api:
        proc = ask_cli(api, ask_env, "call echo", "--json", "--gateway-url", url, cwd=workdir)
        listed = [t["name"] for t in api.message_requests()[0]["body"]["tools"]]
        sent = list(results_sent(api).values())
    assert proc.returncode == 0, proc.stderr
    assert "fixture__echo" in listed and "builtin__time_now" in listed
    doc = json.loads(proc.stdout)
    assert doc["toolResults"][0]["ok"] is True
    assert "Echo: from the gateway" in sent[0][1]
    assert url.split("/t/")[1] not in proc.stderr + proc.stdout  # the token is never printed


@pytest.mark.timeout(90)
def test_ctrl_c_cancels_the_gateway_call_and_prints_interrupted(ask_env, tmp_path, workdir):
    script = [{"tool": "fixture__hang"}, {"text": "never"}]
    with running_gateway([fixture_server()], tmp_path) as (gw, url), FakeAnthropic(script, sequential=True) as api:
        env = dict(ask_env, ANTHROPIC_BASE_URL=api.url, PYTHONPATH=REPO_ROOT)
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "ask", "hang", "--json", "--gateway-url", url, "--tool-timeout", "60"],
            env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=sigint_as_at_a_terminal,
        )
        try:
            assert wait_for(lambda: gw.call("fixture__get_cancellations", {}, source="test").ok and api.count() == 1, 20)
            time.sleep(0.5)  # the hang call is in flight at the fixture
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        cancelled = wait_for(lambda: _cancellations(gw), 10)
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["stopped"] == "interrupted"
    assert cancelled, "the hang call was not cancelled upstream"


def _cancellations(gw):
    result = gw.call("fixture__get_cancellations", {}, source="test")
    text = " ".join(b.get("text", "") for b in (result.data or {}).get("content", []))
    return text if result.ok and text.strip() not in ("", "[]") else ""
