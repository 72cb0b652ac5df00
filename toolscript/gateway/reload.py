"""Config changes apply live: the gateway watches every file its configuration comes from.

The files: toolscript's own (``~/.toolscript.json`` and ``./.toolscript.json``,
or the ``--config`` / ``TOOLSCRIPT_CONFIG`` list), whether they exist yet or
not; the trust store (approving the project's file with ``toolscript trust``
takes effect at once, and so does revoking it); and every file Claude Code's
servers are read from (``~/.claude.json``, its settings files, ``.mcp.json``
up to the root: ``claude_code.watched_files``).

How: one thread stats them every ``POLL_SECONDS`` (device, inode, size, mtime
and ctime; nothing is read while nothing changes).  A change is applied once the
files have stayed the same for ``QUIET_SECONDS`` (an editor's burst of writes,
or ``claude mcp add`` rewriting ``~/.claude.json``, is one reload), or after
``LONGEST_SETTLE_SECONDS`` of writes that do not stop.  The configuration is
then read again exactly as at start (``load_config``) and the gateway applies
the difference (``Gateway.apply_config``): a server whose entry changed in any
way is reconnected, a removed one stopped, a new one started, and the others
are left alone, their connections untouched.

A file that no longer parses keeps the last good configuration in use:
toolscript's own files (any ``ConfigError``), and Claude Code's JSON files,
which ``load_config`` would otherwise read as having no servers (a Claude Code
file that was already unreadable when the configuration in use was read is no
reason to keep it).  The problem, ``file:line:col``, is shown by ``/health``
(``configProblem``), ``gateway status`` and ``doctor`` until the file is fixed,
which is picked up like any other change.

Not watched: environment variables.  The gateway runs with the environment it
started with, so a newly exported variable needs a restart.
"""

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from toolscript import log
from toolscript.config import claude_code, trust
from toolscript.config import keys as configkeys
from toolscript.config.load import Config, ServerConfig, load_config
from toolscript.errors import UserError

logger = log.get("gateway.reload")

POLL_SECONDS = 1.0  # how often the watched files are stat'ed
QUIET_SECONDS = 0.3  # how long they must stay unchanged before a reload
LONGEST_SETTLE_SECONDS = 5.0  # files that keep changing are reloaded after this anyway
JOIN_SECONDS = 5.0  # how long stopping the watcher waits for a reload under way

# Gateway-wide keys a running gateway applies at once (Config attribute -> key as written).
# maxMessageBytes and claudeCodeServers change server entries, which apply like any
# other; suggestions and memory are read by the hooks on every event.
LIVE_SETTINGS = {"builtin_tools": "builtinTools", "workspace_roots": "workspaceRoots"}
# Keys that take effect only when the gateway restarts: MCP clients have listed the tools
# under the names the gateway started with, and the code-mode endpoint (/mcp/code) took
# requireIsolation when it was made (``exec`` reads it on every run).
RESTART_SETTINGS = {"mcp_tool_names": "mcpToolNames", "require_isolation": "requireIsolation"}

Signature = Optional[Tuple[int, int, int, int, int]]


@dataclass
class Changes:
    """What applying a new configuration changed."""

    added: List[str] = field(default_factory=list)
    changed: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)
    settings: List[str] = field(default_factory=list)  # gateway-wide keys applied live
    restart: List[str] = field(default_factory=list)  # keys whose new value waits for a restart

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.settings or self.restart)

    def describe(self) -> str:
        """``added a; reconnected b; removed c; applied builtinTools; restart to apply: mcpToolNames``."""
        parts = []
        for label, names in (("added", self.added), ("reconnected", self.changed), ("removed", self.removed),
                             ("applied", self.settings)):
            if names:
                parts.append(f"{label} {', '.join(names)}")
        if self.restart:
            parts.append(f"restart to apply: {', '.join(self.restart)}")
        return "; ".join(parts) or "no server or setting changed"


def diff_servers(old: Mapping[str, ServerConfig], new: Mapping[str, ServerConfig]) -> Changes:
    """Which servers of ``new`` are new or changed, and which of ``old`` are gone.

    Changed means any difference in the entry as read: what was written, what
    its ``${VAR}``s resolved to, where it came from (``ServerConfig`` equality).
    """
    changes = Changes()
    for name, server in new.items():
        if name not in old:
            changes.added.append(name)
        elif old[name] != server:
            changes.changed.append(name)
    changes.removed = [name for name in old if name not in new]
    return changes


def live_settings(running: Config, new: Config) -> List[str]:
    """The gateway-wide keys applied live whose value differs between ``running`` and ``new``."""
    return [key for attr, key in LIVE_SETTINGS.items() if getattr(running, attr) != getattr(new, attr)]


def restart_settings(started: Mapping[str, Any], new: Config) -> List[str]:
    """The keys that wait for a restart whose value in ``new`` differs from the one the gateway started with."""
    return [key for attr, key in RESTART_SETTINGS.items() if started.get(attr) != getattr(new, attr)]


def watched_files(named: Optional[List[str]], cwd: str, environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """Every file the configuration for ``cwd`` may be read from, existing or not (see the module docstring)."""
    env = os.environ if environ is None else environ
    files, _ = configkeys.select_paths(named, cwd, env)
    files.append(trust.store_path(env))
    files += claude_code.watched_files(cwd, env)
    return list(dict.fromkeys(files))


def signature(path: str) -> Signature:
    """What tells one version of a file from the next without reading it; None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def snapshot(files: Sequence[str]) -> Dict[str, Signature]:
    return {path: signature(path) for path in files}


def json_problem(path: str) -> Optional[str]:
    """Why a JSON file does not parse (``file:line:col: ...``), or None when it does or does not exist."""
    try:
        with open(path, "rb") as f:
            data = f.read(claude_code.MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > claude_code.MAX_FILE_BYTES or not data.strip():
        return None  # Claude Code's reader says why it skipped it; empty is no servers
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return f"{path}: not UTF-8 text"
    except json.JSONDecodeError as exc:
        return f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
    except (ValueError, RecursionError):
        return f"{path}: invalid JSON"
    return None if isinstance(document, dict) else f"{path}: not a JSON object"


class Settle:
    """Decides when changed files are due for a reload: once quiet for ``quiet`` seconds, or ``longest`` after the first change.

    Pure bookkeeping over signatures and times, so its rule is testable without a clock.
    """

    def __init__(self, loaded: Dict[str, Signature], quiet: float = QUIET_SECONDS, longest: float = LONGEST_SETTLE_SECONDS) -> None:
        self.loaded = loaded  # the files as they were when the configuration in use was read
        self.quiet = quiet
        self.longest = longest
        self._seen = loaded
        self._seen_at = 0.0
        self._first_change: Optional[float] = None

    @property
    def pending(self) -> bool:
        """A change has been seen and not yet reloaded."""
        return self._seen != self.loaded

    def due(self, now: Dict[str, Signature], at: float) -> bool:
        """Whether to reload now, given the files' signatures ``now`` at monotonic time ``at``."""
        if now == self.loaded:
            self._seen, self._first_change = now, None  # changed and changed back: nothing to do
            return False
        if now != self._seen:
            self._seen, self._seen_at = now, at
            if self._first_change is None:
                self._first_change = at
            return at - self._first_change >= self.longest
        return at - self._seen_at >= self.quiet

    def reloaded(self, files: Dict[str, Signature]) -> None:
        """The configuration was read again from the files as ``files`` says they were."""
        self.loaded, self._seen, self._first_change = files, files, None


class ConfigWatcher:
    """The thread that notices config changes and has the gateway apply them.

    Made before the configuration it watches is read (its first snapshot is
    taken here), so a file written while the gateway starts is not missed.
    It reads the configuration again as the gateway did at start: the same
    ``named`` files, working directory and environment.
    """

    def __init__(
        self,
        named: Optional[List[str]],
        cwd: str,
        environ: Optional[Mapping[str, str]] = None,
        *,
        poll: float = POLL_SECONDS,
        quiet: float = QUIET_SECONDS,
        longest: float = LONGEST_SETTLE_SECONDS,
    ) -> None:
        self.cwd = os.path.abspath(cwd)
        self.files = watched_files(named, self.cwd, environ)
        self.claude_files = claude_code.watched_files(self.cwd, os.environ if environ is None else environ)
        self.poll = poll
        self._settle = Settle(snapshot(self.files), quiet, longest)
        # Claude Code files that parse (or do not exist) now, and those that did when the configuration in use was read.
        self._parses: Set[str] = {path for path in self.claude_files if json_problem(path) is None}
        self._parsed = set(self._parses)
        self._load: Callable[[], Config] = lambda: load_config(named, cwd=self.cwd, environ=environ)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._gateway: Any = None

    def start(self, gateway: Any) -> None:
        """Watch on a thread of its own; ``gateway`` gets ``apply_config(config)`` and ``config_failed(problem)``."""
        self._gateway = gateway
        # A gateway logs warnings and up unless asked for more; its config changes are always worth a line.
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        self._thread = threading.Thread(target=self._run, name="config-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_SECONDS)

    def _run(self) -> None:
        while not self._stop.wait(self._settle.quiet if self._settle.pending else self.poll):
            try:
                self.check()
            except Exception:  # the watcher must outlive any one bad reload
                logger.exception("reloading the configuration failed")

    def check(self) -> bool:
        """Look at the files once; reload when a change is due.  True when a reload ran."""
        now = snapshot(self.files)
        if not self._settle.due(now, time.monotonic()):
            return False
        before = self._settle.loaded
        changed = [path for path in self.files if now.get(path) != before.get(path)]
        self._settle.reloaded(now)
        self.reload(changed)
        return True

    def reload(self, changed: Sequence[str] = ()) -> None:
        """Read the configuration again and have the gateway apply it, or keep the last good one and say why."""
        what = ", ".join(changed) or "a config file"
        try:
            config = self._load()
        except UserError as exc:  # ConfigError: every problem of toolscript's files, the first one shown
            self._failed(what, str(exc))
            return
        # Only a file that changed can have started or stopped parsing (~/.claude.json is large: parse it only then).
        looked_at = [path for path in self.claude_files if path in changed] if changed else self.claude_files
        self._parses = (self._parses - set(looked_at)) | {path for path in looked_at if json_problem(path) is None}
        if config.claude_code_servers:
            broken = [path for path in self.claude_files if path in self._parsed and path not in self._parses]
            if broken:
                self._failed(what, f"{json_problem(broken[0])} (Claude Code's file; fix it, or undo the last edit)")
                return
        self._parsed = set(self._parses)
        previous = getattr(self._gateway, "config", None)
        changes = self._gateway.apply_config(config)
        if changes:
            logger.info("config: %s changed: %s", what, changes.describe())
        else:
            logger.debug("config: %s changed: %s", what, changes.describe())
        known = set(previous.warnings) if previous is not None else set()
        for warning in config.warnings:
            if warning not in known:
                logger.warning("config: %s", warning)

    def _failed(self, what: str, problem: str) -> None:
        logger.warning("config: %s changed but cannot be used: %s; the last good configuration stays in use", what, problem)
        self._gateway.config_failed(problem)
