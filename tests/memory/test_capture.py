"""What memory records from hook events: one line per action, Claude's answer, the session summary."""

import random
from typing import List

import pytest

from toolscript.memory import Memory

from toolscript.memory.capture import (
    MAX_ACTION, MAX_CONTENT, MAX_RESPONSE, MAX_SUMMARY, Captured, from_response, from_tool_use, session_summary,
)




CWD = "/home/dev/proj"


def bash_response(stdout="", stderr="", interrupted=False):
    # PostToolUse tool_response for Bash, as Claude Code 2.1 sends it.
    return {"stdout": stdout, "stderr": stderr, "interrupted": interrupted, "isImage": False,
            "noOutputExpected": False}


# -- Bash ----------------------------------------------------------------------


def test_bash_test_run_keeps_the_summary_line_and_files():
    got = from_tool_use(
        "Bash", {"command": "python -m pytest -q tests/test_parser.py", "description": "Run the parser tests"},
        bash_response("....F.\n=================\nFAILED tests/test_parser.py::test_empty - assert 0 == 1\n"
                      "1 failed, 5 passed in 0.31s\n"), cwd=CWD)
    assert got == Captured("action", "Bash",
                           "Ran `python -m pytest -q tests/test_parser.py` (Run the parser tests): "
                           'output "FAILED tests/test_parser.py::test_empty - assert 0 == 1"', ["tests/test_parser.py"])


def test_bash_plain_output_first_meaningful_line():
    got = from_tool_use("Bash", {"command": "git status --short", "description": "Show changes"},
                        bash_response("\n---\n M src/app.py\n?? notes.txt\n"), cwd=CWD)
    assert got.content == 'Ran `git status --short` (Show changes): output "M src/app.py"'


def test_bash_errors_on_stderr_win_over_stdout():
    got = from_tool_use("Bash", {"command": "make build"},
                        bash_response("building\n", "make: *** [build] Error 2\n"), cwd=CWD)
    assert got.content == 'Ran `make build`: output "make: *** [build] Error 2"'


def test_bash_interrupted_and_silent_and_failed():
    assert from_tool_use("Bash", {"command": "sleep 100"}, bash_response(interrupted=True)).content == \
        "Ran `sleep 100`: interrupted"
    assert from_tool_use("Bash", {"command": "touch x"}, bash_response()).content == "Ran `touch x`: no output"
    background = from_tool_use("Bash", {"command": "npm run dev", "run_in_background": True},
                               dict(bash_response(), backgroundTaskId="bash_1"))
    assert background.content == "Ran `npm run dev`: started in the background"
    grep = from_tool_use("Bash", {"command": "grep -rn TODO src"},
                         dict(bash_response(), returnCodeInterpretation="No matches found"))
    assert grep.content == "Ran `grep -rn TODO src`: No matches found"
    exit_code = from_tool_use("Bash", {"command": "./check"}, dict(bash_response("bad input"), exitCode=3))
    assert exit_code.content == 'Ran `./check`: exit 3, output "bad input"'
    # A failed command's tool_response can be a bare string.
    assert from_tool_use("Bash", {"command": "false"}, "Error: Exit code 1").content == \
        'Ran `false`: output "Error: Exit code 1"'


def test_bash_absolute_paths_inside_cwd_become_relative():
    got = from_tool_use("Bash", {"command": "cat /home/dev/proj/src/a.py /etc/hosts.conf ../up.md os.path"},
                        bash_response("x"), cwd=CWD)
    assert got.files == ["src/a.py", "/etc/hosts.conf", "../up.md"]
    url = from_tool_use("Bash", {"command": "curl -s https://example.com/index.html"}, bash_response("<html>"))
    assert url.files == []


def test_bash_toolscript_exec_names_the_tools_it_called():
    command = ("toolscript exec - <<'EOF'\nfrom toolscript import tools\n"
               "for e in tools.builtin.fs_list_dir(recursive=True)['entries']:\n"
               "    print(tools.call('github__search_issues', {'q': e['path']}))\nEOF")
    got = from_tool_use("Bash", {"command": command, "description": "Find issues per file"},
                        bash_response("README.md - 3 issues\n"), cwd=CWD)
    assert got.content == ("Ran toolscript exec `toolscript exec - <<'EOF'` calling builtin.fs_list_dir, "
                           'github__search_issues (Find issues per file): output "README.md - 3 issues"')
    assert got.files == []
    inline = from_tool_use("Bash", {"command": "toolscript exec 'print(1 + 1)'"}, bash_response("2\n"))
    assert inline.content == "Ran toolscript exec `toolscript exec 'print(1 + 1)'`: output \"2\""


def test_huge_and_binary_output_is_bounded():
    got = from_tool_use("Bash", {"command": "cat big.log " + "x" * 5000},
                        bash_response(("line " * 1000 + "\n") * 3000), cwd=CWD)
    assert len(got.content) <= MAX_ACTION
    long_run = from_tool_use("Bash", {"command": "pytest"}, bash_response("." * 80 + "\n" * 9000 + "3 failed, 9 passed"))
    assert long_run.content == 'Ran `pytest`: output "3 failed, 9 passed"'
    binary = from_tool_use("Bash", {"command": "cat logo.png"}, bash_response("\x89PNG\r\n\x1a\n\x00\x00\x00IHDR"))
    assert binary.content == "Ran `cat logo.png`: binary output (15 chars)"
    assert "\x00" not in binary.content
    ansi = from_tool_use("Bash", {"command": "ls --color"}, bash_response("\x1b[01;34msrc\x1b[0m\n"))
    assert ansi.content == 'Ran `ls --color`: output "src"'


# -- edits -----------------------------------------------------------------------


def test_edit():
    got = from_tool_use(
        "Edit", {"file_path": "/home/dev/proj/src/app.py", "old_string": "def main():\n    pass",
                 "new_string": "def main() -> int:\n    return run()", "replace_all": False},
        {"filePath": "/home/dev/proj/src/app.py", "oldString": "def main():\n    pass",
         "newString": "def main() -> int:\n    return run()", "originalFile": "...", "structuredPatch": [],
         "userModified": False, "replaceAll": False}, cwd=CWD)
    assert got == Captured("action", "Edit", "Edited src/app.py: `def main():` -> `def main() -> int:`",
                           ["src/app.py"])
    all_of = from_tool_use("Edit", {"file_path": "/elsewhere/x.py", "old_string": "foo", "new_string": "bar",
                                    "replace_all": True}, {}, cwd=CWD)
    assert all_of.content == "Edited /elsewhere/x.py: `foo` -> `bar` (all occurrences)"
    assert all_of.files == ["/elsewhere/x.py"]


def test_multiedit_write_and_notebook():
    multi = from_tool_use("MultiEdit", {"file_path": CWD + "/a.py", "edits": [
        {"old_string": "x = 1", "new_string": "x = 2"}, {"old_string": "y", "new_string": "z"}]}, {}, cwd=CWD)
    assert multi.content == "Edited a.py (2 changes): `x = 1` -> `x = 2`"
    created = from_tool_use("Write", {"file_path": CWD + "/docs/guide.md", "content": "# Guide\n\nHello\n"},
                            {"type": "create", "filePath": CWD + "/docs/guide.md", "content": "..."}, cwd=CWD)
    assert created == Captured("action", "Write", "Created docs/guide.md (3 lines): # Guide", ["docs/guide.md"])
    updated = from_tool_use("Write", {"file_path": "rel.txt", "content": "one line"}, {"type": "update"})
    assert updated.content == "Wrote rel.txt (1 line): one line"
    notebook = from_tool_use("NotebookEdit", {"notebook_path": CWD + "/n.ipynb", "new_source": "import pandas",
                                              "edit_mode": "insert"}, {}, cwd=CWD)
    assert notebook.content == "Edited notebook n.ipynb (insert cell): import pandas"


def test_edit_without_a_path_is_not_stored_and_a_failed_edit_says_so():
    assert from_tool_use("Edit", {"old_string": "a"}, {}) is None
    failed = from_tool_use("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"},
                           "<tool_use_error>String to replace not found in file.</tool_use_error>")
    assert failed.content == 'Edited a.py: `a` -> `b` - failed, output "String to replace not found in file."'


# -- read-only, web, agents, todo ---------------------------------------------------


def test_read_only_tools_are_skipped_unless_asked():
    read = ("Read", {"file_path": CWD + "/src/a.py", "offset": 10, "limit": 20},
            {"type": "text", "file": {"filePath": CWD + "/src/a.py", "content": "...", "numLines": 20}})
    grep = ("Grep", {"pattern": "def main", "path": "src", "output_mode": "files_with_matches"},
            {"mode": "files_with_matches", "numFiles": 3, "filenames": ["a", "b", "c"]})
    glob = ("Glob", {"pattern": "**/*.md"}, {"filenames": ["a.md"], "numFiles": 1, "truncated": False})
    for name, tool_input, response in (read, grep, glob):
        assert from_tool_use(name, tool_input, response, cwd=CWD) is None
    assert from_tool_use(*read, cwd=CWD, capture_read_only=True) == Captured(
        "action", "Read", "Read src/a.py (lines 10-29)", ["src/a.py"])
    assert from_tool_use(*grep, cwd=CWD, capture_read_only=True).content == \
        "Searched for `def main` in src: 3 files"
    assert from_tool_use(*glob, cwd=CWD, capture_read_only=True).content == "Listed `**/*.md`: 1 file"


def test_web_fetch_and_search():
    fetch = from_tool_use("WebFetch", {"url": "https://sqlite.org/wal.html", "prompt": "How to enable WAL"},
                          {"bytes": 51234, "code": 200, "codeText": "OK", "durationMs": 812,
                           "result": "Run PRAGMA journal_mode=WAL once. Readers then never block.",
                           "url": "https://sqlite.org/wal.html"})
    assert fetch.content == ("Fetched https://sqlite.org/wal.html (How to enable WAL): HTTP 200, "
                             'output "Run PRAGMA journal_mode=WAL once. Readers then never block."')
    search = from_tool_use("WebSearch", {"query": "sqlite fts5 bm25"},
                           {"query": "sqlite fts5 bm25", "durationSeconds": 1.2, "results": [
                               {"tool_use_id": "srvtoolu_1", "content": [
                                   {"title": "FTS5 Extension", "url": "https://sqlite.org/fts5.html"},
                                   {"title": "BM25 ranking", "url": "https://x.org"}]},
                               "Some summary text"]})
    assert search.content == 'Searched the web for `sqlite fts5 bm25`: output "FTS5 Extension; BM25 ranking"'


def test_agent_task_and_todo():
    response = {"status": "completed", "prompt": "Find the flaky tests", "agentId": "a1",
                "agentType": "general-purpose",
                "content": [{"type": "text", "text": "Found two flaky tests in test_gateway.py. Both race on "
                                                    "startup. Details follow. " + "x " * 500}],
                "totalDurationMs": 9000, "totalTokens": 1200, "totalToolUseCount": 4}
    for name in ("Task", "Agent"):
        got = from_tool_use(name, {"description": "Find flaky tests", "prompt": "Look for...",
                                   "subagent_type": "Explore"}, response)
        assert got.content == ('Delegated to a Explore agent: Find flaky tests -> output "Found two flaky tests in '
                               'test_gateway.py. Both race on startup. Details follow."')
    assert from_tool_use("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]},
                         {"oldTodos": [], "newTodos": []}) is None


# -- MCP -------------------------------------------------------------------------------


def test_mcp_tool_name_args_and_outcome():
    got = from_tool_use("mcp__github__search_issues",
                        {"q": "memory leak in gateway", "repo": "acme/toolscript", "per_page": 5,
                         "labels": ["bug", "p1", "triage", "x"], "filter": {"state": "open"}},
                        [{"type": "text", "text": "12 issues found\nfirst: #88 leak"}])
    assert got == Captured("action", "mcp__github__search_issues",
                           'Called github.search_issues(q="memory leak in gateway", repo=acme/toolscript, '
                           'per_page=5, labels=[bug, p1, triage, …], filter={state: open}) -> output "12 issues found"', [])
    error = from_tool_use("mcp__github__get_issue", {"number": 1},
                          {"isError": True, "content": [{"type": "text", "text": "rate limit exceeded"}]})
    assert error.content == 'Called github.get_issue(number=1) -> error, output "rate limit exceeded"'
    plugin = from_tool_use("mcp__plugin_toolscript_toolscript__search", {"query": "x"}, "1 tool")
    assert plugin.content == 'Called plugin_toolscript_toolscript.search(query=x) -> output "1 tool"'
    image = from_tool_use("mcp__shots__take", {}, [{"type": "image", "data": "AAAA" * 10000}])
    assert image.content == 'Called shots.take() -> output "[image]"'


def test_unknown_tool_falls_back_to_name_and_arguments():
    got = from_tool_use("SlashCommand", {"command": "/review"}, {"ok": True})
    assert got.content == 'Called SlashCommand(command=/review) -> output "ok=true"'


# -- odd payloads ------------------------------------------------------------------------

ODD = [None, 0, 1.5, True, "", "x", [], [None], {}, {"a": None}, [[[[]]]], {"command": 5},
       {"file_path": ["a"]}, {"command": "\udcff\x00 ls"}, float("nan"), 10 ** 400]


def _deep(n):
    value = {}
    for _ in range(n):
        value = {"content": [value]}
    return value


@pytest.mark.parametrize("name", ["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "Read", "Grep", "Glob",
                                  "WebFetch", "WebSearch", "Task", "Agent", "TodoWrite", "mcp__a__b", "mcp__",
                                  "Other", "", None, 7, ["Bash"], "\udcff"])
def test_odd_payloads_never_raise(name):
    rng = random.Random(repr(name).encode('ascii', 'backslashreplace'))
    payloads = ODD + [_deep(5000), "\udcff" * 10, "a\x00b" * 100000]
    for _ in range(120):
        tool_input, response = rng.choice(payloads), rng.choice(payloads)
        got = from_tool_use(name, tool_input, response, cwd=rng.choice(["", CWD, None, 3]),
                            capture_read_only=rng.choice([True, False]))
        if got is not None:
            assert got.kind == "action" and got.content and len(got.content) <= MAX_ACTION
            assert "\x00" not in got.content and "\n" not in got.content
            got.content.encode("utf-8")  # no lone surrogates
            assert all(isinstance(f, str) for f in got.files)


# -- Stop -----------------------------------------------------------------------------------


def test_response_string_and_blocks():
    assert from_response("I renamed `parse` to `parse_args`.\n\n\n\nTests pass.  \n") == Captured(
        "response", "", "I renamed `parse` to `parse_args`.\n\nTests pass.", [])
    blocks = [{"type": "text", "text": "First part."}, {"type": "tool_use", "id": "x"},
              {"type": "text", "text": "Second part."}]
    assert from_response(blocks).content == "First part.\n[tool_use]\nSecond part."
    for empty in (None, "", "   \n", [], {}, 5, [{"type": "text", "text": ""}]):
        assert from_response(empty) is None


def test_response_is_cut_at_a_sentence_boundary():
    text = " ".join("Sentence number %d says something useful." % i for i in range(200))
    got = from_response(text)
    assert len(got.content) <= MAX_RESPONSE
    assert got.content.endswith("useful.")
    assert len(got.content) > MAX_RESPONSE - 60
    one_run = from_response("word " * 1000)
    assert len(one_run.content) <= MAX_RESPONSE and one_run.content.endswith("…")
    assert from_response("\udcff" + "ok. " * 10).content.encode("utf-8")


# -- SessionEnd ---------------------------------------------------------------------------------


def _session():
    m = []

    def add(kind, tool, content, files=()):
        m.append(Memory(len(m) + 1, "s1", CWD, kind, tool, list(files), content, 1000.0 + len(m)))

    for i in range(4):
        add("action", "Edit", "Edited src/parser.py: change %d" % i, ["src/parser.py"])
    add("action", "Write", "Created tests/test_parser.py (40 lines)", ["tests/test_parser.py"])
    add("action", "Bash", "Ran `pytest -q tests/test_parser.py` (Run tests): 1 failed")
    add("action", "Bash", "Ran `pytest -q tests/test_parser.py` (Run tests): 6 passed")
    add("action", "Bash", "Ran `git diff`: 2 files changed")
    add("action", "mcp__github__search_issues", "Called github.search_issues(q=parser) -> 2 issues")
    add("action", "WebFetch", "Fetched https://docs.python.org (argparse)")
    add("response", "", "The parser now accepts empty input. I added six tests. All pass. Next: docs.")
    return m


def test_session_summary_says_what_was_done():
    got = session_summary(list(reversed(_session())))  # order of the input does not matter
    assert got == Captured(
        "summary", "",
        "Session: 10 actions: edited 2 files (src/parser.py x4, tests/test_parser.py); ran 3 commands "
        "(`pytest -q tests/test_parser.py`, `git diff`); used github.search_issues, WebFetch. "
        "Last answer: The parser now accepts empty input. I added six tests. All pass. Next: docs.",
        ["src/parser.py", "tests/test_parser.py"])


def test_session_summary_empty_and_bounded():
    assert session_summary([]) is None
    assert session_summary([Memory(1, "s", CWD, "summary", "", [], "old summary", 1.0)]) is None
    many = [Memory(i, "s", CWD, "action", "Edit", ["src/very/long/path/number_%d/module.py" % i], "Edited x", i)
            for i in range(500)]
    many.append(Memory(999, "s", CWD, "response", "", [], "Long answer. " * 500, 1e6))
    got = session_summary(many)
    assert len(got.content) <= MAX_SUMMARY
    assert got.content.startswith("Session: 500 actions: edited 500 files (")
    assert len(got.files) == 10
    notes_only = session_summary([Memory(1, "s", CWD, "note", "", [], "Remember: deploy on Fridays is banned", 1)])
    assert notes_only.content == "Session: 0 actions, 1 note. Last note: Remember: deploy on Fridays is banned"


def test_session_summary_odd_memories_do_not_raise():
    odd = [Memory(1, "s", CWD, "action", None, None, None, None),
           Memory(2, "s", CWD, "action", "Bash", [], "\udcff no backticks", "x")]
    got = session_summary(odd)
    assert got is None or len(got.content) <= MAX_SUMMARY


def test_limits():
    assert MAX_CONTENT >= max(MAX_ACTION, MAX_RESPONSE, MAX_SUMMARY)


def test_any_session_gives_a_bounded_summary():
    rng = random.Random(3)
    tools = ["Edit", "Write", "Bash", "mcp__gh__search", "WebFetch", "", "Task"]
    texts = ["", "Ran `x`", "Ran `%s`: ok" % ("y" * 300), "a. b. c." * 200, "\udcff\x00", "Edited a.py"]
    for _ in range(200):
        memories = [Memory(i, "s", CWD, rng.choice(["action", "response", "note", "summary"]), rng.choice(tools),
                           ["f%d.py" % rng.randint(0, 30) for _ in range(rng.randint(0, 3))], rng.choice(texts),
                           rng.uniform(0, 1e9)) for i in range(rng.randint(0, 60))]
        got = session_summary(memories)
        if got is None:
            assert all(m.kind == "summary" for m in memories)
            continue
        assert got.kind == "summary" and 0 < len(got.content) <= MAX_SUMMARY
        assert "\x00" not in got.content
        got.content.encode("utf-8")
        assert got == session_summary(list(reversed(memories)))  # input order does not matter
