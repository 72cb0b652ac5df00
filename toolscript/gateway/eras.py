"""What protocol era each upstream server spoke last time, kept across gateway runs.

Connecting to a server of unknown era costs a probe: ``server/discover`` goes
first, and an older stdio server that ignores unknown requests answers only
``initialize`` after the probe has waited half the connect timeout (15 s by
default).  An ``http`` server that only speaks the legacy HTTP+SSE transport
costs a refused POST first.  The gateway runs once per Claude Code session, so
without a memory every session start would pay that again.

The memory is one small JSON file in the state directory, ``eras.json``:
``{fingerprint: {"era": era, "at": unix time}}`` where the fingerprint is a
hash of what identifies the server (type, command, args, URL) — a changed
command or URL is a new server — and the era is ``connect.session_era``'s
answer.  It is a hint only: a wrong one fails one connect attempt, the gateway
forgets it and the next attempt probes afresh.  A hint older than a week is
not used, so a server upgraded in place (``npx pkg@latest``) is probed again
and its newer era found.  A missing, unreadable or corrupt file means "no
hints".
"""

import hashlib
import json
import os
import threading
import time
from typing import Any, Dict, Optional

from toolscript import log, paths
from toolscript.errors import UserError
from toolscript.mcp.client.connect import ServerSettings

logger = log.get("gateway.eras")

FILE_NAME = "eras.json"
MAX_ENTRIES = 256  # servers remembered; the oldest-written beyond this are dropped
ERAS = ("modern", "handshake", "sse")
MAX_AGE = 7 * 24 * 3600.0  # seconds a hint is trusted

_lock = threading.Lock()  # one read-modify-write at a time within this gateway


def fingerprint(server: ServerSettings) -> str:
    """A stable name for what makes ``server`` the same server (not its label)."""
    identity = [server.type, server.command, list(server.args or []), server.url]
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def recall(server: ServerSettings) -> Optional[str]:
    """The era ``server`` spoke last time, or None when unknown."""
    return _fresh_era(_read().get(fingerprint(server)))


def remember(server: ServerSettings, era: Optional[str]) -> None:
    """Record ``era`` for ``server`` (None forgets it).  Never raises: a hint is not worth a failure."""
    key = fingerprint(server)
    with _lock:
        known = _read()
        if _fresh_era(known.get(key)) == era:
            return  # already known and fresh: no write on every connect
        known.pop(key, None)  # re-inserted last, so it is the newest
        if era is not None:
            known[key] = {"era": era, "at": int(time.time())}
        while len(known) > MAX_ENTRIES:
            known.pop(next(iter(known)))
        try:
            paths.write_private(os.path.join(paths.state_dir(), FILE_NAME), json.dumps(known, indent=0))
        except (OSError, ValueError, UserError) as exc:
            logger.debug("could not save %s: %s", FILE_NAME, exc)


def _fresh_era(entry: Optional[Dict[str, Any]]) -> Optional[str]:
    era, at = (entry or {}).get("era"), (entry or {}).get("at")
    if era not in ERAS or not isinstance(at, (int, float)) or not 0 <= time.time() - at <= MAX_AGE:
        return None
    return era


def _read() -> Dict[str, Dict[str, Any]]:
    try:
        with open(os.path.join(paths.state_dir_path(), FILE_NAME), encoding="utf-8") as f:
            data = json.loads(f.read(1 << 20))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, UserError) as exc:
        logger.debug("ignoring %s: %s", FILE_NAME, exc)
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)} if isinstance(data, dict) else {}
