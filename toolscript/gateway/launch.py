"""Starting and stopping per-session gateways as background processes.

Both ``toolscript gateway start --detach|stop`` and the Claude Code hooks use
these functions, so a session's gateway is found, reused, started and
stopped the same way whoever asks.  A gateway counts as *live* only if its
state file's pid answers ``/health`` with that same pid over the token URL:
a stale file or a recycled pid is never mistaken for it, and ``stop`` never
signals a process that is not a toolscript gateway.

``start_or_reuse`` holds the session's start lock across "is one live? ->
start one -> wait for its state file", so racing starts (two shells, a hook
and a shell) end with exactly one gateway, which all of them report.  The
detached child gets the locked descriptor itself (``--lock-fd``, see
``daemon``) and holds the lock until its state file is written.
"""

import os
import re
import signal
import subprocess
import time
from typing import Any, Dict, List, Optional, Tuple

from toolscript import paths
from toolscript.errors import UserError
from toolscript.gateway import state
from toolscript.gateway.client import GatewayClient, GatewayUnavailable, redact_text

READY_TIMEOUT = 15.0
LOG_KEEP_BYTES = 1024 * 1024  # a session log larger than this is cut back at the next start


def start_or_reuse(session: Optional[str], *, timeout: float = READY_TIMEOUT, probe_timeout: float = 2.0, **start: Any) -> Tuple[Dict[str, Any], bool]:
    """The session's live gateway (and True), or a new detached one (and False).

    One gateway per session however many callers race: the check and the
    start happen under the session's lock, and a caller that waited for the
    lock finds the gateway its predecessor started.  ``start`` are
    ``start_detached``'s keyword arguments.
    """
    with state.session_lock(session, timeout + probe_timeout) as lock_fd:
        running = live_gateway(session, probe_timeout)
        if running is not None:
            return running, True
        return start_detached(session, timeout=timeout, lock_fd=lock_fd, **start), False


def live_gateway(session: Optional[str], probe_timeout: float = 2.0) -> Optional[Dict[str, Any]]:
    """The state of a healthy gateway serving ``session``, or None."""
    found = state.read_state(session)
    if not found or not state.pid_alive(int(found.get("pid") or 0)):
        return None
    try:
        health = GatewayClient(found["url"], timeout=probe_timeout).get("/health")
    except UserError:
        return None
    return found if isinstance(health, dict) and health.get("pid") == found.get("pid") else None


def start_detached(
    session: Optional[str],
    *,
    lock_fd: int,
    workspace: str,
    config_paths: Optional[List[str]] = None,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
    cwd: Optional[str] = None,
    timeout: float = READY_TIMEOUT,
    exit_with: Optional[int] = None,
) -> Dict[str, Any]:
    """Start a gateway in the background; return its state once its port is open.

    The caller holds the session's lock (``start_or_reuse``) through
    ``lock_fd``: the child inherits that descriptor and holds the lock until
    it has written its state file.

    ``cwd`` is where the gateway runs, so ``./.toolscript.json`` there is read.
    ``exit_with`` is a pid (Claude Code's) whose exit also ends the gateway.
    Raises ``UserError`` with the last line of its log if it does not start.
    """
    argv, extra_env = paths.toolscript_command()
    argv += ["gateway", "start", "--port", str(port), "--host", host, "--workspace", os.path.abspath(workspace)]
    if allow_remote:
        argv.append("--allow-remote")
    if session:
        argv += ["--session", session]
    if config_paths:
        argv += ["--config", ",".join(config_paths)]
    if exit_with:
        argv += ["--exit-with", str(exit_with)]
    argv += ["--lock-fd", str(lock_fd)]
    log_file = state.log_path(session)
    _trim(log_file)
    env = dict(os.environ, **extra_env)
    env[state.LOG_VAR] = log_file
    with open(log_file, "ab") as log:
        os.chmod(log_file, 0o600)
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=cwd, start_new_session=True, close_fds=True,
            pass_fds=(lock_fd,),
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = state.read_state(session)
        if found and found.get("pid") == child.pid:
            return found
        if child.poll() is not None:
            raise UserError(f"the gateway exited with status {child.returncode} while starting: {log_tail(log_file)}; its log: {log_file}")
        time.sleep(0.01)
    child.terminate()
    raise UserError(f"the gateway did not start within {timeout:g}s (log: {log_file})")


def stop(session: Optional[str], url: Optional[str] = None, *, wait: float = 10.0, force: bool = True) -> Optional[int]:
    """Stop the gateway of ``session`` (or at ``url``); return its pid, or None if none was running.

    Sends SIGTERM and waits up to ``wait`` seconds for the exit; then, with
    ``force``, SIGKILLs it.  Without ``force`` the gateway is left to finish
    shutting its servers down on its own (SIGKILL would orphan them: they run
    in process groups of their own).
    """
    found = state.read_state(session)
    url = url or (found or {}).get("url")
    if not url:
        return None
    pid = None
    try:
        pid = GatewayClient(url, timeout=min(3.0, wait or 1.0)).get("/health").get("pid")
    except (GatewayUnavailable, UserError):
        pass
    ours = found is not None and found.get("url") == url
    if pid is None and found is not None and ours and state.is_our_gateway(int(found["pid"])):
        pid = int(found["pid"])  # alive but not answering: still ours to stop
    if pid is None:
        # Only the state file of the URL that is dead is stale; a different,
        # outdated URL must not cost a live gateway its state file.
        if ours:
            state.remove_state(session)
        return None
    if not state.is_our_gateway(pid):
        raise UserError(f"process {pid} is not a toolscript gateway; not stopping it")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while wait and state.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if force and wait and state.pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    if found and found.get("pid") == pid:
        state.remove_state(session, pid=pid)
    return pid


def log_tail(path: str) -> str:
    """The last line of a log, for error messages: without a token, and without the child's own "toolscript: error:"."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 2000))
            lines = f.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return "no log"
    if not lines:
        return "no output"
    # The parent prints its own "toolscript: error:"; the child's prefix would double it.
    return redact_text(re.sub(r"^toolscript: (error|warning): ", "", lines[-1]))


def _trim(path: str) -> None:
    """Keep the end of an overgrown session log (it is appended to across restarts)."""
    try:
        if os.path.getsize(path) <= LOG_KEEP_BYTES:
            return
        with open(path, "rb") as f:
            f.seek(-LOG_KEEP_BYTES // 2, os.SEEK_END)
            tail = f.read()
        paths.write_private(path, tail)
    except OSError:
        pass
