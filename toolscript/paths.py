"""Where toolscript keeps per-user files, and how it writes them safely.

State (gateway state files and logs) lives in ``$TOOLSCRIPT_STATE_DIR``, else
``$XDG_STATE_HOME/toolscript``, else ``~/.local/state/toolscript`` (empty or
relative ``XDG_STATE_HOME``/``HOME`` are ignored).  The
directory is private (0700) and must belong to the current user: another
user's directory would let them plant a gateway URL for us to trust.  Files
are written atomically (temp file + rename) with mode 0600.
"""

import os
import re
import sys
from typing import Dict, List, Mapping, Optional, Tuple, Union

from toolscript.errors import UserError


def state_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """The private per-user state directory, created if needed."""
    return ensure_private_dir(state_dir_path(environ))


def state_dir_path(environ: Optional[Mapping[str, str]] = None) -> str:
    """Where the state directory is, without creating or checking it (``doctor`` only looks).

    An empty or relative ``XDG_STATE_HOME`` or ``HOME`` is ignored (the XDG
    spec calls relative paths invalid; ``HOME=""`` would otherwise mean the
    current directory or ``/``): the user database's home is used instead.
    """
    env = os.environ if environ is None else environ
    base = env.get("TOOLSCRIPT_STATE_DIR")
    if base:
        return base
    xdg = env.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "toolscript")
    return os.path.join(home(env), ".local", "state", "toolscript")


def home(env: Mapping[str, str]) -> str:
    """``$HOME`` if it is an absolute path, else the user database's home directory (the state and memory directories' base)."""
    found = env.get("HOME", "")
    if os.path.isabs(found):
        return found
    try:
        import pwd

        found = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        found = ""
    if not os.path.isabs(found):
        raise UserError(
            "no usable home directory for toolscript's state: HOME is empty or relative and the user database "
            "has none; set TOOLSCRIPT_STATE_DIR to a writable directory"
        )
    return found


def ensure_private_dir(path: str) -> str:
    """Create ``path`` (0700) or check an existing one is ours; return it."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except OSError as exc:
        raise UserError(f"cannot create the state directory {path}: {exc.strerror or exc} (set TOOLSCRIPT_STATE_DIR to a writable directory)") from exc
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise UserError(f"the state directory {path} belongs to another user; refusing to use it (set TOOLSCRIPT_STATE_DIR)")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def write_private(path: str, data: Union[str, bytes], mode: Optional[int] = None) -> None:
    """Write ``data`` to ``path`` atomically (a temp file beside it, fsync, rename): mode 0600 unless ``mode`` is given.

    A symbolic link at ``path`` is replaced by the file, never followed.  A caller that means to write a
    link's target resolves it first and checks where it leads (``toolscript setup`` keeps to the project).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(os.path.abspath(path))
    import tempfile  # here: it costs a few ms to import, and most commands never write a file

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)  # mkstemp creates 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def safe_name(text: str) -> str:
    """A string usable as a file name (session ids come from outside)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:120].strip(".")
    return cleaned or "default"


def toolscript_command() -> Tuple[List[str], Dict[str, str]]:
    """How to run this same toolscript again: (argv prefix, extra environment).

    From the zipapp that is ``python3 toolscript.pyz``; from a checkout or an
    installed package it is ``python3 -m toolscript`` with the package's parent
    directory on PYTHONPATH.
    """
    import toolscript

    package_dir = os.path.dirname(os.path.abspath(toolscript.__file__))
    parent = os.path.dirname(package_dir)
    # -S: toolscript is stdlib-only, and site (with any .pth files it runs)
    # can cost tens of milliseconds on every start.
    import zipfile  # here, not at the top: it costs ~7 ms to import and only this needs it

    if os.path.isfile(parent) and zipfile.is_zipfile(parent):
        return [sys.executable, "-I", "-S", parent], {}
    pythonpath = os.pathsep.join(p for p in (parent, os.environ.get("PYTHONPATH", "")) if p)
    return [sys.executable, "-S", "-m", "toolscript"], {"PYTHONPATH": pythonpath}


def claude_config_dir(env: Mapping[str, str]) -> str:
    """Claude Code's config directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    explicit = env.get("CLAUDE_CONFIG_DIR")
    if explicit:
        return os.path.expanduser(explicit)
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")


def seconds_since_mark(path: Optional[str]) -> Optional[float]:
    """Seconds since :func:`mark` last touched ``path`` (its mtime), or None when it never did (or cannot tell)."""
    if not path:
        return None
    try:
        import time

        return time.time() - os.stat(path).st_mtime
    except OSError:
        return None


def mark(path: Optional[str]) -> None:
    """Record "now" in ``path``'s mtime (creating it and its 0700 directory): per-session rate limits use it."""
    if not path:
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "a"):
            pass
        os.utime(path, None)
    except OSError:
        pass
