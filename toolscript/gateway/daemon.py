"""The gateway process: serve one session's gateway until a signal says stop.

A gateway's *session* is the Claude Code session it serves: ``--session ID``,
else ``CLAUDE_CODE_SESSION_ID``, else ``default``.  It names the gateway's
state file, log and start lock (``state``), so each Claude Code session finds
its own gateway.

``toolscript gateway start`` runs ``serve`` in the foreground, and so does the
detached child ``launch.start_detached`` starts.  Under the session's start
lock (``StartLock``) it checks that no gateway of the session is live, binds
the port, writes the state file, and only then lets the lock go: however many
starts race, the session ends up with one gateway.  A detached child holds the
lock its parent took and checked under: the parent passes the locked
descriptor itself (``--lock-fd``), and the child relies on it only after
checking that it is open on the session's lock file and already holds the
lock; any other start waits for the lock and checks for itself.  An
environment variable or an option alone can claim nothing.

Config changes apply live: ``serve`` is handed a ``reload.ConfigWatcher``
made before the configuration was read, and the gateway applies what it
notices until it stops.

Stopping: SIGTERM, SIGINT or SIGHUP (``StopSignals``), or the exit of the
``--exit-with`` process (Claude Code's).  The gateway then closes its HTTP
server, stops its servers within ``SHUTDOWN_GRACE`` seconds (or kills them),
removes its state file and lock file, and, when it ran detached, its session log.
"""

import contextlib
import functools
import os
import select
import signal
import threading
import time
from typing import Any, Callable, Dict, Optional

from toolscript.config.load import Config
from toolscript.errors import UserError
from toolscript.gateway import state
from toolscript.gateway.launch import READY_TIMEOUT

SHUTDOWN_GRACE = 15.0  # seconds a stopping gateway may take before it exits regardless
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


class StartLock:
    """The session's start lock, held from construction until ``release``.

    ``handed_down`` is True when the lock is the one a detached gateway's
    parent took and passed down as ``inherited_fd`` (``state.adopt_lock``
    confirms it); that parent has already found no gateway live.  Any other
    start waits for the lock itself.
    """

    def __init__(self, session: Optional[str], inherited_fd: Optional[int] = None) -> None:
        self._held = contextlib.ExitStack()
        self.handed_down = False
        if inherited_fd is not None and state.adopt_lock(session, inherited_fd):
            self.handed_down = True
            self._held.callback(os.close, inherited_fd)  # the lock goes once the parent's copy is closed too
        else:
            self._held.enter_context(state.session_lock(session, READY_TIMEOUT))

    def release(self) -> None:
        """Let the lock go (again: nothing)."""
        self._held.close()

    def __enter__(self) -> "StartLock":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()


def serve(
    config: Config,
    session: Optional[str],
    *,
    workspace: str,
    host: str,
    port: int,
    exit_with: Optional[int] = None,
    release_lock: Optional[Callable[[], None]] = None,
    on_listening: Optional[Callable[[Dict[str, Any], Any], None]] = None,
    models: Any = None,
    watcher: Optional[Any] = None,
) -> int:
    """Serve until a stop signal (or ``exit_with``'s process ending); return the exit status.

    ``release_lock`` lets the session's start lock go: called once the state
    file is written, so the next start finds this gateway live.
    ``on_listening(state, gateway)`` tells the user where the gateway listens;
    it is not called in a detached gateway, whose output is its log (the
    token-bearing URL stays out of it: the parent reads the state file).
    ``models``: the session's warm model (``warm_model.WarmModels``), served
    at ``/model``; its key goes into the state file.
    ``watcher`` (a ``reload.ConfigWatcher``) applies config changes while it serves.
    """
    from toolscript.gateway.http_api import serve as serve_http
    from toolscript.gateway.service import Gateway, kill_child_process_groups

    workspace = os.path.abspath(workspace)
    # Before anything starts: a stop signal during start-up is noted, and the
    # loop below then stops at once and cleanly (the default action would kill
    # us and leave the state file and the servers behind).
    signals = StopSignals()
    gateway = Gateway(config, workspace=workspace, session=session)
    try:
        server, _thread = serve_http(gateway, host, port, models=models)
    except OSError as exc:
        signals.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port, or omit it") from exc
    gateway.start()
    if models is not None:
        models.begin()
    if watcher is not None:
        gateway.watch(watcher)
    log_file = os.environ.get(state.LOG_VAR)
    info = state.new_state(server.url, os.getpid(), session, log_file, workspace)
    if models is not None:
        info["modelKey"] = models.key
    state.write_state(session, info)
    if release_lock is not None:
        release_lock()
    state.sweep_locks(session)  # lock files of sessions long gone
    if not log_file and on_listening is not None:
        on_listening(info, gateway)
    # Without --exit-with nothing but a signal stops us.
    wait_for_stop(signals, functools.partial(state.pid_alive, exit_with) if exit_with else None)
    # A wedged upstream must not keep a stopping gateway alive.
    threading.Thread(target=_exit_after, args=(SHUTDOWN_GRACE, gateway), daemon=True).start()
    server.shutdown_all()
    gateway.stop()
    kill_child_process_groups()  # a server still mid-handshake must not outlive us
    state.remove_state(session, pid=os.getpid())
    state.remove_lock(session)
    if log_file and log_file == state.log_path(session):
        _remove_log(log_file)
    return 0


class StopSignals:
    """SIGTERM, SIGINT and SIGHUP as something the main thread waits for.

    A Python signal handler runs in the main thread between two bytecodes,
    possibly while that thread holds a lock (an Event's, logging's, a buffered
    file's); a handler that takes such a lock again hangs the process for good,
    and a gateway that never exits keeps its servers alive too.  So the handler
    here does nothing at all: Python's C-level handler writes the signal's
    number to a pipe (``signal.set_wakeup_fd``), and :meth:`wait` selects on it.
    Blocking the signals and ``sigwait`` would be the other lock-free way, but
    a blocked mask is inherited by every server process we start.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)  # set_wakeup_fd needs it; the C handler must never block
        self._previous_fd = signal.set_wakeup_fd(self._write)
        self._previous = {}
        for signum in _STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, _note_only)

    def wait(self, timeout: float) -> bool:
        """True once a stop signal has arrived; False after ``timeout`` seconds without one."""
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self._read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return False
            try:
                numbers = os.read(self._read, 512)
            except (BlockingIOError, InterruptedError):
                numbers = b""
            # Another signal with a Python handler (none of ours) wakes us too: keep waiting.
            if any(number in _STOP_SIGNALS for number in numbers):
                return True

    def close(self) -> None:
        """Give the signals back to the handlers they had before, and close the pipe."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read)
        os.close(self._write)


def _note_only(signum: int, frame: Any) -> None:
    """The stop signals' Python handler: nothing, the wake-up byte is the message (see StopSignals)."""


def wait_for_stop(signals: StopSignals, owner_alive: Optional[Callable[[], bool]] = None, poll: float = 0.5) -> None:
    """Return when a stop signal arrives, or when ``owner_alive`` (checked every ``poll`` seconds) says no."""
    while not signals.wait(poll):
        if owner_alive is not None and not owner_alive():
            return  # the session that owned us is gone without saying goodbye


def _remove_log(path: str) -> None:
    """A cleanly stopped gateway's session log goes: one per session would pile up (a failed start's log stays)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _exit_after(seconds: float, gateway: Any) -> None:
    time.sleep(seconds)
    gateway.kill_children()  # os._exit would orphan them: they run in process groups of their own
    os._exit(1)
