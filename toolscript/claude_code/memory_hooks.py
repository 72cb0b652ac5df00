"""What memory does in each Claude Code hook: record the Claude Code session's work, and bring earlier work back.

The event table (``toolscript.claude_code.events``, ``toolscript hook <event>``)
calls these next to the gateway's and the suggestions' handlers for the same
event; each function returns the hook answer's ``additionalContext`` text (or
None) and the table merges every handler's text into the one JSON object
Claude Code reads.  "Session" here is Claude Code's session (its
``session_id``), which memory records as one session of work.  The event comes
as stdin JSON (``session_id``, ``cwd``, ``prompt``, ``tool_name``,
``tool_input``, ``tool_response``, ``last_assistant_message``,
``stop_hook_active``); the environment variables ``USER_PROMPT``,
``TOOL_NAME``, ``TOOL_INPUT``, ``TOOL_OUTPUT``, ``RESPONSE_SUMMARY`` and
``CLAUDE_SESSION_ID`` fill what stdin lacks.

- SessionStart: the session is recorded (idempotent) and the project's recent
  work from earlier sessions is injected.
- UserPromptSubmit: memories related to the prompt, with an activity-shift
  note when the prompt leaves the session's recent work.
- PostToolUse: one line per action; after an Edit, Write or Bash, a brief of
  related earlier work (at most one per ``briefInterval`` per session).
  The brief comes after the action, not before it: Claude Code's PreToolUse
  cannot add context.
- Stop: the answer (not when ``stop_hook_active``: a stop hook is already
  making the model continue, and its answer comes again at the next Stop).
- SessionEnd: an extractive summary of the session, then the session ends.

``TOOLSCRIPT_MEMORY=0`` or ``"memory": {"enabled": false}`` turns it all off.
"""

import logging
import os
from typing import Any, Dict, Mapping, Optional, Tuple

logger = logging.getLogger("toolscript.memory")

BRIEF_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit", "Bash")
BRIEFS_DIR = "memory-briefs"  # <state dir>/memory-briefs/<session>: its mtime is the session's last brief


def _settings(event: Mapping[str, Any]) -> Tuple[Dict[str, Any], bool]:
    """(the memory settings for the event's project, whether memory is on)."""
    from toolscript.claude_code import hooks
    from toolscript.config import keys as configkeys

    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) and os.path.isdir(event["cwd"]) else None
    settings, problems = configkeys.memory_settings(None, cwd)
    for problem in problems:
        hooks.logger().warning("memory: %s (the default applies)", problem)
    flag = os.environ.get("TOOLSCRIPT_MEMORY", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return settings, False
    return settings, bool(settings.get("enabled", True)) or flag in ("1", "true", "yes", "on")


HOOK_BUSY_TIMEOUT_MS = 2000  # a hook waits this long for another writer, well inside its own timeout


def open_configured(settings: Mapping[str, Any], busy_timeout_ms: int = 5000):
    """The memory store the settings name (``dataDir``), else ``TOOLSCRIPT_DATA_DIR``, else ``~/.toolscript``."""
    from toolscript.memory import store

    data = settings.get("dataDir")
    path = os.path.join(os.path.expanduser(data), "memory.db") if data else None
    return store.open_store(path, busy_timeout_ms=busy_timeout_ms)


def _open(settings: Mapping[str, Any]):
    return open_configured(settings, HOOK_BUSY_TIMEOUT_MS)


def _ids(event: Mapping[str, Any]) -> Tuple[str, str, str]:
    """(session id, project root, cwd) of the event; a session id that is not a plain short id becomes its hash."""
    from toolscript.memory import project_root, session_key

    session = event.get("session_id") or os.environ.get("CLAUDE_SESSION_ID") or ""
    given = event.get("cwd")
    cwd = given if isinstance(given, str) and given else os.getcwd()
    return session_key(session if isinstance(session, str) else str(session)), project_root(cwd), cwd


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _env_json(name: str) -> Any:
    import json

    raw = os.environ.get(name, "")
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw


def _record(db: Any, session: str, project: str, captured: Any) -> None:
    db.add(session=session, project=project, kind=captured.kind, content=captured.content, tool=captured.tool,
           files=captured.files)


def session_start(event: Dict[str, Any]) -> Optional[str]:
    settings, on = _settings(event)
    if not on:
        return None
    from toolscript.memory import context

    session, project, _ = _ids(event)
    with _open(settings) as db:
        if session:
            db.start_session(session, project)
        text = context.inject(db, _text(os.environ.get("CLAUDE_CONTEXT")), project=project, session=session,
                              budget_tokens=int(settings["injectBudget"]))
    logger.info("memory: session %s started (%s)%s", session or "-", project, ", recent work injected" if text else "")
    return text or None


def prompt(event: Dict[str, Any]) -> Optional[str]:
    settings, on = _settings(event)
    if not on:
        return None
    from toolscript.memory import context

    query = _text(event.get("prompt")) or _text(os.environ.get("USER_PROMPT"))
    if not query.strip() or query.lstrip().startswith("/"):
        return None
    session, project, _ = _ids(event)
    with _open(settings) as db:
        text = context.inject(db, query, project=project, session=session, budget_tokens=int(settings["injectBudget"]))
    return text or None


def post_tool_use(event: Dict[str, Any]) -> Optional[str]:
    settings, on = _settings(event)
    if not on:
        return None
    from toolscript.memory import capture

    tool = _text(event.get("tool_name")) or _text(os.environ.get("TOOL_NAME"))
    tool_input = event.get("tool_input") if "tool_input" in event else _env_json("TOOL_INPUT")
    response = event.get("tool_response") if "tool_response" in event else _env_json("TOOL_OUTPUT")
    session, project, cwd = _ids(event)
    captured = capture.from_tool_use(tool, tool_input, response, cwd=cwd, capture_read_only=bool(settings["captureReadOnly"]))
    if captured is None:
        return None
    with _open(settings) as db:
        _record(db, session, project, captured)
        if tool not in BRIEF_TOOLS or not _brief_due(session, float(settings["briefInterval"])):
            return None
        from toolscript.memory import context  # only now: most tool calls record and return

        text = context.brief(db, captured.content, project=project, session=session, budget_tokens=int(settings["briefBudget"]))
    if text:
        _note_brief(session)
    return text or None


def stop(event: Dict[str, Any]) -> Optional[str]:
    settings, on = _settings(event)
    if not on or event.get("stop_hook_active") is True:
        return None
    from toolscript.memory import capture

    message = event.get("last_assistant_message") if "last_assistant_message" in event else os.environ.get("RESPONSE_SUMMARY")
    captured = capture.from_response(message)
    if captured is None:
        return None
    session, project, _ = _ids(event)
    with _open(settings) as db:
        _record(db, session, project, captured)
    return None


def session_end(event: Dict[str, Any]) -> Optional[str]:
    settings, on = _settings(event)
    if not on:
        return None
    from toolscript.memory import capture

    session, project, _ = _ids(event)
    with _open(settings) as db:
        if session:
            given = _text(os.environ.get("SESSION_SUMMARY"))
            memories = db.recent(session=session, limit=500)
            summary = capture.session_summary(memories)
            content = given or (summary.content if summary else "")
            if content and not given and settings.get("summaryBackend", "none") != "none":
                content = model_summary(memories, content, str(settings["summaryBackend"]), settings.get("summaryModel")) or content
            if content:
                db.add(session=session, project=project, kind="summary", content=content,
                       files=summary.files if summary and not given else ())
            if not db.end_session(session):
                logger.info("memory: no active session %s to end", session)
    return None


SUMMARY_TIMEOUT = 3.0  # seconds for the optional model summary: SessionEnd's hook has 5
SUMMARY_SYSTEM = (
    "You write the memory a coding agent keeps of one work session. Given the session's recorded actions and an "
    "extractive summary, write at most 5 short sentences: what was done, to which files, what was decided, what is "
    "left. Plain text, no preamble, no markdown headers. Never include secrets, tokens or passwords."
)


def model_summary(memories: Any, extractive: str, backend: str, model: Any = None) -> Optional[str]:
    """A model's summary of the session (``"memory": {"summaryBackend": "auto|api|claude"}``), or None on any failure.

    Optional and never required: the extractive summary is the default and what
    is kept when the model is slow, missing or wrong.  The store redacts the
    result like any memory.
    """
    from toolscript.models import backends as models

    lines = [f"- {m.kind}: {' '.join(m.content.split())[:300]}" for m in reversed(list(memories)[:80])]
    prompt = "Actions, oldest first:\n" + "\n".join(lines) + "\n\nExtractive summary:\n" + extractive
    try:
        chosen = models.choose_backend(backend)
        if chosen == "local":
            return None
        reply = models.complete(SUMMARY_SYSTEM, prompt, backend=chosen, model=model if isinstance(model, str) else None,
                                timeout=SUMMARY_TIMEOUT, max_tokens=300)
    except (models.ModelError, ValueError) as exc:
        logger.info("memory: no model summary (%s); keeping the extractive one", exc)
        return None
    from toolscript.memory.redact import clean

    text = clean(reply.text).strip()  # before it is cut: a cut secret is no longer recognisable
    return text[:1500] if text else None


# -- the brief's per-session rate limit ----------------------------------------------------------


def _brief_file(session: str) -> Optional[str]:
    try:
        from toolscript import paths

        return os.path.join(paths.state_dir(), BRIEFS_DIR, paths.safe_name(session or "default"))
    except Exception:  # noqa: BLE001 - no state dir: no rate limit record, so no brief
        return None


def _brief_due(session: str, interval: float) -> bool:
    from toolscript import paths

    path = _brief_file(session)
    elapsed = paths.seconds_since_mark(path)
    return path is not None and (elapsed is None or elapsed >= interval)


def _note_brief(session: str) -> None:
    from toolscript import paths

    paths.mark(_brief_file(session))
