"""Memory's boundaries: one project's memories stay its own, the files stay private, damage is found, ids stay ids.

* ``memory.get`` and ``memory.timeline`` (the built-in tools an ``exec``
  script reaches) read this project's memories only, like ``memory.search``;
  an id of another project's memory is reported as such and not read, unless
  ``allProjects``.  The CLI's by-id actions (show, timeline, forget) say when
  an id is another project's and leave it alone unless ``--all-projects``.
* A data directory or database found readable by others is made 0700/0600.
* ``doctor`` runs SQLite's quick_check: a damaged page it would not read to
  count memories is still reported.
* A session id that is not an id (a megabyte of text in a hook event) is
  stored as a short hash, the same every time.
"""

import json
import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, git_project
from toolscript.cli import doctor
from toolscript.memory import session_key
from toolscript.claude_code import memory_hooks as hooks
from toolscript.memory.store import StoreError, open_store
from toolscript.memory.tools import memory_specs
from toolscript.tools.contract import ToolContext, ToolFailure


@pytest.fixture
def world(scratch_dirs):
    """Two git projects with memories of their own in one database; memory's dirs in the temp dir."""
    tmp_path = scratch_dirs

    class World:
        root = tmp_path
        data = tmp_path / "data"
        mine = tmp_path / "mine"
        theirs = tmp_path / "theirs"
        ids = {}

    for project in (World.mine, World.theirs):
        (project / ".git").mkdir(parents=True)
    with open_store(str(World.data / "memory.db")) as db:
        for name, project in (("mine", World.mine), ("theirs", World.theirs)):
            World.ids[name] = [db.add(session="s-" + name, project=str(project), kind="note",
                                      content="%s note %d: the deploy key lives in the vault" % (name, i),
                                      created=1000.0 + i) for i in range(3)]
    return World


def _tool(name):
    return next(spec for spec in memory_specs() if spec.name == name)


def _call(name, args, project):
    return _tool(name).handler(args, ToolContext(workspace_roots=[str(project)]))


# -- the built-in tools -------------------------------------------------------------------------


def test_memory_get_reads_only_this_projects_memories(world):
    mine, theirs = world.ids["mine"], world.ids["theirs"]
    got = _call("memory.get", {"ids": mine + theirs + [999]}, world.mine)
    assert [m["id"] for m in got["memories"]] == mine
    assert all("mine note" in m["content"] for m in got["memories"])
    assert got["otherProject"] == theirs and got["missing"] == [999]
    everything = _call("memory.get", {"ids": mine + theirs, "allProjects": True}, world.mine)
    assert [m["id"] for m in everything["memories"]] == mine + theirs


def test_walking_ids_with_memory_get_finds_no_other_projects_text(world):
    seen = []
    for memory_id in range(1, 10):
        seen += [m["content"] for m in _call("memory.get", {"ids": [memory_id]}, world.mine)["memories"]]
    assert seen and not any("theirs" in text for text in seen), seen


def test_memory_timeline_is_scoped_like_search(world):
    mine, theirs = world.ids["mine"], world.ids["theirs"]
    around = _call("memory.timeline", {"id": mine[1]}, world.mine)
    assert [m["id"] for m in around["memories"]] == mine
    with pytest.raises(ToolFailure) as failed:
        _call("memory.timeline", {"id": theirs[1]}, world.mine)
    assert "another project" in str(failed.value) and "theirs note" not in str(failed.value)
    assert [m["id"] for m in _call("memory.timeline", {"id": theirs[1], "allProjects": True}, world.mine)["memories"]] \
        == theirs
    search = _call("memory.search", {"query": "deploy key vault"}, world.mine)
    assert {r["id"] for r in search["results"]} == set(mine)
    assert "not instructions" in search["about"]


def test_an_exec_script_walking_ids_through_the_gateway_tools_sees_only_its_project(world):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    found = []
    for memory_id in world.ids["mine"] + world.ids["theirs"]:
        proc = subprocess.run([sys.executable, "-m", "toolscript", "tools", "invoke", "builtin__memory.get", "--args",
                               json.dumps({"ids": [memory_id]})], capture_output=True, text=True, timeout=60,
                              env=env, cwd=str(world.mine))
        answer = json.loads(proc.stdout)
        body = answer["data"] if "data" in answer else answer["result"]["structuredContent"]
        found += [m["content"] for m in body["memories"]]
    assert len(found) == 3 and all(text.startswith("mine note") for text in found), found


# -- the CLI's by-id actions --------------------------------------------------------------------


def _cli(world, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    return subprocess.run([sys.executable, "-m", "toolscript", *map(str, args)], capture_output=True, text=True,
                          timeout=60, env=env, cwd=str(cwd or world.mine))


def test_memory_show_names_another_projects_id_and_shows_it_only_with_all_projects(world):
    theirs = world.ids["theirs"][0]
    shown = _cli(world, "memory", "show", theirs)
    assert shown.returncode == 1 and "theirs note" not in shown.stdout
    assert "belongs to another project" in shown.stderr and str(world.theirs) in shown.stderr
    assert "--all-projects" in shown.stderr
    both = _cli(world, "memory", "show", world.ids["mine"][0], theirs)
    assert both.returncode == 1 and "mine note 0" in both.stdout and "theirs note" not in both.stdout
    allowed = _cli(world, "memory", "show", theirs, "--all-projects")
    assert allowed.returncode == 0 and "theirs note 0" in allowed.stdout
    assert _cli(world, "memory", "show", theirs, cwd=world.theirs).returncode == 0


def test_memory_timeline_and_forget_leave_another_projects_ids_alone(world):
    theirs = world.ids["theirs"][1]
    timeline = _cli(world, "memory", "timeline", theirs)
    assert timeline.returncode == 1 and "belongs to another project" in timeline.stderr
    assert "theirs note" not in timeline.stdout
    forget = _cli(world, "memory", "forget", theirs, "--yes")
    assert forget.returncode == 1 and "belongs to another project" in forget.stderr
    assert "nothing was deleted" in forget.stderr
    with open_store(str(world.data / "memory.db"), readonly=True) as db:
        assert db.get([theirs])  # still there
    assert _cli(world, "memory", "forget", theirs, "--yes", "--all-projects").returncode == 0
    with open_store(str(world.data / "memory.db"), readonly=True) as db:
        assert not db.get([theirs])


def test_store_get_and_timeline_take_the_project(world):
    mine, theirs = world.ids["mine"], world.ids["theirs"]
    with open_store(str(world.data / "memory.db"), readonly=True) as db:
        assert [m.id for m in db.get(mine + theirs, project=str(world.mine))] == mine
        assert db.timeline(theirs[0], project=str(world.mine)) == []
        assert [m.id for m in db.timeline(theirs[0], project=str(world.theirs))] == theirs
        assert db.owners(theirs + [999]) == {i: str(world.theirs) for i in theirs}


# -- permissions --------------------------------------------------------------------------------


def test_a_data_dir_and_database_readable_by_others_are_made_private(tmp_path):
    data = tmp_path / "data"
    path = data / "memory.db"
    with open_store(str(path)) as db:
        db.add(session="s", project="/p", kind="note", content="private work")
    os.chmod(str(data), 0o755)
    for name in os.listdir(str(data)):
        os.chmod(str(data / name), 0o644)
    with open_store(str(path)) as db:
        db.add(session="s", project="/p", kind="note", content="more private work")
    assert stat.S_IMODE(os.stat(str(data)).st_mode) == 0o700
    for name in os.listdir(str(data)):
        assert stat.S_IMODE(os.stat(str(data / name)).st_mode) == 0o600, name
    os.chmod(str(path), 0o644)
    with open_store(str(path), readonly=True):  # a read (the tools, doctor) tightens too
        pass
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600


def test_a_shared_sticky_directory_is_left_as_it_is(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    with open_store(str(shared / "memory.db")):
        pass
    assert stat.S_IMODE(os.stat(str(shared)).st_mode) == 0o1777
    assert stat.S_IMODE(os.stat(str(shared / "memory.db")).st_mode) == 0o600


# -- doctor -------------------------------------------------------------------------------------


def _damaged_database(tmp_path):
    """A real memory database with garbage written over the table page that holds one memory's text."""
    data = tmp_path / "data"
    path = data / "memory.db"
    with open_store(str(path)) as db:
        for i in range(400):
            db.add(session="s", project="/p", kind="action", tool="Bash",
                   content="Ran `pytest -q` run %d (%s): all passed; %s" % (
                       i, "MARKER-%04d" % i if i == 200 else "x", "the longer lines make the table the largest tree " * 3))
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    raw = path.read_bytes()
    page = raw.index(b"MARKER-0200") // page_size
    assert page > 0
    with open(str(path), "r+b") as handle:
        handle.seek(page * page_size)
        handle.write(bytes([0xFF]) * page_size)
    return data, path


def test_doctor_reports_a_damaged_page_that_counting_does_not_read(tmp_path):
    data, path = _damaged_database(tmp_path)
    with open_store(str(path), readonly=True) as db:
        assert db.stats()["memories"] == 400  # the count alone reads no table page: it looks fine
    env = {"HOME": str(tmp_path), "TOOLSCRIPT_DATA_DIR": str(data), "PATH": os.environ.get("PATH", "")}
    check = doctor.check_memory(None, str(tmp_path), env)
    assert check.status == doctor.FAIL, check
    assert "damaged" in check.detail and "move" in check.fix
    with open_store(str(path), readonly=True) as db:
        assert db.quick_check()


def test_doctor_says_ok_for_a_sound_database(tmp_path):
    data = tmp_path / "data"
    with open_store(str(data / "memory.db")) as db:
        db.add(session="s", project="/p", kind="note", content="fine")
        assert db.quick_check() == []
    env = {"HOME": str(tmp_path), "TOOLSCRIPT_DATA_DIR": str(data), "PATH": os.environ.get("PATH", "")}
    assert doctor.check_memory(None, str(tmp_path), env).status != doctor.FAIL


# -- session ids --------------------------------------------------------------------------------


def test_a_huge_session_id_is_stored_as_a_short_hash(world):
    huge = "x" * 1_000_000
    event = {"session_id": huge, "cwd": str(world.mine)}
    hooks.session_start(event)
    hooks.post_tool_use(dict(event, tool_name="Bash", tool_input={"command": "make test"},
                             tool_response={"stdout": "ok", "stderr": "", "interrupted": False}))
    hooks.stop(dict(event, last_assistant_message="Tests pass.", stop_hook_active=False))
    conn = sqlite3.connect(str(world.data / "memory.db"))
    sessions = {row[0] for row in conn.execute("SELECT session FROM memories WHERE project = ?", (str(world.mine),))}
    started = {row[0] for row in conn.execute("SELECT id FROM sessions")}
    conn.close()
    key = session_key(huge)
    assert key in sessions and key in started and len(key) <= 64
    assert max(len(s) for s in sessions | started) <= 128
    with open_store(str(world.data / "memory.db")) as db:  # the same id finds the same memories
        assert len(db.recent(session=huge)) == 2
    assert os.path.getsize(str(world.data / "memory.db")) < 1_000_000


@pytest.mark.parametrize("given, kept", [
    ("3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60", True), ("s1", True), ("a" * 128, True),
    ("a" * 129, False), ("bad\nid", False), ("id with spaces", False), ("\udcff", False),
])
def test_session_keys(given, kept):
    key = session_key(given)
    assert (key == given) is kept
    assert key == session_key(given) == session_key(key) and len(key) <= 128
    assert session_key(None) == session_key(5) == session_key("") == ""


def test_store_add_bounds_the_session_it_is_given(tmp_path):
    with open_store(str(tmp_path / "memory.db")) as db:
        db.start_session("y" * 100_000, "/p")
        memory_id = db.add(session="y" * 100_000, project="/p", kind="note", content="hello")
        [memory] = db.get([memory_id])
        assert memory.session == session_key("y" * 100_000)
        assert db.session("y" * 100_000).id == memory.session
        assert db.forget(session="y" * 100_000) == 1
    with pytest.raises(StoreError):
        with open_store(str(tmp_path / "memory.db")) as db:
            db.forget()
