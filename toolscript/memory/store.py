"""The memory database: SQLite (stdlib), one file per user, shared by every hook and session.

A session here is always a Claude Code session: its id is the hook event's
``session_id`` (``--session-id`` on the command line), the ``sessions`` table
records when it started and ended, and each memory names the session that
captured it.  Other things toolscript calls a session are not stored here:
the gateway the global ``--session`` option picks, an MCP connection's
``Mcp-Session-Id``, a ``toolscript ask --session`` conversation.

Why it looks like this:

* Many hooks write at once (PostToolUse fires per tool call, sessions run in
  parallel), so the database runs in WAL mode with a busy timeout: writers
  queue instead of failing, readers never wait for writers.  Each write is one
  short transaction.
* The schema is versioned with ``PRAGMA user_version`` and a list of
  migrations, applied under ``BEGIN IMMEDIATE`` so two first-time processes
  cannot both create it.
* Full-text search uses an FTS5 external-content table kept in sync by
  triggers (porter stems; the project as one hashed token).  FTS5's
  tokenizer is the one analyzer: a query's words are matched as written and
  stemmed by it, for every caller.  Ranking is not FTS5's bm25: that scores
  every matching row, 70-230 ms a query at 100k memories.  Instead each
  query word contributes its newest CANDIDATES_PER_TERM rows in the project
  (a rare word: all of them), a memory scores the idf-weighted share of the
  query's words it has (0..1), and the best few hundred are reranked by their
  neighbours, their meaning and time (``toolscript.memory.rank``): bounded
  work at any size (bench/memory_store.py).  Some Python builds ship an SQLite without FTS5:
  that is detected at open (a probe table in ``temp``) and search falls back
  to ``LIKE`` over the query's words; ``stats()["fts"]`` says which is in use.
  ``TOOLSCRIPT_MEMORY_FTS=0`` (or ``open_store(fts=False)``) forces the fallback.
* Each memory's meaning vector (``toolscript.memory.vectorcodec``) is kept
  in ``memory_vectors`` (schema 2).  ``import_`` and a process that already
  has the embedding table compute it as they store; a hook's ``add`` leaves
  it to ``fill_vectors`` (the Stop and SessionEnd hooks, newest first), as
  for memories stored before vectors existed.
* Every text is passed through ``toolscript.memory.redact.clean`` before it is
  stored: secrets and ``<private>`` spans never reach the file; control
  characters and terminal escapes are dropped too.  A session id longer
  than an id (a hook event can carry a megabyte of anything) is stored as its
  hash (``toolscript.memory.session_key``).
* The data directory is 0700 and the database 0600 (with its -wal and -shm
  files): created so, and tightened when found looser, since memories are a
  record of the user's work.
* Memories belong to a project.  ``get`` and ``timeline`` take the project
  like ``search`` does, so a caller scoped to one project cannot read
  another's by walking ids; ``owners`` says whose an id is.
* Every SQLite failure becomes a one-line ``StoreError`` that says what to do
  (corrupt file, locked, read-only, disk full); hooks catch it and exit 0.
"""

import functools
import hashlib
import json
import logging
import math
import os
import re
import sqlite3
import stat
import threading
import time
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar

from toolscript.errors import UserError
from toolscript.memory import Memory, Session, rank, session_key, vectorcodec
from toolscript.memory.redact import clean

DB_FILENAME = "memory.db"
MAX_CONTENT = 4000  # chars of one memory's content after redaction; longer ends with "…"
BUSY_TIMEOUT_MS = 5000
ELLIPSIS = "\u2026"
KINDS = ("action", "response", "summary", "note")

_FTS_OFF_VALUES = ("0", "off", "false", "no", "like")

logger = logging.getLogger("toolscript.memory")


class StoreError(UserError):
    """The memory database cannot be used; ``str(err)`` is one line saying what to do."""


# --- schema -------------------------------------------------------------------

_FTS_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5("
    "content, tool, files, project_key, content='memories', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')"
)
_FTS_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN "
    "INSERT INTO memories_fts(rowid, content, tool, files, project_key) "
    "VALUES (new.id, new.content, new.tool, new.files, new.project_key); END",
    "CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, content, tool, files, project_key) "
    "VALUES ('delete', old.id, old.content, old.tool, old.files, old.project_key); END",
    "CREATE TRIGGER IF NOT EXISTS memories_fts_update AFTER UPDATE ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, content, tool, files, project_key) "
    "VALUES ('delete', old.id, old.content, old.tool, old.files, old.project_key); "
    "INSERT INTO memories_fts(rowid, content, tool, files, project_key) "
    "VALUES (new.id, new.content, new.tool, new.files, new.project_key); END",
)
_FTS_TRIGGER_NAMES = ("memories_fts_insert", "memories_fts_delete", "memories_fts_update")


def _migrate_v1(conn: sqlite3.Connection, fts: bool) -> None:
    """Sessions, memories (AUTOINCREMENT: a forgotten id is never reused) and their indices; FTS when available."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, project TEXT NOT NULL, started REAL NOT NULL, "
        "ended REAL, status TEXT NOT NULL DEFAULT 'active')"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS sessions_project_started ON sessions(project, started)")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL DEFAULT '', "
        "project TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL DEFAULT '', files TEXT NOT NULL DEFAULT '', "
        "content TEXT NOT NULL, created REAL NOT NULL, digest TEXT NOT NULL, project_key TEXT NOT NULL DEFAULT '')"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS memories_project_created ON memories(project, created)")
    conn.execute("CREATE INDEX IF NOT EXISTS memories_session_created ON memories(session, created)")
    conn.execute("CREATE INDEX IF NOT EXISTS memories_digest ON memories(digest)")
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    if fts:
        _create_fts(conn)


def _migrate_v2(conn: sqlite3.Connection, fts: bool) -> None:
    """Each memory's meaning vector, in a table of its own: filling it in for older memories must not touch the FTS index.

    Memories stored before this have none until ``Store.fill_vectors`` reaches
    them (the SessionEnd hook does, a batch at a time); search ranks them by
    their words meanwhile.
    """
    conn.execute("CREATE TABLE IF NOT EXISTS memory_vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL)")
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS memory_vectors_delete AFTER DELETE ON memories BEGIN "
        "DELETE FROM memory_vectors WHERE id = old.id; END"
    )


# Index i holds the migration to schema version i + 1.  Append only; never edit a shipped one.
MIGRATIONS: List[Callable[[sqlite3.Connection, bool], None]] = [_migrate_v1, _migrate_v2]
SCHEMA_VERSION = len(MIGRATIONS)


def _create_fts(conn: sqlite3.Connection) -> None:
    conn.execute(_FTS_TABLE)
    for trigger in _FTS_TRIGGERS:
        conn.execute(trigger)


# --- paths and opening ----------------------------------------------------------


def data_dir(env: Optional[Mapping[str, str]] = None) -> str:
    """``$TOOLSCRIPT_DATA_DIR``, else ``~/.toolscript`` (not created here)."""
    environ = os.environ if env is None else env
    configured = environ.get("TOOLSCRIPT_DATA_DIR", "")
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    from toolscript import paths

    return os.path.join(paths.home(environ), ".toolscript")


def default_path(env: Optional[Mapping[str, str]] = None) -> str:
    """Where the memory database is by default."""
    return os.path.join(data_dir(env), DB_FILENAME)


def open_store(
    path: Optional[str] = None,
    *,
    env: Optional[Mapping[str, str]] = None,
    readonly: bool = False,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    fts: Optional[bool] = None,
) -> "Store":
    """Open (and on first use create: dir 0700, file 0600, schema) the memory database.

    ``readonly`` opens with SQLite's ``mode=ro`` and never creates anything.
    ``fts=False`` (or ``TOOLSCRIPT_MEMORY_FTS=0``) forces the LIKE fallback.
    """
    environ = os.environ if env is None else env
    db_path = os.path.abspath(path) if path else default_path(environ)
    want_fts = fts if fts is not None else environ.get("TOOLSCRIPT_MEMORY_FTS", "").strip().lower() not in _FTS_OFF_VALUES
    if readonly:
        if not os.path.exists(db_path):
            raise StoreError(f"no memory database at {db_path} yet; it is created when the first memory is captured")
    else:
        _create_file(db_path)
    tighten_permissions(db_path)
    try:
        conn = sqlite3.connect(
            _uri(db_path, readonly), uri=True, timeout=busy_timeout_ms / 1000.0, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise _store_error(exc, db_path, busy_timeout_ms) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        available = _fts5_available(conn)
        if readonly:
            version = _user_version(conn)
            _check_version(version, db_path)
            if version == 0:
                raise StoreError(f"no memory database at {db_path} yet; it is created when the first memory is captured")
            has_fts = _has_table(conn, "memories_fts")
            has_vectors = _has_table(conn, "memory_vectors")
        else:
            _set_wal(conn, busy_timeout_ms)
            conn.execute("PRAGMA synchronous = NORMAL")
            _migrate(conn, available, db_path)
            has_fts = _sync_fts(conn, available)
            has_vectors = True
    except sqlite3.Error as exc:
        conn.close()
        raise _store_error(exc, db_path, busy_timeout_ms) from exc
    except StoreError:
        conn.close()
        raise
    store = Store(db_path, conn, fts=bool(want_fts and available and has_fts), readonly=readonly, busy_timeout_ms=busy_timeout_ms)
    store.vector_table = has_vectors
    return store


def _uri(path: str, readonly: bool) -> str:
    # SQLite's URI filenames need only %, ? and # escaped; urllib.parse would cost every hook ~2 ms to import.
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return "file:" + escaped + ("?mode=ro" if readonly else "?mode=rw")


def _create_file(path: str) -> None:
    """The directory (0700) and an empty database file (0600) if they do not exist yet."""
    directory = os.path.dirname(path)
    if os.path.exists(path):
        return
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the memory directory {directory}: {exc.strerror or exc}; "
            "make its parent writable or set TOOLSCRIPT_DATA_DIR to a writable directory"
        ) from exc
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return  # another process created it first: fine
    except OSError as exc:
        raise StoreError(
            f"cannot create the memory database {path}: {exc.strerror or exc}; "
            "the directory is read-only: make it writable or set TOOLSCRIPT_DATA_DIR to a writable directory"
        ) from exc
    os.close(fd)
    logger.info("initializing the memory database at %s", path)  # once, when the file is first created


def tighten_permissions(db_path: str) -> List[str]:
    """Make the data directory 0700 and the database files 0600 where group or others could read them; what changed.

    Only what this user owns is changed.  A shared directory (sticky, like
    /tmp) or the home directory itself is left alone, with a warning: the
    data directory is meant to be toolscript's own.
    """
    changed: List[str] = []
    directory = os.path.dirname(db_path)
    home = os.path.realpath(os.path.expanduser("~"))
    for path, private in [(directory, 0o700)] + [(db_path + suffix, 0o600) for suffix in ("", "-wal", "-shm", "-journal")]:
        try:
            info = os.stat(path)
            mode = stat.S_IMODE(info.st_mode)
            if not mode & 0o077 or (hasattr(os, "geteuid") and info.st_uid != os.geteuid()):
                continue
            if stat.S_ISDIR(info.st_mode) and (mode & stat.S_ISVTX or os.path.realpath(path) in (home, "/")):
                logger.warning("memory: %s is readable by others (mode %o) and shared, so it is left as is; "
                               "set TOOLSCRIPT_DATA_DIR to a directory of toolscript's own", path, mode)
                continue
            os.chmod(path, private)
            changed.append(path)
            logger.warning("memory: %s was mode %o, readable by others; it is now %o", path, mode, private)
        except OSError:
            continue  # gone, or not ours to change: the open itself says what is wrong
    return changed


def _fts5_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5: create and drop a probe table in ``temp`` (works read-only too)."""
    try:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.toolscript_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE IF EXISTS temp.toolscript_fts5_probe")
        return True
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc).lower() or "no such module" in str(exc).lower():
            return False
        raise


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _check_version(version: int, path: str) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the memory database {path} has schema version {version}, newer than this toolscript's {SCHEMA_VERSION}; "
            "upgrade toolscript or set TOOLSCRIPT_DATA_DIR to another directory"
        )


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _set_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """WAL mode (persistent in the file).  Switching can return SQLITE_BUSY without waiting, so retry."""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + busy_timeout_ms / 1000.0
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _migrate(conn: sqlite3.Connection, fts: bool, path: str) -> None:
    """Bring the schema to SCHEMA_VERSION; one process migrates, the others wait and find it done."""
    if _user_version(conn) == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _user_version(conn)
        _check_version(version, path)
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](conn, fts)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _sync_fts(conn: sqlite3.Connection, available: bool) -> bool:
    """Make the FTS index match the platform; return whether it exists and is current.

    A database made where FTS5 was missing gets its index (rebuilt from the
    table) the first time FTS5 is there.  A database with an index opened where
    FTS5 is missing would fail every insert through the triggers: they are
    dropped and the index marked stale, rebuilt when FTS5 is back.
    """
    has_table = _has_table(conn, "memories_fts")
    stale = conn.execute("SELECT value FROM meta WHERE key = 'fts_stale'").fetchone() is not None
    if available and has_table and not stale and _has_table(conn, "memories_fts_insert"):
        return True
    conn.execute("BEGIN IMMEDIATE")
    try:
        if available:
            _create_fts(conn)
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            conn.execute("DELETE FROM meta WHERE key = 'fts_stale'")
        elif has_table:
            for name in _FTS_TRIGGER_NAMES:
                conn.execute(f"DROP TRIGGER IF EXISTS {name}")
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('fts_stale', '1')")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return available


def _store_error(exc: BaseException, path: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> StoreError:
    """One line for the user from an SQLite failure: what happened to which file and what to do."""
    text = str(exc)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return StoreError(
            f"the memory database {path} is locked by another process (waited {busy_timeout_ms / 1000:g} s); "
            "retry, or stop the process holding it"
        )
    if "readonly" in lowered or "read-only" in lowered:
        return StoreError(
            f"the memory database {path} is read-only; make the file and its directory writable "
            "or set TOOLSCRIPT_DATA_DIR to a writable directory"
        )
    if "full" in lowered:
        return StoreError(f"the disk holding the memory database {path} is full; free some space and retry")
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return StoreError(
            f"{path} is not a toolscript memory database or is corrupt; move it away and a new one is created on next use"
        )
    if "unable to open" in lowered:
        return StoreError(
            f"failed to connect to the memory database {path}: {text}; check the file and its directory exist "
            "and are writable, or set TOOLSCRIPT_DATA_DIR"
        )
    return StoreError(f"failed to use the memory database {path}: {text}; check the file's permissions and free space")


# --- search helpers -----------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")
_STOPWORDS = frozenset(
    "a an and are as at be but by can could did do does for from had has have how i if in into is it its me my "
    "no not of on or our please so than that the their them then there these this to us was we were what when "
    "where which who why will with would you your".split()
)
_MAX_TERMS = 16
# Per query word, the newest this-many memories containing it are candidates.  A
# word rarer than that is searched in full; a common one ("test", "fix") only in
# its newest uses: that bounds a search's work at ~16 x 1000 rows however large
# the database grows (bm25 over every match took 70-230 ms at 100k memories).
CANDIDATES_PER_TERM = 1000


def query_terms(query: str) -> List[str]:
    """The words of ``query`` worth searching for: lower-cased, unique, no stopwords.

    Single characters are dropped too unless nothing else is left ("x" alone
    is a search; "x" in a sentence is noise).  Only stopwords -> no terms: a
    prompt like "do it" is related to nothing in particular.
    """
    words: List[str] = []
    for word in _WORD.findall((query or "").lower()):
        if word not in words and word not in _STOPWORDS:
            words.append(word)
    longer = [w for w in words if len(w) > 1]
    return (longer or words)[:_MAX_TERMS]


def fts_phrase(term: str) -> str:
    """One term as an FTS5 MATCH expression that cannot fail to parse: quoted, quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def project_key(project: str) -> str:
    """The project as one index token (a path's words would need a slow phrase match and match nested paths)."""
    return "p" + hashlib.sha1(project.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "%" + escaped + "%"


# --- the store ----------------------------------------------------------------

_T = TypeVar("_T")

_COLUMNS = "id, session, project, kind, tool, files, content, created"


def _guarded(method: Callable[..., _T]) -> Callable[..., _T]:
    """Run a Store method under its lock; any SQLite failure becomes a one-line StoreError."""

    @functools.wraps(method)
    def wrapper(self: "Store", *args: Any, **kwargs: Any) -> _T:
        with self._lock:
            if self._conn is None:
                raise StoreError(f"the memory database {self.path} is closed; open it again")
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    try:
                        self._conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise _store_error(exc, self.path, self.busy_timeout_ms) from exc

    return wrapper


def _row_memory(row: Sequence[Any]) -> Memory:
    files = json.loads(row[5]) if row[5] else []
    return Memory(int(row[0]), row[1], row[2], row[3], row[4], files, row[6], float(row[7]))


def _row_session(row: Sequence[Any]) -> Session:
    return Session(row[0], row[1], float(row[2]), None if row[3] is None else float(row[3]), row[4])


def _printable(text: str) -> str:
    """``text`` without terminal escapes and control characters (newlines and tabs kept): it is printed and injected."""
    from toolscript.log import terminal_text

    return terminal_text(text)


def _cap(text: str, limit: int = MAX_CONTENT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _digest(session: str, project: str, kind: str, tool: str, files: Sequence[str], content: str, created: float) -> str:
    """What makes two memories the same one (import skips duplicates by it)."""
    key = json.dumps([session, project, kind, tool, list(files), content, round(created, 6)], ensure_ascii=False)
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


def _where(conditions: Sequence[Tuple[str, Any]]) -> Tuple[str, List[Any]]:
    """``a AND b ...`` over the conditions that are given, and their parameters.

    A condition is ``("column = ?", value)`` (any one-``?`` clause), left out
    when the value is None; or ``("column IN", values)``, left out when there
    are no values.  Every query that filters by optional arguments builds its
    WHERE here, so a filter is always a bound parameter, never spliced text.
    """
    clauses: List[str] = []
    params: List[Any] = []
    for clause, value in conditions:
        if clause.endswith(" IN"):
            values = list(value or ())
            if values:
                clauses.append(f"{clause} ({','.join('?' * len(values))})")
                params.extend(values)
        elif value is not None:
            clauses.append(clause)
            params.append(value)
    return " AND ".join(clauses), params


def _filters(
    project: Optional[str], session: Optional[str], kinds: Optional[Sequence[str]] = None, exclude_session: Optional[str] = None
) -> Tuple[str, List[Any]]:
    return _where([("m.project = ?", project), ("m.session = ?", session), ("m.session != ?", exclude_session), ("m.kind IN", kinds)])


class Store:
    """An open memory database.  Thread-safe (one lock); use as a context manager or call ``close``."""

    def __init__(self, path: str, conn: sqlite3.Connection, *, fts: bool, readonly: bool, busy_timeout_ms: int) -> None:
        self.path = path
        self.fts = fts
        self.readonly = readonly
        self.busy_timeout_ms = busy_timeout_ms
        self._conn: Optional[sqlite3.Connection] = conn
        self._lock = threading.RLock()
        self.vector_table = False  # whether the database has memory_vectors (a read-only older one may not)

    @property
    def vectors(self) -> bool:
        """Whether memories' meaning vectors are stored and searched: the table exists and the embeddings load."""
        return self.vector_table and vectorcodec.available()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    # sessions

    @_guarded
    def start_session(self, session_id: str, project: str, now: Optional[float] = None) -> bool:
        """Record a session as active; True if it was new.  Starting a completed one (a resume) reactivates it."""
        started = time.time() if now is None else float(now)
        session_id = session_key(session_id)
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO sessions(id, project, started, ended, status) VALUES (?, ?, ?, NULL, 'active')",
            (session_id, project, started),
        )
        if cursor.rowcount == 1:
            return True
        self.conn.execute("UPDATE sessions SET status = 'active', ended = NULL WHERE id = ? AND status != 'active'", (session_id,))
        return False

    @_guarded
    def end_session(self, session_id: str, now: Optional[float] = None) -> bool:
        """Mark an active session completed; False when there is no such active session (the caller warns)."""
        ended = time.time() if now is None else float(now)
        session_id = session_key(session_id)
        cursor = self.conn.execute(
            "UPDATE sessions SET status = 'completed', ended = ? WHERE id = ? AND status = 'active'", (ended, session_id)
        )
        return cursor.rowcount == 1

    @_guarded
    def session(self, session_id: str) -> Optional[Session]:
        row = self.conn.execute("SELECT id, project, started, ended, status FROM sessions WHERE id = ?",
                                (session_key(session_id),)).fetchone()
        return _row_session(row) if row else None

    @_guarded
    # memories

    @_guarded
    def add(
        self,
        *,
        session: str,
        project: str,
        kind: str,
        content: str,
        tool: str = "",
        files: Sequence[str] = (),
        created: Optional[float] = None,
    ) -> Optional[int]:
        """Store one memory (redacted, ``<private>`` removed, capped); its id, or None if nothing is left to store."""
        text = _cap(clean(_printable(content or "")).strip())
        if not text:
            return None
        tool = clean(_printable(tool or ""))[:200]
        paths = [clean(_printable(str(f)))[:1000] for f in files if f][:50]
        session = session_key(session)
        when = time.time() if created is None else float(created)
        digest = _digest(session, project, kind, tool, paths, text, when)
        cursor = self.conn.execute(
            "INSERT INTO memories(session, project, kind, tool, files, content, created, digest, project_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session, project, kind, tool, json.dumps(paths, ensure_ascii=False) if paths else "", text, when, digest, project_key(project)),
        )
        memory_id = int(cursor.lastrowid or 0)
        # A hook process adds one memory and exits: reading the embedding table (~30 ms) for it would slow
        # every tool call, so the vector waits for fill_vectors (the Stop hook) unless the table is in memory.
        self._store_vector(memory_id, text, load=False)
        return memory_id

    def _store_vector(self, memory_id: int, content: str, *, load: bool = True) -> None:
        """Store the meaning vector of a memory's text (nothing when the embedding table or its words are missing).

        ``load=False``: only when this process has the table already; else ``fill_vectors`` does it later.
        """
        if not self.vector_table or (not load and not vectorcodec.ready()) or not self.vectors:
            return
        packed = vectorcodec.pack(content)
        if packed is not None:
            self.conn.execute("INSERT OR REPLACE INTO memory_vectors(id, vector) VALUES (?, ?)", (memory_id, packed))

    @_guarded
    def fill_vectors(self, limit: int = 1000) -> int:
        """Give up to ``limit`` memories stored without a vector theirs, newest first; how many.

        Those are what hooks added (see ``add``) and what was stored before vectors existed.
        """
        if not self.vectors or limit <= 0:
            return 0
        rows = self.conn.execute(
            "SELECT m.id, m.content FROM memories m LEFT JOIN memory_vectors v ON v.id = m.id "
            "WHERE v.id IS NULL ORDER BY m.id DESC LIMIT ?", (int(limit),)).fetchall()
        if not rows:
            return 0
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for memory_id, content in rows:
                self._store_vector(int(memory_id), str(content))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return len(rows)

    @_guarded
    def search(
        self,
        query: str,
        *,
        project: Optional[str] = None,
        session: Optional[str] = None,
        kinds: Optional[Sequence[str]] = None,
        limit: int = 10,
    ) -> List[Tuple[Memory, float]]:
        """Memories containing any word of ``query``, best first, each with a score in 0..1.

        The one search behind ``memory search``, the ``memory.search`` tool, the prompt hook and the brief.
        The score starts as the share of the query's words a memory has, each weighted by its rarity in the
        project (BM25's idf), ties to the newest (a rare word's synonyms count in its place, at a discount; a
        name asked about counts more as a memory's first word); the best ``rank.POOL`` then gain from a
        matching neighbour, their meaning and their date (``toolscript.memory.rank``), capped at 1.0.  FTS5
        matches words by stem ("tests" finds "test"), the LIKE fallback substrings; see CANDIDATES_PER_TERM."""
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        where, params = _filters(project, None if session is None else session_key(session), kinds)
        total = int(self.conn.execute(*(("SELECT COUNT(*) FROM memories WHERE project = ?", (project,)) if project is not None  # the dfs count there
                                        else ("SELECT COALESCE(MAX(id), 0) FROM memories", ()))).fetchone()[0])
        matched: Dict[int, int] = {}
        if self.fts:
            try:
                dfs = self._candidates(terms, functools.partial(self._fts_rows, project), matched)
            except sqlite3.OperationalError:
                matched.clear()  # belt and braces: a term FTS5 rejects still gets searched
                dfs = self._candidates(terms, functools.partial(self._like_rows, where, params), matched)
        else:
            dfs = self._candidates(terms, functools.partial(self._like_rows, where, params), matched)
        others, found_too = rank.related_terms(query, terms, dfs), {}  # type: Tuple[List[Tuple[str, int]], Dict[int, int]]
        names = [terms[i] for i in rank.names_asked(query, terms)] if self.fts else []
        try:  # a rare word's synonyms: the newest rank.RARE of each; a name the query asks about, as a memory's first word
            dfs += self._candidates([t for t, _ in others], functools.partial(self._fts_rows, project, prefix=True) if self.fts
                                    else functools.partial(self._like_rows, where, params), found_too, len(terms), rank.RARE)
            dfs += self._candidates(names, functools.partial(self._fts_rows, project, initial=True), found_too, len(dfs))
        except sqlite3.OperationalError:
            others, names, found_too = [], [], {}  # the words alone, then
        matched.update((rowid, matched.get(rowid, 0) | mask) for rowid, mask in found_too.items())
        if not matched:
            return []
        found = rank.ranked(self.conn, query, matched, dfs, total, vectors=self.vectors,
                            related=[(word, rank.RELATED_WEIGHT) for _, word in others], labels=len(names))
        return self._materialize(found, where, params, limit)

    def _fts_rows(self, project: Optional[str], term: str, prefix: bool = False, limit: int = CANDIDATES_PER_TERM, initial: bool = False) -> List[int]:
        """The newest ``limit`` + 1 rowids whose content, tool or files have ``term`` (stemmed; ``prefix``: a word starting
        so; ``initial``: as the content's first word).  The project is indexed too (one token, ``project_key``), so the
        cut is taken within the project: a big other project cannot push this one's rows past it."""
        expression = ("content : ^ " if initial else "{content tool files} : ") + fts_phrase(term) + (" *" if prefix else "")
        if project is not None:
            expression += " AND project_key : " + fts_phrase(project_key(project))
        rows = self.conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
            (expression, limit + 1),
        )
        return [rowid for (rowid,) in rows]  # SQLite gives rowids as int

    def _like_rows(self, where: str, params: List[Any], term: str, limit: int = CANDIDATES_PER_TERM) -> List[int]:
        """The fallback's ``_fts_rows``: a case-insensitive substring of content, tool or files (filters applied here)."""
        pattern = _like_pattern(term)
        clauses = ["(m.content LIKE ? ESCAPE '\\' OR m.tool LIKE ? ESCAPE '\\' OR m.files LIKE ? ESCAPE '\\')"]
        values: List[Any] = [pattern] * 3
        if where:
            clauses.append(where)
            values.extend(params)
        rows = self.conn.execute(
            "SELECT m.id FROM memories m WHERE " + " AND ".join(clauses) + " ORDER BY m.id DESC LIMIT ?",
            values + [limit + 1],
        )
        return [rowid for (rowid,) in rows]  # SQLite gives rowids as int

    def _candidates(self, terms: Sequence[str], rows_for: Callable[..., List[int]], matched: Dict[int, int], first_bit: int = 0,
                    limit: int = CANDIDATES_PER_TERM) -> List[int]:
        """Fill ``matched`` (rowid -> mask of the terms it has) with each term's newest rows; return each term's count.

        A count above CANDIDATES_PER_TERM means "at least".  An old memory
        found by a rare word is not asked about the common words past their cut
        (FTS5 answers ``rowid IN (...)`` at ~90 us a row): it scores a little
        under 1.0, which the common words' small weight keeps from mattering.
        """
        dfs = []
        for bit, term in enumerate(terms, first_bit):
            rowids = rows_for(term, limit=limit)
            dfs.append(len(rowids))
            for rowid in rowids[:limit]:
                matched[rowid] = matched.get(rowid, 0) | 1 << bit
        return dfs

    def _materialize(
        self, ranked: Iterator[Tuple[int, float]], where: str, params: List[Any], limit: int
    ) -> List[Tuple[Memory, float]]:
        """The first ``limit`` ranked rowids that pass the filters, as memories, read in chunks growing from twice
        ``limit`` (the candidates are the project's already: a session or kind filter may turn many away)."""
        found: List[Tuple[Memory, float]] = []
        chunk: List[Tuple[int, float]] = []
        size = max(20, limit * 2)

        def flush() -> None:
            ids = [rowid for rowid, _ in chunk]
            rows = self.conn.execute(
                f"SELECT {', '.join('m.' + c for c in _COLUMNS.split(', '))} FROM memories m WHERE m.id IN ({','.join('?' * len(ids))})"
                + (" AND " + where if where else ""),
                ids + params,
            ).fetchall()
            by_id = {int(r[0]): r for r in rows}
            found.extend((_row_memory(by_id[rowid]), score) for rowid, score in chunk if rowid in by_id)
            chunk.clear()

        for item in ranked:
            chunk.append(item)
            if len(chunk) >= size:
                flush()
                if len(found) >= limit:
                    break
                size = min(size * 2, 1000)
        if chunk and len(found) < limit:
            flush()
        return found[:limit]

    @_guarded
    def recent(
        self,
        *,
        project: Optional[str] = None,
        session: Optional[str] = None,
        limit: int = 20,
        exclude_session: Optional[str] = None,
    ) -> List[Memory]:
        """Newest first."""
        where, params = _filters(project, None if session is None else session_key(session),
                                 exclude_session=None if exclude_session is None else session_key(exclude_session))
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories m" + (" WHERE " + where if where else "") + " ORDER BY created DESC, id DESC LIMIT ?",
            params + [int(limit)],
        ).fetchall()
        return [_row_memory(r) for r in rows]

    @_guarded
    def get(self, ids: Sequence[int], *, project: Optional[str] = None) -> List[Memory]:
        """The memories with these ids, in the order asked; unknown ids, and with ``project`` other projects', left out."""
        wanted = [int(i) for i in ids]
        found: Dict[int, Memory] = {}
        scope = "" if project is None else " AND project = ?"
        for start in range(0, len(wanted), 500):  # stay under SQLite's variable limit
            chunk = wanted[start : start + 500]
            rows = self.conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(chunk))}){scope}",
                chunk + ([] if project is None else [project]),
            )
            for row in rows:
                found[int(row[0])] = _row_memory(row)
        return [found[i] for i in wanted if i in found]

    @_guarded
    def owners(self, ids: Sequence[int]) -> Dict[int, str]:
        """{id: project} for the ids that exist: whose a memory is, without reading it."""
        wanted = [int(i) for i in ids]
        found: Dict[int, str] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self.conn.execute(f"SELECT id, project FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            found.update((int(memory_id), str(owner)) for memory_id, owner in rows)
        return found

    @_guarded
    def timeline(self, memory_id: int, before: int = 5, after: int = 5, *, project: Optional[str] = None) -> List[Memory]:
        """Up to ``before`` memories before and ``after`` after ``memory_id`` in its project, oldest first, it included.

        With ``project``, a memory of another project has no timeline here: [].
        """
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE id = ?" + ("" if project is None else " AND project = ?"),
            (int(memory_id),) if project is None else (int(memory_id), project),
        ).fetchone()
        if row is None:
            return []
        pivot = _row_memory(row)
        earlier = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE project = ? AND (created < ? OR (created = ? AND id < ?)) "
            "ORDER BY created DESC, id DESC LIMIT ?",
            (pivot.project, pivot.created, pivot.created, pivot.id, max(0, int(before))),
        ).fetchall()
        later = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE project = ? AND (created > ? OR (created = ? AND id > ?)) "
            "ORDER BY created ASC, id ASC LIMIT ?",
            (pivot.project, pivot.created, pivot.created, pivot.id, max(0, int(after))),
        ).fetchall()
        return [_row_memory(r) for r in reversed(earlier)] + [pivot] + [_row_memory(r) for r in later]

    @_guarded
    def forget(self, *, ids: Sequence[int] = (), session: Optional[str] = None, project: Optional[str] = None) -> int:
        """Delete memories by ids, session and/or project (all given must match); the number deleted.

        Forgetting a whole session or project also drops its completed session
        records, so nothing about it is left; active sessions stay so their end
        is still recorded.
        """
        if not ids and session is None and project is None:
            raise StoreError("say what to forget: memory ids, a session or a project")
        session = None if session is None else session_key(session)
        where, params = _where([("id IN", [int(i) for i in ids]), ("session = ?", session), ("project = ?", project)])
        self.conn.execute("BEGIN IMMEDIATE")
        count = self.conn.execute("DELETE FROM memories WHERE " + where, params).rowcount
        if not ids:
            where, params = _where([("status = ?", "completed"), ("id = ?", session), ("project = ?", project)])
            self.conn.execute("DELETE FROM sessions WHERE " + where, params)
        self.conn.execute("COMMIT")
        return int(count)

    # export / import

    @_guarded
    def export(self, stream: IO[str], *, project: Optional[str] = None) -> int:
        """Write memories as JSONL (oldest first), one object per line; the number written."""
        where, params = _filters(project, None)
        count = 0
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM memories m" + (" WHERE " + where if where else "") + " ORDER BY id", params)
        for row in rows:
            stream.write(json.dumps(_row_memory(row)._asdict(), ensure_ascii=False) + "\n")
            count += 1
        return count

    @_guarded
    def import_(self, stream: IO[str]) -> int:
        """Read JSONL written by ``export`` (from any store); the number imported.  Duplicates are skipped.

        Every line is checked before anything is written: a bad line imports
        nothing.  Ids are not kept (the importing store numbers them); contents
        are cleaned again, since the file may come from anywhere.
        """
        records = list(_parse_import(stream))
        imported = 0
        self.conn.execute("BEGIN IMMEDIATE")
        for record in records:
            text = _cap(clean(_printable(record["content"])).strip())
            if not text:
                continue
            tool = clean(_printable(record["tool"]))[:200]
            paths = [clean(_printable(p))[:1000] for p in record["files"]][:50]
            digest = _digest(record["session"], record["project"], record["kind"], tool, paths, text, record["created"])
            if self.conn.execute("SELECT 1 FROM memories WHERE digest = ?", (digest,)).fetchone():
                continue
            self.conn.execute(
                "INSERT INTO memories(session, project, kind, tool, files, content, created, digest, project_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record["session"],
                    record["project"],
                    record["kind"],
                    tool,
                    json.dumps(paths, ensure_ascii=False) if paths else "",
                    text,
                    record["created"],
                    digest,
                    project_key(record["project"]),
                ),
            )
            self._store_vector(int(self.conn.execute("SELECT last_insert_rowid()").fetchone()[0]), text)
            imported += 1
        self.conn.execute("COMMIT")
        return imported

    @_guarded
    def quick_check(self) -> List[str]:
        """SQLite's ``PRAGMA quick_check`` over every page: [] when the file is sound, else what is wrong (up to 10).

        A page too damaged to walk stops the check with an error: that is a finding too.
        """
        try:
            rows = self.conn.execute("PRAGMA quick_check(10)").fetchall()
        except sqlite3.DatabaseError as exc:
            if "malformed" not in str(exc).lower() and "corrupt" not in str(exc).lower():
                raise
            return [str(exc)]
        return [str(row[0]) for row in rows if str(row[0]).lower() != "ok"]

    @_guarded
    def projects(self) -> List[Dict[str, Any]]:
        """Every project with memories: ``{"project", "memories", "last"}``, the most recently active first."""
        rows = self.conn.execute(
            "SELECT project, COUNT(*), MAX(created) FROM memories GROUP BY project ORDER BY MAX(created) DESC"
        ).fetchall()
        return [{"project": str(project), "memories": int(count), "last": float(last)} for project, count, last in rows]

    @_guarded
    def stats(self) -> Dict[str, Any]:
        """``{"path", "bytes", "memories", "sessions": {"active", "completed"}, "fts": "fts5"|"like", "schema"}``."""
        size = 0
        for suffix in ("", "-wal"):
            try:
                size += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        memories = int(self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        counts = {"active": 0, "completed": 0}
        for status, n in self.conn.execute("SELECT status, COUNT(*) FROM sessions GROUP BY status"):
            counts[status] = int(n)
        return {
            "path": self.path,
            "bytes": size,
            "memories": memories,
            "sessions": counts,
            "fts": "fts5" if self.fts else "like",
            "schema": _user_version(self.conn),
        }


def _parse_import(stream: IO[str]) -> Iterable[Dict[str, Any]]:
    records = []
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise StoreError(f"line {number} of the import is not JSON ({exc}); nothing was imported") from exc
        if not isinstance(data, dict) or not isinstance(data.get("content"), str) or not isinstance(data.get("project"), str):
            raise StoreError(f"line {number} of the import is not a memory (needs \"content\" and \"project\"); nothing was imported")
        files = data.get("files") or []
        created = data.get("created")
        records.append(
            {
                "session": session_key(str(data.get("session") or "")),
                "project": data["project"],
                "kind": str(data.get("kind") or "note"),
                "tool": str(data.get("tool") or ""),
                "files": [str(f) for f in files] if isinstance(files, list) else [],
                "content": data["content"],
                "created": float(created) if isinstance(created, (int, float)) else time.time(),
            }
        )
    return records
