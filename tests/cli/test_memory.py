"""Memory end to end through its commands and hooks, as processes.

Every run has its own HOME, state dir and data dir (``TOOLSCRIPT_DATA_DIR``);
the hooks get their event on stdin as Claude Code sends it.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, trust_project_file, wait_for
from toolscript.cli import frame as cli

try:
    from fake_anthropic import FakeAnthropic
except ImportError:  # tests/ turned into a package
    from tests.fake_anthropic import FakeAnthropic  # type: ignore[no-redef]


@pytest.fixture
def world(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / ".git").mkdir()  # the project root is the git root
    (project / "src").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSCRIPT_", "ANTHROPIC_", "CLAUDE_"))}
    env.update(HOME=str(home), TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"), TOOLSCRIPT_DATA_DIR=str(tmp_path / "data"),
               TOOLSCRIPT_SUGGEST_BACKEND="local", PYTHONPATH=REPO_ROOT)

    class World:
        root, data = tmp_path, tmp_path / "data"

        def __init__(self):
            self.env, self.project = env, project

        def cli(self, *args, input=None, env=None, cwd=None):
            return subprocess.run([sys.executable, "-m", "toolscript", *map(str, args)], input=input, capture_output=True,
                                  text=True, timeout=60, env=dict(self.env, **(env or {})), cwd=str(cwd or project))

        def hook(self, name, event, env=None):
            event = dict({"session_id": "s1", "cwd": str(project)}, **event)
            proc = self.cli("hook", name, input=json.dumps(event), env=env)
            assert proc.returncode == 0 and proc.stderr == "", proc
            return json.loads(proc.stdout) if proc.stdout.strip() else None

        def memories(self, *extra):
            proc = self.cli("--json", "memory", "list", "--limit", "100", *extra)
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout)

    return World()


def context(answer):
    return answer["hookSpecificOutput"]["additionalContext"] if answer else ""


BASH = {"tool_name": "Bash", "tool_input": {"command": "pytest tests/test_cluster.py", "description": "Run the clustering tests"},
        "tool_response": {"stdout": "5 passed in 0.3s", "stderr": "", "interrupted": False}}
EDIT = {"tool_name": "Edit", "tool_input": {"file_path": "", "old_string": "eps = 0.1", "new_string": "eps = 0.5"},
        "tool_response": {"filePath": ""}}


def edit_event(world, name="cluster.py"):
    path = str(world.project / "src" / name)
    return dict(EDIT, tool_input=dict(EDIT["tool_input"], file_path=path), tool_response={"filePath": path})


def test_every_memory_action_parses():
    for argv in (["memory", "session", "start"], ["memory", "session", "end"], ["memory", "inject", "--query", "test"],
                 ["memory", "capture", "--content", "test"], ["memory", "capture-response", "--content", "x"],
                 ["memory", "brief", "--query", "q"], ["memory", "search", "x"], ["memory", "list"], ["memory", "show", "1"],
                 ["memory", "timeline", "1"], ["memory", "forget", "1"], ["memory", "export"], ["memory", "import", "-"],
                 ["memory", "import", "--from-claude-code"], ["memory", "add", "a fact"],
                 ["status"], ["setup"]):
        args = cli.build_parser(argv).parse_args(argv)
        assert callable(args.handler), argv


def test_a_session_by_hand_keeps_its_memories_together(world):
    sid = world.cli("memory", "session", "start").stdout.strip()
    assert len(sid) == 36
    for text in ("Implemented HDBSCAN clustering", "Fixed embedding dimension validation", "Added BIRCH integration"):
        assert world.cli("memory", "capture", "--content", text, "--kind", "action").returncode == 0
    ended = json.loads(world.cli("--json", "memory", "session", "end").stdout)
    assert ended["ended"] is True and "3 actions" in (ended["summary"] or "") or ended["summary"]
    rows = world.memories()
    assert {r["session"] for r in rows} == {sid} and sorted(r["kind"] for r in rows) == ["action"] * 3 + ["summary"]
    again = world.cli("memory", "session", "end", "--session-id", sid)  # idempotent: a warning, exit 0
    assert again.returncode == 0 and "No active session to end" in again.stderr


def test_inject_prints_the_related_work_markdown_and_reads_user_prompt(world):
    world.cli("memory", "capture", "--content", "Implemented HDBSCAN clustering in multi_space.rs", "--session-id", "old", "--kind", "action")
    world.cli("memory", "capture", "--content", "Tuned the clustering distance threshold", "--session-id", "old", "--kind", "action")
    out = world.cli("memory", "inject", "--query", "improve the clustering", "--session-id", "new").stdout
    assert out.startswith("## Relevant Context\n") and "\n- " in out and "HDBSCAN" in out
    from_env = world.cli("memory", "inject", "--session-id", "new", env={"USER_PROMPT": "clustering threshold"}).stdout
    assert "threshold" in from_env
    assert world.cli("memory", "inject", "--query", "quantum chromodynamics", "--session-id", "new").stdout == ""  # nothing related: no output


def test_the_whole_hook_lifecycle_records_and_brings_back(world):
    world.hook("session-start", {"source": "startup"})  # also starts this session's gateway; session-end stops it
    world.hook("user-prompt-submit", {"prompt": "tune the clustering of embeddings"})
    for event in (BASH, edit_event(world), dict(BASH, tool_input={"command": "git diff --stat", "description": "diff"})):
        world.hook("post-tool-use", event)
    world.hook("post-tool-use", {"tool_name": "Read", "tool_input": {"file_path": "x"}, "tool_response": {}})  # read-only: skipped
    world.hook("stop", {"last_assistant_message": "Raised eps to 0.5; the clustering tests pass.", "stop_hook_active": False})
    world.hook("stop", {"last_assistant_message": "again", "stop_hook_active": True})  # a stop hook's loop: not recorded
    world.hook("session-end", {"reason": "exit"})
    rows = world.memories()
    kinds = sorted(r["kind"] for r in rows)
    assert kinds == ["action", "action", "action", "response", "summary"], rows
    assert all(r["session"] == "s1" for r in rows) and {r["project"] for r in rows} == {str(world.project)}
    status = json.loads(world.cli("--json", "status").stdout)
    assert status["memory"]["memories"] == 5 and status["memory"]["sessions"] == {"active": 0, "completed": 1}
    # The next session gets it back: at SessionStart (recent work), and with a related prompt.
    started = context(world.hook("session-start", {"session_id": "s2", "source": "startup"}))
    assert "## Relevant Context" in started and "cluster" in started
    assert "pytest tests/test_cluster.py" in started
    again = context(world.hook("user-prompt-submit", {"session_id": "s2", "prompt": "the clustering tests fail again"}))
    world.hook("session-end", {"session_id": "s2", "reason": "exit"})
    assert "pytest tests/test_cluster.py" not in again  # a memory is injected into a session once
    related = context(world.hook("user-prompt-submit", {"session_id": "s3", "prompt": "the clustering tests fail again"}))
    assert "## Relevant Context" in related and "pytest tests/test_cluster.py" in related
    assert not list((world.root / "state" / "gateways").glob("*.json"))  # both sessions' gateways stopped


def test_one_json_object_carries_memory_and_suggestions(world):
    skill = world.root / "home" / ".claude" / "skills" / "clustering"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: clustering\ndescription: Use when tuning clustering of embeddings (HDBSCAN, eps).\n---\n")
    world.cli("memory", "capture", "--content", "Tuned HDBSCAN eps for the embedding clusters", "--session-id", "old", "--kind", "action")
    proc = world.cli("hook", "user-prompt-submit", input=json.dumps({"session_id": "s9", "cwd": str(world.project),
                                                                     "prompt": "tune the clustering of embeddings with hdbscan"}))
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1  # one line: one JSON object
    text = context(json.loads(proc.stdout))
    assert "## Relevant Context" in text and 'Skill("clustering")' in text


def test_memory_off_records_nothing(world):
    world.hook("post-tool-use", BASH, env={"TOOLSCRIPT_MEMORY": "0"})
    (world.project / ".toolscript.json").write_text(json.dumps({"memory": {"enabled": False}}))
    trust_project_file(world.project / ".toolscript.json", world.env)
    world.hook("post-tool-use", BASH)
    assert not (world.data / "memory.db").exists() or world.memories() == []


def test_a_broken_database_costs_memory_only(world):
    world.data.mkdir()
    (world.data / "memory.db").write_bytes(os.urandom(8192))
    answer = world.hook("user-prompt-submit", {"prompt": "turn the notes into a pptx deck"})  # suggestions still answer
    world.hook("post-tool-use", BASH)
    assert answer is None or "hookEventName" in answer["hookSpecificOutput"]
    log = (world.root / "state" / "hooks.log").read_text()
    assert "memory" in log and ("not a toolscript memory database" in log or "move it away" in log)
    listed = world.cli("memory", "list")
    assert listed.returncode == 1 and "move it away" in listed.stderr


def test_secrets_and_private_parts_never_reach_the_database(world):
    secret = "sk-ant-api03-" + "A" * 40
    world.hook("post-tool-use", dict(BASH, tool_input={"command": f"curl -H 'x-api-key: {secret}' https://api.example.com"}))
    world.cli("memory", "capture", "--content", "keep this <private>hide this part</private> and this")
    raw = b"".join(p.read_bytes() for p in world.data.iterdir() if p.is_file())
    assert secret.encode() not in raw and b"hide this part" not in raw and b"keep this" in raw


def test_forget_counts_first_and_export_import_round_trip(world):
    for i in range(3):
        world.cli("memory", "capture", "--content", f"note number {i}", "--session-id", "sx")
    ids = [r["id"] for r in world.memories()]
    dry = world.cli("memory", "forget", "--from-session", "sx")
    assert dry.returncode == 1 and "3 memories would be deleted" in dry.stderr and len(world.memories()) == 3
    dump = world.root / "dump.jsonl"
    assert world.cli("memory", "export", "--output", dump).returncode == 0 and len(dump.read_text().splitlines()) == 3
    assert json.loads(world.cli("--json", "memory", "forget", str(ids[0]), "--yes").stdout) == {"deleted": 1}
    assert json.loads(world.cli("--json", "memory", "forget", "--from-session", "sx", "--yes").stdout) == {"deleted": 2}
    assert world.memories() == []
    assert json.loads(world.cli("--json", "memory", "import", dump).stdout) == {"imported": 3}
    assert json.loads(world.cli("--json", "memory", "import", dump).stdout) == {"imported": 0}  # duplicates skipped
    shown = world.cli("memory", "show", "999999")
    assert shown.returncode == 1 and "no memory with id 999999" in shown.stderr


def test_memory_tools_give_ids_then_full_text(world):
    world.cli("memory", "capture", "--content", "Raised the HDBSCAN eps to 0.5 after the tests failed", "--kind", "action")
    found = json.loads(world.cli("tools", "invoke", "builtin__memory.search", "--args", '{"query": "hdbscan eps"}').stdout)
    assert found["ok"] is True, found
    [hit] = found["data"]["results"] if "data" in found else found["result"]["structuredContent"]["results"]
    full = json.loads(world.cli("tools", "invoke", "builtin__memory.get", "--args", json.dumps({"ids": [hit["id"]]})).stdout)
    body = full["data"] if "data" in full else full["result"]["structuredContent"]
    assert body["memories"][0]["content"].startswith("Raised the HDBSCAN eps") and body["missing"] == []


@pytest.mark.timeout(120)
def test_a_timed_out_hook_prints_what_is_ready(world):
    world.cli("memory", "capture", "--content", "Tuned HDBSCAN eps for the embedding clusters", "--session-id", "old", "--kind", "action")
    with FakeAnthropic([{"delay": 60, "text": "{}"}]) as api:
        env = dict(world.env, TOOLSCRIPT_SUGGEST_BACKEND="api", ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="k")
        event = json.dumps({"session_id": "s3", "cwd": str(world.project), "prompt": "tune the clustering of embeddings, slowly"})
        proc = subprocess.Popen([sys.executable, "-m", "toolscript", "hook", "user-prompt-submit"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(world.project))
        proc.stdin.write(event)
        proc.stdin.close()
        assert wait_for(lambda: api.count("/v1/messages") >= 1, timeout=30), "the suggestion never asked the model"
        proc.send_signal(signal.SIGTERM)  # what Claude Code does at the hook's timeout
        assert proc.wait(timeout=30) is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == 0 and err == ""
    answer = json.loads(out)
    assert "## Relevant Context" in context(answer) and "HDBSCAN" in context(answer)
    assert "returning partial results" in (world.root / "state" / "hooks.log").read_text()


def test_concurrent_hooks_lose_nothing(world):
    events = [json.dumps({"session_id": f"c{i % 3}", "cwd": str(world.project), "tool_name": "Bash",
                          "tool_input": {"command": f"echo job {i}"}, "tool_response": {"stdout": f"job {i}"}}) for i in range(24)]
    procs = [subprocess.Popen([sys.executable, "-m", "toolscript", "hook", "post-tool-use"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=world.env, cwd=str(world.project))
             for _ in events]
    for proc, event in zip(procs, events):
        proc.stdin.write(event)
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0 and proc.stderr.read() == ""
    contents = {r["content"] for r in world.memories("--all-projects")}
    assert all(any(f"echo job {i}" in c for c in contents) for i in range(24)), contents


def test_an_optional_model_summary_replaces_the_extractive_one_and_falls_back(world):
    (world.project / ".toolscript.json").write_text(json.dumps({"memory": {"summaryBackend": "api"}}))
    trust_project_file(world.project / ".toolscript.json", world.env)
    with FakeAnthropic([{"text": "Raised eps to 0.5 in src/cluster.py; the clustering tests pass."}], sequential=True) as api:
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "k"}
        world.hook("post-tool-use", BASH, env=env)
        world.hook("session-end", {"reason": "exit"}, env=env)
        sent = [r for r in api.requests if r.get("path", "").startswith("/v1/messages")]
    summary = [r for r in world.memories() if r["kind"] == "summary"]
    assert [r["content"] for r in summary] == ["Raised eps to 0.5 in src/cluster.py; the clustering tests pass."]
    assert len(sent) == 1 and "pytest tests/test_cluster.py" in json.dumps(sent[0]["body"]["messages"])
    # A failing model: the extractive summary is kept.
    with FakeAnthropic([{"status": 401, "error_type": "authentication_error", "error_message": "bad key"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "k"}
        world.hook("post-tool-use", dict(BASH, session_id="s2"), env=env)
        world.hook("session-end", {"session_id": "s2", "reason": "exit"}, env=env)
    extractive = [r for r in world.memories("--from-session", "s2") if r["kind"] == "summary"]
    assert len(extractive) == 1 and "pytest" in extractive[0]["content"]


def test_inject_and_brief_without_a_query_warn_and_go_on(world):
    world.cli("memory", "capture", "--content", "Tuned the clustering distance threshold", "--session-id", "old", "--kind", "action")
    inject = world.cli("memory", "inject", "--session-id", "new")
    assert inject.returncode == 0 and "Tuned the clustering" in inject.stdout  # the project's recent work, as before
    assert inject.stderr.count("\n") == 1 and "--query" in inject.stderr and "USER_PROMPT" in inject.stderr, inject.stderr
    brief = world.cli("memory", "brief", "--session-id", "new", env={"TOOL_DESCRIPTION": "  "})
    assert brief.returncode == 0 and brief.stdout == ""
    assert brief.stderr.count("\n") == 1 and "--query" in brief.stderr and "TOOL_DESCRIPTION" in brief.stderr, brief.stderr
    # A query from either place, or an explicitly empty one, is no reason to warn.
    for argv, env in ((["inject", "--query", ""], {}), (["inject"], {"USER_PROMPT": "clustering"}),
                      (["brief"], {"TOOL_DESCRIPTION": "Edit src/cluster.py"}), (["brief", "--query", "cluster"], {})):
        quiet = world.cli("memory", *argv, "--session-id", "new", env=env)
        assert quiet.returncode == 0 and quiet.stderr == "", (argv, quiet.stderr)


def session_states(world):
    from toolscript.memory import store

    with store.open_store(str(world.data / "memory.db"), readonly=True) as db:
        return {row[0]: row[1] for row in db.conn.execute("SELECT id, status FROM sessions")}


def test_session_start_by_hand_is_idempotent_and_ends_the_one_it_began_before(world):
    first = json.loads(world.cli("--json", "memory", "session", "start").stdout)
    world.cli("memory", "capture", "--content", "Implemented HDBSCAN clustering", "--kind", "action")
    second = json.loads(world.cli("--json", "memory", "session", "start").stdout)
    assert second["created"] is True and second["ended"] == first["session"]
    assert session_states(world) == {first["session"]: "completed", second["session"]: "active"}
    assert [r["kind"] for r in world.memories("--from-session", first["session"])] == ["summary", "action"]  # ended as `end` would
    # The same id again: nothing changes, nothing ends.
    again = json.loads(world.cli("--json", "memory", "session", "start", "--session-id", second["session"]).stdout)
    assert again == {"session": second["session"], "project": str(world.project), "created": False, "ended": None}
    assert session_states(world) == {first["session"]: "completed", second["session"]: "active"}
    # A Claude Code session of the same project (begun by its hook) is another window's: a start by hand leaves it.
    from toolscript.memory import store

    with store.open_store(str(world.data / "memory.db")) as db:
        db.start_session("claude-window", str(world.project))
    third = json.loads(world.cli("--json", "memory", "session", "start", "--session-id", "by-hand").stdout)
    assert third["ended"] == second["session"]
    assert session_states(world)["claude-window"] == "active" and session_states(world)["by-hand"] == "active"
    # Another project's session by hand is that project's work: it stays active.
    other = world.root / "other"
    (other / ".git").mkdir(parents=True)
    elsewhere = json.loads(world.cli("--json", "memory", "session", "start", cwd=other).stdout)
    assert elsewhere["ended"] is None and session_states(world)["by-hand"] == "active"


# -- facts on purpose, and Claude Code's own memory -------------------------------------------------


def test_memory_add_stores_a_fact_once_redacted_with_the_user_as_its_source(world):
    added = world.cli("--json", "memory", "add", "The staging DB token is ghp_abcdefghijklmnopqrstuvwxyz0123456789, reset nightly")
    assert added.returncode == 0, added.stderr
    first = json.loads(added.stdout)
    assert first["stored"] is True and first["redacted"] is True
    again = json.loads(world.cli("--json", "memory", "add", "The staging DB token is ghp_abcdefghijklmnopqrstuvwxyz0123456789, "
                                 "reset nightly").stdout)
    assert again["id"] == first["id"] and again["stored"] is False
    [memory] = world.memories()
    assert memory["source"] == "user" and memory["kind"] == "note" and "ghp_abcdef" not in memory["content"]
    other = world.root / "other"
    (other / ".git").mkdir(parents=True)
    plain = world.cli("memory", "add", "Other's fact", "--project", other)
    assert plain.returncode == 0 and plain.stdout.strip().isdigit()
    assert [m["content"] for m in world.memories("--cwd", other)] == ["Other's fact"]


def test_memory_import_from_claude_code_mirrors_its_files_with_their_source(world):
    from toolscript.memory.automemory import project_key

    home = world.root / "home"
    folder = home / ".claude" / "projects" / project_key(str(world.project)) / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Memory\n\n- Use pnpm, not npm\n- [Deploys](deploys.md)\n")
    (folder / "deploys.md").write_text("---\nname: deploys\n---\n# Deploys\n\n- Canary first, then all regions\n")
    first = world.cli("memory", "import", "--from-claude-code")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"3 added, 0 updated, 0 unchanged, 0 removed from 2 files in {folder}"
    again = json.loads(world.cli("--json", "memory", "import", "--from-claude-code").stdout)
    assert (again["added"], again["unchanged"]) == (0, 3) and again["project"] == str(world.project)
    sources = sorted(m["source"] for m in world.memories())
    assert sources == [f"{folder}/MEMORY.md:3", f"{folder}/MEMORY.md:4", f"{folder}/deploys.md:6"]
    shown = world.cli("memory", "show", str(world.memories()[0]["id"]))
    assert f"source {folder}/" in shown.stdout
    # CLAUDE_CONFIG_DIR moves Claude Code's folder, and the import follows it.
    missing = world.cli("memory", "import", "--from-claude-code", env={"CLAUDE_CONFIG_DIR": str(world.root / "cfg")})
    assert missing.returncode == 1 and str(world.root / "cfg" / "projects") in missing.stderr
    assert "--memory-dir" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    named = world.cli("--json", "memory", "import", "--from-claude-code", "--memory-dir", folder)
    assert json.loads(named.stdout)["unchanged"] == 3


def test_memory_import_says_what_to_import(world):
    neither = world.cli("memory", "import")
    assert neither.returncode == 2 and "--from-claude-code" in neither.stderr
    both = world.cli("memory", "import", "x.jsonl", "--from-claude-code")
    assert both.returncode == 2 and "not both" in both.stderr


def test_memory_off_for_the_project_refuses_to_store_and_injects_nothing(world):
    world.cli("memory", "capture", "--content", "Decided: the cache is keyed by tenant")
    (world.project / ".toolscript.json").write_text(json.dumps({"memory": {"enabled": False}}))
    for argv in (["memory", "add", "a fact"], ["memory", "capture", "--content", "x"],
                 ["memory", "import", "--from-claude-code"]):
        refused = world.cli(*argv)
        assert refused.returncode == 1 and "memory is turned off for this project" in refused.stderr, (argv, refused)
    injected = world.cli("memory", "inject", "--query", "cache tenant")
    assert injected.returncode == 0 and injected.stdout == "" and "turned off" in injected.stderr
    assert [m["content"] for m in world.memories()] == ["Decided: the cache is keyed by tenant"]  # still readable
