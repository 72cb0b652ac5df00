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
- PreToolUse: before an Edit, Write or Bash runs, a brief of related earlier
  work (at most ``briefBudget`` tokens, one per ``briefInterval`` per
  session), found within ``PRE_TOOL_BUDGET`` seconds or not at all.
- PostToolUse: one line per action, nothing injected.
- Stop: the answer (not when ``stop_hook_active``: a stop hook is already
  making the model continue, and its answer comes again at the next Stop).
  Stop never answers with context: Claude Code would send it to the model as
  a new turn and the session would go on.
- SessionEnd: an extractive summary of the session, then the session ends.

A memory is injected into a Claude Code session once: SessionStart, the
prompts and the briefs share a record of the ids already injected, one small
file per session in the state directory (``INJECTED_DIR``).  A file, not a
column of the memory store: what a session was shown is a fact about that
Claude Code session, not about the memory, the store may be shared by several
machines' sessions (``dataDir``), and the record must cost the hooks no write
transaction on the database they search.  An exclusive lock on the file makes
reading the record, choosing the memories and adding them one step, so two
hooks running at once (parallel tool calls) never show the same memory twice.

``TOOLSCRIPT_MEMORY=0`` or ``"memory": {"enabled": false}`` turns it all off.
"""

import logging
import os
import time
from typing import Any, Callable, Collection, Dict, List, Mapping, Optional, Tuple

logger = logging.getLogger("toolscript.memory")

BRIEF_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit", "Bash")
BRIEFS_DIR = "memory-briefs"  # <state dir>/memory-briefs/<session>: its mtime is the session's last brief
INJECTED_DIR = "memory-injected"  # <state dir>/memory-injected/<session>: ids already in that session's context
RECORD_DAYS = 7  # a session's records (injected ids, brief mark) untouched this long are swept at SessionStart
# Seconds the PreToolUse brief may take, from the handler's start: the tool waits for it.  Past it
# the search is interrupted and the tool runs without a brief.
PRE_TOOL_BUDGET = 0.5
# Memories given their meaning vector per Stop and SessionEnd, newest first (~0.3 ms each).
VECTOR_BATCH = 1000


def _settings(event: Mapping[str, Any]) -> Tuple[Dict[str, Any], bool]:
    """(the memory settings for the event's project, whether memory is on)."""
    from toolscript.claude_code import hooks
    from toolscript.config import keys as configkeys

    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) and os.path.isdir(event["cwd"]) else None
    settings, problems = configkeys.memory_settings(None, cwd)
    for problem in problems:
        hooks.logger().warning("memory: %s (the default applies)", problem)
    from toolscript.memory import enabled

    return settings, enabled(settings)


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
    _sweep_records()
    with _open(settings) as db:
        if session:
            db.start_session(session, project)
        text = once_per_session(session, lambda exclude, shown: context.inject(
            db, _text(os.environ.get("CLAUDE_CONTEXT")), project=project, session=session,
            budget_tokens=int(settings["injectBudget"]), exclude=exclude, shown=shown))
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
        text = once_per_session(session, lambda exclude, shown: context.inject(
            db, query, project=project, session=session, budget_tokens=int(settings["injectBudget"]),
            exclude=exclude, shown=shown))
    return text or None


def pre_tool_use(event: Dict[str, Any]) -> Optional[str]:
    """The brief of earlier work on what an Edit, Write or Bash is about to touch, or None.

    Within ``PRE_TOOL_BUDGET`` seconds of its start or not at all (the store's
    search is interrupted there): the tool is waiting.
    """
    started = time.monotonic()
    tool = _text(event.get("tool_name")) or _text(os.environ.get("TOOL_NAME"))
    if tool not in BRIEF_TOOLS:
        return None
    settings, on = _settings(event)
    if not on:
        return None
    if int(settings["briefBudget"]) <= 0:  # "briefBudget": 0 turns the brief off
        return None
    session, project, cwd = _ids(event)
    if not _brief_due(session, float(settings["briefInterval"])):
        return None
    tool_input = event.get("tool_input") if "tool_input" in event else _env_json("TOOL_INPUT")
    query = brief_query(tool, tool_input, cwd)
    if not query:
        return None
    from toolscript.memory import context

    deadline = started + PRE_TOOL_BUDGET
    with _open(settings) as db:
        # SQLite calls this every 1,000 steps of a query; a non-zero answer interrupts it.
        db.conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        try:
            text = once_per_session(session, lambda exclude, shown: context.brief(
                db, query, project=project, session=session, budget_tokens=int(settings["briefBudget"]),
                exclude=exclude, shown=shown))
        except Exception as exc:  # noqa: BLE001 - interrupted at the budget, or a store problem: no brief, the tool runs
            if time.monotonic() <= deadline:
                raise
            logger.info("memory: no brief for %s: not found within %.1f s", tool, PRE_TOOL_BUDGET)
            return None
    if text:
        _note_brief(session)
    return text or None


def brief_query(tool: str, tool_input: Any, cwd: str) -> str:
    """What the brief searches for: a Bash command as written, the file an Edit or Write is about to change."""
    if not isinstance(tool_input, dict):
        return ""
    if tool == "Bash":
        return " ".join(_text(tool_input.get(key)) for key in ("command", "description"))[:1000].strip()
    path = next((v for v in (tool_input.get(k) for k in ("file_path", "notebook_path", "path")) if isinstance(v, str) and v), "")
    if not path:
        return ""
    if cwd and os.path.isabs(path):
        relative = os.path.relpath(path, cwd)
        path = path if relative.startswith("..") else relative
    return path[:1000]


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
    return None


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
        # The turn's memories get their meaning vectors here, once a turn: reading the embedding table in
        # every PostToolUse hook would cost each tool call ~30 ms.
        db.fill_vectors(VECTOR_BATCH)
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
        # Memories stored before vectors existed get theirs a batch at a time, where no one waits.
        db.fill_vectors(VECTOR_BATCH)
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


# -- what a session was already shown --------------------------------------------------------------

Render = Callable[[Collection[int], List[Any]], str]


def once_per_session(session: str, render: Render) -> str:
    """``render(exclude, shown)``'s text, with the memories already injected into ``session`` excluded.

    ``render`` gets the ids to leave out and a list to fill with the ids its
    text holds; those are added to the session's record when the text is
    not empty.  Reading the record, rendering and adding are one step under
    an exclusive lock on the record file.  Without a session or a state
    directory there is no record, and nothing is excluded.
    """
    path = _record_file(INJECTED_DIR, session) if session else None
    fd = None
    if path is not None:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            logger.info("memory: no record of injected memories (%s)", exc)
    if fd is None:
        return render(frozenset(), [])
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes
        exclude = _read_ids(fd)
        shown: List[Any] = []
        text = render(exclude, shown)
        new = [str(i) for i in dict.fromkeys(shown) if i not in exclude]
        if text and new:
            os.write(fd, (" ".join(new) + "\n").encode("ascii"))
        return text
    finally:
        os.close(fd)


def _read_ids(fd: int) -> Collection[int]:
    data = b""
    while True:
        chunk = os.pread(fd, 65536, len(data))
        if not chunk:
            break
        data += chunk
    return frozenset(int(word) for word in data.split() if word.isdigit())


def injected_ids(session: str) -> Collection[int]:
    """The ids of the memories already injected into ``session`` (for ``status`` and the tests)."""
    path = _record_file(INJECTED_DIR, session) if session else None
    try:
        fd = os.open(path, os.O_RDONLY) if path else None
    except OSError:
        return frozenset()
    if fd is None:
        return frozenset()
    try:
        return _read_ids(fd)
    finally:
        os.close(fd)


def _record_file(directory: str, session: str) -> Optional[str]:
    try:
        from toolscript import paths

        return os.path.join(paths.state_dir(), directory, paths.safe_name(session or "default"))
    except Exception:  # noqa: BLE001 - no state dir: no record
        return None


def _sweep_records(now: Optional[float] = None) -> None:
    """Remove the per-session records nobody touched for ``RECORD_DAYS`` (sessions that ended long ago)."""
    try:
        from toolscript import paths

        base = paths.state_dir()
    except Exception:  # noqa: BLE001 - no state dir: nothing to sweep
        return
    cutoff = (time.time() if now is None else now) - RECORD_DAYS * 86400
    for directory in (INJECTED_DIR, BRIEFS_DIR):
        try:
            entries = list(os.scandir(os.path.join(base, directory)))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
            except OSError:
                pass


# -- the brief's per-session rate limit ----------------------------------------------------------


def _brief_file(session: str) -> Optional[str]:
    return _record_file(BRIEFS_DIR, session)  # None (no state dir): no rate limit record, so no brief


def _brief_due(session: str, interval: float) -> bool:
    from toolscript import paths

    path = _brief_file(session)
    elapsed = paths.seconds_since_mark(path)
    return path is not None and (elapsed is None or elapsed >= interval)


def _note_brief(session: str) -> None:
    from toolscript import paths

    paths.mark(_brief_file(session))
