"""Gateway state files: how commands and hooks find a running gateway.

A gateway serves one *session*: the Claude Code session it was started for
(``--session ID``, else ``CLAUDE_CODE_SESSION_ID``, else ``default``).  Its
files are named after it, in ``<state dir>/gateways/``: ``<session>.json``
holds the URL (which embeds the token), pid, log path and start time, written
atomically with mode 0600 in a 0700 directory; ``<session>.log`` is a detached
gateway's log.  ``is_our_gateway`` guards ``stop``: a pid from a stale file
may since have been given to an unrelated process.

``session_lock`` (an exclusive ``flock`` on ``<session>.lock`` next to the
state file) makes "is one live? -> start one -> wait for its state file" one
step: however many starts race, one gateway serves the session.  A detached
gateway inherits its parent's locked descriptor; ``adopt_lock`` checks that a
descriptor really is that lock before the child relies on it.

Lock files do not pile up: a cleanly stopped gateway removes its session's
(``remove_lock``), and a starting gateway sweeps those of sessions with no
live gateway that nobody holds and nobody has touched for a day
(``sweep_locks``).  A lock file is only ever removed by someone holding its
lock, and a start that waited on a file that was removed meanwhile locks the
file now at that path instead (``session_lock``), so removal never lets two
starts hold "the" lock at once.
"""

import contextlib
import fcntl
import json
import os
import stat
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional

from toolscript import paths
from toolscript.errors import UserError

DEFAULT_SESSION = "default"
# Set in a detached gateway's environment: the log file its output goes to.
LOG_VAR = "TOOLSCRIPT_GATEWAY_LOG"
STALE_LOCK_SECONDS = 86400.0  # a lock file untouched this long, of a session with no live gateway, is swept


def gateways_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    return paths.ensure_private_dir(os.path.join(paths.state_dir(environ), "gateways"))


def state_path(session: Optional[str], environ: Optional[Mapping[str, str]] = None) -> str:
    return os.path.join(gateways_dir(environ), _stem(session) + ".json")


def log_path(session: Optional[str], environ: Optional[Mapping[str, str]] = None) -> str:
    return os.path.join(gateways_dir(environ), _stem(session) + ".log")


def lock_path(session: Optional[str], environ: Optional[Mapping[str, str]] = None) -> str:
    return os.path.join(gateways_dir(environ), _stem(session) + ".lock")


def text_session(session: str) -> str:
    """``session`` as valid text: argv or hook input may carry undecodable bytes (surrogates)."""
    return session.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


@contextlib.contextmanager
def session_lock(session: Optional[str], timeout: float, environ: Optional[Mapping[str, str]] = None) -> Iterator[int]:
    """Hold the session's exclusive start lock (waiting up to ``timeout`` seconds for it); yields its descriptor."""
    path = lock_path(session, environ)
    deadline = time.monotonic() + timeout
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _wait_for_lock(fd, deadline, session, timeout)
        except BaseException:
            os.close(fd)
            raise
        if _is_named(fd, path):
            break
        # Removed while we waited (by the gateway that held it, stopping): the lock is the file there now.
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _wait_for_lock(fd: int, deadline: float, session: Optional[str], timeout: float) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            # flock has no timeout of its own; the holder is bounded by its start timeout.
            if time.monotonic() >= deadline:
                raise UserError(
                    f"another toolscript is still starting the gateway of session {text_session(session or DEFAULT_SESSION)!r} "
                    f"after {timeout:g}s; try again in a moment"
                ) from None
            time.sleep(0.05)


def _is_named(fd: int, path: str) -> bool:
    """True while ``path`` names the file ``fd`` is open on."""
    try:
        held, named = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def remove_lock(session: Optional[str], environ: Optional[Mapping[str, str]] = None) -> bool:
    """Remove the session's lock file unless someone holds it (a start under way); True if it went.

    A cleanly stopping gateway's last step: one file per session would otherwise pile up.
    """
    return _remove_if_free(lock_path(session, environ))


def sweep_locks(keep: Optional[str], environ: Optional[Mapping[str, str]] = None,
                older_than: float = STALE_LOCK_SECONDS) -> List[str]:
    """Remove the lock files left by sessions long gone; the paths removed.

    A starting gateway's chore (``keep`` is its own session): a lock file
    goes when nobody has touched it for ``older_than`` seconds, its session
    has no live gateway, and nobody holds its lock.  The lock files of
    gateways that crashed, or ran before their removal at a clean stop
    existed, would otherwise stay for ever.
    """
    folder = gateways_dir(environ)
    mine = _stem(keep) + ".lock"
    removed: List[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in sorted(names):
        if not name.endswith(".lock") or name == mine:
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < older_than:
            continue
        found = _read_state_file(os.path.join(folder, name[: -len(".lock")] + ".json"))
        if found is not None and _pid_of(found) > 0 and is_our_gateway(_pid_of(found)):
            continue
        if _remove_if_free(path):
            removed.append(path)
    return removed


def _remove_if_free(path: str) -> bool:
    """Unlink the lock file ``path`` while holding its lock (never a file someone else holds)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not _is_named(fd, path):
            return False
        os.unlink(path)  # under the lock: whoever waits on this file sees it is gone once it gets the lock
        return True
    except OSError:  # held (BlockingIOError), or gone already
        return False
    finally:
        os.close(fd)


def _pid_of(found: Mapping[str, Any]) -> int:
    try:
        return int(found.get("pid") or 0)
    except (TypeError, ValueError):
        return 0


def adopt_lock(session: Optional[str], fd: int, environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when ``fd`` is open on the session's lock file and already holds its lock.

    That is a descriptor inherited from the start that locked it (the lock
    belongs to the open file, which parent and child share).  A descriptor of
    another file, or of the lock file while the lock is free or held through
    another open, is refused and left alone, so a wrong or stale number never
    lets a start skip the lock.  On True the caller owns ``fd``: closing it
    (and the parent's copy) lets the lock go.
    """
    try:
        held = os.fstat(fd)
        path = lock_path(session, environ)
        named = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(held.st_mode) or (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
        return False
    # Someone holds the lock if a fresh open of the file cannot take it ...
    probe = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False  # free: nobody handed a held lock down
    except BlockingIOError:
        pass
    finally:
        os.close(probe)
    # ... and that someone is ``fd``'s open file if locking through it succeeds.
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    os.set_inheritable(fd, False)  # nothing this gateway starts may hold the lock on
    return True


def _stem(session: Optional[str]) -> str:
    # Valid text first, so a raw argv name and its sanitised copy name the same files.
    return paths.safe_name(text_session(session or DEFAULT_SESSION))


def write_state(session: Optional[str], state: Dict[str, Any], environ: Optional[Mapping[str, str]] = None) -> str:
    path = state_path(session, environ)
    paths.write_private(path, json.dumps(state, indent=2) + "\n")
    return path


def read_state(session: Optional[str], environ: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The session's state, or None when there is none (or it is unreadable)."""
    return _read_state_file(state_path(session, environ))


def _read_state_file(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("url"), str) else None


def remove_state(session: Optional[str], environ: Optional[Mapping[str, str]] = None, *, pid: Optional[int] = None) -> None:
    """Delete the state file (only if it still names ``pid``, when given)."""
    path = state_path(session, environ)
    if pid is not None:
        current = read_state(session, environ)
        if current is not None and current.get("pid") != pid:
            return  # a newer gateway took over this session
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def new_state(url: str, pid: int, session: Optional[str], log: Optional[str], workspace: str) -> Dict[str, Any]:
    return {
        "url": url,
        "pid": pid,
        "session": text_session(session) if session else DEFAULT_SESSION,
        "log": log,
        "workspace": workspace,
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs.  A zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, but not ours to signal
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # The state letter follows the parenthesised command name.
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) is all we can know


def is_our_gateway(pid: int) -> bool:
    """True if ``pid`` runs a toolscript gateway (checked on its command line where /proc exists)."""
    if not pid_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return True  # no /proc (macOS): the authenticated /health pid check is the guard
    words = [os.path.basename(a.decode("utf-8", "replace")) for a in argv]
    return "gateway" in words and "start" in words and any("toolscript" in w for w in words)
