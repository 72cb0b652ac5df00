"""``toolscript gateway start|status|stop``: run and manage the per-session gateway."""

import argparse
import contextlib
import os
import select
import shlex
import signal
import sys
import threading
import time
from typing import Callable, Optional

from toolscript.cli.args import add_action
from toolscript.errors import UserError
from toolscript.cli.output import echo, format_table, print_json

SUMMARY = "start, inspect or stop the gateway"
SHUTDOWN_GRACE = 15.0  # seconds a stopping gateway may take before it exits regardless
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
DESCRIPTION = """\
The gateway serves the built-in tools and every configured MCP server behind
one loopback URL that carries a fresh random token:
TOOLSCRIPT_GATEWAY_URL=http://127.0.0.1:PORT/t/TOKEN.  It offers a JSON API for
toolscript's own commands and a standard MCP endpoint at $TOOLSCRIPT_GATEWAY_URL/mcp.

examples:
  toolscript gateway start                       run in the foreground (Ctrl-C stops it)
  eval "$(toolscript gateway start --detach)"    run in the background, export its URL
  toolscript gateway status                      is it up? which servers are ready?
  toolscript gateway stop                        stop the gateway of this session
  toolscript gateway start --detach --session S  one gateway per Claude Code session
"""



def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    start = add_action(
        actions, "start", common, "start a gateway",
        "Start a gateway on 127.0.0.1 and a random port with a fresh token.\n"
        "It prints TOOLSCRIPT_GATEWAY_URL=... as soon as the port is open; servers connect in the background.\n\n"
        "examples:\n"
        "  toolscript gateway start\n"
        "  toolscript gateway start --port 8765\n"
        '  eval "$(toolscript gateway start --detach)" && toolscript list-servers\n'
        "  toolscript gateway start --detach --session my-session --json\n",
        run_start,
    )
    start.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    start.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    start.add_argument("--allow-remote", action="store_true", help="required to bind a non-loopback address")
    start.add_argument("--detach", action="store_true", help="run in the background; return once it listens")
    start.add_argument("--workspace", metavar="DIR", help="the directory file built-ins may read (default: the current one)")
    start.add_argument("--exit-with", type=int, metavar="PID", help="stop when this process exits (the hook passes Claude Code's pid)")
    add_action(
        actions, "status", common, "health of the gateway and its servers",
        "Is the gateway reachable, is the token valid, and what state is each server in?\n"
        "Exit 1 when it is not running or a server failed, with the next step to take.\n\n"
        "examples:\n  toolscript gateway status\n  toolscript gateway status --json\n",
        run_status,
    )
    add_action(
        actions, "stop", common, "stop the gateway",
        "Stop the gateway named by --gateway-url, --session, $TOOLSCRIPT_GATEWAY_URL or the\n"
        "session's state file, in that order -- only after checking the process really is that\n"
        "gateway.  A gateway you did not name is never stopped.\n\n"
        "examples:\n  toolscript gateway stop\n  toolscript gateway stop --session my-session\n",
        run_stop,
    )


# -- start ---------------------------------------------------------------------


def _session(args: argparse.Namespace):
    """The session named by --session or CLAUDE_CODE_SESSION_ID, as valid text (argv may hold undecodable bytes)."""
    from toolscript.gateway.state import text_session

    session = args.session or os.environ.get("CLAUDE_CODE_SESSION_ID")
    return text_session(session) if session else None


def _check_host(args: argparse.Namespace) -> None:
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        raise UserError(
            f"refusing to listen on {args.host}: anyone who can reach it could use your tools; "
            "add --allow-remote if you really mean it",
            exit_code=2,
        )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"toolscript: warning: listening on {args.host}, reachable from other machines; the token is the only protection", file=sys.stderr)


def run_start(args: argparse.Namespace) -> int:
    from toolscript.config import load as configuration
    from toolscript.gateway import launch, state

    _check_host(args)
    session = _session(args)
    if args.detach:
        info, already = launch.start_or_reuse(
            session,
            workspace=args.workspace or os.getcwd(),
            config_paths=args.config_paths,
            host=args.host,
            port=args.port,
            allow_remote=args.allow_remote,
            exit_with=args.exit_with,
        )
        _announce(args, info, already=already)
        return 0
    # A detached gateway's parent holds the session lock and has checked for
    # a live gateway already; anyone else checks, binds and writes the state
    # file under the lock, so racing starts leave one gateway.
    if os.environ.pop(launch.LOCK_HELD_VAR, None) == "1":
        return _serve(args, _load_config(configuration, args), session, state)
    lock = contextlib.ExitStack()
    lock.enter_context(state.session_lock(session, launch.READY_TIMEOUT))
    try:
        running = launch.live_gateway(session)
        if running is not None:
            _announce(args, running, already=True)
            return 0
        return _serve(args, _load_config(configuration, args), session, state, release_lock=lock.close)
    finally:
        lock.close()


def _load_config(configuration, args):
    config = configuration.load_config(args.config_paths)
    for warning in config.warnings:
        echo(f"toolscript: warning: {warning}", file=sys.stderr)
    return config


def _serve(args, config, session, state, release_lock: Optional[Callable[[], None]] = None) -> int:
    """Serve until a signal (or ``--exit-with``'s process ending).

    ``release_lock`` releases the session lock the caller took: once the
    state file is written, the next start finds this gateway live.
    """
    from toolscript.gateway.http_api import serve
    from toolscript.gateway.service import Gateway, kill_child_process_groups

    workspace = os.path.abspath(args.workspace or os.getcwd())
    # Before anything starts: a stop signal during start-up is noted, and the
    # loop below then stops at once and cleanly (the default action would kill
    # us and leave the state file and the servers behind).
    signals = StopSignals()
    gateway = Gateway(config, workspace=workspace, session=session)
    try:
        server, thread = serve(gateway, args.host, args.port)
    except OSError as exc:
        signals.close()
        raise UserError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; pick another --port, or omit it") from exc
    gateway.start()
    log_file = os.environ.get("TOOLSCRIPT_GATEWAY_LOG")
    info = state.new_state(server.url, os.getpid(), session, log_file, workspace)
    state.write_state(session, info)
    if release_lock is not None:
        release_lock()
    if not log_file:
        # Detached, our stdout is the log file and the parent reads the state
        # file instead: the token-bearing URL stays out of the log.
        _announce(args, info)
        if not args.json:
            _print_usage_hint(info["url"], gateway)
    owner = args.exit_with
    # Without --exit-with nothing but a signal stops us.
    wait_for_stop(signals, (lambda: state.pid_alive(owner)) if owner else None)
    # A wedged upstream must not keep a stopping gateway alive.
    threading.Thread(target=_exit_after, args=(SHUTDOWN_GRACE, gateway), daemon=True).start()
    server.shutdown_all()
    gateway.stop()
    kill_child_process_groups()  # a server still mid-handshake must not outlive us
    state.remove_state(session, pid=os.getpid())
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


def _note_only(signum, frame) -> None:
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


def _exit_after(seconds: float, gateway) -> None:
    import time

    time.sleep(seconds)
    gateway.kill_children()  # os._exit would orphan them: they run in process groups of their own
    os._exit(1)


def _announce(args, info, already: bool = False) -> None:
    if args.json:
        print_json({"url": info["url"], "pid": info["pid"], "session": info["session"], "log": info.get("log"), "alreadyRunning": already})
    else:
        # A shell line: eval "$(toolscript gateway start --detach)" exports it.
        print(f"export TOOLSCRIPT_GATEWAY_URL={shlex.quote(info['url'])}")
        if already:
            print(f"toolscript: the gateway of session {info['session']!r} is already running (pid {info['pid']})", file=sys.stderr)
    sys.stdout.flush()


def _print_usage_hint(url: str, gateway) -> None:
    """How to use the gateway just started in the foreground (on stderr)."""
    me = sys.argv[0]
    shortest = min(os.path.relpath(me), os.path.abspath(me), key=len)
    command = f"python3 {shortest}" if me.endswith(".pyz") else "toolscript"
    servers = len(gateway.upstreams)
    print(
        f"toolscript: gateway listening with {len(gateway.builtins)} built-in tools"
        + (f" and {servers} server(s) connecting in the background" if servers else " and no MCP servers configured")
        + "\n  try it from another shell:\n"
        f"    export TOOLSCRIPT_GATEWAY_URL={url}\n"
        f"    {command} tools invoke builtin__time.now\n"
        f"    {command} tools invoke builtin__fs.list_dir --args '{{\"path\": \".\"}}'\n"
        f"    {command} list-servers\n"
        f"  MCP clients can connect to {url}/mcp\n"
        "  stop it with Ctrl-C",
        file=sys.stderr,
    )
    sys.stderr.flush()


# -- status and stop -------------------------------------------------------------


def run_status(args: argparse.Namespace) -> int:
    from toolscript.gateway.client import GatewayClient, GatewayUnavailable, find_url, redact

    start = "toolscript gateway start --detach" + (f" --session {shlex.quote(_session(args) or '')}" if args.session else "")
    url = find_url(args.gateway_url, args.session)
    if not url:
        return _report(args, {"running": False, "error": "no gateway is running for this session", "next": start})
    client = GatewayClient(url, timeout=5, hint="it has stopped, or the URL is outdated")
    try:
        health = client.get("/health")
        servers = client.get("/servers")["servers"]
    except GatewayUnavailable as exc:
        return _report(args, {"running": False, "url": redact(url), "error": str(exc), "next": start})
    failed = [s for s in servers if s["state"] == "failed"]
    signed_out = [s for s in servers if s["state"] == "needs-auth"]
    report = {"running": True, "url": redact(url), "health": health, "servers": servers}
    if signed_out:
        report["next"] = f"toolscript auth {signed_out[0]['name']} (the gateway reconnects by itself once signed in)"
    elif failed:
        report["next"] = f"toolscript servers check {failed[0]['name']}, or fix its config: the gateway retries it"
    elif any(s["state"] == "untrusted" for s in servers):
        report["next"] = "toolscript trust (in a terminal: review and approve the project's .toolscript.json), then restart the gateway"
    return _report(args, report)


def _report(args, report) -> int:
    from toolscript.gateway.servers import describe_count

    ok = report["running"] and all(s["state"] not in ("failed", "needs-auth") for s in report.get("servers", []))
    if args.json:
        print_json(report)
        return 0 if ok else 1
    if not report["running"]:
        echo(f"gateway: not running: {report['error']}")
        print(f"next: {report['next']}")
        return 1
    health = report["health"]
    print(f"gateway: running at {report['url']} (pid {health['pid']}, up {health['uptimeSeconds']:g}s, session {health['session'] or 'default'})")
    rows = [
        (s["name"], s["state"], s["transport"], describe_count(s["tools"], s.get("hidden") or {}), s.get("error", ""))
        for s in report["servers"]
    ]
    for line in format_table(rows):
        print("  " + line)
    if report.get("next"):
        print(f"next: {report['next']}")
    return 0 if ok else 1


def run_stop(args: argparse.Namespace) -> int:
    from toolscript.gateway import launch
    from toolscript.gateway.client import find_url

    # Only a gateway the user named: --gateway-url, else --session's, else the
    # environment's (TOOLSCRIPT_GATEWAY_URL, CLAUDE_CODE_SESSION_ID, default).
    pid = launch.stop(_session(args), find_url(args.gateway_url, args.session))
    if pid is None:
        print("gateway: not running; nothing to stop")
        return 0
    print(f"gateway: stopped (pid {pid})")
    return 0
