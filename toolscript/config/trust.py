"""Which project configuration files the user has approved, by their exact content.

A repository's own ``./.toolscript.json`` arrives with ``git clone``: trusting
it blindly would let whoever wrote it run commands as the user (a stdio
server's ``command``) and send the user's environment to any URL (a
``${VAR}`` in a header).  So, as direnv does for ``.envrc`` and Claude Code
for a project's ``.mcp.json``, a project file counts only after the user
approved that file's exact bytes with ``toolscript trust``; changed content
needs approval again.  The user's own files (``~/.toolscript.json``,
``--config``, ``TOOLSCRIPT_CONFIG``) are always trusted.

The same step covers a project's ``.mcp.json``, Claude Code's project-scope
servers: toolscript serves them once Claude Code approved them, or once the
user trusted that exact file here (``toolscript trust .mcp.json``).

Approvals live in ``<state dir>/trusted-configs.json`` (0600 in the private
state directory), keyed by the file's real path::

    {"version": 1, "files": {"/src/app/.toolscript.json": {"sha256": "...", "approved": "2026-12-07T17:50:48Z"}}}

A missing, unreadable or malformed store approves nothing: the safe reading.
This module is read on hot paths (the prompt hook asks it before using a
project file's ``suggestions``), so it costs one small JSON read.
"""

import hashlib
import json
import os
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from toolscript import paths
from toolscript.errors import UserError

STORE_NAME = "trusted-configs.json"
STORE_VERSION = 1
MAX_STORE_BYTES = 4 * 1024 * 1024  # thousands of projects; a larger file is not ours

TRUSTED = "trusted"
UNTRUSTED = "untrusted"  # never approved
CHANGED = "changed"  # approved once, the content differs now

# What the model is told and what every command prints: only the user can approve.
HOW_TO_APPROVE = "the user approves it in a terminal with `toolscript trust`"
# Claude Code's project-scope server file (toolscript.config.claude_code).
CLAUDE_CODE_FILE = ".mcp.json"


def is_claude_code_file(path: str) -> bool:
    """Whether ``path`` is a Claude Code ``.mcp.json`` (its servers get Claude Code's rules) rather than a toolscript file."""
    return os.path.basename(path) == CLAUDE_CODE_FILE


def digest(data: bytes) -> str:
    """The SHA-256 of a file's bytes, as the store keeps it."""
    return hashlib.sha256(data).hexdigest()


def store_path(environ: Optional[Mapping[str, str]] = None) -> str:
    return os.path.join(paths.state_dir_path(environ), STORE_NAME)


def key_of(path: str) -> str:
    """The store's key for a config file: its real path (a symlinked file is approved where its bytes live)."""
    return os.path.realpath(os.path.abspath(path))


def read_store(environ: Optional[Mapping[str, str]] = None) -> Tuple[Dict[str, Dict[str, Any]], Optional[str]]:
    """``({real path: entry}, problem)``: the approvals, and why the store could not be read (None when fine or absent)."""
    where = store_path(environ)
    try:
        with open(where, "rb") as f:
            data = f.read(MAX_STORE_BYTES + 1)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"{where}: cannot read the trust store: {exc.strerror or exc}"
    if len(data) > MAX_STORE_BYTES:
        return {}, f"{where}: the trust store is larger than {MAX_STORE_BYTES} bytes; not read"
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return {}, f"{where}: the trust store is not valid JSON; nothing counts as approved until `toolscript trust` rewrites it"
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, dict):
        return {}, f"{where}: the trust store has no \"files\" object; nothing counts as approved"
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, dict)}, None


def status(path: str, data: bytes, environ: Optional[Mapping[str, str]] = None) -> str:
    """``TRUSTED``, ``UNTRUSTED`` or ``CHANGED`` for a project file whose bytes are ``data``."""
    entry = read_store(environ)[0].get(key_of(path))
    if entry is None:
        return UNTRUSTED
    return TRUSTED if entry.get("sha256") == digest(data) else CHANGED


def server_names(data: bytes) -> List[str]:
    """The ``mcpServers`` names in a config file's bytes, read as plain JSON (nothing expanded); [] when unreadable."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return []
    entries = document.get("mcpServers") if isinstance(document, dict) else None
    return [str(name) for name in entries] if isinstance(entries, dict) else []


def approve(path: str, data: bytes, environ: Optional[Mapping[str, str]] = None) -> str:
    """Record ``data`` as the approved content of ``path``; return the store's path."""
    return _update(environ, lambda files: files.__setitem__(key_of(path), {
        "sha256": digest(data), "approved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }))


def revoke(path: str, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Forget the approval of ``path``; whether there was one."""
    key = key_of(path)
    if key not in read_store(environ)[0]:
        return False
    _update(environ, lambda files: files.pop(key, None))
    return True


def approvals(environ: Optional[Mapping[str, str]] = None) -> List[Dict[str, Any]]:
    """Every approval with what it says of the file today: ``current``, ``changed`` or ``missing``."""
    found, problem = read_store(environ)
    if problem:
        raise UserError(problem)
    listed = []
    for path, entry in sorted(found.items()):
        try:
            with open(path, "rb") as f:
                now = "current" if digest(f.read()) == entry.get("sha256") else "changed"
        except OSError:
            now = "missing"
        listed.append({"path": path, "sha256": entry.get("sha256"), "approved": entry.get("approved"), "state": now})
    return listed


def _update(environ: Optional[Mapping[str, str]], change: Any) -> str:
    """Read, change and atomically rewrite the store; a malformed store is kept beside it as ``.bak`` first."""
    where = os.path.join(paths.state_dir(environ), STORE_NAME)
    files, problem = read_store(environ)
    if problem and os.path.exists(where):
        try:
            os.replace(where, where + ".bak")
        except OSError as exc:
            raise UserError(f"{problem}; and it could not be set aside ({exc.strerror or exc}): move it away and try again") from exc
    change(files)
    document = {"version": STORE_VERSION, "files": dict(sorted(files.items()))}
    paths.write_private(where, json.dumps(document, indent=2) + "\n")
    return where
