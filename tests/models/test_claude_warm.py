"""The warm ``claude`` conversation: ``claude_cli.Conversation``, the gateway's ``warm_model`` and ``POST /model``.

Most tests run a fake ``claude`` (``tests/fake_claude_stream.py``) that speaks the
stream-json protocol as the real CLI does and can answer late, exit, or ignore
``/clear`` on demand; one runs the real CLI from the test peers against
``fake_anthropic.FakeAnthropic``.
"""

import json
import os
import threading
import time
from typing import Dict, Iterator, Tuple

import pytest

from conftest import missing_prerequisite, wait_for
import fake_claude_stream as fake
import peers
from fake_anthropic import FakeAnthropic
from toolscript import http1
from toolscript.config.load import Config
from toolscript.gateway import warm_model
from toolscript.gateway.http_api import serve
from toolscript.gateway.service import Gateway
from toolscript.gateway.state import pid_alive
from toolscript.models import ModelError, claude_cli
from toolscript.models import backends as models

TIMEOUT = 10.0


@pytest.fixture
def world(tmp_path) -> Dict[str, str]:
    """A bin directory whose ``claude`` is the fake, and the file it records to."""
    bin_dir, record = str(tmp_path / "bin"), str(tmp_path / "record.jsonl")
    os.makedirs(bin_dir)
    fake.install(bin_dir, record)
    return {"bin": bin_dir, "record": record, "work": str(tmp_path)}


def conversation(world: Dict[str, str], **extra: str) -> claude_cli.Conversation:
    return claude_cli.Conversation("SYSTEM", None, fake.env(world["bin"], world["record"], **extra), cwd=world["work"])


def text_of(result) -> str:
    return claude_cli.result_of(result, "haiku", {})[0]


# -- the conversation -----------------------------------------------------------------------


def test_one_process_answers_question_after_question_cleared_in_between(world) -> None:
    talk = conversation(world)
    try:
        answers = [text_of(talk.ask(f"question {i}", TIMEOUT)) for i in range(3)]
        wanted = ["question 0", "/clear", "question 1", "/clear", "question 2", "/clear"]
        assert wait_for(lambda: fake.messages(world["record"]) == wanted, timeout=5), fake.messages(world["record"])
    finally:
        talk.close()
    assert answers == ["answer to: question 0", "answer to: question 1", "answer to: question 2"]
    [start] = fake.starts(world["record"])
    argv = start["argv"]
    assert argv[:3] == ["-p", "--model", "haiku"]
    assert argv[argv.index("--input-format") + 1] == "stream-json" and argv[argv.index("--output-format") + 1] == "stream-json"
    assert "--verbose" in argv and argv[argv.index("--tools") + 1] == "" and "--no-session-persistence" in argv
    assert argv[argv.index("--settings") + 1] == '{"disableAllHooks": true}' and argv[argv.index("--system-prompt") + 1] == "SYSTEM"
    assert start["env"]["TOOLSCRIPT_HOOKS_DISABLED"] == "1"  # the inner claude never runs our hooks


def test_a_late_answer_is_dropped_not_given_to_the_next_question(world) -> None:
    talk = conversation(world)
    try:
        with pytest.raises(ModelError) as info:
            talk.ask("sleep:1.5 slow question", 0.3)
        assert info.value.kind == "timeout"
        assert text_of(talk.ask("next question", TIMEOUT)) == "answer to: next question"
        assert not talk.retired
    finally:
        talk.close()
    assert len(fake.starts(world["record"])) == 1  # the late answer did not cost a new process


def test_a_cli_whose_clear_does_not_reset_is_retired_past_the_context_bound(world, monkeypatch) -> None:
    monkeypatch.setattr(claude_cli, "MAX_CONTEXT_CHARS", 60)
    talk = conversation(world, FAKE_CLAUDE_NO_CLEAR="1")
    try:
        talk.ask("a question of thirty characters", TIMEOUT)
        assert not talk.retired
        talk.ask("another one of thirty character", TIMEOUT)  # also reads the first /clear's answer: not a reset
        assert talk.retired and not talk._clears
    finally:
        talk.close()


def test_the_process_ending_is_an_error_and_retires_the_conversation(world) -> None:
    talk = conversation(world)
    try:
        with pytest.raises(ModelError) as info:
            talk.ask("exit", TIMEOUT)
        assert info.value.kind == "bad_reply" and talk.retired
    finally:
        talk.close()


def test_close_ends_the_process(world) -> None:
    talk = conversation(world)
    talk.ask("hello", TIMEOUT)
    talk.close()
    assert wait_for(lambda: not pid_alive(talk.pid), timeout=5)


def test_a_missing_cli_is_unavailable(tmp_path) -> None:
    with pytest.raises(ModelError) as info:
        claude_cli.Conversation("s", None, {"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert info.value.kind == "unavailable"


# -- the gateway's warm model and POST /model ---------------------------------------------------


@pytest.fixture
def gateway_with(world):
    """gateway_with(models) -> the URL of a gateway serving ``models`` at /model (stopped with the test)."""
    served = []

    def start(warm) -> str:
        gateway = Gateway(Config(servers={}, files=[], warnings=[]), workspace=world["work"])
        server, _ = serve(gateway, models=warm)
        gateway.start()
        if warm is not None:
            warm.begin()
        served.append((server, gateway))
        return server.url

    yield start
    for server, gateway in served:
        server.shutdown_all()
        gateway.stop()


def warm_models(world, **options) -> warm_model.WarmModels:
    env = fake.env(world["bin"], world["record"])
    return warm_model.WarmModels(lambda system, model: claude_cli.Conversation(system, model, env, cwd=world["work"]), **options)


def post(url: str, body: bytes, key: str = None) -> Tuple[int, dict]:
    host, _, rest = url[len("http://"):].partition("/")
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers[warm_model.KEY_HEADER] = key
    status, _, data = http1.request(host.split(":")[0], int(host.split(":")[1]), "POST", "/" + rest + "/model",
                                    headers=headers, body=body, timeout=TIMEOUT, max_body=1 << 20)
    return status, json.loads(data)


QUESTION = json.dumps({"system": "SYSTEM", "prompt": "hi", "model": None, "timeout": 5}).encode()


def test_the_gateway_answers_from_one_warm_conversation_and_wants_its_key(world, gateway_with) -> None:
    warm = warm_models(world)
    url = gateway_with(warm)
    assert post(url, QUESTION)[0] == 403 and post(url, QUESTION, "wrong")[0] == 403  # the gateway token alone is not enough
    assert fake.starts(world["record"]) == []
    status, answer = post(url, QUESTION, warm.key)
    assert status == 200 and answer["result"]["result"] == "answer to: hi" and answer["started"] is True
    env = fake.env(world["bin"], world["record"])
    replies = [models.complete("SYSTEM", f"q{i}", backend="claude", timeout=TIMEOUT, env=env, gateway=(url, warm.key))
               for i in range(2)]
    assert [r.text for r in replies] == ["answer to: q0", "answer to: q1"] and replies[0].model == "claude-haiku-fake"
    assert len(fake.starts(world["record"])) == 1


@pytest.mark.parametrize("body, status", [
    (b"not json", 400), (b"[]", 400), (json.dumps({"system": "s", "prompt": 3, "timeout": 1}).encode(), 400),
    (json.dumps({"system": "s", "prompt": "p", "timeout": 0}).encode(), 400),
    (json.dumps({"system": "s", "prompt": "p" * 300000, "timeout": 1}).encode(), 400),
])
def test_bad_questions_are_refused(world, gateway_with, body, status) -> None:
    warm = warm_models(world)
    url = gateway_with(warm)
    assert post(url, body, warm.key)[0] == status
    assert fake.starts(world["record"]) == []


def test_a_gateway_without_a_warm_model_leaves_the_question_to_a_cold_claude(world, gateway_with) -> None:
    url = gateway_with(None)
    env = fake.env(world["bin"], world["record"])
    reply = models.complete("SYSTEM", "q", backend="claude", timeout=TIMEOUT, env=env, gateway=(url, "some-key"))
    assert reply.text == "cold answer to: q"
    with pytest.raises(ModelError) as info:  # too little time left for a cold start: not even tried
        models.complete("SYSTEM", "q", backend="claude", timeout=0.5, env=env, gateway=(url, "some-key"))
    assert info.value.kind == "timeout" and len(fake.starts(world["record"])) == 1


def test_a_slow_warm_answer_is_a_timeout_and_the_conversation_carries_on(world, gateway_with) -> None:
    warm = warm_models(world)
    url = gateway_with(warm)
    env = fake.env(world["bin"], world["record"])
    with pytest.raises(ModelError) as info:
        models.complete("SYSTEM", "sleep:1.5 q", backend="claude", timeout=0.5, env=env, gateway=(url, warm.key))
    assert info.value.kind == "timeout"
    assert models.complete("SYSTEM", "q2", backend="claude", timeout=TIMEOUT, env=env, gateway=(url, warm.key)).text == "answer to: q2"
    assert len(fake.starts(world["record"])) == 1


def test_a_retired_conversation_is_replaced_at_once(world) -> None:
    warm = warm_models(world, prewarm=("SYSTEM", None))
    warm.begin()
    try:
        assert wait_for(lambda: len(fake.starts(world["record"])) == 1, timeout=10)  # started before any question
        with pytest.raises(ModelError):
            warm.ask("SYSTEM", "exit", None, TIMEOUT)
        assert wait_for(lambda: len(fake.starts(world["record"])) == 2, timeout=10)  # the successor, ahead of the next question
        result, started = warm.ask("SYSTEM", "again", None, TIMEOUT)
        assert text_of(result) == "answer to: again" and not started
    finally:
        warm.close()


def test_an_idle_conversation_is_stopped_and_the_next_question_starts_one(world) -> None:
    warm = warm_models(world, idle_seconds=0.3)
    warm.begin()
    try:
        warm.ask("SYSTEM", "hello", None, TIMEOUT)
        [first] = fake.starts(world["record"])
        assert wait_for(lambda: not warm.running() and not pid_alive(first["pid"]), timeout=10)
        result, started = warm.ask("SYSTEM", "hello again", None, TIMEOUT)
        assert started and text_of(result) == "answer to: hello again"
    finally:
        warm.close()


def test_another_system_prompt_replaces_the_conversation(world) -> None:
    warm = warm_models(world)
    try:
        warm.ask("SYSTEM", "a", None, TIMEOUT)
        warm.ask("OTHER", "b", None, TIMEOUT)
        first, second = fake.starts(world["record"])
        assert wait_for(lambda: not pid_alive(first["pid"]), timeout=5)
        assert second["argv"][second["argv"].index("--system-prompt") + 1] == "OTHER"
    finally:
        warm.close()


def test_stopping_the_gateway_ends_the_conversation(world, gateway_with) -> None:
    warm = warm_models(world)
    gateway_with(warm)
    warm.ask("SYSTEM", "hello", None, TIMEOUT)
    [start] = fake.starts(world["record"])
    warm.close()
    assert wait_for(lambda: not pid_alive(start["pid"]), timeout=5)
    with pytest.raises(Exception) as info:
        warm.ask("SYSTEM", "more", None, TIMEOUT)
    assert getattr(info.value, "kind", "") == "unavailable"


def test_questions_from_two_threads_take_turns(world) -> None:
    warm = warm_models(world)
    answers: Dict[str, str] = {}

    def ask(name: str) -> None:
        answers[name] = text_of(warm.ask("SYSTEM", name, None, TIMEOUT)[0])

    try:
        warm.ask("SYSTEM", "first", None, TIMEOUT)
        threads = [threading.Thread(target=ask, args=(f"q{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
    finally:
        warm.close()
    assert answers == {f"q{i}": f"answer to: q{i}" for i in range(4)}


# -- the real CLI ------------------------------------------------------------------------


@pytest.fixture
def real_claude(tmp_path) -> Iterator[Dict[str, str]]:
    try:
        binary = peers.claude_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    home, bin_dir = str(tmp_path / "home"), str(tmp_path / "bin")
    os.makedirs(home)
    os.makedirs(bin_dir)
    os.symlink(binary, os.path.join(bin_dir, "claude"))
    yield {"home": home, "bin": bin_dir}


@pytest.mark.timeout(180)
def test_the_real_cli_answers_each_question_in_a_fresh_conversation_without_hooks(real_claude, tmp_path) -> None:
    marker = str(tmp_path / "hook-fired")
    command = f"touch {marker}"
    hook = [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
    os.makedirs(os.path.join(real_claude["home"], ".claude"))
    with open(os.path.join(real_claude["home"], ".claude", "settings.json"), "w", encoding="utf-8") as fh:
        json.dump({"hooks": {"SessionStart": hook, "UserPromptSubmit": hook, "Stop": hook}}, fh)
    with FakeAnthropic(["FIRST", "SECOND", "THIRD"], sequential=True) as api:
        env = {"HOME": real_claude["home"], "PATH": os.pathsep.join([real_claude["bin"], "/usr/bin", "/bin"]),
               "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key"}
        talk = claude_cli.Conversation("OUR-SYSTEM-PROMPT", None, env, cwd=real_claude["home"])
        try:
            answers = [text_of(talk.ask(f"question number {i}", 60)) for i in range(3)]
            time.sleep(0.5)  # the last /clear is answered by the CLI itself: no request may follow it
            requests = api.message_requests()
        finally:
            talk.close()
    assert answers == ["FIRST", "SECOND", "THIRD"]
    assert len(requests) == 3, api.summary()
    for i, request in enumerate(requests):
        said = json.dumps(request["body"]["messages"])
        assert f"question number {i}" in said and all(f"question number {j}" not in said for j in range(3) if j != i)
        assert "OUR-SYSTEM-PROMPT" in json.dumps(request["body"]["system"]) and request["body"]["tools"] == []
    assert not os.path.exists(marker), "a hook fired inside the warm conversation"


@pytest.mark.timeout(240)
def test_a_sessions_gateway_starts_the_real_cli_warm_and_the_hook_asks_it(real_claude, tmp_path, run_cli) -> None:
    """The whole path: `gateway start` for a session starts the conversation, the state file carries its key, and
    two prompts' hooks are answered by that one process (the fake API sees each prompt once, no cold claude -p)."""
    import subprocess

    from toolscript.gateway import state

    work = tmp_path / "work"
    work.mkdir()
    answer = {"text": json.dumps({"skills": [], "toolQueries": ["current time"]})}
    with FakeAnthropic([answer]) as api:
        env = dict(os.environ, HOME=real_claude["home"], TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"),
                   PATH=os.pathsep.join([real_claude["bin"], os.environ["PATH"]]), ANTHROPIC_BASE_URL=api.url,
                   ANTHROPIC_API_KEY="test-key", TOOLSCRIPT_SUGGEST_BACKEND="claude", TOOLSCRIPT_SUGGEST="1")
        env.pop("TOOLSCRIPT_HOOKS_DISABLED", None)
        owner = subprocess.Popen(["sleep", "200"])  # stands for Claude Code: the gateway ends with it
        try:
            started = run_cli("gateway", "start", "--detach", "--session", "warm-e2e", "--exit-with", str(owner.pid),
                              env=env, cwd=str(work))
            assert started.returncode == 0, started.stderr
            info = state.read_state("warm-e2e", env)
            assert info is not None and isinstance(info.get("modelKey"), str)
            for prompt in ("what time is it in utc now", "and what time is it in utc now, once more"):
                event = json.dumps({"session_id": "warm-e2e", "cwd": str(work), "prompt": prompt})
                hook = run_cli("hook", "user-prompt-submit", env=dict(env, TOOLSCRIPT_CONFIG=_no_rate_limit(tmp_path)),
                               input=event, cwd=str(work))
                assert hook.returncode == 0 and "builtin__time.now" in hook.stdout, hook.stdout + hook.stderr
            requests = api.message_requests()
        finally:
            owner.kill()
            owner.wait()
            run_cli("gateway", "stop", "--session", "warm-e2e", env=env)
    log = (tmp_path / "state" / "hooks.log").read_text()
    assert log.count("prompt: claude answered") == 2 and log.count("warm conversation answered") == 2, log
    assert "cold claude -p" not in log
    said = [json.dumps(r["body"]["messages"]) for r in requests]
    assert len(said) == 2 and "what time is it in utc now" in said[0] and "once more" in said[1] and "once more" not in said[0]
    assert all(r["body"]["system"] for r in requests) and not any('"--output-format", "json"' in s for s in said)


def _no_rate_limit(tmp_path) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"suggestions": {"minInterval": 0}}), encoding="utf-8")
    return str(path)
