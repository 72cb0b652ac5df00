"""The gateway in Claude Code's SessionStart and SessionEnd hooks: a Claude Code session's own gateway starts and stops.

"Session" here is Claude Code's session: the hook event's ``session_id``
names the gateway (``toolscript gateway start --session ID``) and its state
file, so every hook of that Claude Code session finds the same gateway.

SessionStart gives the session its own gateway (reusing a live one of the
same session on resume/clear/compact), tied to Claude Code's pid so it cannot
outlive a crashed session, and exports ``TOOLSCRIPT_GATEWAY_URL`` and the
plugin's ``bin/`` on ``PATH`` through ``CLAUDE_ENV_FILE`` so the skill's
``toolscript ...`` commands work with nothing installed but Python 3.  It
returns as soon as the gateway's port is open; MCP servers connect in the
background.  If the gateway cannot start (say, the config is invalid) the
session goes on without it and the model is told why in one line.

SessionEnd asks that gateway to stop (SIGTERM, after checking the pid really
is it) and returns within Claude Code's ~1.5 s SessionEnd budget; the gateway
finishes stopping its servers on its own.
"""

import os
import shlex
import sys
from typing import Any, Dict, List, Optional

from toolscript import paths
from toolscript.claude_code import hooks
from toolscript.errors import UserError
from toolscript.gateway import launch

START_TIMEOUT = 8.0  # seconds for the gateway's port to open; the hook's own timeout is 10
END_WAIT = 1.0


def session_start(event: hooks.Event) -> Optional[Dict[str, Any]]:
    log = hooks.logger()
    session = event["session_id"] or None
    cwd = event["cwd"]
    restart = f"toolscript gateway start --detach --session {shlex.quote(session or 'default')}"
    problem = event.get(hooks.INPUT_PROBLEM)
    if problem is None and not os.path.isdir(cwd):
        problem = f"the session's working directory {cwd!r} does not exist"
    if problem:
        # Starting anyway would guess at the workspace; say what happened instead of staying silent.
        log.error("session %s: gateway not started: %s", session, problem)
        return hooks.additional_context(
            "SessionStart",
            f"toolscript: the gateway for this session was not started because {problem}. "
            f"Its tools are unavailable; start it from the project directory with: {restart}",
        )
    exports: List[str] = []
    bin_dir = _bin_dir()
    if bin_dir:
        exports.append(f'export PATH={shlex.quote(bin_dir)}:"$PATH"')
    failure = None
    try:
        parent = os.environ.get("CLAUDE_PID", "")
        info, reused = launch.start_or_reuse(
            session, workspace=cwd, cwd=cwd, timeout=START_TIMEOUT, probe_timeout=1.0,
            exit_with=int(parent) if parent.isdigit() else None,
        )
        if reused:
            log.info("session %s: reusing gateway pid %s (%s)", session, info["pid"], event.get("source"))
        else:
            log.info("session %s: started gateway pid %s", session, info["pid"])
        exports.append(f"export TOOLSCRIPT_GATEWAY_URL={shlex.quote(info['url'])}")
    except UserError as exc:
        failure = str(exc)
        log.error("session %s: gateway did not start: %s", session, failure)
    _update_env_file(os.environ.get("CLAUDE_ENV_FILE"), exports)
    if failure:
        return hooks.additional_context(
            "SessionStart",
            f"toolscript: the gateway for this session could not start ({failure}). "
            f"Its tools are unavailable until the problem is fixed and it is started with: {restart}",
        )
    note = untrusted_note(cwd)
    if note:
        log.info("session %s: %s", session, note)
        return hooks.additional_context("SessionStart", note)
    return None


def untrusted_note(cwd: str) -> Optional[str]:
    """One line for the model when the project's .toolscript.json awaits the user's approval, else None."""
    from toolscript.config import keys as configkeys
    from toolscript.config import trust

    path = configkeys.project_path(None, cwd, os.environ)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    state = trust.status(path, data)
    if state == trust.TRUSTED:
        return None
    names = trust.server_names(data)
    what = f"servers {', '.join(names)}" if names else "settings"
    why = "changed since the user approved it" if state == trust.CHANGED else "is not approved yet"
    return (
        f"toolscript: this project's .toolscript.json ({what}) {why}, so toolscript ignores it; "
        f"only the user can approve it, by running `toolscript trust` in a terminal (do not run it yourself; tell the user if those servers are needed)."
    )


def session_end(event: hooks.Event) -> None:
    session = event["session_id"] or None
    try:
        pid = launch.stop(session, wait=END_WAIT, force=False)
    except UserError as exc:
        hooks.logger().warning("session %s: %s", session, exc)
        return None
    hooks.logger().info("session %s: %s", session, f"stopped gateway pid {pid}" if pid else "no gateway to stop")
    return None


def _bin_dir() -> Optional[str]:
    """Where the ``toolscript`` launcher lives: the plugin's bin/, or the running zipapp's directory."""
    root = os.environ.get("CLAUDE_PLUGIN_ROOT")
    if root and os.path.isdir(os.path.join(root, "bin")):
        return os.path.join(root, "bin")
    argv0 = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return os.path.dirname(argv0) if argv0.endswith(".pyz") else None


def _update_env_file(path: Optional[str], exports: List[str]) -> None:
    """Add our export lines to CLAUDE_ENV_FILE once: resume/clear/compact must not pile them up.

    A new gateway URL replaces the old line rather than adding a second one.
    """
    if not path or not exports:
        return
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        lines = []
    keep = [line for line in lines if not line.startswith("export TOOLSCRIPT_GATEWAY_URL=") and line not in exports]
    paths.write_private(path, "\n".join(keep + exports) + "\n")
