"""``toolscript hooks-mcp``: the plugin's stdio MCP server that answers Claude Code's hooks in one warm process.

Claude Code (2.1.118 and later) can answer a hook by calling a tool of an MCP
server it is connected to (``"type": "mcp_tool"``) instead of starting a
process per event.  The plugin declares this server (``.mcp.json``: Claude
Code names it ``plugin:toolscript:hooks`` and starts one per Claude Code
process) and ``hooks/mcp-hooks.json`` points UserPromptSubmit, PreToolUse,
PostToolUse and Stop at its tools, one per event, named like
``toolscript hook NAME``.  Each call runs the same handlers as that command
(``toolscript.claude_code.events.answer``), with their modules imported once,
and answers with the hook's JSON as a text block (what Claude Code parses)
or with no content.  Claude Code sends a hook tool no event JSON, only the
fields ``mcp-hooks.json`` maps into its arguments (``${tool_input}`` arrives as
JSON text): ``event_from_arguments`` rebuilds the event.  ``tools/list`` is
empty, so the model never sees these tools; Claude Code calls them anyway.

SessionStart and SessionEnd stay command hooks: Claude Code offers
``mcp_tool`` hooks no MCP connection at SessionStart, and has closed them by
SessionEnd.

**Exactly one of the two ways answers an event.**  The plugin also keeps its
command hooks for every event, for Claude Code versions without ``mcp_tool``
hooks: those cannot load ``mcp-hooks.json`` at all (the rest of the plugin
still loads) but may still start this server.  So the server only answers
once the client says it is a Claude Code that calls it (``MIN_CLIENT`` or
later, by ``clientInfo`` in ``initialize``), and then registers itself as
``<state dir>/hook-servers/<Claude Code's pid>`` (its parent; Claude Code
gives its hooks the same pid as ``CLAUDE_PID``).  The command hook's script
exits at once, before any Python starts, while that file names a live
process.  Before the registration (an older client, a server still
starting) the server answers every call with nothing and the command hooks
do the work.  The file goes when the server ends (Claude Code closes its
stdin or signals it); one whose process is gone is ignored by the scripts
and removed by the next server.

``TOOLSCRIPT_HOOKS_DISABLED=1`` makes it answer nothing at all, as it does the
command hooks.  ``TOOLSCRIPT_HOOK_SERVER=0`` makes it stand aside (no
registration, no answers): the command hooks answer every event.  Failures are logged to ``hooks.log``, never raised: a call
always gets an answer.
"""

import json
import os
import signal
import sys
import threading
import time
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Set, Tuple

from toolscript.claude_code import hooks as contract

OFF_VAR = "TOOLSCRIPT_HOOK_SERVER"  # 0: leave every event to the command hooks
SERVER_NAME = "hooks"  # in the plugin's .mcp.json; Claude Code calls it plugin:toolscript:hooks
# Claude Code versions proven to call a plugin server's mcp_tool hooks and to give command hooks
# CLAUDE_PID (2.1.118 calls them but gives no CLAUDE_PID, so the scripts could not step aside).
MIN_CLIENT = (2, 1, 330)
REGISTRY_DIR = "hook-servers"  # <state dir>/hook-servers/<Claude Code pid>: this server's pid
# The events answered here; SessionStart and SessionEnd have no MCP connection to call.
EVENTS = ("user-prompt-submit", "pre-tool-use", "post-tool-use", "stop")
JSON_FIELDS = ("tool_input", "tool_response")  # objects Claude Code inserts into the arguments as JSON text
BOOLEAN_FIELDS = ("stop_hook_active",)
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
# Seconds the calls still running get when Claude Code ends the server (it signals it before SessionEnd):
# a tool call's capture in flight is kept, and Claude Code does not wait long.
CLOSE_WAIT = 0.5


def client_version(text: Any) -> Optional[Tuple[int, ...]]:
    """``"2.1.337"`` as (2, 1, 337); None when it is not a dotted version."""
    if not isinstance(text, str):
        return None
    parts = text.strip().split("-", 1)[0].split("+", 1)[0].split(".")
    try:
        return tuple(int(part) for part in parts)
    except ValueError:
        return None


def event_from_arguments(arguments: Any) -> contract.Event:
    """The hook event a tool call stands for: the mapped fields, objects decoded, missing ones left to ``read_event``."""
    event: Dict[str, Any] = {}
    for key, value in (arguments.items() if isinstance(arguments, dict) else ()):
        if not isinstance(key, str) or value == "":
            continue  # Claude Code sends "" for a field the event does not have
        if key in JSON_FIELDS and isinstance(value, str) and value[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                pass
        elif key in BOOLEAN_FIELDS and isinstance(value, str):
            value = value.strip().lower() == "true"
        event[key] = value
    import io

    # The same filling and cleaning a command hook's stdin gets (session and cwd from the environment).
    return contract.read_event(io.StringIO(json.dumps(event, ensure_ascii=False)))


class HookServer:
    """One stdio connection to Claude Code: JSON-RPC requests in, answers out, each tool call in its own thread."""

    def __init__(self, stdout: BinaryIO, *, environ: Mapping[str, str], claude_pid: int,
                 warm: Optional[Callable[[], None]] = None) -> None:
        self.stdout = stdout
        self.environ = environ
        self.claude_pid = claude_pid
        self.warm = warm
        self.disabled = environ.get(contract.DISABLE_VAR, "").strip() not in ("", "0")
        self.client: Optional[Tuple[int, ...]] = None
        self.registered: Optional[str] = None  # the registry file, once this server answers
        self.cancelled: Set[Any] = set()
        self.write_lock = threading.Lock()
        self.calls: List[threading.Thread] = []

    # -- the wire ---------------------------------------------------------------------------------

    def send(self, message: Dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace") + b"\n"
        with self.write_lock:
            if message.get("id") in self.cancelled:
                self.cancelled.discard(message.get("id"))
                return  # Claude Code gave up on it (the hook's timeout): an answer now would be noise
            try:
                self.stdout.write(data)
                self.stdout.flush()
            except (OSError, ValueError):
                pass  # Claude Code is gone; the read loop ends next

    def handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "not JSON"}})
            return
        if not isinstance(message, dict):
            return
        method, request_id = message.get("method"), message.get("id")
        given = message.get("params")
        params: Dict[str, Any] = given if isinstance(given, dict) else {}
        if "id" not in message:  # a notification
            if method == "notifications/initialized":
                self.initialized()
            elif method == "notifications/cancelled":
                with self.write_lock:
                    self.cancelled.add(params.get("requestId"))
            return
        if method == "initialize":
            info = params.get("clientInfo")
            self.client = client_version(info.get("version") if isinstance(info, dict) else None)
            asked = params.get("protocolVersion")
            self.result(request_id, {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "toolscript-hooks", "version": _version()},
            })
        elif method == "ping":
            self.result(request_id, {})
        elif method == "tools/list":
            self.result(request_id, {"tools": []})  # hook tools are called by name; the model needs none of them
        elif method == "tools/call":
            thread = threading.Thread(target=self.call, args=(request_id, params), daemon=True)
            self.calls = [t for t in self.calls if t.is_alive()] + [thread]
            thread.start()
        elif method is not None:
            self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"method not found: {method}"}})

    def result(self, request_id: Any, value: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": value})

    # -- answering ------------------------------------------------------------------------------

    @property
    def answering(self) -> bool:
        return self.registered is not None

    def initialized(self) -> None:
        """The client is connected: answer hooks from now on when it is one that calls them (see the module docstring)."""
        log = contract.logger()
        if self.disabled:
            log.info("hook server: hooks are disabled (%s); answering nothing", contract.DISABLE_VAR)
            return
        if self.environ.get(OFF_VAR, "").strip().lower() in ("0", "false", "no", "off"):
            log.info("hook server: %s=0; the command hooks answer", OFF_VAR)
            return
        if self.client is None or self.client < MIN_CLIENT:
            shown = ".".join(map(str, self.client)) if self.client else "unknown"
            log.info("hook server: Claude Code %s is older than %s; the command hooks answer", shown,
                     ".".join(map(str, MIN_CLIENT)))
            return
        if self.warm is not None:
            threading.Thread(target=self.warm, daemon=True).start()
        self.registered = register(self.claude_pid)
        if self.registered:
            log.info("hook server: answering the hooks of Claude Code pid %d", self.claude_pid)

    def call(self, request_id: Any, params: Dict[str, Any]) -> None:
        name = params.get("name")
        content: List[Dict[str, Any]] = []
        try:
            if name in EVENTS and self.answering:
                answer = run_event(name, params.get("arguments"), self.environ)
                if answer is not None:
                    content = [{"type": "text", "text": json.dumps(answer, ensure_ascii=False)}]
            elif name not in EVENTS:
                contract.logger().warning("hook server: unknown hook tool %r ignored (known: %s)", name, ", ".join(EVENTS))
        except BaseException:  # noqa: B902 - the call must still be answered
            contract.logger().exception("hook server: %s failed", name)
        self.result(request_id, {"content": content})

    def close(self, wait: float = 0.0) -> None:
        """Stop answering; give the calls still running up to ``wait`` seconds (a capture in flight is kept)."""
        if self.registered:
            unregister(self.registered)
            self.registered = None
        deadline = time.monotonic() + wait
        for thread in self.calls:
            thread.join(max(0.0, deadline - time.monotonic()))


def run_event(name: str, arguments: Any, environ: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """One hook event answered in this process, as ``toolscript hook NAME`` would, logged the same way."""
    from toolscript.claude_code import events

    event_name = events.EVENTS[name][0]
    if environ.get(contract.DISABLE_VAR, "").strip() not in ("", "0"):
        return None
    started = time.monotonic()
    event = event_from_arguments(arguments)
    log = contract.logger()
    log.debug("%s: event %s", event_name, json.dumps(event, default=str)[:2000])
    answer = events.answer(name, event)
    log.info("%s: done in %d ms (hook server)", event_name, (time.monotonic() - started) * 1000)
    return answer


# -- the registry the command hooks' scripts read ----------------------------------------------


def registry_path(claude_pid: int, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """``<state dir>/hook-servers/<claude_pid>``, or None without a state directory."""
    try:
        from toolscript import paths

        return os.path.join(paths.state_dir(environ), REGISTRY_DIR, str(int(claude_pid)))
    except Exception as exc:  # noqa: BLE001 - no state dir: no registration, the command hooks answer
        contract.logger().warning("hook server: no state directory (%s); the command hooks answer", exc)
        return None


def register(claude_pid: int) -> Optional[str]:
    """Write this process's pid as the hook server of ``claude_pid``; the file's path, or None when it cannot."""
    if claude_pid <= 1:
        return None
    path = registry_path(claude_pid)
    if path is None:
        return None
    try:
        from toolscript import paths

        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        sweep(os.path.dirname(path))
        paths.write_private(path, f"{os.getpid()}\n")
    except OSError as exc:
        contract.logger().warning("hook server: cannot register in %s (%s); the command hooks answer", path, exc)
        return None
    return path


def registered_pid(path: str) -> Optional[int]:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read(32).strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() else None


def unregister(path: str) -> None:
    """Remove the registration if it is still this process's (a newer server of the same Claude Code may own it)."""
    if registered_pid(path) == os.getpid():
        try:
            os.unlink(path)
        except OSError:
            pass


def sweep(directory: str) -> None:
    """Remove registrations whose server is gone (a server that was killed could not remove its own)."""
    from toolscript.gateway.state import pid_alive

    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        pid = registered_pid(path)
        if pid is None or not pid_alive(pid):
            try:
                os.unlink(path)
            except OSError:
                pass


def warm_imports() -> None:
    """Import what the handlers import, off the request path: the first prompt should not pay for it."""
    started = time.monotonic()
    try:
        from toolscript.claude_code import memory_hooks, skills, suggest, suggest_local  # noqa: F401
        from toolscript.config import keys  # noqa: F401
        from toolscript.gateway import client, state  # noqa: F401
        from toolscript.memory import capture, context, store  # noqa: F401
        from toolscript.models import backends  # noqa: F401
    except Exception:  # noqa: BLE001 - a call imports what it needs anyway
        contract.logger().exception("hook server: warming the imports failed")
        return
    contract.logger().info("hook server: handlers imported in %d ms", (time.monotonic() - started) * 1000)


def _reopen_log_when_moved() -> None:
    """Write hooks.log through a handler that reopens it when a command hook rotated it (this process outlives many)."""
    import logging
    import logging.handlers

    log = contract.logger()
    for handler in list(log.handlers):
        if type(handler) is logging.FileHandler:
            reopening = logging.handlers.WatchedFileHandler(handler.baseFilename, encoding="utf-8")
            reopening.setFormatter(handler.formatter)
            log.removeHandler(handler)
            handler.close()
            log.addHandler(reopening)


def _version() -> str:
    from toolscript import __version__

    return __version__


def serve(stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None, *,
          environ: Optional[Mapping[str, str]] = None, claude_pid: Optional[int] = None) -> int:
    """Serve Claude Code on stdin/stdout until it closes stdin or signals; always 0."""
    from toolscript.claude_code import events

    stdin = sys.stdin.buffer if stdin is None else stdin
    out = sys.stdout.buffer if stdout is None else stdout
    if stdout is None:
        # Only JSON-RPC may reach Claude Code on stdout: anything else printed goes to stderr.
        sys.stdout = sys.stderr
    _reopen_log_when_moved()
    events.route_package_logs()
    server = HookServer(out, environ=os.environ if environ is None else environ,
                        claude_pid=os.getppid() if claude_pid is None else claude_pid, warm=warm_imports)

    def on_signal(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            signal.signal(sig, on_signal)
        except (ValueError, OSError):  # not the main thread (tests)
            pass
    try:
        for line in stdin:
            if line.strip():
                server.handle_line(line)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.close(wait=CLOSE_WAIT)
    return 0


def main_fast() -> None:
    """``toolscript hooks-mcp`` without the CLI (``toolscript/__main__.py``): serve, then end the process at once."""
    try:
        serve()
    finally:
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
    os._exit(0)  # daemon threads of abandoned calls must not hold the exit
