"""Claude Code's configuration files in a scratch directory: the tests of serving the servers Claude Code has.

* ``Layout(root)``: ``home/`` (HOME), ``repo/`` (a git repository) and ``repo/sub/`` (the working
  directory), a private state directory; ``claude_json``, ``user_settings``, ``write_json`` write the
  files Claude Code reads; ``env(**extra)`` is an environment naming HOME and the state directory;
  ``load(**extra)`` is toolscript's configuration as read from ``repo/sub``.
* ``lock_entry(lock, log, *options)``: a Claude Code entry running tests/mcp_servers/lock_server.py.
"""

import json
import os
import sys
from typing import Any, Dict, Optional

from conftest import TESTS_DIR

LOCK_SERVER = os.path.join(TESTS_DIR, "mcp_servers", "lock_server.py")


def lock_entry(lock: str, log: Optional[str] = None, *options: str, **extra: Any) -> Dict[str, Any]:
    """``{"command": python, "args": [lock_server.py, --lock LOCK, (--log LOG), *options]}`` plus ``extra`` keys."""
    args = [LOCK_SERVER, "--lock", str(lock)] + (["--log", str(log)] if log else []) + list(options)
    entry: Dict[str, Any] = {"command": sys.executable, "args": args}
    entry.update(extra)
    return entry


def read_log(path: str) -> list:
    """The lock server's log: ``[(pid, event)]`` in order ([] before its first line)."""
    try:
        with open(path) as f:
            return [(int(pid), event) for pid, event in (line.split() for line in f if line.strip())]
    except FileNotFoundError:
        return []


class Layout:
    """A scratch HOME, a git repository with a subdirectory to work in, and a state directory."""

    def __init__(self, root: Any) -> None:
        self.root = os.path.realpath(str(root))
        self.home = os.path.join(self.root, "home")
        self.repo = os.path.join(self.root, "repo")
        self.cwd = os.path.join(self.repo, "sub")
        self.state = os.path.join(self.root, "state")
        for directory in (self.home, self.cwd, os.path.join(self.repo, ".git")):
            os.makedirs(directory, exist_ok=True)

    def write_json(self, path: str, data: Any) -> str:
        path = path if os.path.isabs(path) else os.path.join(self.root, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        return path

    def claude_json(self, user: Optional[Dict[str, Any]] = None, projects: Optional[Dict[str, Any]] = None,
                    where: Optional[str] = None) -> str:
        """``~/.claude.json`` (or ``where``): ``mcpServers`` = ``user``, ``projects`` = ``projects``."""
        document: Dict[str, Any] = {}
        if user is not None:
            document["mcpServers"] = user
        if projects is not None:
            document["projects"] = projects
        return self.write_json(where or os.path.join(self.home, ".claude.json"), document)

    def user_settings(self, settings: Dict[str, Any]) -> str:
        return self.write_json(os.path.join(self.home, ".claude", "settings.json"), settings)

    def env(self, **extra: str) -> Dict[str, str]:
        env = {"HOME": self.home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TOOLSCRIPT_STATE_DIR": self.state}
        env.update(extra)
        return env

    def load(self, cwd: Optional[str] = None, **extra: str) -> Any:
        from toolscript.config.load import load_config

        return load_config(cwd=cwd or self.cwd, environ=self.env(**extra))
