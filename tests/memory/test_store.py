"""The memory store (toolscript/memory/store.py): every method, both search modes, failures, concurrency.

Real SQLite files in tmp dirs; concurrency with real processes; read-only cases
run as ``nobody`` when the suite runs as root (root writes through mode bits).
"""

import io
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

from conftest import REPO_ROOT, as_unprivileged_user
from toolscript.memory import Memory, Session, project_root
from toolscript.memory import store as store_mod
from toolscript.memory.store import MAX_CONTENT, SCHEMA_VERSION, StoreError, data_dir, fts_phrase, open_store, query_terms


CONTENTS = [
    ("Edit", ["src/auth/login.py"], "Edit src/auth/login.py: fix the token refresh bug in the login handler"),
    ("Bash", [], "Bash: pytest tests/test_auth.py -> 12 passed"),
    ("Bash", [], "Bash: npm run build -> failed: TypeError in parser.ts line 40"),
    ("Write", ["docs/deploy.md"], "Write docs/deploy.md: staging deploy steps with docker compose"),
    ("Edit", ["src/parser.ts"], "Edit src/parser.ts: handle empty input in the tokenizer"),
    ("", [], "Answered: the cache invalidation happens in worker.py on every config reload"),
]


@pytest.fixture(params=["fts5", "like"])
def mode(request):
    return request.param


def _open(path, mode="fts5", **kwargs):
    return open_store(str(path), fts=(mode == "fts5"), **kwargs)


def _fill(store, project="/p", session="s1", start=1000.0):
    ids = []
    for i, (tool, files, content) in enumerate(CONTENTS):
        kind = "response" if not tool else "action"
        ids.append(store.add(session=session, project=project, kind=kind, tool=tool, files=files, content=content, created=start + i))
    return ids


def _raw_bytes(path):
    data = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(str(path) + suffix):
            with open(str(path) + suffix, "rb") as handle:
                data += handle.read()
    return data


# --- creation -----------------------------------------------------------------


def test_created_on_first_use_private_wal_versioned(tmp_path):
    path = tmp_path / "data" / "memory.db"
    with open_store(str(path)) as store:
        assert store.path == str(path)
        stats = store.stats()
    assert stat.S_IMODE(os.stat(tmp_path / "data").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    conn = sqlite3.connect(str(path))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == stats["schema"]
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert {"sessions", "memories", "memories_fts", "memories_project_created", "memories_session_created"} <= names
    assert stats["memories"] == 0 and stats["sessions"] == {"active": 0, "completed": 0} and stats["fts"] == "fts5"


def test_data_dir_default_and_override(tmp_path):
    assert data_dir({"TOOLSCRIPT_DATA_DIR": str(tmp_path / "d")}) == str(tmp_path / "d")
    assert data_dir({"HOME": "/home/u"}) == "/home/u/.toolscript"
    env = {"TOOLSCRIPT_DATA_DIR": str(tmp_path / "d")}
    with open_store(env=env) as store:
        assert store.path == str(tmp_path / "d" / "memory.db")
    assert os.path.exists(tmp_path / "d" / "memory.db")


def test_reopen_keeps_data_and_busy_timeout_is_set(tmp_path):
    with open_store(str(tmp_path / "m.db"), busy_timeout_ms=1234) as store:
        store.add(session="s", project="/p", kind="note", content="remember the milk")
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with open_store(str(tmp_path / "m.db")) as store:
        assert [m.content for m in store.recent()] == ["remember the milk"]


def test_readonly_open(tmp_path):
    with pytest.raises(StoreError, match="no memory database at .* yet"):
        open_store(str(tmp_path / "none.db"), readonly=True)
    assert not os.path.exists(tmp_path / "none.db")
    with open_store(str(tmp_path / "m.db")) as store:
        _fill(store)
    with open_store(str(tmp_path / "m.db"), readonly=True) as store:
        assert store.fts and store.search("parser")
        with pytest.raises(StoreError, match="read-only"):
            store.add(session="s", project="/p", kind="note", content="x")
    with open_store(str(tmp_path / "m.db")) as store:
        assert store.stats()["memories"] == len(CONTENTS)


def test_newer_schema_is_refused(tmp_path):
    path = str(tmp_path / "m.db")
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer than this toolscript"):
        open_store(path)
    with pytest.raises(StoreError, match="newer than this toolscript"):
        open_store(path, readonly=True)


# --- sessions -----------------------------------------------------------------


def test_sessions_idempotent_start_and_end(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        assert store.start_session("s1", "/p", now=10.0) is True
        assert store.start_session("s1", "/p", now=20.0) is False
        assert store.session("s1") == Session("s1", "/p", 10.0, None, "active")
        assert store.end_session("s1", now=30.0) is True
        assert store.end_session("s1", now=40.0) is False
        assert store.session("s1") == Session("s1", "/p", 10.0, 30.0, "completed")
        assert store.end_session("never-started") is False
        assert store.session("never-started") is None
        # a resumed session (same id) is active again
        assert store.start_session("s1", "/p", now=50.0) is False
        assert store.session("s1").status == "active" and store.session("s1").ended is None
        store.start_session("s2", "/q", now=60.0)
        store.start_session("s3", "/p", now=70.0)
        store.end_session("s3", now=80.0)
        assert [store.session(s).status for s in ("s1", "s2", "s3")] == ["active", "active", "completed"]
        assert store.session("s2").project == "/q"
        assert store.stats()["sessions"] == {"active": 2, "completed": 1}


def test_session_lifecycle_tags_its_captures(tmp_path):
    """Session start, three captures, session end -> all three tagged, session completed."""
    with open_store(str(tmp_path / "m.db")) as store:
        store.start_session("abc", "/p")
        for i in range(3):
            store.add(session="abc", project="/p", kind="note", content=f"memory {i}")
        store.end_session("abc")
        assert len(store.recent(session="abc")) == 3
        assert store.session("abc").status == "completed"


# --- add ----------------------------------------------------------------------


def test_add_redacts_strips_private_caps_and_keeps_fields(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        mid = store.add(
            session="s",
            project="/p",
            kind="action",
            tool="Bash",
            files=["a.py", "b/c.py"],
            content="ran deploy with API_KEY=abc123secret <private>my home address</private> ok",
            created=123.5,
        )
        (memory,) = store.get([mid])
        assert memory == Memory(mid, "s", "/p", "action", "Bash", ["a.py", "b/c.py"], "ran deploy with API_KEY=[redacted]  ok", 123.5)
        assert store.add(session="s", project="/p", kind="note", content="<private>all of it</private>") is None
        assert store.add(session="s", project="/p", kind="note", content="   ") is None
        long_id = store.add(session="s", project="/p", kind="note", content="x" * (MAX_CONTENT * 3))
        (long_memory,) = store.get([long_id])
        assert len(long_memory.content) == MAX_CONTENT and long_memory.content.endswith("\u2026")
        now_id = store.add(session="", project="/p", kind="note", content="no time given")
        assert abs(store.get([now_id])[0].created - time.time()) < 60


def test_secrets_and_private_never_reach_the_file(tmp_path):
    path = tmp_path / "m.db"
    secrets = [
        "sk-ant-api03-" + "Q" * 40,
        "ghp_" + "Z" * 36,
        "AKIAIOSFODNN7EXAMPLE",
        "hunter2-the-password",
        "PRIVATE-WORDS-HERE",
        "MIIEpAIBAAKCAQEA7bq9Xy",
    ]
    with open_store(str(path)) as store:
        store.add(
            session="s",
            project="/p",
            kind="action",
            tool="Bash",
            files=["https://u:hunter2-the-password@example.com/x"],
            content=(
                f"export ANTHROPIC_API_KEY={secrets[0]}\ngit push with {secrets[1]} and {secrets[2]}\n"
                f"password: {secrets[3]}\n<private>{secrets[4]}</private>\n"
                f"-----BEGIN RSA PRIVATE KEY-----\n{secrets[5]}\n-----END RSA PRIVATE KEY-----"
            ),
        )
        buffer = io.StringIO(
            json.dumps({"project": "/p", "content": f"imported {secrets[1]} <PRIVATE>{secrets[4]}</private>", "created": 5.0}) + "\n"
        )
        assert store.import_(buffer) == 1
        raw_while_open = _raw_bytes(path)
    raw = _raw_bytes(path) + raw_while_open
    assert b"[redacted]" in raw
    for secret in secrets:
        assert secret.encode() not in raw, secret


# --- search -------------------------------------------------------------------


def test_search_finds_and_ranks_in_both_modes(tmp_path, mode):
    with _open(tmp_path / "m.db", mode) as store:
        assert store.stats()["fts"] == mode
        ids = _fill(store)
        _fill(store, project="/other", session="s9")
        results = store.search("login token bug", project="/p")
        assert results and results[0][0].id == ids[0]
        assert all(0.0 <= score <= 1.0 for _, score in results)
        assert [s for _, s in results] == sorted((s for _, s in results), reverse=True)
        assert results[0][1] > 0.7  # every word matched
        assert all(m.project == "/p" for m, _ in results)
        # "parsers" finds parser.ts in content and in files (a stem with FTS5, a substring with LIKE)
        assert {m.id for m, _ in store.search("parsers" if mode == "fts5" else "parser", project="/p")} == {ids[2], ids[4]}
        assert {m.id for m, _ in store.search("tests", project="/p")} >= {ids[1]}
        # file paths are searchable
        assert ids[3] in [m.id for m, _ in store.search("deploy.md", project="/p")]
        # tool names are searchable
        assert {m.tool for m, _ in store.search("bash", project="/p")} == {"Bash"}
        # filters
        assert [m.kind for m, _ in store.search("cache config", project="/p", kinds=["response"])] == ["response"]
        assert store.search("cache config", project="/p", kinds=["action"]) == []
        assert all(m.session == "s9" for m, _ in store.search("parser", session="s9"))
        assert len(store.search("parser", limit=1)) == 1
        assert len(store.search("parser")) == 4  # both projects, content or files
        assert store.search("zebra unicorn") == []
        assert store.search("") == [] and store.search("the a of") == []


def test_a_filter_that_turns_most_matches_away_still_fills_the_limit(tmp_path, mode):
    """The best matches are read in growing chunks: 60 better ones of another session do not starve the result."""
    with _open(tmp_path / "m.db", mode) as store:
        mine = [store.add(session="mine", project="/p", kind="note", created=1000.0 + i, content="retry note %d" % i)
                for i in range(15)]
        for i in range(60):  # newer, and a closer match: ranked before every one of "mine"
            store.add(session="theirs", project="/p", kind="note", created=5000.0 + i, content="retry backoff note %d" % i)
        found = store.search("retry backoff note", project="/p", session="mine", limit=12)
        assert len(found) == 12 and {m.id for m, _ in found} <= set(mine)


def test_both_modes_agree_on_the_top_hit(tmp_path):
    queries = ["login token", "pytest passed", "docker staging deploy", "tokenizer empty input", "cache invalidation worker"]
    tops = {}
    for mode in ("fts5", "like"):
        with _open(tmp_path / f"{mode}.db", mode) as store:
            _fill(store)
            tops[mode] = [store.search(q)[0][0].content for q in queries]
    assert tops["fts5"] == tops["like"]


HOSTILE = [
    '"',
    '""',
    "'",
    "-",
    "--",
    "*",
    "NEAR",
    "NEAR(a b, 2)",
    "a AND",
    "OR OR OR",
    "NOT",
    "(((",
    ")",
    "a:b",
    "content:x",
    "^start",
    "x" * 5000,
    "% _ \\",
    "100%",
    "a_b",
    "\x00\x01",
    "émoji 🎉 日本語",
    "{col1 col2}: x",
    "'); DROP TABLE memories; --",
    " ".join(f"w{i}" for i in range(500)),
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_never_raise(tmp_path, query):
    for mode in ("fts5", "like"):
        with _open(tmp_path / f"{mode}.db", mode) as store:
            _fill(store)
            store.add(session="s", project="/p", kind="note", content="100% done with a_b and émoji 日本語")
            results = store.search(query)
            assert isinstance(results, list)
            assert store.stats()["memories"] == len(CONTENTS) + 1


def test_query_building():
    assert query_terms("Fix the LOGIN bug, please!") == ["fix", "login", "bug"]
    assert query_terms("the") == [] and query_terms("do it") == []
    assert query_terms("x") == ["x"] and query_terms("x marks") == ["marks"]
    assert query_terms("x_y-z") == ["x", "y", "z"]  # "a" is a stopword
    assert fts_phrase('say "hi"') == '"say ""hi"""'
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == 16


def test_like_fallback_forced_by_environment(tmp_path):
    env = {"TOOLSCRIPT_MEMORY_FTS": "0", "TOOLSCRIPT_DATA_DIR": str(tmp_path)}
    with open_store(env=env) as store:
        assert store.fts is False and store.stats()["fts"] == "like"
        _fill(store)
        assert store.search("parser")
    with open_store(env={"TOOLSCRIPT_DATA_DIR": str(tmp_path)}) as store:
        assert store.fts is True and store.search("parser")


def test_database_made_without_fts5_gets_an_index_later_and_back(tmp_path, monkeypatch):
    """A platform without FTS5 makes the db; one with FTS5 opens it later (and the reverse): nothing is lost."""
    path = str(tmp_path / "m.db")
    real_probe = store_mod._fts5_available
    monkeypatch.setattr(store_mod, "_fts5_available", lambda conn: False)
    with open_store(path) as store:
        assert store.fts is False
        ids = _fill(store)
        assert store.search("parser")
    monkeypatch.setattr(store_mod, "_fts5_available", real_probe)
    with open_store(path) as store:
        assert store.fts is True
        assert {m.id for m, _ in store.search("parser")} == {ids[2], ids[4]}
    # an FTS database opened where FTS5 is missing: writes still work (its triggers are dropped)
    monkeypatch.setattr(store_mod, "_fts5_available", lambda conn: False)
    with open_store(path) as store:
        assert store.fts is False
        late = store.add(session="s", project="/p", kind="note", content="written without fts5: zeppelin")
        assert [m.id for m, _ in store.search("zeppelin")] == [late]
    monkeypatch.setattr(store_mod, "_fts5_available", real_probe)
    with open_store(path) as store:
        assert store.fts is True
        assert [m.id for m, _ in store.search("zeppelin")] == [late]  # the index was rebuilt
        store.forget(ids=[late])
        assert store.search("zeppelin") == []


# --- recent, get, timeline ----------------------------------------------------


def test_recent_get_timeline(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        ids = _fill(store, session="s1", start=1000.0)
        other = _fill(store, session="s2", start=2000.0)
        elsewhere = _fill(store, project="/q", session="s3", start=3000.0)
        assert [m.id for m in store.recent(project="/p", limit=3)] == other[::-1][:3]
        assert [m.id for m in store.recent(project="/p", session="s1")] == ids[::-1]
        assert [m.id for m in store.recent(project="/p", exclude_session="s2")] == ids[::-1]
        assert store.recent(limit=1)[0].id == elsewhere[-1]
        assert [m.id for m in store.get([ids[2], 99999, ids[0]])] == [ids[2], ids[0]]
        assert store.get([]) == []
        around = store.timeline(other[0], before=2, after=2)
        assert [m.id for m in around] == [ids[-2], ids[-1], other[0], other[1], other[2]]
        assert [m.id for m in store.timeline(ids[0], before=5, after=1)] == [ids[0], ids[1]]
        assert all(m.project == "/q" for m in store.timeline(elsewhere[0]))
        assert store.timeline(99999) == []


# --- forget -------------------------------------------------------------------


def test_forget_by_id_session_project_with_counts(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        store.start_session("s1", "/p")
        store.start_session("s2", "/p")
        store.end_session("s2")
        ids = _fill(store, session="s1")
        _fill(store, session="s2")
        _fill(store, project="/q", session="s3")
        assert store.forget(ids=[ids[0], ids[1], 424242]) == 2
        assert store.get(ids[:2]) == []
        assert store.forget(session="s2") == len(CONTENTS)
        assert store.session("s2") is None  # a completed session's record goes with it
        assert store.forget(session="s1", project="/q") == 0  # both must match
        assert store.forget(project="/p") == len(CONTENTS) - 2
        assert store.session("s1") is not None  # still active: its end is still recorded
        assert store.stats()["memories"] == len(CONTENTS)
        with pytest.raises(StoreError, match="say what to forget"):
            store.forget()
        # forgotten ids are never reused
        new_id = store.add(session="", project="/p", kind="note", content="after forgetting")
        assert new_id > max(ids)


# --- export / import ----------------------------------------------------------


def test_export_import_round_trip_and_duplicates(tmp_path):
    with open_store(str(tmp_path / "a.db")) as source:
        _fill(source)
        _fill(source, project="/q", session="s2")
        everything, only_p = io.StringIO(), io.StringIO()
        assert source.export(everything) == 2 * len(CONTENTS)
        assert source.export(only_p, project="/p") == len(CONTENTS)
        original = source.recent(limit=100)
    lines = everything.getvalue().splitlines()
    assert all(set(json.loads(line)) == set(Memory._fields) for line in lines)
    with open_store(str(tmp_path / "b.db")) as target:
        assert target.import_(io.StringIO(everything.getvalue())) == 2 * len(CONTENTS)
        assert target.import_(io.StringIO(everything.getvalue())) == 0  # duplicates skipped
        assert target.import_(io.StringIO(only_p.getvalue())) == 0
        copied = target.recent(limit=100)
        assert [m[1:] for m in copied] == [m[1:] for m in original]  # all but the ids
        assert target.search("parser")
        # a bad line imports nothing
        bad = io.StringIO(json.dumps({"project": "/p", "content": "fresh one"}) + "\n{not json\n")
        with pytest.raises(StoreError, match="line 2 of the import is not JSON"):
            target.import_(bad)
        with pytest.raises(StoreError, match="line 1 of the import is not a memory"):
            target.import_(io.StringIO('["a list"]\n'))
        assert target.stats()["memories"] == 2 * len(CONTENTS)
        # minimal lines are accepted, blank lines skipped
        assert target.import_(io.StringIO('\n{"project": "/p", "content": "minimal"}\n\n')) == 1
        assert target.recent(limit=1)[0].kind == "note"


# --- failures -----------------------------------------------------------------


def test_corrupt_file_is_a_clear_error_and_left_alone(tmp_path):
    import random

    path = tmp_path / "m.db"
    junk = bytes(random.Random(3).getrandbits(8) for _ in range(8192))
    path.write_bytes(junk)
    for readonly in (False, True):
        with pytest.raises(StoreError) as info:
            open_store(str(path), readonly=readonly)
        message = str(info.value)
        assert "is not a toolscript memory database or is corrupt; move it away and a new one is created" in message
        assert "\n" not in message
    assert path.read_bytes() == junk
    os.rename(path, tmp_path / "moved.db")
    with open_store(str(path)) as store:
        assert store.add(session="", project="/p", kind="note", content="fresh start")


def test_locked_database_is_a_clear_error_and_nothing_is_lost(tmp_path):
    path = str(tmp_path / "m.db")
    with open_store(path) as store:
        _fill(store)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO meta(key, value) VALUES ('held', '1')")
    try:
        with open_store(path, busy_timeout_ms=200) as store:
            # readers are not blocked by the writer (WAL)
            assert len(store.recent()) == len(CONTENTS)
            started = time.monotonic()
            with pytest.raises(StoreError) as info:
                store.add(session="", project="/p", kind="note", content="while locked")
            assert time.monotonic() - started >= 0.15  # it waited for the busy timeout first
            assert "is locked by another process (waited 0.2 s); retry" in str(info.value)
            with pytest.raises(StoreError, match="locked"):
                store.forget(project="/p")
    finally:
        holder.execute("COMMIT")
        holder.close()
    with open_store(path) as store:
        assert store.stats()["memories"] == len(CONTENTS)
        assert store.add(session="", project="/p", kind="note", content="after the lock")
        assert store.stats()["memories"] == len(CONTENTS) + 1


def test_store_error_messages_for_disk_full_and_others():
    full = store_mod._store_error(sqlite3.OperationalError("database or disk is full"), "/x/m.db")
    assert str(full) == "the disk holding the memory database /x/m.db is full; free some space and retry"
    other = store_mod._store_error(sqlite3.OperationalError("something odd"), "/x/m.db")
    assert str(other).startswith("failed to use the memory database /x/m.db: something odd")
    assert isinstance(full, StoreError) and full.exit_code == 1


def test_closed_store_is_a_clear_error(tmp_path):
    store = open_store(str(tmp_path / "m.db"))
    store.close()
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.recent()




@pytest.fixture
def shared_dir():
    """A directory outside pytest's private tmp root, owned by whoever the unprivileged job runs as."""
    base = tempfile.mkdtemp(prefix="toolscript-memory-")
    os.chmod(base, 0o755)
    yield base
    for root, dirs, files in os.walk(base):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o700)
    shutil.rmtree(base)


def _chown_to_job_user(*paths):
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        for path in paths:
            for root, dirs, files in os.walk(path):
                for name in [root] + [os.path.join(root, f) for f in files]:
                    os.chown(name, nobody.pw_uid, nobody.pw_gid)
            os.chown(path, nobody.pw_uid, nobody.pw_gid)


def _try(fn):
    try:
        return ["ok", fn()]
    except StoreError as exc:
        return ["error", str(exc)]


def test_read_only_file_is_a_clear_error_and_reads_still_work(shared_dir):
    data = os.path.join(shared_dir, "data")
    path = os.path.join(data, "memory.db")
    with open_store(path) as store:
        _fill(store)
    _chown_to_job_user(data)
    os.chmod(path, 0o400)

    def job():
        with open_store(path) as store:
            found = _try(lambda: len(store.search("parser")))
            added = _try(lambda: store.add(session="", project="/p", kind="note", content="cannot write"))
        readonly = _try(lambda: len(open_store(path, readonly=True).recent()))
        return [found, added, readonly]

    found, added, readonly = as_unprivileged_user(job)
    assert added[0] == "error" and "is read-only; make the file and its directory writable" in added[1], added
    assert found == ["ok", 2] and readonly == ["ok", len(CONTENTS)]
    os.chmod(path, 0o600)
    with open_store(path) as store:
        assert store.stats()["memories"] == len(CONTENTS)


def test_read_only_directory_is_a_clear_error(shared_dir):
    locked = os.path.join(shared_dir, "locked")
    os.mkdir(locked)
    existing_dir = os.path.join(shared_dir, "existing")
    existing = os.path.join(existing_dir, "memory.db")
    with open_store(existing) as store:
        _fill(store)
    _chown_to_job_user(locked, existing_dir)
    os.chmod(locked, 0o500)
    os.chmod(existing_dir, 0o500)

    def job():
        fresh = _try(lambda: open_store(os.path.join(locked, "memory.db")).path)
        nested = _try(lambda: open_store(os.path.join(locked, "sub", "memory.db")).path)

        def use_existing():
            with open_store(existing) as store:
                return [len(store.recent()), store.add(session="", project="/p", kind="note", content="x")]

        return [fresh, nested, _try(use_existing)]

    fresh, nested, used = as_unprivileged_user(job)
    assert fresh[0] == "error" and "directory is read-only" in fresh[1] and "TOOLSCRIPT_DATA_DIR" in fresh[1], fresh
    assert nested[0] == "error" and "cannot create the memory directory" in nested[1], nested
    assert used[0] == "error" and "is read-only; make the file and its directory writable" in used[1], used
    os.chmod(existing_dir, 0o700)
    with open_store(existing) as store:
        assert store.stats()["memories"] == len(CONTENTS)


# --- concurrency --------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from toolscript.memory.store import open_store
    path, go, worker, count = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    while not os.path.exists(go):  # the shared start line
        time.sleep(0.001)
    for i in range(count):
        # a fresh open per add, like a hook process; the first opens race to create the schema
        with open_store(path) as store:
            store.add(session="s%d" % worker, project="/p", kind="action", tool="Bash",
                      content="worker %d adds memory %d about parser.ts" % (worker, i))
    """
)

READER = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    from toolscript.memory.store import open_store
    path, go, done = sys.argv[2], sys.argv[3], sys.argv[4]
    while not os.path.exists(go):
        time.sleep(0.001)
    seen, reads = [], 0
    while not os.path.exists(done) or reads < 5:
        if os.path.exists(path):
            with open_store(path) as store:
                found = store.search("parser worker")
                recent = store.recent(limit=20)
                seen.append(store.stats()["memories"])
                reads += 1
        time.sleep(0.005)
    print(json.dumps({"reads": reads, "seen": seen}))
    """
)


@pytest.mark.timeout(240)
def test_ten_processes_times_hundred_adds_lose_nothing(tmp_path):
    path = str(tmp_path / "data" / "memory.db")  # does not exist yet: the first opens race
    go, done = str(tmp_path / "go"), str(tmp_path / "done")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, REPO_ROOT, path, go, str(n), "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for n in range(10)
    ]
    reader = subprocess.Popen([sys.executable, "-c", READER, REPO_ROOT, path, go, done], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)  # let every interpreter start and reach the start line
    open(go, "w").close()
    failures = []
    for proc in writers:
        out, err = proc.communicate(timeout=200)
        if proc.returncode != 0:
            failures.append(err.decode())
    open(done, "w").close()
    out, err = reader.communicate(timeout=60)
    assert not failures, failures[0]
    assert reader.returncode == 0, err.decode()
    report = json.loads(out)
    assert report["reads"] >= 5 and report["seen"] == sorted(report["seen"])  # counts only grow
    with open_store(path) as store:
        assert store.stats()["memories"] == 1000
        for worker in range(10):
            assert len(store.recent(session=f"s{worker}", limit=1000)) == 100
        assert len(store.search("parser", limit=2000)) == 1000


def test_threads_share_one_store(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        errors = []

        def work(n):
            try:
                for i in range(50):
                    store.add(session=f"t{n}", project="/p", kind="note", content=f"thread {n} note {i}")
                    store.search("thread note")
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors and store.stats()["memories"] == 200


# --- project_root -------------------------------------------------------------


def test_project_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_root(str(repo / "src" / "deep")) == os.path.realpath(str(repo))
    assert project_root(str(repo)) == os.path.realpath(str(repo))
    worktree = tmp_path / "wt"
    (worktree / "pkg").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /somewhere/.git/worktrees/wt\n")
    assert project_root(str(worktree / "pkg")) == os.path.realpath(str(worktree))
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(plain)
    assert project_root(str(link)) == os.path.realpath(str(plain))


def test_rare_words_weigh_more_and_old_rare_memories_are_still_found(tmp_path, mode):
    """A common word's newest uses are candidates; a rare word is searched in full (CANDIDATES_PER_TERM)."""
    with _open(tmp_path / "m.db", mode) as store:
        old = store.add(session="s0", project="/p", kind="note", content="zeppelin hangar common words", created=1.0)
        store.conn.execute("BEGIN")
        for i in range(store_mod.CANDIDATES_PER_TERM + 200):
            store.add(session="s1", project="/p", kind="note", content=f"common words filler {i}", created=10.0 + i)
        store.conn.execute("COMMIT")
        assert [m.id for m, _ in store.search("zeppelin", project="/p")] == [old]
        top, score = store.search("common zeppelin", project="/p")[0]
        assert top.id == old and 0.9 < score <= 1.0  # its "common" is past that word's cut: a little under 1.0
        hits = store.search("common zeppelin", project="/p", limit=5)
        assert all(s < 0.5 for _, s in hits[1:])  # the common word alone weighs little
        assert all(m.id != old and m.created > 1000 for m, _ in hits[1:])  # recent filler: the common word's newest uses


def test_disk_full_is_a_clear_error_and_nothing_is_lost(tmp_path):
    """SQLITE_FULL for real: cap the file at its current page count (PRAGMA max_page_count)."""
    with open_store(str(tmp_path / "m.db")) as store:
        _fill(store)
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreError) as info:
            store.conn.execute("BEGIN")
            for i in range(2000):
                store.add(session="", project="/p", kind="note", content=f"filling the disk {i} " + "y" * 500)
        assert str(info.value) == f"the disk holding the memory database {store.path} is full; free some space and retry"
        assert not store.conn.in_transaction  # rolled back, the connection is usable
        assert store.stats()["memories"] == len(CONTENTS)
    with open_store(str(tmp_path / "m.db")) as store:
        assert store.stats()["memories"] == len(CONTENTS)


def test_first_use_is_logged(tmp_path):
    import logging

    # A handler on the logger itself, not caplog's on the root: an in-process CLI test on the same worker may have
    # set the "toolscript" logger not to propagate (log.setup does).
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    target = logging.getLogger("toolscript.memory")
    old_level = target.level
    target.addHandler(handler)
    target.setLevel(logging.INFO)
    try:
        open_store(str(tmp_path / "m.db")).close()
        open_store(str(tmp_path / "m.db")).close()
    finally:
        target.removeHandler(handler)
        target.setLevel(old_level)
    created = [r.getMessage() for r in records if "initializing the memory database" in r.getMessage()]
    assert created == [f"initializing the memory database at {tmp_path / 'm.db'}"]


def test_search_cut_is_per_project_and_project_words_do_not_match(tmp_path, mode):
    """A big other project does not push this project's rows past CANDIDATES_PER_TERM; a project path is not content."""
    with _open(tmp_path / "m.db", mode) as store:
        mine = store.add(session="s", project="/home/me/shop", kind="note", content="fixed the checkout flow", created=1.0)
        store.conn.execute("BEGIN")
        for i in range(store_mod.CANDIDATES_PER_TERM + 100):
            store.add(session="o", project="/home/me/other", kind="note", content=f"checkout flow {i}", created=10.0 + i)
        store.conn.execute("COMMIT")
        assert [m.id for m, _ in store.search("checkout flow", project="/home/me/shop")] == [mine]
        assert store.search("shop", project="/home/me/shop") == []  # the path's words are not the memory's
        assert store.search("checkout", project="/home/me") == []  # nested paths are told apart


def test_paths_with_uri_characters_open(tmp_path):
    """The database path goes into an SQLite URI: %, ? and # in it must not change which file opens."""
    for name in ("a%20b", "what?mode=ro", "x#y", "sp ace"):
        folder = tmp_path / name
        folder.mkdir()
        with open_store(str(folder / "m.db")) as store:
            store.add(session="s", project="/p", kind="note", content=f"in {name}")
        assert (folder / "m.db").exists()
        with open_store(str(folder / "m.db"), readonly=True) as store:
            assert [m.content for m in store.recent(project="/p")] == [f"in {name}"]
