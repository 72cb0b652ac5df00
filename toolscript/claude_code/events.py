"""``toolscript hook NAME``: which handlers answer which Claude Code event, and the process that runs them.

``EVENTS`` maps each hook name to Claude Code's event name and its handlers,
in order.  A handler is a function ``handler(event)`` returning a hook answer
(a dict), a context text, or None; the texts of all of an event's handlers
are merged into the ONE JSON object Claude Code reads.

Each handler here is a small function that imports its module when the event
runs, so a hook pays only for its own event's code: PostToolUse (every tool
call) never loads the suggestion pipeline or the gateway launcher.  The
handler modules import only the hook contract (``toolscript.claude_code.hooks``),
never this module.

``main_fast`` is ``toolscript hook NAME`` without the CLI: ``toolscript/__main__.py``
calls it directly, since Claude Code runs a hook on every prompt and tool call.
"""

import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from toolscript.claude_code import hooks as contract
from toolscript.claude_code.hooks import Event

Handler = Callable[[Event], Any]


# -- the handlers ------------------------------------------------------------------------------------


def start_gateway(event: Event) -> Any:
    """SessionStart: this Claude Code session's own gateway (see ``gateway_hooks``)."""
    from toolscript.claude_code import gateway_hooks

    return gateway_hooks.session_start(event)


def stop_gateway(event: Event) -> Any:
    """SessionEnd: stop this Claude Code session's gateway."""
    from toolscript.claude_code import gateway_hooks

    return gateway_hooks.session_end(event)


def recall_recent_work(event: Event) -> Any:
    """SessionStart: record the session in memory, bring back the project's recent work."""
    from toolscript.claude_code import memory_hooks

    return memory_hooks.session_start(event)


def recall_related_work(event: Event) -> Any:
    """UserPromptSubmit: memories related to the prompt."""
    from toolscript.claude_code import memory_hooks

    return memory_hooks.prompt(event)


def suggest_skills_and_tools(event: Event) -> Any:
    """UserPromptSubmit: the skills and MCP tools that fit the prompt."""
    from toolscript.claude_code import suggest

    return suggest.prompt_hook(event)


def brief_before_tool(event: Event) -> Any:
    """PreToolUse (Edit, Write, Bash): earlier work on what the tool is about to touch, before it runs."""
    from toolscript.claude_code import memory_hooks

    return memory_hooks.pre_tool_use(event)


def record_tool_use(event: Event) -> Any:
    """PostToolUse: one memory line per action."""
    from toolscript.claude_code import memory_hooks

    return memory_hooks.post_tool_use(event)


def record_answer(event: Event) -> Any:
    """Stop: the model's answer, into memory."""
    from toolscript.claude_code import memory_hooks

    return memory_hooks.stop(event)


def summarise_session(event: Event) -> Any:
    """SessionEnd: the session's summary, into memory."""
    from toolscript.claude_code import memory_hooks

    return memory_hooks.session_end(event)


# ``toolscript hook NAME``: Claude Code's event name and the handlers, in order.
EVENTS: Dict[str, Tuple[str, Tuple[Handler, ...]]] = {
    "session-start": ("SessionStart", (start_gateway, recall_recent_work)),
    "user-prompt-submit": ("UserPromptSubmit", (recall_related_work, suggest_skills_and_tools)),
    "pre-tool-use": ("PreToolUse", (brief_before_tool,)),
    "post-tool-use": ("PostToolUse", (record_tool_use,)),
    "stop": ("Stop", (record_answer,)),
    "session-end": ("SessionEnd", (stop_gateway, summarise_session)),
}
SEPARATOR = "\n\n"


def context_of(answer: Any) -> str:
    """The ``additionalContext`` text of a handler's answer (a hook answer dict or a plain text), or ""."""
    if isinstance(answer, str):
        return answer.strip()
    if isinstance(answer, dict):
        specific = answer.get("hookSpecificOutput")
        if isinstance(specific, dict) and isinstance(specific.get("additionalContext"), str):
            return specific["additionalContext"].strip()
    return ""


def run_event(name: str) -> int:
    """Run the hook ``name`` (``session-start``, ...): always 0; an unknown name (a newer plugin) is a logged no-op.

    Each handler runs on its own (one failing leaves the others' answers
    intact); their texts are merged.  On SIGTERM (Claude Code's hook timeout)
    the texts ready so far are printed and the process ends.
    """
    import signal

    if name not in EVENTS:
        contract.logger().warning("unknown hook event %r ignored (known: %s)", name, ", ".join(sorted(EVENTS)))
        return 0
    event_name = EVENTS[name][0]
    route_package_logs()
    ready: List[str] = []
    started = time.monotonic()

    log_fd = _log_fd()

    def on_term(signum: int, frame: Any) -> None:
        # It runs between two bytecodes of the main thread, which may be inside a
        # locked write of the log or of stdout: logging or sys.stdout here would
        # re-enter them (a RuntimeError traceback on stderr, or a hang).  So only
        # os.write to the file descriptors, then the exit.
        note = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {os.getpid()} WARNING {event_name}: timeout after {(time.monotonic() - started) * 1000:.0f} ms, returning partial results\n"
        if log_fd is not None:
            _write_fd(log_fd, note.encode("utf-8", "replace"))
        if ready:
            answer = json.dumps(contract.additional_context(event_name, SEPARATOR.join(ready)), ensure_ascii=False) + "\n"
            _write_fd(1, answer.encode("utf-8", "replace"))
        os._exit(0)

    try:
        signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError):  # not the main thread (tests): no partial answer on SIGTERM
        pass

    status = contract.run(event_name, lambda event: answer(name, event, ready))
    remember_interpreter()
    return status


INTERPRETER_FILE = "python"  # in the state dir: the real interpreter hook.sh runs, one line


def remember_interpreter(environ: Optional[Dict[str, str]] = None) -> None:
    """Note the interpreter this hook runs on, so the next hooks skip a version manager's shim.

    ``python3`` on PATH is often a pyenv or asdf shim, a shell script that
    costs tens of ms before the real Python starts, on every hook.  The
    shell hooks read this file and run the interpreter it names (when it
    still exists), else ``python3``.  Written only when it changed; any
    failure is logged and ignored.
    """
    from toolscript import paths

    executable = os.path.realpath(sys.executable) if sys.executable else ""
    if not executable or "\n" in executable:
        return
    try:
        folder = paths.state_dir_path(environ)
        path = os.path.join(folder, INTERPRETER_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                if f.read().strip() == executable:
                    return
        except OSError:
            pass
        paths.write_private(path, executable + "\n")
    except OSError as exc:
        contract.logger().info("could not note the interpreter in the state dir: %s", exc)


def answer(name: str, event: Event, ready: Optional[List[str]] = None) -> Optional[Dict[str, Any]]:
    """Hook ``name``'s one answer to ``event``: every handler's text merged into one object, or None.

    Each handler runs on its own: one failing (logged) leaves the others'
    texts intact.  ``ready`` collects the texts as they come, for a caller
    that must answer with what is ready when time runs out.  Both ways a
    hook runs call this: ``toolscript hook NAME`` (a process per event) and
    the hook server (``toolscript.claude_code.hook_server``).
    """
    event_name, handlers = EVENTS[name]
    ready = [] if ready is None else ready
    for handler in handlers:
        try:
            # The handler imports its module inside this guard: even an import failure ends as exit 0 and a log line.
            text = context_of(handler(event))
        except Exception as exc:  # noqa: BLE001 - one handler's failure must not cost the others' answers
            contract.logger().exception("%s: %s failed", event_name, handler.__name__)
            text = contract.failure_text(event_name, exc) if handler is handlers[0] and event_name in contract.CONTEXT_EVENTS else ""
        if text:
            ready.append(text)
    return contract.additional_context(event_name, SEPARATOR.join(ready)) if ready else None


def _log_fd() -> Optional[int]:
    """The hooks log's file descriptor, for writes that must not take the logging module's locks."""
    for handler in contract.logger().handlers:
        stream = getattr(handler, "stream", None)
        try:
            return stream.fileno() if stream is not None else None
        except (OSError, ValueError, AttributeError):
            return None
    return None


def _write_fd(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` with os.write alone (safe in a signal handler); errors are dropped."""
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def route_package_logs() -> None:
    """Every toolscript logger's lines (the gateway launch, memory, suggestions) go to the hooks log, never to stderr."""
    import logging

    hooks = contract.logger()
    package = logging.getLogger("toolscript")
    package.propagate = False  # else Python's last-resort handler prints warnings on the hook's stderr
    package.setLevel(hooks.level)
    for handler in hooks.handlers:
        if handler not in package.handlers:
            package.addHandler(handler)


def main_fast(name: str) -> None:
    """``toolscript hook NAME`` without the CLI: no argparse, no command table (it runs on every prompt).

    ``toolscript/__main__.py`` calls this for exactly ``hook NAME``; anything
    else (options, ``--help``) goes through the full CLI.  Like ``cli.exit_main``
    it ends the process without interpreter teardown once the answer is out.
    """
    code = 0
    try:
        code = run_event(name)
    finally:
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    os._exit(code)
