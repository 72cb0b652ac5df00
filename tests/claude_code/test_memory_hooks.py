"""Memory in the hooks: the PreToolUse brief before a tool runs, and each memory injected into a session once.

The handlers run in this process over a real store in a scratch data directory
(as the hook server runs them); ``toolscript hook pre-tool-use`` runs as a
process, as Claude Code runs the command hook.
"""

import json
import os
import subprocess
import sys
import threading

import pytest

from conftest import REPO_ROOT, git_project
from toolscript.claude_code import events
from toolscript.claude_code import memory_hooks as hooks
from toolscript.memory.context import BRIEF_HEADER, estimate_tokens


@pytest.fixture
def project(scratch_dirs):
    return git_project(scratch_dirs / "project")


def event(project, session, **fields):
    return dict({"session_id": session, "cwd": str(project)}, **fields)


def bash(project, session, command, stdout="ok"):
    hooks.post_tool_use(event(project, session, tool_name="Bash", tool_input={"command": command},
                              tool_response={"stdout": stdout, "stderr": "", "interrupted": False}))


def edit(project, session, path, old="a = 1", new="a = 2"):
    hooks.post_tool_use(event(project, session, tool_name="Edit",
                              tool_input={"file_path": str(project / path), "old_string": old, "new_string": new},
                              tool_response={"filePath": str(project / path)}))


def ids_in(text):
    """The memory records a text holds, as their quoted contents."""
    return [line for line in (text or "").splitlines() if line.startswith("- ")]


# -- the brief comes before the tool ----------------------------------------------------------------


def test_the_brief_comes_before_a_bash_command_runs(project):
    bash(project, "s-old", "make deploy-canary", stdout="canary deployed to eu-west")
    brief = hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"}))
    assert brief and brief.startswith(BRIEF_HEADER)
    assert "make deploy-canary" in brief and "canary deployed" in brief
    assert estimate_tokens(brief) <= 200


def test_the_brief_comes_before_an_edit_of_a_file_earlier_sessions_touched(project):
    edit(project, "s-old", "src/cache.py", old="eps = 0.1", new="eps = 0.5")
    brief = hooks.pre_tool_use(event(project, "s-new", tool_name="Edit",
                                     tool_input={"file_path": str(project / "src" / "cache.py"), "old_string": "x",
                                                 "new_string": "y"}))
    assert brief and "src/cache.py" in brief and "eps = 0.5" in brief


def test_no_brief_for_other_tools_nor_from_the_sessions_own_work(project):
    bash(project, "s-old", "make deploy-canary")
    assert hooks.pre_tool_use(event(project, "s-new", tool_name="Read", tool_input={"file_path": "Makefile"})) is None
    bash(project, "s-new", "make deploy-staging")
    # s-new's own action is already in its context; only earlier sessions' work is brought back.
    brief = hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-staging"}))
    assert brief is None or "deploy-staging" not in brief


def test_post_tool_use_records_and_injects_nothing(project):
    bash(project, "s-old", "make deploy-canary")
    answer = hooks.post_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"},
                                       tool_response={"stdout": "done", "stderr": "", "interrupted": False}))
    assert answer is None
    with hooks.open_configured({}) as db:
        assert [m.content for m in db.recent(session="s-new")] == ['Ran `make deploy-canary`: output "done"']


def test_the_brief_keeps_to_its_rate_limit(project):
    bash(project, "s-old", "make deploy-canary")
    bash(project, "s-old", "make deploy-staging")
    first = hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"}))
    assert first
    # One brief a minute per session (briefInterval): the next Bash gets none.
    assert hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-staging"})) is None


def test_a_brief_past_its_budget_is_dropped_and_the_tool_runs(project, monkeypatch):
    for index in range(300):
        bash(project, "s-old", f"make deploy-canary-{index} --region eu-west-{index % 7}")
    monkeypatch.setattr(hooks, "PRE_TOOL_BUDGET", -1.0)  # the deadline has passed when the search starts
    answer = hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary --region eu-west"}))
    assert answer is None
    assert hooks.injected_ids("s-new") == frozenset()  # nothing shown, nothing recorded
    monkeypatch.setattr(hooks, "PRE_TOOL_BUDGET", 0.5)
    assert hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary --region eu-west"}))


def test_the_pre_tool_use_hook_answers_one_json_object_for_claude_code(project, tmp_path):
    bash(project, "s-old", "make deploy-canary", stdout="canary deployed")
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    payload = json.dumps(event(project, "s-new", hook_event_name="PreToolUse", tool_name="Bash",
                               tool_input={"command": "make deploy-canary"}, tool_use_id="toolu_1"))
    done = subprocess.run([sys.executable, "-m", "toolscript", "hook", "pre-tool-use"], input=payload, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "canary deployed" in answer["hookSpecificOutput"]["additionalContext"]


def test_the_event_table_has_all_six_hooks():
    assert {name: spec[0] for name, spec in events.EVENTS.items()} == {
        "session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit", "pre-tool-use": "PreToolUse",
        "post-tool-use": "PostToolUse", "stop": "Stop", "session-end": "SessionEnd"}


# -- once per session ---------------------------------------------------------------------------------


def test_a_memory_is_injected_into_a_session_once(project):
    """SessionStart, the prompt and the brief share one record: what one showed, the others leave out."""
    bash(project, "s-old", "make deploy-canary", stdout="canary deployed to eu-west")
    started = hooks.session_start(event(project, "s-new"))
    assert "deploy-canary" in started
    again = hooks.prompt(event(project, "s-new", prompt="redo the deploy-canary target with make"))
    assert again is None or "deploy-canary" not in again
    assert hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"})) is None
    # Another session was shown nothing yet: the same memory comes back there.
    other = hooks.prompt(event(project, "s-other", prompt="redo the deploy-canary target with make"))
    assert other and "deploy-canary" in other


def test_what_the_prompt_showed_the_brief_leaves_out_and_new_memories_still_come(project):
    bash(project, "s-old", "make deploy-canary", stdout="canary deployed")
    for index in range(12):  # newer work, so SessionStart's "recent work" is full of other things
        bash(project, "s-old", f"pytest tests/test_unrelated_{index}.py")
    hooks.session_start(event(project, "s-new"))
    shown = hooks.prompt(event(project, "s-new", prompt="why did the deploy-canary target fail"))
    assert shown and "deploy-canary" in shown
    bash(project, "s-older", "make deploy-canary ENV=staging", stdout="staging canary up")
    brief = hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"}))
    assert brief and "ENV=staging" in brief
    assert "canary deployed" not in brief  # the prompt's memory is not shown a second time


def test_parallel_briefs_never_show_the_same_memory_twice(project, monkeypatch):
    for index in range(6):
        bash(project, "s-old", f"make deploy-canary step{index}", stdout=f"step {index} ok")
    monkeypatch.setattr(hooks, "_brief_due", lambda session, interval: True)  # every call briefs
    answers = []
    barrier = threading.Barrier(4)

    def brief():
        barrier.wait()
        answers.append(hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"})))

    threads = [threading.Thread(target=brief) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    records = [line for answer in answers for line in ids_in(answer)]
    assert records and len(records) == len(set(records))
    assert len(hooks.injected_ids("s-new")) == len(records)


def test_old_session_records_are_swept_at_session_start(project, tmp_path):
    bash(project, "s-old", "make deploy-canary")
    hooks.prompt(event(project, "s-gone", prompt="the deploy-canary target"))
    record = tmp_path / "state" / hooks.INJECTED_DIR / "s-gone"
    assert record.exists()
    old = record.stat().st_mtime - (hooks.RECORD_DAYS + 1) * 86400
    os.utime(record, (old, old))
    hooks.session_start(event(project, "s-new"))
    assert not record.exists()


def test_a_brief_budget_of_zero_turns_the_brief_off(project):
    bash(project, "s-old", "make deploy-canary")
    (project / ".toolscript.json").write_text(json.dumps({"memory": {"briefBudget": 0}}))
    from conftest import trust_project_file

    trust_project_file(project / ".toolscript.json", os.environ)
    assert hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"})) is None
    assert hooks.prompt(event(project, "s-new", prompt="the deploy-canary make target"))  # the rest of memory stays on


# -- beside Claude Code's own memory ------------------------------------------------------------------


def test_the_prompt_and_session_start_leave_out_what_claude_codes_index_loaded(project, tmp_path):
    """An entry of MEMORY.md's loaded head is in Claude's context from the start; its topic files are not."""
    from toolscript.memory import automemory
    from toolscript.memory.store import open_store

    folder = tmp_path / "home" / ".claude" / "projects" / automemory.project_key(str(project)) / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Memory\n\n- The canary deploy needs the VPN up\n")
    (folder / "deploys.md").write_text("# Deploys\n\n- The canary deploy runs make deploy-canary from main\n")
    with open_store(str(tmp_path / "data" / "memory.db")) as db:
        automemory.import_folder(db, str(folder), str(project))
    started = hooks.session_start(event(project, "s-new")) or ""
    prompted = hooks.prompt(event(project, "s-next", prompt="how does the canary deploy work")) or ""
    assert "VPN" not in started and "VPN" not in prompted
    assert "make deploy-canary from main" in started and "make deploy-canary from main" in prompted


def test_memory_turned_off_by_a_project_file_not_yet_trusted_records_and_injects_nothing(project):
    """Trust guards what a repository makes toolscript do; turning memory off only does less, so it counts at once."""
    bash(project, "s-old", "make deploy-canary", stdout="canary deployed")
    (project / ".toolscript.json").write_text(json.dumps({"memory": {"enabled": False}}))
    assert hooks.session_start(event(project, "s-new")) is None
    assert hooks.prompt(event(project, "s-new", prompt="the deploy-canary make target")) is None
    assert hooks.pre_tool_use(event(project, "s-new", tool_name="Bash", tool_input={"command": "make deploy-canary"})) is None
    bash(project, "s-new", "make deploy-staging")
    (project / ".toolscript.json").unlink()
    from toolscript.memory.store import open_store

    with open_store() as db:
        assert [m.content for m in db.recent(project=str(project), limit=10) if "staging" in m.content] == []


def test_only_memory_off_counts_from_an_untrusted_project_file(project):
    """Its other memory keys (a data directory, budgets) still wait for the user's trust."""
    from toolscript.config import keys

    (project / ".toolscript.json").write_text(json.dumps({"memory": {"enabled": True, "injectBudget": 5}}))
    settings, _ = keys.memory_settings(None, str(project))
    assert settings["enabled"] is True and settings["injectBudget"] == 600
    (project / ".toolscript.json").write_text(json.dumps({"memory": False}))
    assert keys.memory_settings(None, str(project))[0]["enabled"] is False


# -- meaning vectors are filled in once a turn ---------------------------------------------------------


def test_tool_calls_leave_vectors_to_the_stop_hook(project):
    """A PostToolUse hook never reads the embedding table; the turn's Stop gives its memories their vectors."""
    from toolscript.search import vectors

    vectors.reset()  # a fresh hook process: no table in memory
    bash(project, "s1", "pytest tests/test_cache.py", stdout="3 passed")
    edit(project, "s1", "src/cache.py")
    assert vectors.loaded() is None
    with hooks.open_configured({}) as db:
        assert db.conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0] == 0
    hooks.stop(event(project, "s1", last_assistant_message="Raised the cache limit; the tests pass.",
                     stop_hook_active=False))
    with hooks.open_configured({}) as db:
        counts = db.conn.execute("SELECT (SELECT COUNT(*) FROM memories), (SELECT COUNT(*) FROM memory_vectors)").fetchone()
    assert counts == (3, 3)
