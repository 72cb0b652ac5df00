"""The tool lists of servers taken from Claude Code's configuration, kept across sessions.

Claude Code runs its own copy of each such server, and a stateful server
(an exclusive lock, a fixed port, a browser profile) breaks when a second copy
runs beside it.  So toolscript starts one only to list its tools, and keeps the
list here: the next gateway, ``search`` and the stubs use it without starting
the server.  Entries are keyed by the SHA-256 of the server's entry as written
(``Imported.key``): a changed entry is listed afresh.  A call that finds the
server's tools changed stores the new list.

The file is ``<state dir>/claude-code-tools.json`` (0600), rewritten atomically
under a lock so two gateways storing at once both land::

    {"version": 1, "entries": {"<sha256>": {"name": "github", "listedAt": 1796674367.8,
        "tools": [...], "serverInfo": {...}, "protocolVersion": "2025-06-18", "instructions": null}}}

A missing, unreadable or malformed file holds nothing: the server is listed again.
"""

import fcntl
import json
import os
import time
from typing import Any, Dict, List, Mapping, Optional

from toolscript import log, paths
from toolscript.config.load import ServerConfig
from toolscript.errors import UserError

logger = log.get("gateway.toolcache")

CACHE_NAME = "claude-code-tools.json"
CACHE_VERSION = 1
MAX_ENTRIES = 256  # servers across every project a user opens; the least recently listed go first
MAX_CACHE_BYTES = 32 * 1024 * 1024


def cache_path(environ: Optional[Mapping[str, str]] = None) -> str:
    return os.path.join(paths.state_dir_path(environ), CACHE_NAME)


def load(server: ServerConfig, environ: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The cached listing of ``server`` (``tools``, ``serverInfo``, ``protocolVersion``, ``instructions``, ``listedAt``), or None."""
    if server.imported is None or not server.imported.key:
        return None
    found = _read(cache_path(environ)).get(server.imported.key)
    if not isinstance(found, dict) or not isinstance(found.get("tools"), list):
        return None
    if not all(isinstance(tool, dict) and isinstance(tool.get("name"), str) for tool in found["tools"]):
        return None
    return found


def store(server: ServerConfig, tools: List[Dict[str, Any]], *, server_info: Optional[Dict[str, Any]] = None,
          protocol_version: Optional[str] = None, instructions: Optional[str] = None,
          environ: Optional[Mapping[str, str]] = None) -> None:
    """Keep ``tools`` (the whole list the server gave) as ``server``'s listing; never raises (a cache is optional)."""
    if server.imported is None or not server.imported.key:
        return
    listing = {"name": server.name, "listedAt": time.time(), "tools": tools, "serverInfo": server_info or {},
               "protocolVersion": protocol_version, "instructions": instructions}
    try:
        directory = paths.state_dir(environ)
        where = os.path.join(directory, CACHE_NAME)
        with open(os.path.join(directory, CACHE_NAME + ".lock"), "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            entries = _read(where)
            entries[server.imported.key] = listing
            if len(entries) > MAX_ENTRIES:
                oldest = sorted(entries, key=lambda key: _listed_at(entries[key]))
                for key in oldest[: len(entries) - MAX_ENTRIES]:
                    del entries[key]
            paths.write_private(where, json.dumps({"version": CACHE_VERSION, "entries": entries}, separators=(",", ":")))
    except (OSError, ValueError, TypeError, UserError) as exc:  # UserError: no usable state directory
        logger.warning("%s: could not cache its tool list: %s", server.name, exc)


def _listed_at(entry: Any) -> float:
    value = entry.get("listedAt") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) else 0.0


def _read(where: str) -> Dict[str, Any]:
    try:
        with open(where, "rb") as f:
            data = f.read(MAX_CACHE_BYTES + 1)
    except OSError:
        return {}
    if len(data) > MAX_CACHE_BYTES:
        return {}
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    entries = document.get("entries") if isinstance(document, dict) and document.get("version") == CACHE_VERSION else None
    return dict(entries) if isinstance(entries, dict) else {}
