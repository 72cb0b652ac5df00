"""Memory across sessions: the records everyone shares, and which project a cwd belongs to.

Kept light on purpose: hooks import this on every event, so nothing here opens
the database or imports more than the standard library's basics.  The store is
``toolscript.memory.store``; what gets injected is ``toolscript.memory.context``;
what gets recorded is ``toolscript.memory.capture``.
"""

import os
from typing import Any, List, NamedTuple, Optional

# A session id as Claude Code makes it is a UUID (36 characters).  Anything longer, or with
# characters outside these, comes from elsewhere and is stored as its hash: a hook event's
# megabyte "session_id" must not be copied onto every memory row.
MAX_SESSION_ID = 128
_SESSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@+=")


# Words that say nothing about what a prompt is about ("now", "please", "yes"): a prompt of only these
# is about nothing in particular (no search), and the activity shift ignores them.  The store does not
# drop them from a search: its idf weighs them down, and "first" or "new" can be what a question asks.
FILLER_WORDS = frozenset(
    """now let lets please can could want need make use look also just like thing things fix sure thanks okay
    yes no one two new get got see next first last again still more some any all set up about what why should
    would go do does did done tell remember recall know""".split()
)


class Memory(NamedTuple):
    """One stored memory; ``content`` is already redacted and free of ``<private>`` spans."""

    id: int
    session: str  # Claude Code session id ("" when captured outside a session)
    project: str  # absolute project root (see project_root)
    kind: str  # "action" | "response" | "summary" | "note"
    tool: str  # tool name for actions ("Edit", "Bash", "mcp__x__y"), else ""
    files: List[str]  # paths the action touched (may be empty)
    content: str
    created: float  # epoch seconds


class Session(NamedTuple):
    """One Claude Code session as the store knows it."""

    id: str
    project: str
    started: float
    ended: Optional[float]
    status: str  # "active" | "completed"


def session_key(value: Any) -> str:
    """The session id as stored: ``value`` itself when it is a short plain id, else ``h-`` and its SHA-256 (shortened).

    The same input always gives the same key, so a session's memories stay
    together whatever its id looks like; a key passes through unchanged.
    Not text, or empty: "" (no session).
    """
    if not isinstance(value, str) or not value:
        return ""
    if len(value) <= MAX_SESSION_ID and all(char in _SESSION_CHARS for char in value):
        return value
    import hashlib

    return "h-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def project_root(cwd: str) -> str:
    """The git root above ``cwd`` (a ``.git`` dir, or a ``.git`` file in worktrees/submodules), else ``realpath(cwd)``.

    Memories are scoped per project so that work in one repository is not
    injected into another; any directory of a repository maps to the same root.
    """
    start = os.path.realpath(cwd or os.getcwd())
    current = start
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return start
        current = parent


OFF_MESSAGE = ('memory is turned off for this project ("memory": {"enabled": false} in its config, or TOOLSCRIPT_MEMORY=0); '
               'remove that to use it again')


def enabled(settings: Any, environ: Any = None) -> bool:
    """Whether memory is on: ``TOOLSCRIPT_MEMORY`` (0/1) first, then the settings' ``enabled`` (default on)."""
    flag = (os.environ if environ is None else environ).get("TOOLSCRIPT_MEMORY", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return False
    return flag in ("1", "true", "yes", "on") or bool(settings.get("enabled", True))
