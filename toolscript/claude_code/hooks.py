"""The Claude Code hook contract: read the event, answer with nothing or one JSON object.

Every hook handler imports this module (and nothing of the dispatcher,
``toolscript.claude_code.events``, which imports the handlers).

A hook must never break the user's Claude Code session.  ``run`` therefore
always returns exit status 0, prints either nothing or exactly one valid JSON
object (with ``hookSpecificOutput.hookEventName`` set, without which Claude
Code drops the whole answer), and sends every failure to a log file, never to
the terminal.  Facts relied on, observed on the real claude CLI: the event
arrives as one JSON object on stdin; stdout that starts with ``{`` but is not
valid JSON is injected verbatim into the model's context; ``CLAUDE_ENV_FILE``
is offered to SessionStart only.

``TOOLSCRIPT_HOOKS_DISABLED=1`` turns every hook into a no-op: toolscript sets
it for model calls it starts itself, so they do not fire our hooks again.
"""

import json
import logging
import os
import sys
import time
from typing import Any, Callable, Dict, Mapping, Optional, TextIO

DISABLE_VAR = "TOOLSCRIPT_HOOKS_DISABLED"
MAX_EVENT_BYTES = 8 * 1024 * 1024
LOG_NAME = "hooks.log"
LOG_KEEP_BYTES = 1024 * 1024

Event = Dict[str, Any]
# Set in an event whose stdin could not be read as JSON at all (what went wrong, for the model).
INPUT_PROBLEM = "toolscript_input_problem"


def read_event(stream: Optional[TextIO] = None, environ: Optional[Mapping[str, str]] = None) -> Event:
    """The hook's event: stdin JSON, with the fields we rely on filled from the environment.

    Malformed or missing input gives an event built from the environment
    alone (``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_PROJECT_DIR``), never an error.
    """
    env = os.environ if environ is None else environ
    stream = sys.stdin if stream is None else stream
    event: Event = {}
    try:
        if stream is not None and not stream.isatty():
            text = stream.read(MAX_EVENT_BYTES)
            if text.strip():
                value = json.loads(text)
                if isinstance(value, dict):
                    event = value
    except RecursionError:
        # json raises it for input nested thousands deep: the hook must still answer.
        event = {INPUT_PROBLEM: "its input JSON is nested too deeply to read"}
        logger().warning("hook input is nested too deeply to parse; using the environment instead")
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        logger().warning("hook input is not a JSON object (%s); using the environment instead", exc)
    if not isinstance(event.get("session_id"), str) or not event.get("session_id"):
        event["session_id"] = env.get("CLAUDE_CODE_SESSION_ID") or ""
    if not isinstance(event.get("cwd"), str) or not event.get("cwd"):
        event["cwd"] = env.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    # Text from outside may hold lone surrogates (JSON "\udcff", undecodable
    # environment bytes): they could not be logged or printed.
    event["session_id"] = valid_text(event["session_id"])
    return event


def valid_text(text: str) -> str:
    """``text`` with anything that is not valid Unicode replaced by U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def additional_context(event_name: str, text: str) -> Dict[str, Any]:
    """The answer that adds ``text`` to the model's context."""
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def run(event_name: str, handler: Callable[[Event], Optional[Dict[str, Any]]], *, stdin: Optional[TextIO] = None, stdout: Optional[TextIO] = None) -> int:
    """Run one hook: read the event, call ``handler``, print its answer; always 0."""
    stdout = sys.stdout if stdout is None else stdout
    if os.environ.get(DISABLE_VAR, "").strip() not in ("", "0"):
        return 0
    started = time.monotonic()
    log = logger()
    answered = False
    try:
        event = read_event(stdin)
        log.debug("%s: event %s", event_name, json.dumps(event, default=str)[:2000])
        answer = handler(event)
        if answer is not None:
            # Serialise first: a half-written object would reach the model verbatim.
            text = json.dumps(answer, ensure_ascii=False)
            stdout.write(text + "\n")
            answered = True
            stdout.flush()
        log.info("%s: done in %d ms", event_name, (time.monotonic() - started) * 1000)
    except BaseException as exc:  # noqa: B902 - nothing may escape into Claude Code's session
        log.exception("%s hook failed", event_name)
        if event_name in CONTEXT_EVENTS and not answered:
            _tell_failure(event_name, exc, stdout)
    return 0


# Events whose answer can add a line to the model's context.
CONTEXT_EVENTS = ("SessionStart",)


def failure_text(event_name: str, exc: BaseException) -> str:
    """The one context line that tells the model a hook failed, and what to check."""
    return (
        f"toolscript: the {event_name} hook failed ({type(exc).__name__}; details in {LOG_NAME} in toolscript's state "
        "directory), so this session may have no gateway. Check with: toolscript gateway status"
    )


def _tell_failure(event_name: str, exc: BaseException, stdout: TextIO) -> None:
    """A failed hook is not silent: one context line says what happened and what to do."""
    text = failure_text(event_name, exc)
    try:
        stdout.write(json.dumps(additional_context(event_name, text)) + "\n")
        stdout.flush()
    except Exception:
        pass


_LOGGER: Optional[logging.Logger] = None


def logger() -> logging.Logger:
    """A logger writing to ``<state dir>/hooks.log`` (never to the terminal)."""
    global _LOGGER
    if _LOGGER is not None:
        return _LOGGER
    log = logging.getLogger("toolscript.hooks")
    log.propagate = False
    debug = os.environ.get("DEBUG", "").strip().lower() in ("1", "true", "yes", "on")
    log.setLevel(logging.DEBUG if debug else logging.INFO)
    try:
        from toolscript import paths

        path = os.path.join(paths.state_dir(), LOG_NAME)
        if os.path.exists(path) and os.path.getsize(path) > LOG_KEEP_BYTES:
            os.replace(path, path + ".1")  # one old generation is plenty
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
        os.chmod(path, 0o600)
    except Exception:
        handler = logging.NullHandler()  # no writable state dir: stay silent rather than fail
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    log.addHandler(handler)
    _LOGGER = log
    return log
