"""Claude Code's auto memory beside toolscript's: finding its folder, importing it, and not injecting what it loaded.

Claude Code keeps a project's memory in ``<config dir>/projects/<key>/memory/``:
``MEMORY.md`` (its first 200 lines go into every session at its start) and
topic files.  Importing mirrors those files into the project's memories, one
per bullet or paragraph with its file and line; the hooks leave out what the
index's loaded head already told the model.
"""

import subprocess

import pytest

from conftest import git_project
from toolscript.memory import automemory, context
from toolscript.memory.store import open_store


@pytest.fixture
def world(scratch_dirs):
    tmp_path = scratch_dirs
    home = tmp_path / "home"
    project = git_project(tmp_path / "app")

    class World:
        root = tmp_path
        folder = home / ".claude" / "projects" / automemory.project_key(str(project)) / "memory"

        def __init__(self):
            self.project = project
            self.folder.mkdir(parents=True)

        def write(self, name, text):
            (self.folder / name).write_text(text, encoding="utf-8")

        def store(self):
            return open_store(str(tmp_path / "data" / "memory.db"))

    return World()


INDEX = """# Project memory

- Use pnpm, not npm: the lockfile is pnpm's
- [Debugging notes](debugging.md): how the flaky login test was tamed
"""
TOPIC = """---
name: debugging
description: the flaky login test
type: project
---
# Flaky login test

- The login test is flaky under parallel runs: rerun it with -p no:randomly
- Its fixture server needs port 8765 free

A paragraph about the session cookie,
which expires after 15 minutes in tests.
"""


# -- where Claude Code keeps it --------------------------------------------------------------------


def test_the_folder_is_under_claude_codes_projects_by_the_git_root(world, tmp_path):
    (world.project / "src").mkdir()
    expected = str(tmp_path / "home" / ".claude" / "projects" / str(world.project).replace("/", "-").replace("_", "-")
                   / "memory")
    assert automemory.folder(str(world.project / "src")) == expected
    assert automemory.project_key("/home/me/my_app.v2") == "-home-me-my-app-v2"


def test_the_folder_follows_claude_config_dir_and_the_remote_memory_dir(world, tmp_path):
    key = automemory.project_key(str(world.project))
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert automemory.folder(str(world.project), env) == str(tmp_path / "cfg" / "projects" / key / "memory")
    env["CLAUDE_CODE_REMOTE_MEMORY_DIR"] = str(tmp_path / "remote")
    assert automemory.folder(str(world.project), env) == str(tmp_path / "remote" / "projects" / key / "memory")


def test_auto_memory_directory_from_the_users_settings_but_not_the_checked_in_ones(world, tmp_path):
    (world.project / ".claude").mkdir()
    (world.project / ".claude" / "settings.json").write_text('{"autoMemoryDirectory": "/somewhere/else"}')
    assert automemory.folder(str(world.project)) == str(world.folder)
    (tmp_path / "home" / ".claude" / "settings.json").write_text('{"autoMemoryDirectory": "~/notes/memory"}')
    assert automemory.folder(str(world.project)) == str(tmp_path / "home" / "notes" / "memory")


def test_a_worktree_shares_the_main_checkouts_folder(world, tmp_path):
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "-C", str(main), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty",
                    "-m", "start"], check=True)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "feature")], check=True)
    assert automemory.canonical_root(str(tmp_path / "feature")) == str(main)
    assert automemory.folder(str(tmp_path / "feature")) == automemory.folder(str(main))


def test_a_long_project_key_is_cut_and_ends_with_claude_codes_hash_of_the_path():
    root = "/" + "/".join(["directory-name"] * 20)
    # What Claude Code 2.1.337 computes: Math.abs(h).toString(36), h = (h << 5) - h + charCodeAt(i) | 0.
    assert automemory.project_key(root) == ("-directory-name" * 20)[:200] + "-i7wj28"
    assert automemory._base36(abs(automemory._string_hash("/home/\u00e9/\u65e5\u672c/x"))) == "s75hlj"
    # JavaScript's replace works on UTF-16 code units: an emoji is two of them, so two dashes.
    assert automemory.project_key("/a/\U0001F600\u00e9/b") == "-a-----b"


# -- what the files hold ---------------------------------------------------------------------------


def test_entries_are_bullets_and_paragraphs_under_their_heading_with_their_line():
    found = automemory.entries(TOPIC)
    assert [e.line for e in found] == [8, 9, 11]
    assert found[0].text == "Flaky login test: The login test is flaky under parallel runs: rerun it with -p no:randomly"
    assert found[2].text == ("Flaky login test: A paragraph about the session cookie,\n"
                             "which expires after 15 minutes in tests.")
    assert not any("type: project" in e.text for e in found)  # the front matter is not a memory


def test_the_loaded_head_is_200_lines_and_at_most_25000_characters_as_claude_code_cuts_it():
    many = "\n\n" + "".join("- fact %d\n" % i for i in range(300))
    assert automemory.loaded_head(many).splitlines()[-1] == "- fact 199"  # leading blank lines do not count
    wide = "".join("- %s\n" % ("\u00e9" * 300) for _ in range(100))  # 303 characters, 603 bytes a line
    head = automemory.loaded_head(wide)
    assert len(head.splitlines()) == 82 and head.splitlines()[-1] == "- " + "\u00e9" * 300  # characters, not bytes
    one_line = "- " + "x" * 30000
    assert automemory.loaded_head(one_line) == one_line[:25000]


# -- importing -------------------------------------------------------------------------------------


def test_import_stores_each_entry_with_its_file_and_line(world):
    world.write("MEMORY.md", INDEX)
    world.write("debugging.md", TOPIC)
    with world.store() as db:
        done = automemory.import_folder(db, str(world.folder), str(world.project))
        memories = db.recent(project=str(world.project), limit=50)
    assert (done.added, done.updated, done.unchanged, done.removed) == (5, 0, 0, 0)
    assert done.files == ["MEMORY.md", "debugging.md"]
    sources = sorted(automemory.source(m) for m in memories)
    assert sources == sorted([str(world.folder / "MEMORY.md") + ":3", str(world.folder / "MEMORY.md") + ":4",
                              str(world.folder / "debugging.md") + ":8", str(world.folder / "debugging.md") + ":9",
                              str(world.folder / "debugging.md") + ":11"])
    assert all(m.kind == "note" and m.session == "" for m in memories)


def test_importing_again_adds_nothing_updates_what_changed_and_forgets_what_went(world):
    world.write("MEMORY.md", INDEX)
    world.write("debugging.md", TOPIC)
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        again = automemory.import_folder(db, str(world.folder), str(world.project))
        assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 5, 0)
        assert len(db.recent(project=str(world.project), limit=50)) == 5

        world.write("MEMORY.md", "# Project memory\n\n- Use pnpm 9, not npm\n")  # one changed, one gone
        changed = automemory.import_folder(db, str(world.folder), str(world.project))
        texts = sorted(m.content for m in db.recent(project=str(world.project), limit=50))
    assert (changed.added, changed.updated, changed.unchanged, changed.removed) == (0, 1, 3, 1)
    assert "Project memory: Use pnpm 9, not npm" in texts
    assert not any("pnpm's" in t or "Debugging notes" in t for t in texts)
    assert len(texts) == 4


def test_an_entry_that_moved_keeps_its_memory_and_gets_its_new_line(world):
    world.write("MEMORY.md", INDEX)
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        before = {m.content: m.id for m in db.recent(project=str(world.project), limit=50)}
        world.write("MEMORY.md", "# Project memory\n\n- A new first fact\n" + INDEX.split("\n", 2)[2])
        automemory.import_folder(db, str(world.folder), str(world.project))
        after = {m.content: m for m in db.recent(project=str(world.project), limit=50)}
    pnpm = "Project memory: Use pnpm, not npm: the lockfile is pnpm's"
    assert after[pnpm].id == before[pnpm]
    assert automemory.source(after[pnpm]).endswith("MEMORY.md:4")


def test_a_secret_in_an_entry_is_redacted_and_still_not_imported_twice(world):
    world.write("MEMORY.md", "- The CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for pushes\n")
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        again = automemory.import_folder(db, str(world.folder), str(world.project))
        memories = db.recent(project=str(world.project), limit=50)
    assert len(memories) == 1 and "ghp_abcdef" not in memories[0].content
    assert again.unchanged == 1 and again.added == 0


# -- what the hooks leave out ----------------------------------------------------------------------


def test_inject_leaves_out_what_the_index_loaded_and_keeps_topic_files_and_the_rest(world):
    filler = "".join("- unrelated fact number %d\n" % i for i in range(200))
    world.write("MEMORY.md", "- Use pnpm for installing packages\n" + filler + "- pnpm store lives on the big disk\n")
    world.write("debugging.md", "- pnpm install fails offline: set the mirror\n")
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        text = context.inject(db, "pnpm install", project=str(world.project), session="s-new", budget_tokens=2000)
        brief = context.brief(db, "pnpm install", project=str(world.project), session="s-new")
    assert "Use pnpm for installing packages" not in text  # line 1 of the index: Claude Code loaded it
    assert "pnpm store lives on the big disk" in text  # line 202: past the loaded head
    assert "set the mirror" in text  # a topic file is read on demand only
    assert "Use pnpm for installing packages" not in brief


def test_an_index_entry_edited_since_the_import_is_injected_until_imported_again(world):
    world.write("MEMORY.md", "- Deploys go through the canary stage first\n")
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        world.write("MEMORY.md", "- Deploys go straight to production now\n")
        text = context.inject(db, "canary deploys", project=str(world.project), session="s-new")
    assert "canary stage first" in text  # the model was not told this at session start


def test_memories_of_other_sources_are_untouched_and_no_file_is_read(world, monkeypatch):
    with world.store() as db:
        db.add(session="s1", project=str(world.project), kind="note", content="pnpm is the package manager")
        related = [(m, 1.0) for m in db.recent(project=str(world.project), limit=5)]
    monkeypatch.setattr(automemory, "folder", lambda *a, **k: pytest.fail("no imported memory: nothing to read"))
    assert automemory.drop_loaded(related, str(world.project)) == related


def test_a_new_entry_where_another_moved_is_added_not_updated(world):
    world.write("MEMORY.md", INDEX)
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        world.write("MEMORY.md", "# Project memory\n\n- A new first fact\n" + INDEX.split("\n", 2)[2])
        done = automemory.import_folder(db, str(world.folder), str(world.project))
    assert (done.added, done.updated, done.unchanged, done.removed) == (1, 0, 2, 0)


def test_a_file_that_cannot_be_read_this_time_keeps_its_memories(world, monkeypatch):
    world.write("MEMORY.md", INDEX)
    world.write("debugging.md", TOPIC)
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        monkeypatch.setattr(automemory, "MAX_FILE_BYTES", 200)  # the topic file is now "too big" and skipped
        done = automemory.import_folder(db, str(world.folder), str(world.project))
        count = len(db.recent(project=str(world.project), limit=50))
    assert done.skipped and done.skipped[0].startswith("debugging.md (")
    assert done.removed == 0 and count == 5


def test_an_injected_entry_says_which_claude_code_file_and_line_it_came_from(world):
    world.write("debugging.md", "# Flaky\n\n- The login test is flaky under parallel runs\n")
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        text = context.inject(db, "flaky login test", project=str(world.project), session="s-new")
    assert 'Claude Code debugging.md line 3: "Flaky: The login test is flaky under parallel runs"' in text


def test_with_claude_codes_auto_memory_off_its_index_entries_are_injected(world, tmp_path, monkeypatch):
    """Claude Code loads no index then, so toolscript is the only one to bring the entries back."""
    world.write("MEMORY.md", "- Deploys go through the canary stage first\n")
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        assert "canary stage" not in context.inject(db, "canary deploys", project=str(world.project), session="s1")
        monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
        assert "canary stage" in context.inject(db, "canary deploys", project=str(world.project), session="s2")
        monkeypatch.delenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
        (tmp_path / "home" / ".claude" / "settings.json").write_text('{"autoMemoryEnabled": false}')
        assert "canary stage" in context.inject(db, "canary deploys", project=str(world.project), session="s3")
        (world.project / ".claude").mkdir()
        (world.project / ".claude" / "settings.local.json").write_text('{"autoMemoryEnabled": true}')
        assert "canary stage" not in context.inject(db, "canary deploys", project=str(world.project), session="s4")


def test_a_loaded_entry_with_a_secret_is_recognised_in_its_redacted_form(world):
    world.write("MEMORY.md", "- Canary deploys push with token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
    with world.store() as db:
        automemory.import_folder(db, str(world.folder), str(world.project))
        [memory] = db.recent(project=str(world.project), limit=5)
        assert "[redacted" in memory.content
        assert automemory.drop_loaded([(memory, 1.0)], str(world.project)) == []
