"""Memory across sessions (issue 11): the records everyone shares, and which project a cwd belongs to.

Kept light on purpose: hooks import this on every event, so nothing here opens
the database or imports more than the standard library's basics.  The store is
``toolscript.memory.store``; what gets injected is ``toolscript.memory.context``;
what gets recorded is ``toolscript.memory.capture``.
"""

import os
from typing import List, NamedTuple, Optional


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
