"""The model backends: the Messages API client (messages), the ``claude`` CLI (claude_cli), choosing between them (backends).

The API tests run against ``fake_anthropic.FakeAnthropic`` over real HTTP on
127.0.0.1 (``sequential=True``: each request takes the next scripted turn, which
is what retries need).  The CLI tests run the real ``claude`` binary from the test
peers, pointed at the same fake with a scratch HOME, plus small fake ``claude``
scripts for what the real one cannot be made to do on demand (hang, print garbage).
"""

import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
import time
from typing import Any, Dict, List, Optional

import pytest

from conftest import REPO_ROOT, missing_prerequisite, wait_for
import peers
from connect_proxy import ConnectProxy
from fake_anthropic import FakeAnthropic
from loopback import Loopback, read_head
from toolscript.gateway.state import pid_alive
from toolscript.models import ModelError, messages
from toolscript.models import backends as models

KEY = "sk-ant-test-SECRET-0123456789"
TOKEN = "bearer-test-SECRET-9876543210"
CLI_TIMEOUT = 60.0  # seconds for one real `claude -p` call (about 0.5-2 s when healthy)


def api_env(api: FakeAnthropic, **extra: str) -> Dict[str, str]:
    env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY, "PATH": os.environ.get("PATH", "")}
    env.update(extra)
    return env


def call(api: FakeAnthropic, timeout: float = 10.0, **extra: str) -> models.Reply:
    return models.complete("SYSTEM-PROMPT", "the user's prompt", backend="api", timeout=timeout, env=api_env(api, **extra))


def fails(api: FakeAnthropic, timeout: float = 10.0, **extra: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        call(api, timeout=timeout, **extra)
    return info.value


# --- the Messages API ---------------------------------------------------------------


def test_api_success_sends_a_plain_request() -> None:
    with FakeAnthropic(["hello there"], sequential=True) as api:
        reply = call(api)
        [request] = api.message_requests()
    assert reply.text == "hello there" and reply.backend == "api"
    assert reply.model == messages.DEFAULT_API_MODEL and reply.usage["input_tokens"] == 10 and reply.ms >= 0
    assert request["path"] == "/v1/messages"
    headers = request["headers"]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json" and "authorization" not in headers
    # No sampling parameters, no prefill, no thinking: the newest models reject them.
    assert request["body"] == {
        "model": "claude-haiku-4-5",
        "max_tokens": 400,
        "system": "SYSTEM-PROMPT",
        "messages": [{"role": "user", "content": "the user's prompt"}],
    }


def test_api_model_comes_from_the_argument_then_the_haiku_variable() -> None:
    with FakeAnthropic(["a"], sequential=True) as api:
        assert call(api, ANTHROPIC_DEFAULT_HAIKU_MODEL="claude-haiku-5-5").model == "claude-haiku-5-5"
        env = api_env(api, ANTHROPIC_DEFAULT_HAIKU_MODEL="claude-haiku-5-5")
        assert models.complete("s", "p", backend="api", model="my-model", env=env, timeout=10).model == "my-model"
        assert [r["body"]["model"] for r in api.message_requests()] == ["claude-haiku-5-5", "my-model"]


def test_api_reads_text_after_thinking_blocks() -> None:
    with FakeAnthropic([{"thinking": "let me think", "text": "the answer"}], sequential=True) as api:
        assert call(api).text == "the answer"


def test_api_401_is_auth_and_not_retried() -> None:
    with FakeAnthropic([{"status": 401}, "never"], sequential=True) as api:
        error = fails(api)
        assert api.count() == 1
    assert error.kind == "auth" and error.status == 401
    assert "ANTHROPIC_API_KEY" in str(error) and "\n" not in str(error)


@pytest.mark.parametrize(
    "status, kind",
    [(400, "bad_request"), (403, "auth"), (404, "bad_request"), (413, "bad_request")],
)
def test_api_client_errors_are_not_retried(status: int, kind: str) -> None:
    with FakeAnthropic([{"status": status}, "never"], sequential=True) as api:
        error = fails(api)
        assert api.count() == 1
    assert (error.kind, error.status) == (kind, status)


def test_api_429_waits_retry_after_then_succeeds() -> None:
    with FakeAnthropic([{"status": 429, "retry_after": 1}, "after the wait"], sequential=True) as api:
        started = time.monotonic()
        reply = call(api, timeout=5.0)
        waited = time.monotonic() - started
        assert api.count() == 2
    assert reply.text == "after the wait"
    assert waited >= 0.9  # it honoured the server's retry-after


def test_api_429_with_retry_after_beyond_the_budget_gives_up_at_once() -> None:
    with FakeAnthropic([{"status": 429, "retry_after": 60}, "too late"], sequential=True) as api:
        error = fails(api, timeout=3.0)
        assert api.count() == 1
    assert error.kind == "rate_limit" and error.status == 429


def test_api_429_spend_limit_is_not_retried() -> None:
    turn = {"status": 429, "retry_after": 0, "error_code": "enforced_spend_limit_reached"}
    with FakeAnthropic([turn, "never"], sequential=True) as api:
        error = fails(api)
        assert api.count() == 1
    assert error.kind == "rate_limit" and "spend limit" in str(error)


def test_api_529_then_success() -> None:
    with FakeAnthropic([{"status": 529}, "recovered"], sequential=True) as api:
        assert call(api).text == "recovered"
        assert api.count() == 2


def test_api_500_every_time_ends_as_server_error() -> None:
    with FakeAnthropic([{"status": 500}], sequential=True) as api:
        error = fails(api, timeout=10.0)
        assert api.count() == messages.MAX_ATTEMPTS
    assert error.kind == "server" and error.status == 500


def test_api_dropped_connection_is_retried() -> None:
    with FakeAnthropic([{"drop": True}, "second try"], sequential=True) as api:
        assert call(api).text == "second try"
        assert api.count() == 2


@pytest.mark.timeout(60)
def test_api_slow_reply_beyond_the_budget_is_a_timeout() -> None:
    with FakeAnthropic([{"delay": 30, "text": "too slow"}], sequential=True) as api:
        started = time.monotonic()
        error = fails(api, timeout=1.0)
        elapsed = time.monotonic() - started
    assert error.kind == "timeout" and error.status is None
    assert elapsed < 10  # proves the 1 s budget fired, generously


@pytest.mark.timeout(60)
def test_api_answer_trickling_past_the_budget_is_a_timeout() -> None:
    # Each byte comes well within the budget; the whole answer would take minutes.
    with FakeAnthropic([{"trickle": 0.2, "text": "slowly"}], sequential=True) as api:
        started = time.monotonic()
        error = fails(api, timeout=1.0)
        elapsed = time.monotonic() - started
    assert error.kind == "timeout"
    assert elapsed < 10  # proves the 1 s budget fired, generously


def test_api_refusal_and_empty_text_are_bad_replies() -> None:
    with FakeAnthropic([{"stop_reason": "refusal", "text": ""}, {"text": "", "stop_reason": "end_turn"}], sequential=True) as api:
        refusal = fails(api)
        empty = fails(api)
    assert refusal.kind == "bad_reply" and "refusal" in str(refusal)
    assert empty.kind == "bad_reply"


def test_api_bearer_token_and_custom_headers_arrive() -> None:
    with FakeAnthropic(["ok"], sequential=True) as api:
        env = {
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_AUTH_TOKEN": TOKEN,
            "ANTHROPIC_CUSTOM_HEADERS": "X-Test-Hdr: one\nX-Other:two\nnot a header line",
        }
        models.complete("s", "p", backend="api", env=env, timeout=10)
        [request] = api.message_requests()
    headers = request["headers"]
    assert headers["authorization"] == f"Bearer {TOKEN}" and "x-api-key" not in headers
    assert headers["x-test-hdr"] == "one" and headers["x-other"] == "two"


@pytest.mark.parametrize("suffix", ["/", "/proxy", "/proxy/"])
def test_api_base_url_with_slash_or_path_prefix(suffix: str) -> None:
    with FakeAnthropic(["ok"], sequential=True) as api:
        env = api_env(api, ANTHROPIC_BASE_URL=api.url + suffix)
        with pytest.raises(ModelError) if "proxy" in suffix else _nothing():
            models.complete("s", "p", backend="api", env=env, timeout=10)
        [request] = api.snapshot()
    # The fake serves /v1/messages only, so a prefixed URL gets its 404, at the right path.
    assert request["path"] == suffix.rstrip("/") + "/v1/messages"


def test_api_goes_through_http_proxy_unless_no_proxy_says_otherwise() -> None:
    # The fake reads an absolute-URL request line like a forward proxy would receive it.
    with FakeAnthropic(["via proxy"], sequential=True) as api:
        env = api_env(api, ANTHROPIC_BASE_URL="http://api.example.invalid/", http_proxy=api.url)
        assert models.complete("s", "p", backend="api", env=env, timeout=10).text == "via proxy"
        [request] = api.message_requests()
        assert request["path"] == "http://api.example.invalid:80/v1/messages"
        with pytest.raises(ModelError) as info:
            models.complete("s", "p", backend="api", env=dict(env, no_proxy="localhost,.example.invalid"), timeout=10)
        assert info.value.kind == "network"  # straight to the (unresolvable) host, not to the proxy
        assert api.count() == 1


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


def test_api_key_never_in_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    # A careless server echoes the credentials back in its error message.
    caplog.set_level(logging.DEBUG, logger="toolscript")
    with FakeAnthropic([{"status": 401, "error_message": f"invalid x-api-key {KEY}"}], sequential=True) as api:
        errors = [fails(api)]
    with FakeAnthropic([{"status": 403, "error_message": f"x-api-key {KEY} / Bearer {TOKEN}"}], sequential=True) as api:
        errors.append(fails(api, ANTHROPIC_AUTH_TOKEN=TOKEN))
    with FakeAnthropic([{"status": 500, "error_message": KEY}], sequential=True) as api:
        errors.append(fails(api))
    custom = "X-Gateway-Key: custom-SECRET-55555"
    with FakeAnthropic([{"status": 400, "error_message": "bad header custom-SECRET-55555"}], sequential=True) as api:
        errors.append(fails(api, ANTHROPIC_CUSTOM_HEADERS=custom))
    with FakeAnthropic([{"delay": 30, "text": "x"}], sequential=True) as api:
        errors.append(fails(api, timeout=0.5))
    text = "\n".join(str(e) for e in errors) + "\n" + caplog.text
    assert KEY not in text and TOKEN not in text and "custom-SECRET-55555" not in text
    assert "****" in str(errors[0])  # the echo was there, and hidden


def test_api_bad_base_url_is_named_but_not_echoed() -> None:
    env = {"ANTHROPIC_BASE_URL": "ftp://user:pw-SECRET@host/", "ANTHROPIC_API_KEY": KEY}
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="api", env=env, timeout=5)
    assert info.value.kind == "bad_request" and "ANTHROPIC_BASE_URL" in str(info.value)
    assert "SECRET" not in str(info.value)


def test_api_without_credentials_says_what_to_set() -> None:
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="api", env={"PATH": ""}, timeout=5)
    assert info.value.kind == "auth" and "ANTHROPIC_API_KEY" in str(info.value)


def test_api_nothing_listening_is_a_network_error() -> None:
    with FakeAnthropic(["unused"]) as api:
        url = api.url
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="api", env={"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY}, timeout=5)
    assert info.value.kind == "network" and "ANTHROPIC_BASE_URL" in str(info.value)


def test_api_answer_larger_than_the_cap_is_refused() -> None:
    with FakeAnthropic(["x" * (messages.MAX_RESPONSE_BYTES + 10)], sequential=True) as api:
        error = fails(api)
    assert error.kind == "bad_reply" and "MiB" in str(error)


def test_messages_passes_tools_through_and_returns_the_raw_json() -> None:
    body = {
        "model": "m",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "get_x", "description": "d", "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "tool", "name": "get_x", "disable_parallel_tool_use": True},
    }
    with FakeAnthropic([{"tool": "get_x", "input": {"a": 1}}], sequential=True) as api:
        reply = messages.messages(body, timeout=10, env=api_env(api))
        [request] = api.message_requests()
    assert request["body"] == body
    assert reply["stop_reason"] == "tool_use" and reply["content"][0]["input"] == {"a": 1}


# --- the claude CLI ----------------------------------------------------------------------


def claude_binary() -> str:
    try:
        return peers.claude_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
        raise  # not reached


@pytest.fixture
def cli_world(tmp_path, monkeypatch) -> Dict[str, str]:
    """A scratch HOME and project (the cwd), and a PATH whose ``claude`` is the real one."""
    home, project, bin_dir = (str(tmp_path / n) for n in ("home", "project", "bin"))
    for directory in (home, project, bin_dir):
        os.makedirs(directory)
    os.symlink(claude_binary(), os.path.join(bin_dir, "claude"))
    monkeypatch.chdir(project)
    path = os.pathsep.join([bin_dir, os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    return {"home": home, "project": project, "bin": bin_dir, "path": path}


def cli_env(world: Dict[str, str], api: Optional[FakeAnthropic] = None) -> Dict[str, str]:
    env = {"HOME": world["home"], "PATH": world["path"]}
    if api is not None:
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY=KEY)
    for keep in ("LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    return env


def _texts(system: Any) -> List[str]:
    if isinstance(system, str):
        return [system]
    return [str(b.get("text")) for b in system or [] if isinstance(b, dict)]


@pytest.mark.timeout(180)
def test_claude_backend_answers_with_our_system_prompt_and_no_tools(cli_world: Dict[str, str]) -> None:
    with FakeAnthropic(["FAKE-SUGGESTION"]) as api:
        reply = models.complete(
            "OUR-SYSTEM-PROMPT", "-starts with a dash", backend="claude", timeout=CLI_TIMEOUT, env=cli_env(cli_world, api)
        )
        requests = api.message_requests()
    assert reply.text == "FAKE-SUGGESTION" and reply.backend == "claude"
    assert reply.model.startswith("claude-haiku")
    assert len(requests) == 1, api.summary()
    body = requests[0]["body"]
    assert "OUR-SYSTEM-PROMPT" in _texts(body["system"])
    assert body["tools"] == []
    assert "thinking" not in body  # CLAUDE_CODE_DISABLE_THINKING: a suggestion needs no thinking time
    assert body["messages"][0] == {"role": "user", "content": "-starts with a dash"}


def _write_marker_hooks(settings_path: str, marker: str) -> None:
    command = f"{sys.executable} -c \"open({marker!r}, 'a').write('fired\\n')\""
    hook = [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
    os.makedirs(os.path.dirname(settings_path), exist_ok=True)
    with open(settings_path, "w", encoding="utf-8") as fh:
        json.dump({"hooks": {"SessionStart": hook, "UserPromptSubmit": hook, "Stop": hook}}, fh)


@pytest.mark.timeout(180)
def test_claude_backend_fires_no_hooks(cli_world: Dict[str, str], tmp_path) -> None:
    user_marker, project_marker = str(tmp_path / "user-hook-fired"), str(tmp_path / "project-hook-fired")
    _write_marker_hooks(os.path.join(cli_world["home"], ".claude", "settings.json"), user_marker)
    _write_marker_hooks(os.path.join(cli_world["project"], ".claude", "settings.json"), project_marker)
    with FakeAnthropic(["ok"]) as api:
        env = cli_env(cli_world, api)
        # Control: a plain `claude -p` in the same world does run both hooks.
        plain = subprocess.run(
            [os.path.join(cli_world["bin"], "claude"), "-p", "hi", "--output-format", "json"],
            env=dict(env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1"),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
        )
        assert plain.returncode == 0, plain.stdout + plain.stderr
        assert os.path.exists(user_marker) and os.path.exists(project_marker), "the control run fired no hook"
        os.unlink(user_marker)
        os.unlink(project_marker)

        reply = models.complete("s", "hello", backend="claude", timeout=CLI_TIMEOUT, env=env)
    assert reply.text == "ok"
    assert not os.path.exists(user_marker), "a user-level hook fired inside the inner call"
    assert not os.path.exists(project_marker), "a project-level hook fired inside the inner call"


@pytest.mark.timeout(180)
def test_claude_backend_401_is_auth(cli_world: Dict[str, str]) -> None:
    with FakeAnthropic([{"status": 401}]) as api:
        with pytest.raises(ModelError) as info:
            models.complete("s", "p", backend="claude", timeout=CLI_TIMEOUT, env=cli_env(cli_world, api))
    assert info.value.kind == "auth" and info.value.status == 401
    assert KEY not in str(info.value)


@pytest.mark.timeout(180)
def test_claude_backend_not_logged_in(cli_world: Dict[str, str]) -> None:
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="claude", timeout=CLI_TIMEOUT, env=cli_env(cli_world))
    assert info.value.kind == "not_logged_in" and "login" in str(info.value)


def _fake_claude(bin_dir: str, body: str) -> str:
    """A ``claude`` in ``bin_dir`` that runs the Python ``body``."""
    path = os.path.join(bin_dir, "claude")
    if os.path.lexists(path):
        os.unlink(path)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"#!{sys.executable}\nimport json, os, sys, subprocess, time\n" + textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def test_claude_backend_argv_environment_and_stdin(cli_world: Dict[str, str], tmp_path) -> None:
    record = str(tmp_path / "record.json")
    _fake_claude(
        cli_world["bin"],
        f"""
        json.dump({{"argv": sys.argv[1:], "env": dict(os.environ), "stdin": sys.stdin.read()}}, open({record!r}, "w"))
        print(json.dumps({{"type": "result", "is_error": False, "result": "fine", "usage": {{"input_tokens": 3}},
                           "modelUsage": {{"claude-haiku-5-5": {{}}}}}}))
        """,
    )
    env = dict(cli_env(cli_world), CLAUDECODE="1", ANTHROPIC_DEFAULT_HAIKU_MODEL="x-haiku")
    reply = models.complete("SYS", "-p --help", backend="claude", timeout=CLI_TIMEOUT, env=env)
    assert reply == models.Reply("fine", "claude", "claude-haiku-5-5", {"input_tokens": 3}, reply.ms)
    with open(record, encoding="utf-8") as fh:
        seen = json.load(fh)
    assert seen["argv"] == [
        "-p", "--model", "haiku", "--output-format", "json", "--system-prompt", "SYS", "--tools", "",
        "--max-turns", "1", "--no-session-persistence", "--settings", '{"disableAllHooks": true}',
    ]  # fmt: skip
    assert "--setting-sources" not in seen["argv"]  # the user's settings carry the login
    assert seen["stdin"] == "-p --help"  # the prompt on stdin, never as an option
    child_env = seen["env"]
    assert child_env["TOOLSCRIPT_HOOKS_DISABLED"] == "1" and child_env["CLAUDE_CODE_MAX_RETRIES"] == "1"
    assert child_env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and child_env["CLAUDE_CODE_DISABLE_THINKING"] == "1"
    assert child_env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "x-haiku" and "CLAUDECODE" not in child_env


def test_claude_backend_long_system_prompt_goes_through_a_file(cli_world: Dict[str, str], tmp_path) -> None:
    record = str(tmp_path / "record.json")
    _fake_claude(
        cli_world["bin"],
        f"""
        i = sys.argv.index("--system-prompt-file")
        json.dump({{"argv": sys.argv[1:], "system": open(sys.argv[i + 1]).read()}}, open({record!r}, "w"))
        print(json.dumps({{"is_error": False, "result": "fine"}}))
        """,
    )
    system = "skill list line\n" * 20000
    models.complete(system, "p", backend="claude", timeout=CLI_TIMEOUT, env=cli_env(cli_world))
    with open(record, encoding="utf-8") as fh:
        seen = json.load(fh)
    assert seen["system"] == system and "--system-prompt" not in seen["argv"]
    assert not os.path.exists(seen["argv"][seen["argv"].index("--system-prompt-file") + 1])  # cleaned up


@pytest.mark.timeout(60)
def test_claude_backend_that_never_answers_is_killed_with_its_children(cli_world: Dict[str, str], tmp_path) -> None:
    pids = str(tmp_path / "pids")
    _fake_claude(
        cli_world["bin"],
        f"""
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({pids!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(300)
        """,
    )
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="claude", timeout=2.0, env=cli_env(cli_world))
    elapsed = time.monotonic() - started
    assert info.value.kind == "timeout"
    assert elapsed < 20  # proves the 2 s budget fired (plus the kill), generously
    leader, child = (int(p) for p in open(pids, encoding="utf-8").read().split())
    assert wait_for(lambda: not pid_alive(leader) and not pid_alive(child), timeout=5), "the fake claude or its child outlived the timeout"


@pytest.mark.parametrize(
    "output, kind, status",
    [
        ('print("Traceback: it broke", file=sys.stderr); sys.exit(3)', "bad_reply", None),
        ('print(json.dumps({"is_error": True, "result": "API Error: 529 overloaded", "api_error_status": 529}))', "overloaded", 529),
        ('print(json.dumps({"is_error": True, "result": "API Error: Request rejected (429)", "api_error_status": 429}))', "rate_limit", 429),
        ('print(json.dumps({"is_error": True, "result": "Not logged in · Please run /login", "api_error_status": None}))', "not_logged_in", None),
        ('print(json.dumps({"is_error": False, "result": ""}))', "bad_reply", None),
    ],
)
def test_claude_backend_failures(cli_world: Dict[str, str], output: str, kind: str, status: Optional[int]) -> None:
    _fake_claude(cli_world["bin"], "sys.stdin.read()\n" + output + "\n")
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="claude", timeout=CLI_TIMEOUT, env=cli_env(cli_world))
    assert (info.value.kind, info.value.status) == (kind, status)
    if "Traceback" in output:
        assert "Traceback: it broke" in str(info.value)  # the first line of stderr says why


def test_claude_backend_missing_cli_is_unavailable() -> None:
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="claude", timeout=5, env={"PATH": "/nonexistent", "HOME": "/nonexistent"})
    assert info.value.kind == "unavailable"


# --- choosing a backend ----------------------------------------------------------------


def _which(found: bool):
    return lambda name: f"/usr/local/bin/{name}" if found else None


def _home(tmp_path, files: Dict[str, Any]) -> Dict[str, str]:
    home = tmp_path / "home"
    for name, content in files.items():
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    home.mkdir(exist_ok=True)
    return {"HOME": str(home)}


@pytest.fixture
def linux(monkeypatch) -> None:
    monkeypatch.setattr(models.sys, "platform", "linux")


# What /login with a subscription writes (expired long ago: the CLI refreshes it, still "logged in").
OAUTH = {"claudeAiOauth": {"accessToken": "sk-ant-oat01-x", "refreshToken": "r", "expiresAt": 1, "scopes": ["user:inference"]}}
NO_INFERENCE = {"claudeAiOauth": {"accessToken": "sk-ant-oat01-x", "refreshToken": "r", "scopes": ["user:profile"]}}


def test_choose_backend_prefers_the_api_when_a_key_is_set(tmp_path, linux) -> None:
    env = _home(tmp_path, {".claude/.credentials.json": OAUTH})
    assert models.choose_backend("auto", dict(env, ANTHROPIC_API_KEY="k"), _which(True)) == "api"
    assert models.choose_backend("auto", dict(env, ANTHROPIC_AUTH_TOKEN="t"), _which(False)) == "api"
    assert models.choose_backend("auto", dict(env, ANTHROPIC_API_KEY="  "), _which(True)) == "claude"


@pytest.mark.parametrize(
    "files, extra, expected",
    [
        ({}, {}, "local"),
        ({".claude/.credentials.json": OAUTH}, {}, "claude"),
        ({".claude/.credentials.json": {}}, {}, "local"),
        ({".claude/.credentials.json": NO_INFERENCE}, {}, "local"),
        ({".claude/.credentials.json": "not json"}, {}, "local"),
        ({".claude.json": {"primaryApiKey": "sk-ant-api03-x", "projects": {}}}, {}, "claude"),
        ({".claude.json": {"projects": {}}}, {}, "local"),
        ({".claude/settings.json": {"apiKeyHelper": "echo k"}}, {}, "claude"),
        ({".claude/settings.json": {"env": {"ANTHROPIC_API_KEY": "k"}}}, {}, "claude"),
        ({}, {"CLAUDE_CODE_OAUTH_TOKEN": "t"}, "claude"),
        ({}, {"CLAUDE_CODE_USE_BEDROCK": "1"}, "claude"),
        ({}, {"CLAUDE_CODE_USE_VERTEX": "0"}, "local"),
    ],
)
def test_choose_backend_auto_without_a_key(tmp_path, linux, files, extra, expected) -> None:
    env = dict(_home(tmp_path, files), **extra)
    assert models.choose_backend("auto", env, _which(True)) == expected
    assert models.choose_backend("auto", env, _which(False)) == "local"  # no CLI, no claude backend


def test_choose_backend_honours_claude_config_dir(tmp_path, linux) -> None:
    config = tmp_path / "config"
    config.mkdir()
    env = dict(_home(tmp_path, {".claude/.credentials.json": OAUTH}), CLAUDE_CONFIG_DIR=str(config))
    assert models.choose_backend("auto", env, _which(True)) == "local"  # ~/.claude is not read then
    (config / ".credentials.json").write_text(json.dumps(OAUTH), encoding="utf-8")
    assert models.choose_backend("auto", env, _which(True)) == "claude"
    (config / ".credentials.json").unlink()
    (config / ".claude.json").write_text(json.dumps({"primaryApiKey": "k"}), encoding="utf-8")
    assert models.choose_backend("auto", env, _which(True)) == "claude"


def test_choose_backend_assumes_the_keychain_on_macos(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(models.sys, "platform", "darwin")
    assert models.choose_backend("auto", _home(tmp_path, {}), _which(True)) == "claude"


def test_choose_backend_uses_the_path_of_the_given_environment(tmp_path, linux) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\n", encoding="utf-8")
    claude.chmod(0o755)
    env = dict(_home(tmp_path, {".claude/.credentials.json": OAUTH}), PATH=str(bin_dir))
    assert models.choose_backend("auto", env) == "claude"
    assert models.choose_backend("auto", dict(env, PATH=str(tmp_path))) == "local"


def test_choose_backend_names(tmp_path) -> None:
    for name in ("api", "claude", "local"):
        assert models.choose_backend(name, {}, _which(False)) == name
    assert models.choose_backend("API", {}, _which(False)) == "api"
    with pytest.raises(ValueError) as info:
        models.choose_backend("gpt", {}, _which(True))
    assert all(name in str(info.value) for name in models.BACKENDS)


def test_complete_with_no_backend_available(tmp_path, linux) -> None:
    env = dict(_home(tmp_path, {}), PATH=str(tmp_path))
    with pytest.raises(ModelError) as info:
        models.complete("s", "p", backend="auto", env=env)
    assert info.value.kind == "unavailable" and "ANTHROPIC_API_KEY" in str(info.value)
    with pytest.raises(ValueError):
        models.complete("s", "p", backend="local", env=env)


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "files, extra",
    [
        ({}, {}),
        ({".claude/.credentials.json": OAUTH}, {}),
        ({".claude/.credentials.json": {}}, {}),
        ({".claude/.credentials.json": NO_INFERENCE}, {}),
        ({".claude.json": {"primaryApiKey": "sk-ant-api03-x"}}, {}),
        ({".claude/settings.json": {"apiKeyHelper": "echo k"}}, {}),
        ({".claude/settings.json": {"env": {"ANTHROPIC_API_KEY": "k"}}}, {}),
        ({}, {"CLAUDE_CODE_OAUTH_TOKEN": "t"}),
        ({}, {"CLAUDE_CODE_USE_BEDROCK": "1"}),
    ],
)
def test_logged_in_heuristic_agrees_with_claude_auth_status(tmp_path, linux, files, extra) -> None:
    claude = claude_binary()
    env = dict(_home(tmp_path, files), PATH=os.environ.get("PATH", ""), **extra)
    proc = subprocess.run(
        [claude, "auth", "status", "--json"], env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT
    )
    status = json.loads(proc.stdout)
    assert models.claude_looks_logged_in(env) == status["loggedIn"], status


# --- the raw HTTP transport ------------------------------------------------------------------
# messages() speaks HTTP/1.1 over a socket of its own (http.client costs the prompt hook
# ~17 ms of imports).  RawServer answers with exact bytes, so the framing cases the fake
# API never produces (chunked bodies, interim answers, garbage) can be scripted.


class RawServer(Loopback):
    """A tiny HTTP server on 127.0.0.1 (or ``localhost`` over TLS): each connection gets the next scripted answer.

    An answer is bytes, or a list of byte pieces sent with a short pause between them
    (so the client's reads split where the test wants); the server hangs up after it.
    """

    def __init__(self, answers: List[Any], tls: Optional[Any] = None) -> None:
        self.answers = answers
        self.tls = tls
        self.requests: List[bytes] = []
        super().__init__(self._reply)
        host = "localhost" if tls else "127.0.0.1"
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}"

    def _reply(self, conn: Any) -> None:
        conn.settimeout(10)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            self._answer(conn)
        except OSError:
            pass  # the client hung up first (it refused what it got): fine
        finally:
            conn.close()

    def _answer(self, conn: Any) -> None:
        data = read_head(conn)
        if b"\r\n\r\n" not in data:
            return
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            body += conn.recv(65536)
        self.requests.append(head + b"\r\n\r\n" + body)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        pieces = answer if isinstance(answer, list) else [answer]
        for piece in pieces:
            conn.sendall(piece)
            if len(pieces) > 1:
                time.sleep(0.02)

    def __enter__(self) -> "RawServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _message_bytes(text: str) -> bytes:
    message = {
        "id": "msg_raw",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 7, "output_tokens": 3},
    }
    return json.dumps(message).encode("utf-8")


def _raw_call(server: RawServer, timeout: float = 10.0, **extra: str) -> models.Reply:
    env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY}
    env.update(extra)
    return models.complete("s", "p", backend="api", timeout=timeout, env=env)


def _raw_fails(server: RawServer, timeout: float = 10.0, **extra: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        _raw_call(server, timeout=timeout, **extra)
    return info.value


def test_api_call_imports_neither_http_client_nor_ssl() -> None:
    # The point of the raw transport: a hook process calling a plain-HTTP base URL (a
    # local gateway, the fake) pays for no http.client (email parser) and no ssl.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from toolscript.models import backends as models; "
        "print(models.complete('s', 'p', backend='api', timeout=10).text); "
        "print(','.join(m for m in ('http.client', 'email.parser', 'ssl') if m in sys.modules))"
    )
    root = REPO_ROOT
    with FakeAnthropic(["light"], sequential=True) as api:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, root],
            env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["light", ""], proc.stdout


def test_api_request_is_framed_for_one_exchange() -> None:
    body = _message_bytes("framed")
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with RawServer([answer]) as server:
        assert _raw_call(server, ANTHROPIC_BASE_URL=server.url + "/prefix/").text == "framed"
        [request] = server.requests
    head, _, sent = request.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "POST /prefix/v1/messages HTTP/1.1"
    fields = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert fields["host"] == f"127.0.0.1:{server.port}" and fields["connection"] == "close"
    assert fields["x-api-key"] == KEY and int(fields["content-length"]) == len(sent)
    assert json.loads(sent)["messages"] == [{"role": "user", "content": "p"}]


def test_api_reads_a_chunked_answer_split_anywhere() -> None:
    body = _message_bytes("in chunks")
    first, second = body[:20], body[20:]
    chunked = b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (len(first), first, len(second), second)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw = head + chunked
    # Pieces cut through the status line, the headers, a chunk-size line and chunk data.
    cuts = [5, 40, len(head) + 2, len(head) + 15, len(raw) - 8]
    pieces = [raw[a:b] for a, b in zip([0] + cuts, cuts + [len(raw)])]
    with RawServer([pieces]) as server:
        reply = _raw_call(server)
    assert reply.text == "in chunks" and reply.usage == {"input_tokens": 7, "output_tokens": 3}


def test_api_reads_to_the_end_of_the_stream_after_an_interim_answer() -> None:
    # No Content-Length, no chunking: the body ends when the server hangs up
    # (we asked for Connection: close); a 100 Continue before it is skipped.
    body = _message_bytes("to the end")
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body
    with RawServer([[answer[:30], answer[30:]]]) as server:
        assert _raw_call(server).text == "to the end"


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n",
        b"hello\n",
    ],
    ids=["ssh-banner", "letters-in-status", "no-head"],
)
def test_api_malformed_status_line_is_a_network_error_not_retried(answer: bytes) -> None:
    with RawServer([answer]) as server:
        error = _raw_fails(server)
        assert len(server.requests) == 1
    assert error.kind == "network" and "ANTHROPIC_BASE_URL" in str(error) and "\n" not in str(error)


@pytest.mark.parametrize(
    "headers",
    [b"X-Big: " + b"a" * (70 * 1024) + b"\r\n", b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 100) for i in range(1000))],
    ids=["one-long-line", "many-lines"],
)
def test_api_oversized_headers_are_refused(headers: bytes) -> None:
    answer = b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: 2\r\n\r\n{}"
    with RawServer([answer]) as server:
        error = _raw_fails(server)
        assert len(server.requests) == 1
    assert error.kind == "network" and "64 KiB" in str(error)


def test_api_chunked_answer_over_the_cap_is_refused() -> None:
    # The chunk sizes alone say the answer is too big: refused before its data comes.
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    answer = head + b"%x\r\n" % (messages.MAX_RESPONSE_BYTES + 1) + b"x" * 1000
    with RawServer([answer]) as server:
        error = _raw_fails(server)
    assert error.kind == "bad_reply" and "MiB" in str(error)


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"type\":",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"type\":",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Len",
    ],
    ids=["short-body", "short-chunk", "bad-chunk-size", "cut-in-headers"],
)
def test_api_answer_cut_short_or_garbled_is_a_network_error(answer: bytes) -> None:
    with RawServer([answer]) as server:
        error = _raw_fails(server)
    assert error.kind == "network" and KEY not in str(error)


def test_api_server_hanging_up_before_answering_is_retried() -> None:
    body = _message_bytes("second")
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with RawServer([b"", ok]) as server:
        assert _raw_call(server).text == "second"
        assert len(server.requests) == 2


@pytest.mark.timeout(60)
def test_api_chunked_answer_trickling_past_the_budget_is_a_timeout() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    pieces = [head] + [b"1\r\nx\r\n"] * 500  # one byte a chunk, every 20 ms: 10 s in all
    with RawServer([pieces]) as server:
        started = time.monotonic()
        error = _raw_fails(server, timeout=1.0)
        elapsed = time.monotonic() - started
    assert error.kind == "timeout"
    assert elapsed < 5  # proves the 1 s budget fired, generously (the answer takes 10 s)


def test_api_header_with_a_line_break_is_refused_without_echoing_it() -> None:
    with RawServer([b""]) as server:
        error = _raw_fails(server, ANTHROPIC_API_KEY="sk-ant-SECRET\r\nX-Injected: 1")
        assert server.requests == []
    assert error.kind == "bad_request" and "SECRET" not in str(error)


@pytest.fixture
def tls_server_context(tmp_path) -> Any:
    """A server TLS context with a fresh self-signed certificate for ``localhost``; its path as ``.cafile``."""
    import shutil
    import ssl

    openssl = shutil.which("openssl")
    if not openssl:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.cafile = cert  # type: ignore[attr-defined]
    return context


def test_api_over_https_verifies_the_server(tls_server_context: Any, monkeypatch) -> None:
    body = _message_bytes("secure")
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with RawServer([answer], tls=tls_server_context) as server:
        # Not trusted yet: the default context refuses the self-signed certificate.
        untrusted = _raw_fails(server)
        assert untrusted.kind == "network" and server.requests == []
        # Trusted through the standard variable the default context reads.
        monkeypatch.setenv("SSL_CERT_FILE", tls_server_context.cafile)
        assert _raw_call(server).text == "secure"
        [request] = server.requests
    assert f"Host: localhost:{server.port}".encode() in request


def test_api_over_https_goes_through_a_connect_tunnel(tls_server_context: Any, monkeypatch) -> None:
    body = _message_bytes("tunnelled")
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    monkeypatch.setenv("SSL_CERT_FILE", tls_server_context.cafile)
    with RawServer([answer], tls=tls_server_context) as server, ConnectProxy() as proxy:
        assert _raw_call(server, https_proxy=proxy.url).text == "tunnelled"
        assert proxy.requests == [f"CONNECT localhost:{server.port} HTTP/1.1"]
        [request] = server.requests  # the TLS session ran end to end through the tunnel
    assert f"Host: localhost:{server.port}".encode() in request
    with ConnectProxy(refuse=407) as refusing:
        error = _raw_fails(server, https_proxy=refusing.url)
    assert error.kind == "network" and "407" in str(error)
