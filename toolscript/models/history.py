"""The ask loop's saved conversations: ``toolscript ask --session NAME`` keeps one to continue later.

A conversation is the messages of every ``toolscript ask`` run under one name, in order
(user questions, the model's turns, tool results), plus a cache of the results of
read-only tool calls made in it, so an identical call later in the conversation is
answered without running the tool (for ``CACHE_TTL`` seconds: files change under long
conversations).  They live in SQLite, ``<data dir>/ask.db``, 0600.

The command line calls them sessions (``--session``, ``--list-sessions``,
``--forget-session``) and so do the database's tables; they have nothing to do with a
Claude Code session or a gateway's session.
"""

import json
import os
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

DB_FILENAME = "ask.db"
CACHE_TTL = 600.0  # seconds a cached read-only result stays good


def history_path(env: Optional[Mapping[str, str]] = None) -> str:
    """Where the conversations are kept: ``<data dir>/ask.db``."""
    from toolscript.memory.store import data_dir

    return os.path.join(data_dir(env), DB_FILENAME)


def open_history(env: Optional[Mapping[str, str]] = None) -> Any:
    """The conversations' database (a sqlite3 connection, in autocommit mode), made if missing."""
    import sqlite3

    path = history_path(env)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # 0600 from the start: conversations are private
    os.close(fd)
    db = sqlite3.connect(path, timeout=5, isolation_level=None)
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS sessions (name TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL);
        CREATE TABLE IF NOT EXISTS messages (session TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
                                             content TEXT NOT NULL, PRIMARY KEY (session, seq));
        CREATE TABLE IF NOT EXISTS cache (session TEXT NOT NULL, key TEXT NOT NULL, result TEXT NOT NULL,
                                          created REAL NOT NULL, PRIMARY KEY (session, key));
        """
    )
    return db


class Conversation:
    """One named conversation in ``db``: its messages so far, its cache of read-only results."""

    def __init__(self, db: Any, name: str) -> None:
        self.db = db
        self.name = name

    def messages(self) -> List[Dict[str, Any]]:
        """The messages so far, oldest first, as the Messages API takes them."""
        rows = self.db.execute("SELECT role, content FROM messages WHERE session = ? ORDER BY seq", (self.name,))
        return [{"role": role, "content": json.loads(content)} for role, content in rows]

    def append(self, messages: Sequence[Dict[str, Any]]) -> None:
        now = time.time()
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "INSERT INTO sessions (name, created, updated) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET updated = ?",
                (self.name, now, now, now),
            )
            (last,) = self.db.execute("SELECT COALESCE(MAX(seq), -1) FROM messages WHERE session = ?", (self.name,)).fetchone()
            for offset, message in enumerate(messages, 1):
                self.db.execute(
                    "INSERT INTO messages (session, seq, role, content) VALUES (?, ?, ?, ?)",
                    (self.name, last + offset, message["role"], json.dumps(message["content"], ensure_ascii=False)),
                )

    def cached(self, key: str) -> Optional[Dict[str, Any]]:
        """The result kept under ``key`` within the last CACHE_TTL seconds, or None."""
        row = self.db.execute(
            "SELECT result FROM cache WHERE session = ? AND key = ? AND created > ?", (self.name, key, time.time() - CACHE_TTL)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def remember(self, key: str, result: Dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO cache (session, key, result, created) VALUES (?, ?, ?, ?)",
            (self.name, key, json.dumps(result, ensure_ascii=False), time.time()),
        )


def list_conversations(env: Optional[Mapping[str, str]] = None) -> List[Dict[str, Any]]:
    """Every conversation: name, message count, last update (newest first)."""
    if not os.path.exists(history_path(env)):
        return []
    db = open_history(env)
    try:
        rows = db.execute(
            "SELECT s.name, s.updated, (SELECT COUNT(*) FROM messages m WHERE m.session = s.name) FROM sessions s ORDER BY s.updated DESC"
        ).fetchall()
    finally:
        db.close()
    return [{"name": name, "messages": count, "updated": updated} for name, updated, count in rows]


def forget_conversation(name: str, env: Optional[Mapping[str, str]] = None) -> bool:
    """Delete a conversation's messages and cache; False when there was no such conversation."""
    if not os.path.exists(history_path(env)):
        return False
    db = open_history(env)
    try:
        with db:
            db.execute("BEGIN IMMEDIATE")
            found = db.execute("DELETE FROM sessions WHERE name = ?", (name,)).rowcount
            db.execute("DELETE FROM messages WHERE session = ?", (name,))
            db.execute("DELETE FROM cache WHERE session = ?", (name,))
    finally:
        db.close()
    return bool(found)
